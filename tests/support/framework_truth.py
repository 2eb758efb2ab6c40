"""Print, as JSON, what QONNX and FINN really define: import every module and collect the
Transformation subclasses, FINN's kernel/backend registries and build-step table.

Run in a subprocess by tests/test_adapters.py; it is the ground truth the adapters'
import-free discovery is compared with.
"""

from __future__ import annotations

import importlib
import json
import os
import pkgutil
import sys
import warnings


def import_all(package: str) -> list[str]:
    failures = []
    root = importlib.import_module(package)
    for info in pkgutil.walk_packages(root.__path__, prefix=package + "."):
        if ".tests" in info.name or info.name.endswith(".test"):
            continue
        try:
            importlib.import_module(info.name)
        except BaseException as exc:
            failures.append(f"{info.name}: {type(exc).__name__}: {exc}")
    return failures


def subclasses(cls: type) -> set[type]:
    found, todo = set(), [cls]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub not in found:
                found.add(sub)
                todo.append(sub)
    return found


def target(obj: object) -> str:
    return f"{obj.__module__}:{obj.__qualname__}"


def main() -> None:
    warnings.simplefilter("ignore")
    frameworks = sys.argv[1:] or ["qonnx", "finn"]
    if "finn" in frameworks:
        from brainsmith.frameworks.finn.env import prepare_finn

        prepare_finn()
    failures = {fw: import_all(fw) for fw in frameworks}
    from qonnx.transformation.base import Transformation

    result: dict = {"failures": failures}
    for fw in frameworks:
        result[f"{fw}:transform"] = sorted(
            [c.__name__, target(c)]
            for c in subclasses(Transformation)
            if c.__module__.split(".")[0] == fw and "<locals>" not in c.__qualname__
        )
    if "finn" in frameworks:
        import finn.builder.build_dataflow_steps as steps
        import finn.custom_op.fpgadataflow as kernels
        import finn.custom_op.fpgadataflow.hls as hls
        import finn.custom_op.fpgadataflow.rtl as rtl

        result["finn:kernel"] = sorted([k, target(c)] for k, c in kernels.custom_op.items())
        result["finn:backend"] = sorted(
            [k, target(c)] for reg in (hls, rtl) for k, c in reg.custom_op.items()
        )
        result["finn:step"] = sorted(
            [k, target(f)] for k, f in steps.build_dataflow_step_lookup.items()
        )
    json.dump(result, sys.stdout)
    sys.stdout.flush()
    os._exit(0)  # FINN leaves non-daemon threads and atexit hooks behind


if __name__ == "__main__":
    main()
