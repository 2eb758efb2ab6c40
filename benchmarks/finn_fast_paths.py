"""What brainsmith's replacements of FINN's and QONNX's slow paths buy a build: the hex packing
of weight and threshold memories (``brainsmith.frameworks.finn.packing``) and the check of one
threshold against its type (``brainsmith.frameworks.finn.datatypes``). Each is timed alone
(FINN's function and brainsmith's on the same data, in this process), then a whole build with
no blueprint in fresh processes, alternating: one with FINN's own functions, one with
brainsmith's. Both builds must write the same memory files, byte for byte.

    .venv/bin/python -m benchmarks.finn_fast_paths [--runs 3] [--model zoo/tfc_w2a2 | PATH.onnx]

Prints the medians and merges its row into benchmarks/results/finn_fast_paths.json.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.build_overhead import child

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
MEMORY = (30_000, 16)  # rows x 4-bit values: a weight memory of 30,000 64-bit words
THRESHOLDS = 100_000

BUILD = """
import time
if {finns!r}:
    import brainsmith.frameworks.finn.datatypes as datatypes
    import brainsmith.frameworks.finn.packing as packing
    datatypes.install = packing.install = lambda: None  # keep FINN's and QONNX's own
import brainsmith
began = time.perf_counter()
brainsmith.build({model!r}, output_dir={out!r})
print(time.perf_counter() - began)
"""


def alone() -> dict[str, float]:
    """Seconds of FINN's and brainsmith's packing of ``MEMORY`` and checks of ``THRESHOLDS``."""
    import numpy as np

    from brainsmith.frameworks.finn.env import prepare_finn

    prepare_finn()
    import finn.util.data_packing as data_packing
    from qonnx.core.datatype import DataType, IntType

    rng = np.random.default_rng(0)
    memory = rng.integers(-8, 8, MEMORY).astype(np.float32)
    thresholds = rng.integers(-100, 100, THRESHOLDS).astype(np.float32)
    int4, int8 = DataType["INT4"], DataType["INT8"]
    runs = {
        "packing_finn": lambda: data_packing.finn_pack_innermost_dim_as_hex_string(memory, int4, 64),
        "packing_brainsmith": lambda: data_packing.pack_innermost_dim_as_hex_string(memory, int4, 64),
        "check_qonnx": lambda: np.vectorize(lambda v: IntType.qonnx_allowed(int8, v))(thresholds),
        "check_brainsmith": lambda: np.vectorize(int8.allowed)(thresholds),
    }  # fmt: skip
    seconds = {}
    for name, call in runs.items():
        began = time.perf_counter()
        call()
        seconds[name] = time.perf_counter() - began
    return seconds


def memories(folder: str) -> str:
    """A digest of every memory file (``*.dat``) a build wrote, by path under ``folder``
    (FINN's code folders' random suffixes aside)."""
    digest = hashlib.sha256()
    files = {re.sub(r"_[a-z0-9_]{8}(?=/)", "", str(p.relative_to(folder))): p
             for p in Path(folder).rglob("*.dat")}  # fmt: skip
    for name in sorted(files):
        digest.update(name.encode())
        digest.update(files[name].read_bytes())
    return digest.hexdigest()


def main() -> int:
    from benchmarks.first_hour import user_env
    from benchmarks.machine import machine_info, paired_run

    runs, model = paired_run(__doc__.splitlines()[0], "zoo/tfc_w2a2")
    env = user_env()  # installed packages' bytecode, as users run
    load = os.getloadavg()
    single = alone()
    times: dict[str, list[float]] = {"finn": [], "brainsmith": []}
    digests: dict[str, set[str]] = {"finn": set(), "brainsmith": set()}
    with tempfile.TemporaryDirectory(prefix="brainsmith-fast-paths-") as tmp:
        for index in range(runs + 1):  # run 0 warms the page cache and is discarded
            for variant in times:
                out = os.path.join(tmp, f"{variant}-{index}")
                code = BUILD.format(finns=variant == "finn", model=str(model), out=out)
                wall, _, _ = child(code, env)
                digests[variant].add(memories(out))
                if index:
                    times[variant].append(wall)
    same = digests["finn"] == digests["brainsmith"] and len(digests["finn"]) == 1
    medians = {variant: statistics.median(values) for variant, values in times.items()}
    name = str(model.relative_to(REPO) if model.is_relative_to(REPO) else model.name)
    result = {
        "alone_seconds": single,
        "build_seconds": times,
        "build_median_seconds": medians,
        "identical_memories": same,
        "load_average_before": load,
        "machine": machine_info(),
    }
    out = HERE / "results" / "finn_fast_paths.json"
    payload = json.loads(out.read_text()) if out.exists() else {"models": {}}
    payload["models"][name] = result
    out.write_text(json.dumps(payload, indent=2) + "\n")
    rows, values = MEMORY
    print(
        f"packing {rows:,} rows of {values} INT4: FINN {single['packing_finn']:.2f} s, "
        f"brainsmith {single['packing_brainsmith']:.3f} s; checking {THRESHOLDS:,} thresholds: "
        f"QONNX {single['check_qonnx']:.2f} s, brainsmith {single['check_brainsmith']:.2f} s\n"
        f"{name} built with no blueprint (process wall, median of {runs}): "
        f"{medians['finn']:.1f} s with FINN's own, {medians['brainsmith']:.1f} s with brainsmith's;"
        f" identical memories: {same}\n-> {out.relative_to(REPO)}"
    )
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
