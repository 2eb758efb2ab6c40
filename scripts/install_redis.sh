#!/usr/bin/env bash
# Install Debian's redis-server for the shared-index tests (each test starts its own on loopback).
# Idempotent: does nothing when redis-server is already on PATH.
set -euo pipefail

if command -v redis-server >/dev/null 2>&1; then
    echo "redis-server is already installed: $(redis-server --version)"
    exit 0
fi

"$(dirname "$0")/apt_install.sh" "the shared discovery index tests" redis-server
# The package may start a system-wide server; the tests start their own.
if [ "$(id -u)" -eq 0 ]; then service redis-server stop >/dev/null 2>&1 || true; fi
echo "redis-server installed: $(redis-server --version)"
