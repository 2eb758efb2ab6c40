#!/usr/bin/env bash
# Install Debian packages with apt-get: as root, or through sudo.
# Usage: scripts/apt_install.sh WHY PACKAGE...   (WHY names what needs them, for the error)
set -euo pipefail
why=$1
shift
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
        SUDO="sudo"
    else
        echo "error: $why needs $*; installing them needs root (run as root or install sudo)" >&2
        exit 1
    fi
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "$@"
