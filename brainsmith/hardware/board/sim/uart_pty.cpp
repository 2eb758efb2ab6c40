// A simulated board for `brainsmith run --simulate`: the board top without its PLL (the host
// link and the accelerator on one clock, Vtop: clk, rst_n, uart_rx, uart_tx) behind a
// bit-level UART whose far end is a pseudo-terminal's master side, so the host's driver
// opens the terminal's other side as it opens a board's serial port.
//
//   sim <master fd> <clocks per bit> <quiet cycles>
//
// Bytes read from the terminal go to the UART's pins (uart_bench.h) and bytes decoded from
// uart_tx are written to the terminal. The clock runs while the line is busy, while a request
// the host sent has no reply yet (a BENCH may run millions of cycles) and for <quiet cycles>
// after the line's last byte (the link's byte timeout), then the simulation sleeps until the
// host writes again. It prints "ready" once out of reset and exits when the
// terminal is closed or its parent process ends.
#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "uart_bench.h"

// Whole frames in one direction of the link (SYNC, TYPE, SEQ, LEN, LEN bytes, CRC), counted
// by their LEN as the link frames them; bytes before a SYNC are skipped as the link skips them.
struct Frames {
    int header = -1;  // -1: hunting for SYNC, else header bytes seen after it
    uint32_t length = 0, left = 0;

    bool ends(uint8_t byte) {  // whether ``byte`` completes a frame
        if (header < 0) {
            if (byte == 0xB5) header = 0;
            return false;
        }
        if (header < 4) {
            if (header == 2) length = byte;
            if (header == 3) left = length + (static_cast<uint32_t>(byte) << 8) + 2;
            header++;
            return false;
        }
        if (--left > 0) return false;
        header = -1;
        return true;
    }
};

// Requests sent, replies received and how many requests have no reply yet.
struct Pending {
    Frames requests, replies;
    uint64_t waiting = 0;
};

// Moves bytes between the terminal and the bench's queues, counting the requests that
// have no reply yet; false once the terminal is gone.
static bool exchange(int fd, Bench& bench, Pending& pending) {
    uint8_t buffer[4096];
    while (bench.to_link.size() < 65536) {
        ssize_t got = read(fd, buffer, sizeof buffer);
        if (got > 0) {
            bench.to_link.insert(bench.to_link.end(), buffer, buffer + got);
            for (ssize_t i = 0; i < got; i++) pending.waiting += pending.requests.ends(buffer[i]);
            continue;
        }
        if (got < 0 && (errno == EAGAIN || errno == EINTR)) break;
        return false;  // EIO: the terminal's other side is closed for good
    }
    while (!bench.from_link.empty()) {
        size_t size = 0;
        for (; size < sizeof buffer && size < bench.from_link.size(); size++)
            buffer[size] = bench.from_link[size];
        ssize_t put = write(fd, buffer, size);
        if (put > 0) {
            for (ssize_t i = 0; i < put; i++)
                if (pending.replies.ends(buffer[i]) && pending.waiting > 0) pending.waiting--;
            bench.from_link.erase(bench.from_link.begin(), bench.from_link.begin() + put);
            continue;
        }
        if (put < 0 && (errno == EAGAIN || errno == EINTR)) break;
        return false;
    }
    return true;
}

int main(int argc, char** argv) {
    if (argc < 4) {
        std::fprintf(stderr, "usage: %s <master fd> <clocks per bit> <quiet cycles>\n", argv[0]);
        return 2;
    }
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the driver that started it
    if (getppid() == 1) return 1;
    int fd = std::atoi(argv[1]);
    uint64_t quiet = std::strtoull(argv[3], nullptr, 10);
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    Bench bench(std::atoi(argv[2]));
    bench.top.uart_rx = 1;
    bench.top.rst_n = 0;
    for (int i = 0; i < 8; i++) bench.tick();
    bench.top.rst_n = 1;
    std::printf("ready\n");
    std::fflush(stdout);
    Pending pending;
    for (;;) {
        if (!exchange(fd, bench, pending)) break;
        bool busy = bench.line_busy() || !bench.from_link.empty() || pending.waiting > 0 ||
                    bench.cycle - bench.last_activity < quiet;
        if (!busy) {
            pollfd wanted{fd, POLLIN, 0};
            if (poll(&wanted, 1, -1) < 0 && errno != EINTR) break;
            if (wanted.revents & (POLLHUP | POLLERR) && !(wanted.revents & POLLIN)) break;
            continue;
        }
        for (int i = 0; i < 512; i++) bench.tick();
    }
    std::printf("cycles %llu framing_errors %llu\n", static_cast<unsigned long long>(bench.cycle),
                static_cast<unsigned long long>(bench.framing_errors));
    bench.top.final();
    return 0;
}
