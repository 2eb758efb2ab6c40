// A simulated board for `brainsmith run --simulate`: the board top without its PLL (the host
// link and the accelerator on one clock, Vtop: clk, rst_n, uart_rx, uart_tx) behind a
// bit-level UART whose far end is a pseudo-terminal's master side, so the host's driver
// opens the terminal's other side as it opens a board's serial port.
//
//   sim <master fd> <clocks per bit> <quiet cycles>
//
// Bytes read from the terminal go out on uart_rx 8N1 back to back, as a USB UART sends
// them; uart_tx is decoded bit by bit (each bit sampled at its middle) and written to the
// terminal. The clock runs while the line is busy and for <quiet cycles> after its last
// byte (the accelerator answering, or the link's byte timeout), then the simulation sleeps
// until the host writes again. It prints "ready" once out of reset and exits when the
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
#include <deque>
#include <vector>

#include "Vtop.h"
#include "verilated.h"

struct Bench {
    VerilatedContext context;
    Vtop top{&context};
    int cpb;
    uint64_t cycle = 0, last_activity = 0;
    std::deque<uint8_t> to_link;
    std::vector<uint8_t> from_link;
    int tx_bits = 0, tx_count = 0;  // bits of the byte left, cycles of this bit left
    uint16_t tx_frame = 0;
    int rx_phase = -1, rx_count = 0;  // -1 idle, else bits sampled
    uint16_t rx_bits = 0;
    uint64_t framing_errors = 0;

    explicit Bench(int clocks) : cpb(clocks) {}

    bool line_busy() const {
        return !to_link.empty() || tx_bits > 0 || tx_count > 0 || rx_phase >= 0;
    }

    void drive() {
        if (tx_count == 0 && tx_bits == 0 && !to_link.empty()) {
            tx_frame = static_cast<uint16_t>(0x200 | (to_link.front() << 1));  // stop, data, start
            to_link.pop_front();
            tx_bits = 10;
            last_activity = cycle;
        }
        if (tx_count == 0 && tx_bits > 0) {
            top.uart_rx = tx_frame & 1;
            tx_frame >>= 1;
            tx_bits--;
            tx_count = cpb;
        }
        if (tx_count == 0) top.uart_rx = 1;
        if (tx_count > 0) tx_count--;
    }

    void sample() {
        int line = top.uart_tx;
        if (rx_phase < 0) {
            if (!line) {
                rx_phase = 0;
                rx_count = cpb / 2;  // the middle of the start bit
                rx_bits = 0;
                last_activity = cycle;
            }
            return;
        }
        if (--rx_count > 0) return;
        if (rx_phase == 0 && line) {  // a glitch
            rx_phase = -1;
            return;
        }
        if (rx_phase >= 1 && rx_phase <= 8) rx_bits |= line << (rx_phase - 1);
        if (rx_phase == 9) {
            if (line) from_link.push_back(static_cast<uint8_t>(rx_bits));
            else framing_errors++;
            rx_phase = -1;
            last_activity = cycle;
            return;
        }
        rx_phase++;
        rx_count = cpb;
    }

    void tick() {
        drive();
        top.clk = 0;
        top.eval();
        top.clk = 1;
        top.eval();
        sample();
        cycle++;
    }
};

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
        ssize_t put = write(fd, bench.from_link.data(), bench.from_link.size());
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
