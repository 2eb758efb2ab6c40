// Bit-level UART testbench for brainsmith_host_link (tests/test_host_link.py).
//
// The top module (Vtop) has clk, rst_n, uart_rx and uart_tx. The testbench drives uart_rx
// 8N1 at CLKS_PER_BIT (argv[1]) from a queue of bytes and decodes uart_tx bit by bit,
// sampling each bit at its middle. Commands on stdin, one a line:
//   W <hex>        queue bytes for uart_rx (sent back to back, as a USB-UART does)
//   R <n> <limit>  run until n bytes came from uart_tx or limit cycles passed: prints
//                  "<hex> <cycle> <framing errors>" with up to n bytes (removed from the queue)
//   I <cycles>     run that many cycles
//   Q              quit
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <iostream>
#include <sstream>
#include <string>

#include "Vtop.h"
#include "verilated.h"

struct Bench {
    VerilatedContext context;
    Vtop top{&context};
    int cpb;
    uint64_t cycle = 0;
    std::deque<uint8_t> to_link, from_link;
    int tx_bits = 0, tx_count = 0;  // bits of the frame left, cycles of this bit left
    uint16_t tx_frame = 0;
    int rx_phase = -1, rx_count = 0;  // -1 idle, else bits sampled
    uint16_t rx_bits = 0;
    uint64_t framing_errors = 0;

    explicit Bench(int clocks) : cpb(clocks) {}

    void drive() {
        if (tx_count == 0 && tx_bits == 0 && !to_link.empty()) {
            tx_frame = static_cast<uint16_t>(0x200 | (to_link.front() << 1));  // stop, data, start
            to_link.pop_front();
            tx_bits = 10;
            tx_count = 0;
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

int main(int argc, char** argv) {
    if (argc < 2) return 2;
    Bench bench(std::atoi(argv[1]));
    bench.top.uart_rx = 1;
    bench.top.rst_n = 0;
    for (int i = 0; i < 8; i++) bench.tick();
    bench.top.rst_n = 1;
    std::string line;
    while (std::getline(std::cin, line)) {
        std::istringstream words(line);
        std::string command;
        words >> command;
        if (command == "W") {
            std::string hex;
            words >> hex;
            for (size_t i = 0; i + 1 < hex.size(); i += 2)
                bench.to_link.push_back(static_cast<uint8_t>(std::stoi(hex.substr(i, 2), nullptr, 16)));
        } else if (command == "R") {
            size_t n;
            uint64_t limit;
            words >> n >> limit;
            for (uint64_t i = 0; i < limit && bench.from_link.size() < n; i++) bench.tick();
            std::string out;
            char hex[3];
            while (n-- > 0 && !bench.from_link.empty()) {
                std::snprintf(hex, sizeof hex, "%02x", bench.from_link.front());
                bench.from_link.pop_front();
                out += hex;
            }
            std::cout << (out.empty() ? "-" : out) << ' ' << bench.cycle << ' '
                      << bench.framing_errors << std::endl;
        } else if (command == "I") {
            uint64_t cycles;
            words >> cycles;
            for (uint64_t i = 0; i < cycles; i++) bench.tick();
            std::cout << bench.cycle << std::endl;
        } else if (command == "Q") {
            break;
        }
    }
    bench.top.final();
    return 0;
}
