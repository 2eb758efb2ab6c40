"""Rendering helpers shared by the CLI commands (rich is imported only when printing)."""

from __future__ import annotations

import json
import sys

import click

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NoReturn

    from rich.console import Console


def console(stderr: bool = False) -> Console:
    """The commands' rich console: what it prints goes through ``terminal.printable``."""
    from brainsmith.terminal import console as safe_console

    shown: Console = safe_console(stderr=stderr, highlight=False, soft_wrap=False)
    return shown


def echo(text: str, err: bool = False) -> None:
    """``click.echo`` of text that may come from files, caches or plugins."""
    from brainsmith.terminal import printable

    click.echo(printable(text), err=err)


def print_json(data: object) -> None:
    click.echo(json.dumps(data, indent=2, sort_keys=True, default=str))


def fail(message: str, code: int = 1) -> NoReturn:
    echo(f"error: {message}", err=True)
    sys.exit(code)
