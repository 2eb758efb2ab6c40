"""Machine and version facts written beside every benchmark result."""

from __future__ import annotations

import os
import platform
import sys
from importlib import metadata
from pathlib import Path

MODELS = Path(__file__).resolve().parent.parent / "examples" / "models"


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


def brainsmith_json(command: str, folder, cache) -> tuple[float, dict]:
    """``brainsmith COMMAND FOLDER --json`` with its own cache directory: (seconds, output)."""
    import json
    import subprocess
    import time

    env = {**os.environ, "BRAINSMITH_CACHE_DIR": str(cache)}
    began = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "brainsmith", command, str(folder), "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=3600,
    )
    seconds = time.perf_counter() - began
    if result.returncode != 0:
        raise RuntimeError(f"brainsmith {command} {folder} failed:\n{result.stderr}")
    return seconds, json.loads(result.stdout)


def paired_run(description: str, model: str) -> tuple[int, Path]:
    """A paired benchmark's command line (``--runs``, ``--model``, ``model`` by default):
    the runs asked and the model (``example_model``)."""
    import argparse

    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--model", default=model, help="under examples/models, or a path")
    args = parser.parse_args()
    return args.runs, example_model(args.model)


def example_model(name: str) -> Path:
    """``name`` as a benchmark's ``--model`` takes it: a path to an ``.onnx`` file, or a
    model under examples/models (``zoo/bert_tiny``)."""
    model = Path(name)
    return model if model.suffix == ".onnx" else MODELS / f"{name}.onnx"
