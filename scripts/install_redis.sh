#!/usr/bin/env bash
# Install Debian's redis-server for the shared-index tests (each test starts its own on loopback).
# Idempotent: does nothing when redis-server is already on PATH.
set -euo pipefail

if command -v redis-server >/dev/null 2>&1; then
    echo "redis-server is already installed: $(redis-server --version)"
    exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
        SUDO="sudo"
    else
        echo "error: installing redis-server needs root (run as root or install sudo)" >&2
        exit 1
    fi
fi

export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends redis-server
# The package may start a system-wide server; the tests start their own.
$SUDO service redis-server stop >/dev/null 2>&1 || true
echo "installed: $(redis-server --version)"
