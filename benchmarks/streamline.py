"""What the ``streamline`` step costs on a transformer, with QONNX's tensor renaming,
clean-up and datatype and layout inference and with brainsmith's
(``brainsmith.frameworks.finn.passes.tensor_names``: one pass; ``linear_passes``: linear time):
the zoo's BERT-tiny (or another model) converted to FINN-ONNX once, then streamlined in fresh
processes, alternating, checking that both give the same model byte for byte.

    .venv/bin/python -m benchmarks.streamline [--runs 3] [--model zoo/bert_tiny | PATH.onnx]

A larger model, such as the zoo's 4-layer ViT: ``.venv/bin/python -m examples.zoo /tmp/big vit``
then ``--model /tmp/big/vit.onnx``.

Prints the medians and merges its row into benchmarks/results/streamline.json.
"""

from __future__ import annotations

import hashlib
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

from benchmarks.build_overhead import child

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

PREPARE = """
from types import SimpleNamespace
from qonnx.core.modelwrapper import ModelWrapper
from qonnx.transformation.infer_shapes import InferShapes
from brainsmith.frameworks.finn.env import prepare_finn
prepare_finn()
from brainsmith.frameworks.finn.recipe import steps
model = steps.tidy_up(ModelWrapper({model!r}).transform(InferShapes()))
steps.qonnx_to_finn(model, SimpleNamespace(max_multithreshold_bit_width=8)).save({out!r})
print(0)
"""

STREAMLINE = """
import hashlib, time
from qonnx.core.modelwrapper import ModelWrapper
if {qonnx!r}:
    import brainsmith.frameworks.finn.passes.linear_passes as passes
    import brainsmith.frameworks.finn.passes.tensor_names as names
    names.install = passes.install = lambda: None  # keep QONNX's own passes
from brainsmith.frameworks.finn.env import prepare_finn
prepare_finn()
from brainsmith.frameworks.finn.recipe import steps
from brainsmith.frameworks.finn.recipe.networks import channels_last, streamline_joins, streamline_residuals
model = ModelWrapper({path!r})
began = time.perf_counter()
model = channels_last(streamline_joins(streamline_residuals(steps.streamline(model))))
seconds = time.perf_counter() - began
model.save({out!r})
print(seconds)
"""


def main() -> int:
    from benchmarks.first_hour import user_env
    from benchmarks.machine import machine_info, paired_run

    runs, model = paired_run(__doc__.splitlines()[0], "zoo/bert_tiny")
    env = user_env()  # installed packages' bytecode, as users run
    times: dict[str, list[float]] = {"qonnx": [], "brainsmith": []}
    digests: dict[str, set[str]] = {"qonnx": set(), "brainsmith": set()}
    load = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="brainsmith-streamline-") as tmp:
        converted = str(Path(tmp) / "converted.onnx")
        child(PREPARE.format(model=str(model), out=converted), env)
        for _ in range(runs):
            for variant in times:
                out = str(Path(tmp) / f"{variant}.onnx")
                code = STREAMLINE.format(qonnx=variant == "qonnx", path=converted, out=out)
                _, seconds, _ = child(code, env)
                times[variant].append(seconds)
                digests[variant].add(hashlib.sha256(Path(out).read_bytes()).hexdigest())
    same = digests["qonnx"] == digests["brainsmith"] and len(digests["qonnx"]) == 1
    medians = {variant: statistics.median(values) for variant, values in times.items()}
    result = {
        "model": str(model.relative_to(REPO) if model.is_relative_to(REPO) else model.name),
        "runs": runs,
        "seconds": times,
        "median_seconds": medians,
        "speedup": medians["qonnx"] / medians["brainsmith"],
        "identical_models": same,
        "load_average_before": load,
        "machine": machine_info(),
    }
    out = HERE / "results" / "streamline.json"
    payload = json.loads(out.read_text()) if out.exists() else {}
    payload = payload if "models" in payload else {"models": {}}  # one row per model
    payload["models"][result["model"]] = result
    out.write_text(json.dumps(payload, indent=2) + "\n")
    print(
        f"{result['model']}: streamline {medians['qonnx']:.1f} s with QONNX's passes, "
        f"{medians['brainsmith']:.1f} s with brainsmith's ({result['speedup']:.2f}x); "
        f"identical models: {same}\n-> {out.relative_to(REPO)}"
    )
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
