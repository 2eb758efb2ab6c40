"""Networks at the size users train them, each exported from the zoo (``examples/zoo.py``:
random weights, fixed seed, calibrated norms) and built with no blueprint twice in a fresh
process: ``verify: each`` against the torch model's own outputs, and ``verify: none`` without
them (the build alone). Records the outcome (the step that stopped and why), the time of each
step and of its verification, and the peak memory of the process.

- ``mobilenet_v1``: the 4-bit MobileNet-v1 at 224x224 (ImageNet, 1,000 classes, as brevitas's
  quant_mobilenet_v1), at 1,600 fps (what finn-examples' MobileNet-v1 reaches on an Alveo U250);
- ``resnet18``: a 4-bit ResNet-18 for CIFAR-10, at 1,600 fps;
- ``bert_demo``: an encoder layer at microsoft/Brainsmith's demo size (hidden 384, 12 heads,
  FFN 1536, sequence 128, 8-bit), for its V80 at its 3,000 fps target;
- ``vit``: a ViT (4 layers, hidden 192, 3 heads, 64 tokens; 4-bit weights, 8-bit
  activations) at 10,000 fps;
- ``bert_mini``: a BERT-mini-like encoder (4 layers, hidden 256, 4 heads, MLP 1024, sequence
  128) at 10,000 fps.

    .venv/bin/python -m benchmarks.big_networks [--target-fps FPS] [--verify each|none] [NAME ...]
    (needs brevitas)

Merges its rows into benchmarks/results/big_networks.json (with ``--verify``, only that build
of each network is run and replaced).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

U250_MOBILENET_FPS = 1600
V80 = "xcv80-lsva4737-2MHP-e-S"

# name -> (zoo call, build options)
NETWORKS: dict[str, tuple[str, dict[str, object]]] = {
    "mobilenet_v1": (
        "mobilenet_block(channels=(32, 64, 128, 128, 256, 256, 512, 512, 512, 512, 512, 512, "
        "1024, 1024), strides=(1, 2, 1, 2, 1, 2, 1, 1, 1, 1, 1, 2, 1), image=224, classes=1000)",
        {"target_fps": U250_MOBILENET_FPS},
    ),
    "resnet18": (
        "resnet8(channels=(64, 128, 256, 512), repeats=2, image=32)",
        {"target_fps": U250_MOBILENET_FPS},
    ),
    "bert_demo": ("bert_demo()", {"target_fps": 3000, "fpga_part": V80}),
    "vit": ("vit()", {"target_fps": 10000}),
    "bert_mini": ("bert_mini()", {"target_fps": 10000}),
}

EXPORT = """
from pathlib import Path
import examples.zoo as zoo
from examples.zoo import export_network
export_network({name!r}, Path({folder!r}), make=lambda: zoo.{call})
"""

BUILD = """
import brainsmith
from brainsmith.builder import BuildError
try:
    brainsmith.build({model!r}, None, {out!r}, verify={verify!r}, input_npy={inputs!r},
                     expected_npy={expected!r}, options={options!r})
except BuildError:
    pass  # the report says which step stopped and why
"""


def measured(code: str) -> tuple[float, float]:
    """(wall seconds, peak resident MB) of ``python -c code``, its own usage only."""
    began = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-c", code], cwd=REPO,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)  # fmt: skip
    err = process.stderr.read() if process.stderr else ""
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - began
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"benchmark child failed:\n{err[-3000:]}")
    return wall, usage.ru_maxrss / 1024


def outcome(out: Path) -> dict:
    report = json.loads((out / "report.json").read_text())
    steps = [
        {
            "step": s["name"],
            "status": s["status"],
            "seconds": s.get("seconds"),
            "verify_seconds": (s.get("verification") or {}).get("seconds"),
        }
        for s in report["steps"]
        if s["status"] not in ("pending",)
    ]
    return {
        "status": report["status"],
        "error": report.get("error"),
        "steps": steps,
        "fps": (report.get("performance") or {}).get("estimated_fps"),
        "target": report.get("target"),  # met, or the limiting layer and its limit
        "totals": report.get("totals"),
        "utilisation": (report.get("utilisation") or {}).get("percent"),  # None: no table
    }


def main() -> int:
    from benchmarks.machine import machine_info

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target-fps", type=int, help="instead of each network's own target")
    parser.add_argument(
        "--verify", choices=("each", "none"), help="only this build (default: both)"
    )
    parser.add_argument("names", nargs="*", help=f"of {', '.join(NETWORKS)} (default: all)")
    args = parser.parse_args()
    names = args.names or list(NETWORKS)
    unknown = sorted(set(names) - set(NETWORKS))
    if unknown:
        parser.error(f"unknown network(s) {', '.join(unknown)}; known: {', '.join(NETWORKS)}")
    results = {}
    with tempfile.TemporaryDirectory(prefix="brainsmith-big-") as tmp:
        for name in names:
            call, options = NETWORKS[name]
            if args.target_fps:
                options = {**options, "target_fps": args.target_fps}
            measured(EXPORT.format(name=name, folder=tmp, call=call))
            model = Path(tmp) / f"{name}.onnx"
            row = {}
            for verify in [args.verify] if args.verify else ["each", "none"]:
                out = Path(tmp) / f"{name}-{verify}"
                vectors = verify == "each"  # without verification, no vectors to check
                load = os.getloadavg()
                wall, peak = measured(
                    BUILD.format(
                        model=str(model), out=str(out), verify=verify, options=options,
                        inputs=str(model.with_name(f"{name}_input.npy")) if vectors else None,
                        expected=str(model.with_name(f"{name}_expected.npy")) if vectors else None,
                    )
                )  # fmt: skip
                row[verify] = {"wall_seconds": round(wall, 1), "peak_mb": round(peak),
                               "load_average_before": load, **outcome(out)}  # fmt: skip
                print(f"{name} verify {verify}: {row[verify]['status']} in {wall:.0f} s, "
                      f"{peak:.0f} MB", file=sys.stderr)  # fmt: skip
            results[name] = {"call": call, "options": options, **row, "machine": machine_info()}
    out = HERE / "results" / "big_networks.json"
    payload = json.loads(out.read_text()) if out.exists() else {}
    networks = payload.setdefault("networks", {})
    for name, result in results.items():
        networks[name] = {**networks.get(name, {}), **result}  # a build not run is kept
    out.write_text(json.dumps(payload, indent=2) + "\n")
    print(f"-> {out.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
