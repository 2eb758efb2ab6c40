// The exported board top in Verilator behind a bit-level UART (uart_bench.h): the host link's
// request frames of sim/requests.hex (IDENTIFY, then one INFER a frame, one frame a line in hex)
// go to its uart_rx pin, two outstanding as the driver sends them, and the replies decoded from
// uart_tx are compared with sim/expected.hex (a reply a line; ".." stands for a byte that is not
// known in advance: an INFER reply's cycle count and its CRC). Every reply's CRC is checked.
//
//   sim <folder of requests.hex and expected.hex> <clocks per bit> <output word bytes>
//       <output words a frame> <idle cycles>
//
// Prints PASS with the accelerator's cycle counts, or FAIL naming the first difference; the
// replies are written to <folder>/run/replies.hex. Exit 0 PASS, 1 FAIL.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "uart_bench.h"

static const uint8_t SYNC = 0xB5;
static const size_t HEADER = 5;

static std::vector<std::string> lines(const std::string& path) {
    std::vector<std::string> found;
    std::ifstream file(path);
    for (std::string line; std::getline(file, line);)
        if (!line.empty()) found.push_back(line);
    return found;
}

static int nibble(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return 0;  // "..": a byte not known in advance
}

static std::vector<uint8_t> bytes_of(const std::string& hex) {
    std::vector<uint8_t> out;
    for (size_t i = 0; i + 1 < hex.size(); i += 2)
        out.push_back(static_cast<uint8_t>(nibble(hex[i]) << 4 | nibble(hex[i + 1])));
    return out;
}

static std::string hex_of(const std::vector<uint8_t>& data) {
    static const char* digits = "0123456789abcdef";
    std::string out;
    for (uint8_t b : data) {
        out.push_back(digits[b >> 4]);
        out.push_back(digits[b & 15]);
    }
    return out;
}

static uint16_t crc16(const std::vector<uint8_t>& frame, size_t from, size_t to) {
    uint16_t crc = 0xFFFF;
    for (size_t i = from; i < to; i++) {
        crc ^= static_cast<uint16_t>(frame[i] << 8);
        for (int bit = 0; bit < 8; bit++)
            crc = (crc & 0x8000) ? static_cast<uint16_t>((crc << 1) ^ 0x1021)
                                 : static_cast<uint16_t>(crc << 1);
    }
    return crc;
}

// A whole frame taken off the front of the bytes the link sent, if one is there.
static bool take_frame(std::deque<uint8_t>& from, std::vector<uint8_t>& frame) {
    while (!from.empty() && from.front() != SYNC) from.pop_front();
    if (from.size() < HEADER) return false;
    size_t size = HEADER + (from[3] | (from[4] << 8)) + 2;
    if (from.size() < size) return false;
    frame.assign(from.begin(), from.begin() + static_cast<long>(size));
    from.erase(from.begin(), from.begin() + static_cast<long>(size));
    return true;
}

// The word (little-endian, as the link sends it) of `frame` that holds byte `at`, in hex.
static std::string word_at(const std::vector<uint8_t>& frame, size_t at, size_t word) {
    size_t start = HEADER + (at - HEADER) / word * word;
    std::vector<uint8_t> big;
    for (size_t i = start + word; i > start; i--) big.push_back(i - 1 < frame.size() ? frame[i - 1] : 0);
    std::string hex = hex_of(big);
    size_t first = hex.find_first_not_of('0');
    return first == std::string::npos ? "0" : hex.substr(first);
}

int main(int argc, char** argv) {
    if (argc < 6) {
        std::fprintf(stderr, "usage: %s <folder> <clocks per bit> <word bytes> <words> <idle>\n",
                     argv[0]);
        return 2;
    }
    std::string folder = argv[1];
    int cpb = std::atoi(argv[2]);
    size_t word = std::strtoul(argv[3], nullptr, 10), words = std::strtoul(argv[4], nullptr, 10);
    uint64_t idle = std::strtoull(argv[5], nullptr, 10);
    std::vector<std::string> requests = lines(folder + "/requests.hex");
    std::vector<std::string> expected = lines(folder + "/expected.hex");
    Bench bench(cpb);
    bench.top.uart_rx = 1;
    bench.top.rst_n = 0;
    for (int i = 0; i < 8; i++) bench.tick();
    bench.top.rst_n = 1;
    for (int i = 0; i < 64; i++) bench.tick();  // the PLL locks, the reset is released
    std::vector<std::vector<uint8_t>> replies;
    size_t sent = 0;
    bench.last_activity = bench.cycle;
    while (replies.size() < requests.size()) {
        size_t window = sent == 0 || replies.empty() ? 1 : 2;  // IDENTIFY alone, then two
        if (sent < requests.size() && sent - replies.size() < window) {
            std::vector<uint8_t> frame = bytes_of(requests[sent++]);
            bench.to_link.insert(bench.to_link.end(), frame.begin(), frame.end());
        }
        for (int i = 0; i < 256; i++) bench.tick();
        std::vector<uint8_t> reply;
        while (take_frame(bench.from_link, reply)) replies.push_back(reply);
        if (!bench.line_busy() && bench.cycle - bench.last_activity > idle) break;
    }
    {
        std::ofstream out(folder + "/run/replies.hex");
        for (const auto& reply : replies) out << hex_of(reply) << "\n";
    }
    std::vector<uint32_t> cycles;
    for (size_t r = 0; r < replies.size(); r++) {
        const std::vector<uint8_t>& reply = replies[r];
        uint16_t crc = static_cast<uint16_t>(reply[reply.size() - 2] | (reply[reply.size() - 1] << 8));
        if (crc != crc16(reply, 1, reply.size() - 2)) {
            std::printf("FAIL: reply %zu has a bad CRC (%s)\n", r, hex_of(reply).c_str());
            return 1;
        }
        std::string got = hex_of(reply), want = r < expected.size() ? expected[r] : "";
        for (size_t b = 0; 2 * b < want.size() || 2 * b < got.size(); b++) {
            std::string g = 2 * b < got.size() ? got.substr(2 * b, 2) : "--";
            std::string w = 2 * b < want.size() ? want.substr(2 * b, 2) : "--";
            if (w == ".." || g == w) continue;
            bool infer = r > 0 && b >= HEADER && b < HEADER + words * word;
            if (infer) {
                size_t index = (b - HEADER) / word;
                std::printf("FAIL: output word %zu (frame %zu): got %s, expected %s\n",
                            (r - 1) * words + index, r - 1, word_at(reply, b, word).c_str(),
                            word_at(bytes_of(want), b, word).c_str());
            } else {
                std::printf("FAIL: reply %zu differs at byte %zu: got %s, expected %s\n", r, b,
                            got.c_str(), want.c_str());
            }
            return 1;
        }
        if (r > 0) {
            size_t at = reply.size() - 6;
            cycles.push_back(static_cast<uint32_t>(reply[at] | (reply[at + 1] << 8) |
                                                   (reply[at + 2] << 16) |
                                                   (static_cast<uint32_t>(reply[at + 3]) << 24)));
        }
    }
    if (replies.size() < requests.size()) {
        std::printf("FAIL: the board stopped answering after %zu of %zu replies (no byte for %llu "
                    "cycles; %llu framing errors)\n",
                    replies.size(), requests.size(), static_cast<unsigned long long>(idle),
                    static_cast<unsigned long long>(bench.framing_errors));
        return 1;
    }
    uint32_t low = cycles.empty() ? 0 : cycles[0], high = low;
    for (uint32_t c : cycles) {
        low = c < low ? c : low;
        high = c > high ? c : high;
    }
    std::printf("PASS: %zu frames through the host link, every output word equal to the build's "
                "Python execution; the accelerator's own count: %u to %u cycles a frame; %llu "
                "cycles simulated\n",
                cycles.size(), low, high, static_cast<unsigned long long>(bench.cycle));
    bench.top.final();
    return 0;
}
