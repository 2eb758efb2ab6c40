"""Build real plugin distributions (wheels) and pip-install them into a private site dir."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

PIP = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]


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
    )


def build_wheel(project: Path, out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [*PIP, "wheel", "--no-deps", "--no-build-isolation", "-w", str(out), str(project)],
        check=True,
        capture_output=True,
    )
    name = project.name.replace("-", "_")
    return next(out.glob(f"{name}-*.whl"))


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
        )

    def install(self, wheel: Path) -> None:
        self.pip("install", "--no-deps", "--no-index", str(wheel))

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
