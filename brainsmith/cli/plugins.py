"""``brainsmith plugins``: list, info, health, stats."""

from __future__ import annotations

import sys

import click

from brainsmith.cli.output import console, echo, fail, print_json
from brainsmith.plugin.spec import PLUGIN_TYPES


@click.group()
def plugins() -> None:
    """List, inspect, check and watch plugins.

    \b
    Examples:
      brainsmith plugins list --type kernel --framework finn
      brainsmith plugins info finn:Streamline --load
      brainsmith plugins health --json
      brainsmith plugins watch
    """


@plugins.command("list")
@click.option(
    "--type", "-t", "plugin_type", type=click.Choice(PLUGIN_TYPES), help="Only this type."
)
@click.option(
    "--framework", "-f", help="Only this framework (brainsmith, qonnx, finn, user, a package)."
)
@click.option("--all", "show_all", is_flag=True, help="Include unavailable plugins and problems.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def list_plugins(
    plugin_type: str | None, framework: str | None, show_all: bool, as_json: bool
) -> None:
    """List registered plugins."""
    registry = _registry_or_exit()
    specs = registry.specs(plugin_type, framework)
    if framework and not specs and framework not in registry.frameworks():
        known = ", ".join(registry.frameworks()) or "none"
        fail(f"no plugins from framework '{framework}' (known frameworks: {known})")
    if not show_all:
        specs = [s for s in specs if not (s.error or "").startswith("unavailable:")]
    specs.sort(key=lambda s: (PLUGIN_TYPES.index(s.type), s.framework, s.name.lower()))
    if as_json:
        print_json([s.as_dict() for s in specs])
        return
    from rich.table import Table

    table = Table(title=f"{len(specs)} plugins", title_justify="left")
    for column in ("type", "name", "framework", "description"):
        table.add_column(column, overflow="fold" if column == "description" else "ellipsis")
    for spec in specs:
        description = spec.description
        if spec.error:
            description = f"[red]{spec.error}[/red]"
        table.add_row(spec.type, spec.name, spec.framework, description)
    console().print(table)
    problems = registry.problems
    if problems and show_all:
        console().print(f"[yellow]{len(problems)} problem(s):[/yellow]")
        for problem in problems:
            console().print(f"  {problem.plugin}: {problem.reason}", markup=False)
    elif problems:
        console(stderr=True).print(
            f"[yellow]{len(problems)} plugin problem(s); see `brainsmith plugins health`[/yellow]"
        )


@plugins.command("info")
@click.argument("name")
@click.option(
    "--type", "-t", "plugin_type", type=click.Choice(PLUGIN_TYPES), help="Disambiguate by type."
)
@click.option("--load", is_flag=True, help="Also import the plugin to check that it loads.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def info(name: str, plugin_type: str | None, load: bool, as_json: bool) -> None:
    """Show a plugin's metadata, source, framework and load status.

    NAME may be short (Streamline) or qualified (finn:Streamline). With --load the exit
    code is 1 when the plugin fails to import.
    """
    from brainsmith.plugin.errors import PluginError, PluginNotFoundError

    registry = _registry_or_exit()
    types = [plugin_type] if plugin_type else list(PLUGIN_TYPES)
    found = []
    for t in types:
        try:
            found.append(registry.find(t, name))
        except PluginNotFoundError:
            found.extend(registry.find_case_insensitive(t, name)[:1])
    if not found:
        fail(_closest_miss(registry, types, name))
    payload = []
    failed = False
    for spec in found:
        if load:
            try:
                registry.load(spec)
            except PluginError:
                failed = True  # shown as the plugin's status below
        entry = spec.as_dict()
        entry["also_provided_by"] = [
            s.qualified_name for s in registry.candidates(spec.type, spec.name) if s is not spec
        ]
        payload.append(entry)
    if as_json:
        print_json(payload if len(payload) > 1 else payload[0])
    else:
        _print_info(payload)
    if failed:
        raise SystemExit(1)


def _print_info(payload: list[dict]) -> None:
    from rich.markup import escape

    out = console()
    for entry in payload:
        status = "loaded" if entry["loaded"] else "not loaded (imported on first use)"
        if entry["error"]:
            status = f"[red]{escape(entry['error'])}[/red]"
        out.print(f"[bold]{entry['type']} {entry['qualified_name']}[/bold]")
        rows = [
            ("description", entry["metadata"].get("description", "")),
            ("target", entry["target"]),
            ("source", f"{entry['source']}:{entry['metadata'].get('line', '')}".rstrip(":")),
            ("status", status),
        ]
        rows += [
            (k, str(v))
            for k, v in sorted(entry["metadata"].items())
            if k not in ("description", "line", "plugin_dir")
        ]
        if entry["also_provided_by"]:
            rows.append(("also provided by", ", ".join(entry["also_provided_by"])))
        for key, value in rows:
            out.print(f"  {key:<17} {value}", markup=key == "status", highlight=False)


@plugins.command("health")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def health(as_json: bool) -> None:
    """Check the plugin system; exit code 0 healthy, 1 degraded, 2 unhealthy."""
    from brainsmith.plugin.manager import get_plugin_manager

    report = get_plugin_manager().health_check()
    if as_json:
        print_json(report)
    else:
        out = console()
        color = {"healthy": "green", "degraded": "yellow", "unhealthy": "red"}[report["status"]]
        out.print(f"status: [{color}]{report['status']}[/{color}]")
        out.print(f"plugins: {report.get('plugin_count', 0)}")
        frameworks = ", ".join(
            f"{fw} {'yes' if ok else 'no'}" for fw, ok in report["frameworks"].items()
        )
        out.print(f"frameworks: {frameworks}", markup=False)
        for fw, hint in report.get("missing_frameworks", {}).items():
            out.print(f"  {fw}: {hint}", markup=False)
        cache = "yes" if report["cache_available"] else "no (results are not persisted)"
        out.print(f"cache: {cache} ({report.get('cache_dir', '')})", markup=False)
        if report.get("error"):
            out.print(f"error: {report['error']}", markup=False)
        for problem in report["broken_plugins"]:
            out.print(f"  broken: {problem['plugin']}: {problem['reason']}", markup=False)
        for line in report.get("shadowed_plugins", []):
            out.print(f"  shadowed: {line}", markup=False, soft_wrap=True)
    raise SystemExit({"healthy": 0, "degraded": 1, "unhealthy": 2}[report["status"]])


@plugins.command("stats")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def stats(as_json: bool) -> None:
    """Discovery time, cache use, memory and plugin counts of this process."""
    from brainsmith.plugin.manager import get_plugin_manager

    manager = get_plugin_manager()
    data = manager.get_performance_stats()
    if as_json:
        print_json(data)
        return
    out = console()
    for key, value in data.items():
        out.print(f"{key:<22} {value}", markup=False, highlight=False)
    if not data["performance_tracking"]:
        where = manager.config.project_file or "the configuration"
        out.print(
            f"performance tracking is off (plugin_system.performance_tracking in {where}); "
            "only plugin counts are shown",
            markup=False,
        )


@plugins.command("watch")
def watch() -> None:
    """Hot-reload the plugin folders: report every change as it happens, until Ctrl-C.

    New, edited and deleted plugin files are picked up at once: each change is printed as
    + added, - removed, ~ changed (served from the new code on next use), ! a new problem.
    """
    import threading

    from brainsmith.plugin.errors import ConfigError, PluginError
    from brainsmith.plugin.manager import get_plugin_manager

    def report(changes) -> None:
        for line in changes.lines():
            echo(line)
        sys.stdout.flush()

    manager = get_plugin_manager()
    try:
        watcher = manager.watch(on_change=report)
    except (ConfigError, PluginError) as exc:
        fail(str(exc), 2)
    folders = manager.config.plugin_dirs
    noun = "plugin folder" if len(folders) == 1 else "plugin folders"
    click.echo(f"watching {len(folders)} {noun}: {', '.join(folders)} (Ctrl-C to stop)")
    sys.stdout.flush()
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        watcher.stop()


def _closest_miss(registry, types: list[str], name: str) -> str:
    """The not-found message of the type whose plugin names come closest to ``name``."""
    import difflib

    def closeness(plugin_type: str) -> float:
        names = [s.name for s in registry.specs(plugin_type)]
        return max(
            (difflib.SequenceMatcher(None, name.lower(), n.lower()).ratio() for n in names),
            default=0.0,
        )

    best = max(types, key=closeness)
    return registry.not_found_message(best, name)


def _registry_or_exit():
    from brainsmith.plugin.errors import ConfigError
    from brainsmith.plugin.manager import get_plugin_manager

    try:
        return get_plugin_manager().registry()
    except ConfigError as exc:
        fail(str(exc), 2)
