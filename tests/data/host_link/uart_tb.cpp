// Bit-level UART testbench for brainsmith_host_link (tests/test_host_link.py).
//
// The top module (Vtop) has clk, rst_n, uart_rx and uart_tx. The testbench drives uart_rx
// 8N1 at CLKS_PER_BIT (argv[1]) from a queue of bytes and decodes uart_tx bit by bit,
// sampling each bit at its middle (uart_bench.h, which brainsmith run --simulate uses too).
// Commands on stdin, one a line:
//   W <hex>        queue bytes for uart_rx (sent back to back, as a USB-UART does)
//   R <n> <limit>  run until n bytes came from uart_tx or limit cycles passed: prints
//                  "<hex> <cycle> <framing errors>" with up to n bytes (removed from the queue)
//   I <cycles>     run that many cycles
//   Q              quit
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>

#include "uart_bench.h"  // brainsmith/hardware/board/sim: the UART on the link's pins

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
