"""The ``brainsmith`` command.

``brainsmith --help`` is answered from the help text click rendered last time (kept in the
cache directory, keyed by brainsmith's version, the terminal width and the command line's
source files), so it needs neither click nor any subcommand; everything else runs the click
group in ``brainsmith.cli.app``, which imports a subcommand only when it runs.
"""

from __future__ import annotations

import os
import sys

HELP_FLAGS = (["--help"], ["-h"])


def main() -> None:
    if sys.argv[1:] in HELP_FLAGS:
        print(_top_level_help())
        return
    from brainsmith.cli.app import run

    run()


def _top_level_help() -> str:
    from brainsmith.plugin.discovery.stamps import stamp_paths
    from brainsmith.plugin.settings import memo
    from brainsmith.version import __version__

    here = os.path.dirname(os.path.abspath(__file__))
    key = [
        __version__,
        _width(),
        stamp_paths(
            [
                os.path.join(here, "__init__.py"),
                os.path.join(here, "app.py"),
                os.path.join(here, "..", "hardware", "place_route", "parts.py"),
            ]
        ),
    ]
    text = memo.read("cli-help", key, quiet=True)
    if isinstance(text, str):
        return text
    from brainsmith.cli.app import top_level_help

    text = top_level_help()
    memo.write("cli-help", key, text, quiet=True)
    return text


def _width() -> int:
    """The width click formats help for: the terminal's (``COLUMNS`` first), at most 80."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 80
    return min(columns, 80)


def __getattr__(name: str) -> object:
    """The click group and its helpers, from ``brainsmith.cli.app`` (imported on first use)."""
    if name in ("cli", "run", "LazyGroup", "COMMANDS", "_foreign_exit", "top_level_help"):
        from brainsmith.cli import app

        found: object = getattr(app, name)
        return found
    raise AttributeError(f"module 'brainsmith.cli' has no attribute {name!r}")
