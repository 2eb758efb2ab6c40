"""Machine and version facts written beside every benchmark result."""

from __future__ import annotations

import os
import platform
import sys
from importlib import metadata


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def machine_info() -> dict:
    return {
        "platform": platform.platform(),
        "cpu": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "memory_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
        "python": sys.version.split()[0],
        "brainsmith": _version("brainsmith"),
        "qonnx": _version("qonnx"),
        "finn-plus": _version("finn-plus"),
        "torch": _version("torch"),
    }
