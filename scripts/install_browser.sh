#!/usr/bin/env bash
# Install Debian's chromium and chromium-driver for the report.html rendering test.
# Idempotent: does nothing when /usr/bin/chromium already exists.
set -euo pipefail

if [ -x /usr/bin/chromium ]; then
    echo "chromium is already installed: $(/usr/bin/chromium --version 2>/dev/null || echo /usr/bin/chromium)"
    exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
        SUDO="sudo"
    else
        echo "error: installing chromium needs root (run as root or install sudo)" >&2
        exit 1
    fi
fi

export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends chromium chromium-driver
echo "installed: $(/usr/bin/chromium --version)"
