"""``brainsmith cache``: where the discovery index lives, and clearing it."""

from __future__ import annotations

import click

from brainsmith.cli.output import console


@click.group()
def cache() -> None:
    """Inspect or clear the discovery cache."""


@cache.command("clear")
def clear() -> None:
    """Delete the persisted discovery index (it is rebuilt on next use).

    Also removes the parsed form of the project's config.yaml kept beside it. Only files
    brainsmith wrote are removed (``*.bsm`` files that start with its header, and temp files of
    interrupted writes), and only from a directory that is the user's own."""
    from brainsmith.cli.output import fail
    from brainsmith.plugin.errors import CacheDirectoryError
    from brainsmith.plugin.manager import get_plugin_manager

    manager = get_plugin_manager()
    try:
        removed = manager.clear_cache()
    except CacheDirectoryError as exc:
        fail(str(exc))
    where = manager.config.cache_dir
    if manager.config.project_file:
        from brainsmith.plugin.settings.config import memo_folder

        where += f" and {memo_folder(manager.config.project_file)}"
    console().print(f"removed {removed} cache file(s) from {where}", markup=False)


@cache.command("info")
def info() -> None:
    """Show the cache directory, TTL and brainsmith's files in it."""
    import os

    from brainsmith.plugin.manager import get_plugin_manager
    from brainsmith.plugin.settings import memo

    config = get_plugin_manager().config
    out = console()
    out.print(f"directory: {config.cache_dir}", markup=False)
    problem = memo.dir_problem(config.cache_dir) if os.path.lexists(config.cache_dir) else None
    if problem:
        out.print(f"warning: {problem}", markup=False)
    out.print(f"ttl: {config.cache_ttl:g} s", markup=False)
    for name in memo.memo_files(config.cache_dir):
        try:
            size = os.lstat(os.path.join(config.cache_dir, name)).st_size
        except OSError:
            continue
        out.print(f"  {name}  {size / 1024:.1f} KiB", markup=False)
