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
# apt's progress goes to a log, shown only when it fails: the caller prints one line.
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq --no-install-recommends "$@"; } >"$log" 2>&1; then
    cat "$log" >&2
    echo "error: installing $* for $why failed (apt-get's output is above)" >&2
    exit 1
fi
