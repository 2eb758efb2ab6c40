"""Build real plugin distributions (wheels) and pip-install them into a private site dir."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from importlib.metadata import version
from pathlib import Path

from tests.support.tool_cache import kept_root

PIP = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]


def pip_env(python: Path | str = sys.executable, base: dict | None = None) -> dict[str, str]:
    """``base`` (this environment) for a pip command run by ``python``, with PATH only that
    Python's own folder. pip puts ``lsb_release -a`` and ``rustc --version`` into its user
    agent, 18 processes a command on this machine; with neither on PATH it installs and builds
    the same wheels (it runs the build back end by its own Python's full path)."""
    return {**(os.environ if base is None else base), "PATH": str(Path(python).parent)}


def write_project(
    root: Path,
    dist: str,
    module: str,
    source: str,
    entry_points: dict | None = None,
    extra_files: dict | None = None,
    group: str = "brainsmith.plugins",
) -> Path:
    """A minimal setuptools project whose module is registered under ``group``
    (``entry_points={}``: a plain package that declares no plugins)."""
    project = root / dist
    (project / module).mkdir(parents=True, exist_ok=True)
    (project / module / "__init__.py").write_text(textwrap.dedent(source))
    for name, text in (extra_files or {}).items():
        (project / module / name).write_text(textwrap.dedent(text))
    eps = {"plugins": module} if entry_points is None else entry_points
    ep_lines = "\n".join(f'{name} = "{value}"' for name, value in eps.items())
    (project / "pyproject.toml").write_text(
        textwrap.dedent(f"""\
        [build-system]
        requires = ["setuptools>=68"]
        build-backend = "setuptools.build_meta"

        [project]
        name = "{dist}"
        version = "1.0.0"

        [project.entry-points."{group}"]
        """)
        + ep_lines
        + '\n\n[tool.setuptools]\npackages = ["'
        + module
        + '"]\n'
    )
    return project


def pip_install_target(wheel: Path, target: Path) -> None:
    """``pip install --target``: a plain folder of packages, used through ``PYTHONPATH``."""
    subprocess.run(
        [*PIP, "install", "--no-deps", "--no-index", "--target", str(target), str(wheel)],
        check=True,
        capture_output=True,
        env=pip_env(),
    )


def build_wheel(project: Path, out: Path) -> Path:
    """``pip wheel`` of ``project`` into ``out``. A wheel an earlier run built from the same
    files, with the same pip, setuptools and Python, is taken from the kept tool cache
    (``tests.support.tool_cache``) instead of being built again."""
    out.mkdir(parents=True, exist_ok=True)
    root = kept_root()
    kept = root / "wheels" / _wheel_key(project) if root else None
    if kept is not None and kept.is_dir():
        (wheel,) = kept.glob("*.whl")
        return Path(shutil.copy2(wheel, out / wheel.name))
    subprocess.run(
        [*PIP, "wheel", "--no-deps", "--no-build-isolation", "-w", str(out), str(project)],
        check=True,
        capture_output=True,
        env=pip_env(),
    )
    name = project.name.replace("-", "_")
    wheel = next(out.glob(f"{name}-*.whl"))
    if kept is not None:
        _keep(wheel, kept)
    return wheel


def _wheel_key(project: Path) -> str:
    """The project's files (names and bytes) and the versions that build its wheel."""
    digest = hashlib.sha256(f"{sys.version}|{version('pip')}|{version('setuptools')}".encode())
    for path in sorted(p for p in project.rglob("*") if p.is_file()):
        name = path.relative_to(project)
        if name.parts[0] == "build" or any(part.endswith(".egg-info") for part in name.parts):
            continue  # what a wheel build leaves in the project
        digest.update(str(name).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:32]


def _keep(wheel: Path, kept: Path) -> None:
    """``wheel`` into ``kept`` whole or not at all: staged beside it, then renamed."""
    kept.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=kept.parent, prefix=".staging-"))
    shutil.copy2(wheel, staging / wheel.name)
    try:
        os.rename(staging, kept)
    except OSError:  # another worker kept the same wheel first
        shutil.rmtree(staging, ignore_errors=True)


class PluginVenv:
    """A real virtualenv that sees the project's environment and takes real pip installs."""

    def __init__(self, root: Path) -> None:
        import site
        import venv

        self.root = root
        venv.create(root, with_pip=False)
        self.python = root / "bin" / "python"
        purelib = subprocess.run(
            [str(self.python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
        self.site = Path(purelib)
        parents = [p for p in site.getsitepackages() if Path(p).is_dir()]
        lines = [f"import site; site.addsitedir({p!r})" for p in parents]
        (self.site / "_project_env.pth").write_text("\n".join(lines) + "\n")

    def pip(self, *args: str) -> None:
        subprocess.run(
            [str(self.python), "-m", "pip", "--disable-pip-version-check", "-q", *args],
            check=True,
            capture_output=True,
            env=pip_env(self.python),
        )

    def install(self, *wheels: Path) -> None:
        """``wheels`` installed by one pip command."""
        self.pip("install", "--no-deps", "--no-index", *map(str, wheels))

    def add_scripts(self, *names: str) -> None:
        """The project environment's console scripts (``brainsmith``, ``pytest``) run by this
        venv's Python, as pip writes them into an environment it installs them in."""
        for name in names:
            body = (Path(sys.executable).parent / name).read_text().partition("\n")[2]
            script = self.root / "bin" / name
            script.write_text(f"#!{self.python}\n{body}")
            script.chmod(0o755)

    def uninstall(self, dist: str) -> None:
        self.pip("uninstall", "-y", dist)

    def run(self, code: str, env: dict, cwd: Path | None = None, timeout: float = 300):
        import os

        return subprocess.run(
            [str(self.python), "-c", textwrap.dedent(code)],
            capture_output=True,
            text=True,
            env={**os.environ, **env},
            cwd=cwd,
            timeout=timeout,
        )
