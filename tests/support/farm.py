"""One build per (model, blueprint, options) per test run, shared by every module and worker.

A test asks the farm for a build instead of calling ``brainsmith.build``: the first worker to
ask builds it, under a file lock in the test run's shared folder; every later request, from
any module on any worker, waits for that lock and reopens the finished folder with
``BuildResult.load``. A build is handed out to read: each records the content hash of every
file it wrote, and the end of the run fails naming any file a test changed (``changed``). A
test that tampers with a build takes ``copy`` first.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

from filelock import FileLock

DONE = "farm.json"  # beside the build's folder: its key and the hash of each file


def run_folder(base: Path, worker: str | None) -> Path:
    """The folder every worker of this test run shares: the parent of a worker's base
    temporary folder under pytest-xdist, the base folder itself without workers."""
    return base.parent if worker else base


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _files(folder: Path) -> Iterator[Path]:
    for root, _, names in os.walk(folder):
        for name in sorted(names):
            yield Path(root, name)


def manifest(folder: Path) -> dict[str, str]:
    """Each regular file under ``folder`` (relative path) and its content hash."""
    return {
        str(path.relative_to(folder)): _digest(path)
        for path in _files(folder)
        if path.is_file() and not path.is_symlink()
    }


def _value(value: object) -> object:
    """An option as it goes into the key: files by path and content, the rest as they are."""
    if isinstance(value, os.PathLike) or (isinstance(value, str) and os.path.isfile(value)):
        path = Path(value).resolve()
        return {"file": str(path), "sha256": _digest(path)} if path.is_file() else str(path)
    if isinstance(value, dict):
        return {str(k): _value(v) for k, v in sorted(value.items())}
    if isinstance(value, list | tuple):
        return [_value(v) for v in value]
    return value


class BuildFarm:
    """Builds kept for the whole test run under ``root`` (``run_folder``)."""

    def __init__(self, root: Path) -> None:
        self.root = root / "farm"
        self.root.mkdir(mode=0o700, exist_ok=True)

    def build(self, model: str | Path, blueprint: str | Path | None = None, **options):
        """``brainsmith.build(model, blueprint, <folder>, **options)``, built once per run:
        the ``BuildResult`` of the shared folder, to read only."""
        from brainsmith.builder.result import BuildResult

        key = {"model": _value(Path(model)), "blueprint": _value(blueprint), **_value(options)}
        text = json.dumps(key, sort_keys=True, default=str)
        name = f"{Path(model).stem}-{hashlib.sha256(text.encode()).hexdigest()[:16]}"
        folder, done = self.root / name, self.root / f"{name}.{DONE}"
        with FileLock(str(self.root / f"{name}.farm-lock")):  # (<folder>.lock is the build's)
            if not done.is_file():
                self._make(model, blueprint, folder, options)
                record = {"key": key, "files": manifest(folder)}
                done.write_text(json.dumps(record, indent=1, default=str))
        return BuildResult.load(folder)

    @staticmethod
    def _make(model, blueprint, folder: Path, options: dict) -> None:
        import brainsmith

        shutil.rmtree(folder, ignore_errors=True)  # what a build that failed left
        brainsmith.build(str(model), None if blueprint is None else str(blueprint),
                         str(folder), **options)  # fmt: skip

    @staticmethod
    def copy(result, destination: Path):
        """A private copy of a shared build in ``destination``, to change as a test likes."""
        from brainsmith.builder.result import BuildResult

        shutil.copytree(result.output_dir, destination, symlinks=True)
        return BuildResult.load(destination)


def changed(root: Path) -> list[str]:
    """The files of the run's shared builds that differ from what their build wrote
    (changed, removed or added), as ``<build>/<file>``."""
    found = []
    for done in sorted((root / "farm").glob(f"*.{DONE}")):
        folder = done.with_name(done.name.removesuffix(f".{DONE}"))
        wrote = json.loads(done.read_text())["files"]
        now = manifest(folder) if folder.is_dir() else {}
        for path in sorted(set(wrote) | set(now)):
            if wrote.get(path) != now.get(path):
                found.append(f"{folder.name}/{path}")
    return found


REPO = Path(__file__).resolve().parents[2]
ULTRASCALE_PLUS = "xczu7ev-ffvc1156-2-e"


def all_rtl_mlp(farm: BuildFarm) -> Path:
    """The run's build of the shipped MLP with every layer RTL, for an UltraScale+ part
    (what ``synth`` and ``verify-rtl`` take), unverified."""
    result = farm.build(
        REPO / "examples" / "models" / "mlp_4bit.onnx",
        REPO / "blueprints" / "mlp.yaml",
        options={"fpga_part": ULTRASCALE_PLUS},
        prefer="rtl",
        verify="none",
    )
    return Path(result.output_dir)


def unplaced_mlp(farm: BuildFarm, base: Path) -> tuple[Path, Path]:
    """A private copy of the run's all-RTL MLP build in ``base`` and an empty private cache
    beside it, for a test that places and routes it (``BRAINSMITH_CACHE_DIR``)."""
    folder = Path(shutil.copytree(all_rtl_mlp(farm), base / "mlp", symlinks=True))
    cache = base / "cache"
    cache.mkdir(mode=0o700)
    return folder, cache


LATTICE_MLP_CLOCK_NS = 20.0  # 50 MHz: what the ECP5-85F's fabric makes of the MLP
# folded for 20,000 fps (2,500 cycles a frame at 50 MHz): 3,700 cells, placed and routed in 20 s
LATTICE_MLP_OPTIONS = {
    "board": "ulx3s-85f", "bitstream": True, "clock_ns": LATTICE_MLP_CLOCK_NS, "target_fps": 20_000,
}  # fmt: skip


def lattice_mlp(farm: BuildFarm) -> Path:
    """The run's build of the shipped MLP for a ULX3S-85F with its bitstream (``build.board``
    a Lattice board, ``build.bitstream``) at 50 MHz, unverified."""
    result = farm.build(
        REPO / "examples" / "models" / "mlp_4bit.onnx",
        REPO / "blueprints" / "mlp.yaml",
        options=LATTICE_MLP_OPTIONS,
        verify="none",
    )
    return Path(result.output_dir)


def all_rtl_conv(farm: BuildFarm) -> Path:
    """The run's build of the shipped padded convolution net (``conv_pad.onnx``) with every
    layer RTL, as ``brainsmith build MODEL --prefer rtl`` makes it, unverified."""
    result = farm.build(REPO / "examples" / "models" / "conv_pad.onnx", None,
                        prefer="rtl", verify="none")  # fmt: skip
    return Path(result.output_dir)
