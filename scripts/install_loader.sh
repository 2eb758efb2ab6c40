#!/usr/bin/env bash
# Install Debian's openFPGALoader, which `brainsmith flash` runs to load a board (the tests run
# it with no board attached: its own refusal is what they check). Idempotent: does nothing
# when openFPGALoader is already on PATH.
set -euo pipefail

if command -v openFPGALoader >/dev/null 2>&1; then
    echo "openFPGALoader is already installed: $(openFPGALoader --Version 2>&1 | head -1)"
    exit 0
fi

"$(dirname "$0")/apt_install.sh" "brainsmith flash (loading a board's bitstream)" openfpgaloader
echo "openFPGALoader installed: $(openFPGALoader --Version 2>&1 | head -1)"
