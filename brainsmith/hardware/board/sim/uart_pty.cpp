// A simulated board for `brainsmith run --simulate`: the board top without its PLL (the host
// link and the accelerator on one clock, Vtop: clk, rst_n, uart_rx, uart_tx) behind a
// bit-level UART whose far end is a pseudo-terminal's master side, so the host's driver
// opens the terminal's other side as it opens a board's serial port.
//
//   sim <master fd> <clocks per bit> <quiet cycles>
//
// Bytes read from the terminal go to the UART's pins (uart_bench.h) and bytes decoded from
// uart_tx are written to the terminal. The clock runs while the line is busy and for <quiet
// cycles> after its last byte (the accelerator answering, or the link's byte timeout), then
// the simulation sleeps until the host writes again. It prints "ready" once out of reset and exits when the
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

// Moves bytes between the terminal and the bench's queues; false once the terminal is gone.
static bool exchange(int fd, Bench& bench) {
    uint8_t buffer[4096];
    while (bench.to_link.size() < 65536) {
        ssize_t got = read(fd, buffer, sizeof buffer);
        if (got > 0) {
            bench.to_link.insert(bench.to_link.end(), buffer, buffer + got);
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
    for (;;) {
        if (!exchange(fd, bench)) break;
        bool busy = bench.line_busy() || !bench.from_link.empty() ||
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
