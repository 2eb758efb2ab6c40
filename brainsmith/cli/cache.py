"""``brainsmith cache``: where the discovery index lives, and clearing it."""

from __future__ import annotations

import click

from brainsmith.cli.output import console


@click.group()
def cache() -> None:
    """Inspect or clear the discovery cache."""


@cache.command("clear")
def clear() -> None:
    """Delete the persisted discovery index (it is rebuilt on next use)."""
    from brainsmith.plugin.manager import get_plugin_manager

    manager = get_plugin_manager()
    removed = manager.clear_cache()
    console().print(
        f"removed {removed} cache file(s) from {manager.config.cache_dir}", markup=False
    )


@cache.command("info")
def info() -> None:
    """Show the cache directory, TTL and files."""
    import os

    from brainsmith.plugin.manager import get_plugin_manager

    config = get_plugin_manager().config
    out = console()
    out.print(f"directory: {config.cache_dir}", markup=False)
    out.print(f"ttl: {config.cache_ttl:g} s", markup=False)
    try:
        names = sorted(os.listdir(config.cache_dir))
    except OSError:
        names = []
    for name in names:
        size = os.path.getsize(os.path.join(config.cache_dir, name))
        out.print(f"  {name}  {size / 1024:.1f} KiB", markup=False)
