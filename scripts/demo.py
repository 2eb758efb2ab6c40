"""The main job: build the shipped 4-bit MLP with blueprints/mlp.yaml into a fresh folder
under build-out/ and print fps, latency, resources and verification.

    python -m scripts.demo [--output-root DIR]     (what `make demo` runs)
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MODEL = REPO / "examples" / "models" / "mlp_4bit.onnx"
BLUEPRINT = REPO / "blueprints" / "mlp.yaml"


def main(argv: list[str] | None = None) -> int:
    began = time.perf_counter()
    parser = argparse.ArgumentParser(description="Build the shipped MLP and print a summary.")
    parser.add_argument(
        "--output-root",
        default=str(REPO / "build-out"),
        help="folder for the timestamped build folder (default: build-out/)",
    )
    args = parser.parse_args(argv)
    if not MODEL.is_file():
        print(
            f"error: {MODEL.relative_to(REPO)} is missing; create it with "
            "`python -m examples.make_models`",
            file=sys.stderr,
        )
        return 2
    import brainsmith
    from brainsmith.builder import BuildError
    from brainsmith.builder.outdir import default_output_dir
    from brainsmith.cli.build import print_summary

    output_dir = default_output_dir("mlp", root=args.output_root)
    try:
        result = brainsmith.build(str(MODEL), str(BLUEPRINT), output_dir, progress=True)
    except BuildError as exc:
        print(f"error: {exc.message()}", file=sys.stderr)
        return exc.exit_code
    print_summary(result.report)
    print(f"demo finished in {time.perf_counter() - began:.1f} s")
    return 0


if __name__ == "__main__":
    from brainsmith.frameworks.finn.env import fast_exit

    code = main()
    fast_exit(code)  # skip the slow interpreter teardown after FINN
    sys.exit(code)
