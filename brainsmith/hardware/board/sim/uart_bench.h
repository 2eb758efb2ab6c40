// A bit-level UART on the pins of a simulated host link (Vtop: clk, rst_n, uart_rx,
// uart_tx): bytes queued in to_link go out on uart_rx 8N1 at CLKS_PER_BIT, back to back as a
// USB UART sends them; uart_tx is decoded bit by bit (each bit sampled at its middle) into
// from_link. Used by brainsmith run --simulate (uart_pty.cpp, the far end a pseudo-terminal)
// and by the link's tests (tests/data/host_link/uart_tb.cpp, the far end pipes).
#pragma once

#include <cstdint>
#include <deque>

#include "Vtop.h"
#include "verilated.h"

struct Bench {
    VerilatedContext context;
    Vtop top{&context};
    int cpb;
    uint64_t cycle = 0, last_activity = 0;
    std::deque<uint8_t> to_link;
    std::deque<uint8_t> from_link;
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
