#!/usr/bin/env bash
# Install Debian's chromium and chromium-driver for the report.html rendering test.
# Idempotent: does nothing when /usr/bin/chromium already exists.
set -euo pipefail

if [ -x /usr/bin/chromium ]; then
    echo "chromium is already installed: $(/usr/bin/chromium --version 2>/dev/null || echo /usr/bin/chromium)"
    exit 0
fi

"$(dirname "$0")/apt_install.sh" "the report rendering test" chromium chromium-driver
echo "chromium installed: $(/usr/bin/chromium --version 2>/dev/null)"
