"""Build brainsmith's wheel and sdist into dist/ (what `make dist` runs).

    python -m scripts.dist [OUTDIR]

With PyPA's ``build`` when it is installed (``python -m build --no-isolation``), else
``pip wheel --no-deps --no-build-isolation`` and setuptools' own sdist hook: no network, the
environment's setuptools. The sources (pyproject.toml, README.md, MANIFEST.in, brainsmith/, and
requirements/ for the sdist) are copied to a temporary folder first, so the checkout gets no build/ or egg-info folder and two builds at
once do not meet.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SOURCES = ("pyproject.toml", "README.md", "MANIFEST.in", "brainsmith", "requirements")
SKIP = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")


def build(outdir: Path) -> list[Path]:
    """Build the wheel and sdist into ``outdir``; returns their paths (wheel first)."""
    outdir = outdir.resolve()
    outdir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="brainsmith-dist-") as temp:
        tree = Path(temp) / "src"
        tree.mkdir()
        for name in SOURCES:
            source = REPO / name
            if source.is_dir():
                shutil.copytree(source, tree / name, ignore=SKIP)
            else:
                shutil.copy2(source, tree / name)
        made = Path(temp) / "out"
        if importlib.util.find_spec("build") is not None:
            _run("-m", "build", "--no-isolation", "--outdir", str(made), str(tree))
        else:
            _run("-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
                 "--disable-pip-version-check", "--quiet", "-w", str(made), str(tree))  # fmt: skip
            code = f"from setuptools.build_meta import build_sdist; build_sdist({str(made)!r})"
            subprocess.run([sys.executable, "-c", code], cwd=tree, check=True,
                           stdout=subprocess.DEVNULL)  # fmt: skip
        built = sorted(made.glob("*.whl")) + sorted(made.glob("*.tar.gz"))
        for path in built:
            shutil.copy2(path, outdir / path.name)
    return [outdir / path.name for path in built]


def _run(*args: str) -> None:
    subprocess.run([sys.executable, *args], check=True)


if __name__ == "__main__":
    for path in build(Path(sys.argv[1]) if len(sys.argv) > 1 else REPO / "dist"):
        print(path)
