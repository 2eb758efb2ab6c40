// AXI-stream testbench for one Verilated FINN layer (brainsmith.hardware.rtlsim).
//
// tb_ports.h (generated per layer) names the stream ports:
//   TB_INPUTS(X)  X(in0_V) ...     streams the testbench drives
//   TB_OUTPUTS(X) X(out0_V) ...    streams it collects
//   TB_CLK2X_MODE                  0 no ap_clk2x; 1 tied to ap_clk; 2 a real 2x clock
//   TB_PROBES(X) X(maxcount_f) ... outputs printed once at the end ("probe NAME HEX")
//   TB_DEPTHS(X) X(depth_f) ...    inputs set before reset from DIR/depths (one decimal
//                                  per line, in this order; a missing file or line: 0)
//
// Usage: sim DIR OUTPUT_BEATS... IDLE_LIMIT [INTERVAL FRAME_BEATS...]
//   DIR/<in>.hex      one beat per line (hex); each input stream is driven valid whenever
//                     it has data left, each output stream is always ready
//   DIR/<out>.hex     written: "cycle hexdata" for every beat the layer emitted
//   DIR/<in>.cycles   written: the cycle at which each input beat was accepted
//   INTERVAL          with it, frame k of an input (FRAME_BEATS beats each) is offered from
//                     cycle k * INTERVAL on: input at a given frame rate instead of flat out
// Exit codes: 0 all expected output beats seen; 3 no beat for IDLE_LIMIT cycles; 2 bad usage.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "Vtop.h"
#include "tb_ports.h"
#include "verilated.h"

using Words = std::vector<uint32_t>;

static Words parse_hex(const std::string& text) {
    Words words;
    uint64_t acc = 0;
    int bits = 0;
    for (size_t i = text.size(); i-- > 0;) {
        char c = text[i];
        int v = (c >= '0' && c <= '9')   ? c - '0'
                : (c >= 'a' && c <= 'f') ? c - 'a' + 10
                : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                                         : -1;
        if (v < 0) continue;
        acc |= static_cast<uint64_t>(v) << bits;
        bits += 4;
        if (bits == 32) {
            words.push_back(static_cast<uint32_t>(acc));
            acc = 0;
            bits = 0;
        }
    }
    if (bits) words.push_back(static_cast<uint32_t>(acc));
    return words;
}

template <typename T>
static void put(T& port, const Words& w) {
    uint64_t v = w.empty() ? 0 : w[0];
    if (w.size() > 1) v |= static_cast<uint64_t>(w[1]) << 32;
    port = static_cast<T>(v);
}
template <std::size_t N>
static void put(VlWide<N>& port, const Words& w) {
    for (std::size_t i = 0; i < N; ++i) port[i] = i < w.size() ? w[i] : 0;
}

template <typename T>
static std::string hex(const T& port) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(port));
    return buf;
}
template <std::size_t N>
static std::string hex(const VlWide<N>& port) {
    std::string out;
    char buf[16];
    for (std::size_t i = N; i-- > 0;) {
        std::snprintf(buf, sizeof buf, out.empty() ? "%x" : "%08x", port[i]);
        if (out.empty() && port[i] == 0 && i > 0) continue;
        out += buf;
    }
    return out.empty() ? "0" : out;
}

struct Input {
    std::vector<Words> beats;
    size_t next = 0;
    long frame_beats = 0;  // with an INTERVAL: beats per frame
    std::FILE* accepted = nullptr;
};
struct Output {
    long expected = 0;
    long seen = 0;
    std::FILE* file = nullptr;
};

static Vtop* top = nullptr;  // owned by main()
static long cycle = 0;

static void tick() {
#if TB_CLK2X_MODE == 2  // a 2x clock, rising with ap_clk
    for (int phase : {1, 0}) {
        top->ap_clk = phase;
        top->ap_clk2x = 1;
        top->eval();
        top->ap_clk2x = 0;
        top->eval();
    }
#else
    for (int phase : {1, 0}) {
        top->ap_clk = phase;
#if TB_CLK2X_MODE == 1  // ap_clk2x tied to ap_clk, as in a design without double pumping
        top->ap_clk2x = phase;
#endif
        top->eval();
    }
#endif
    ++cycle;
}

int main(int argc, char** argv) {
    const char* names_in[] = {
#define TB_NAME(p) #p,
        TB_INPUTS(TB_NAME) nullptr};
    const char* names_out[] = {TB_OUTPUTS(TB_NAME) nullptr};
#undef TB_NAME
    const int n_in = sizeof names_in / sizeof *names_in - 1;
    const int n_out = sizeof names_out / sizeof *names_out - 1;
    if (argc != 3 + n_out && argc != 4 + n_out + n_in) {
        std::fprintf(stderr, "usage: %s DIR OUTPUT_BEATS x%d IDLE_LIMIT [INTERVAL FRAME_BEATS x%d]\n",
                     argv[0], n_out, n_in);
        return 2;
    }
    const long interval = argc > 3 + n_out ? std::atol(argv[3 + n_out]) : 0;
    const std::string dir = argv[1];
    const long idle_limit = std::atol(argv[2 + n_out]);
    std::vector<Input> in(n_in);
    std::vector<Output> out(n_out);
    for (int i = 0; i < n_in; ++i) {
        std::ifstream file(dir + "/" + names_in[i] + ".hex");
        if (!file) {
            std::fprintf(stderr, "cannot read %s/%s.hex\n", dir.c_str(), names_in[i]);
            return 2;
        }
        for (std::string line; std::getline(file, line);)
            if (!line.empty()) in[i].beats.push_back(parse_hex(line));
        in[i].accepted = std::fopen((dir + "/" + names_in[i] + ".cycles").c_str(), "w");
        if (interval) in[i].frame_beats = std::max(1L, std::atol(argv[4 + n_out + i]));
    }
    for (int o = 0; o < n_out; ++o) {
        out[o].expected = std::atol(argv[2 + o]);
        out[o].file = std::fopen((dir + "/" + names_out[o] + ".hex").c_str(), "w");
        if (!out[o].file) return 2;
    }

    auto context = std::make_unique<VerilatedContext>();
    context->commandArgs(1, argv);
    auto model = std::make_unique<Vtop>(context.get());
    top = model.get();
    {
        std::ifstream file(dir + "/depths");
        long value = 0;
#define TB_SET(p) top->p = (file >> value) ? value : 0;
        TB_DEPTHS(TB_SET)
#undef TB_SET
        (void)value;
    }
    top->ap_rst_n = 0;
    for (int i = 0; i < 16; ++i) tick();
    top->ap_rst_n = 1;
    tick();
    cycle = 0;

    long idle = 0;
    auto done = [&] {
        for (auto& o : out)
            if (o.seen < o.expected) return false;
        return true;
    };
    while (!done() && idle < idle_limit) {
        int k = 0;
#define TB_DRIVE(p)                                                        \
    if (in[k].next < in[k].beats.size() &&                                \
        (!interval || cycle >= long(in[k].next / in[k].frame_beats) * interval)) { \
        put(top->p##_TDATA, in[k].beats[in[k].next]);                      \
        top->p##_TVALID = 1;                                               \
    } else {                                                               \
        top->p##_TVALID = 0;                                               \
    }                                                                      \
    ++k;
        TB_INPUTS(TB_DRIVE)
#undef TB_DRIVE
#define TB_READY(p) top->p##_TREADY = 1;
        TB_OUTPUTS(TB_READY)
#undef TB_READY
        top->eval();
        bool progress = false;
        k = 0;
#define TB_ACCEPT(p)                                                       \
    if (top->p##_TVALID && top->p##_TREADY) {                              \
        std::fprintf(in[k].accepted, "%ld\n", cycle);                      \
        ++in[k].next;                                                      \
    }                                                                      \
    ++k;
        TB_INPUTS(TB_ACCEPT)
#undef TB_ACCEPT
        k = 0;
#define TB_COLLECT(p)                                                                    \
    if (top->p##_TVALID && top->p##_TREADY) {                                            \
        std::fprintf(out[k].file, "%ld %s\n", cycle, hex(top->p##_TDATA).c_str());       \
        ++out[k].seen;                                                                   \
        progress = true;                                                                 \
    }                                                                                    \
    ++k;
        TB_OUTPUTS(TB_COLLECT)
#undef TB_COLLECT
        tick();
        idle = progress ? 0 : idle + 1;
    }
    top->final();
    for (auto& i : in) std::fclose(i.accepted);
    for (auto& o : out) std::fclose(o.file);
    std::printf("cycles %ld\n", cycle);
#define TB_PRINT(p) std::printf("probe %s %s\n", #p, hex(top->p).c_str());
    TB_PROBES(TB_PRINT)
#undef TB_PRINT
    if (!done()) {
        for (int o = 0; o < n_out; ++o)
            std::printf("stalled %s %ld/%ld\n", names_out[o], out[o].seen, out[o].expected);
        return 3;
    }
    return 0;
}
