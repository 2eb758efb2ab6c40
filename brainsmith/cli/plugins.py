"""``brainsmith plugins``: list, info, health, stats."""

from __future__ import annotations

import sys

import click

from brainsmith.cli.output import console, echo, fail, print_json
from brainsmith.plugin.spec import PLUGIN_TYPES

TYPE_CHECKING = False
if TYPE_CHECKING:
    from rich.table import Table

    from brainsmith.files import Json
    from brainsmith.plugin.registry import Registry, RegistryChanges
    from brainsmith.plugin.services.records import Health, PerformanceStats
    from brainsmith.plugin.spec import PluginProblem, PluginSpec


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
    """List registered plugins (one plain line each when the output is not a terminal)."""
    registry = _registry_or_exit()
    specs = registry.specs(plugin_type, framework)
    problems = _problems(registry, framework)
    if framework and not specs and not problems:
        _known_framework(registry, framework)
    specs = _listed(specs, show_all)
    if as_json:
        print_json([s.as_dict() for s in specs])
        return
    _print_listing(specs, framework)
    if problems:
        _print_problems(problems, show_all)


def _problems(registry: Registry, framework: str | None) -> list[PluginProblem]:
    return [p for p in registry.problems if framework is None or p.source == framework]


def _print_listing(specs: list[PluginSpec], framework: str | None) -> None:
    if specs:
        _print_specs(specs)
    else:
        echo(f"no working plugins from framework '{framework}'" if framework else "no plugins")


def _known_framework(registry: Registry, framework: str) -> None:
    """Fails naming the known frameworks when ``framework`` is not one of them."""
    if framework not in registry.frameworks():
        known = ", ".join(registry.frameworks()) or "none"
        fail(f"no plugins from framework '{framework}' (known frameworks: {known})")


def _listed(specs: list[PluginSpec], show_all: bool) -> list[PluginSpec]:
    """By type, framework and name; without ``show_all``, only the available ones."""
    if not show_all:
        specs = [s for s in specs if not (s.error or "").startswith("unavailable:")]
    return sorted(specs, key=lambda s: (PLUGIN_TYPES.index(s.type), s.framework, s.name.lower()))


def _print_specs(specs: list[PluginSpec]) -> None:
    """A table on a terminal; elsewhere plain aligned lines, nothing cut."""
    from rich.text import Text

    from brainsmith.terminal import table as data_table

    out = console()
    if not out.is_terminal:
        _print_plain(specs)
        return
    table = data_table(title=f"{len(specs)} plugins", title_justify="left")
    for column in HEAD:
        table.add_column(column, overflow="fold")
    for spec in specs:
        description = Text(spec.error, style="red") if spec.error else Text(spec.description)
        table.add_row(spec.type, spec.name, spec.framework, description)
    out.print(table)


def _print_plain(specs: list[PluginSpec]) -> None:
    """One aligned line per plugin, its description whole."""
    rows = [(s.type, s.name, s.framework, s.error or s.description) for s in specs]
    widths = [max(len(r[i]) for r in [HEAD, *rows]) for i in range(3)]
    echo(f"{len(specs)} plugins")
    for row in [HEAD, *rows]:
        echo("  ".join([*(c.ljust(w) for c, w in zip(row, widths, strict=False)), row[3]]))


def _print_problems(problems: list[PluginProblem], show_all: bool) -> None:
    """Every problem with its reason (``--all``), else a line on stderr naming them."""
    if show_all:
        console().print(f"[yellow]{len(problems)} problem(s):[/yellow]")
        for problem in problems:
            echo(f"  {problem.plugin}: {problem.reason}")
        return
    names = ", ".join(p.plugin for p in problems[:3]) + (", ..." if len(problems) > 3 else "")
    echo(
        f"{len(problems)} plugin problem(s): {names}; --all or `brainsmith plugins health` "
        "says why",
        err=True,
    )


HEAD = ("type", "name", "framework", "description")


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
    registry = _registry_or_exit()
    types = [plugin_type] if plugin_type else list(PLUGIN_TYPES)
    found = _found(registry, types, name)
    if not found:
        fail(_closest_miss(registry, types, name))
    loaded = [_info_entry(registry, spec, load) for spec in found]
    payload = [entry for entry, _ in loaded]
    if as_json:
        print_json(payload if len(payload) > 1 else payload[0])
    else:
        _print_info(payload)
    if any(failed for _, failed in loaded):
        raise SystemExit(1)


def _found(registry: Registry, types: list[str], name: str) -> list[PluginSpec]:
    """The plugin named ``name`` of each of ``types`` (any case when not exactly)."""
    from brainsmith.plugin.errors import PluginNotFoundError

    found = []
    for t in types:
        try:
            found.append(registry.find(t, name))
        except PluginNotFoundError:
            found.extend(registry.find_case_insensitive(t, name)[:1])
    return found


def _info_entry(registry: Registry, spec: PluginSpec, load: bool) -> tuple[Json, bool]:
    """The spec as a dict, after loading it (``load``), with the others of its name; and
    whether it failed to load."""
    from brainsmith.plugin.errors import PluginError

    failed = False
    if load:
        try:
            registry.load(spec)
        except PluginError:
            failed = True  # shown as the plugin's status below
    entry = spec.as_dict()
    entry["also_provided_by"] = [
        s.qualified_name for s in registry.candidates(spec.type, spec.name) if s is not spec
    ]
    return entry, failed


def _print_info(payload: list[Json]) -> None:
    from rich.markup import escape

    out = console()
    for entry in payload:
        status = "loaded" if entry["loaded"] else "not loaded (imported on first use)"
        if entry["error"]:
            status = f"[red]{escape(entry['error'])}[/red]"
        out.print(
            f"[bold]{escape(entry['type'])} {escape(entry['qualified_name'])}[/bold]",
            soft_wrap=True,
        )
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
            out.print(  # one line per key: a pipe gets whole lines, a terminal wraps them
                f"  {key:<17} {value}", markup=key == "status", highlight=False, soft_wrap=True
            )


@plugins.command("health")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def health(as_json: bool) -> None:
    """Check the plugin system; exit code 0 healthy, 1 degraded, 2 unhealthy."""
    from brainsmith.plugin.manager import get_plugin_manager

    report = get_plugin_manager().health_check()
    if as_json:
        print_json(report)
    else:
        _print_health(report)
    raise SystemExit({"healthy": 0, "degraded": 1, "unhealthy": 2}[report["status"]])


def _print_health(report: Health) -> None:
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
    out.print(
        f"[bold]{data['plugin_count']} plugins[/bold] ({data['loaded_plugins']} loaded, "
        f"{data['instances_cached']} instances cached)"
    )
    out.print(_counts_table(data))
    if not data["performance_tracking"]:
        where = manager.config.project_file or "the configuration"
        out.print(
            f"performance tracking is off (plugin_system.performance_tracking in {where}); "
            "only plugin counts are shown",
            markup=False,
        )
        return
    out.print("[bold]discovery[/bold] (this process)")
    out.print(_discovery_table(data))


def _counts_table(data: PerformanceStats) -> Table:
    """Plugins by type beside plugins by framework."""
    from itertools import zip_longest

    from brainsmith.terminal import table as data_table

    table: Table = data_table(box=None, pad_edge=False)
    for column in ("type", "plugins", "", "framework", "plugins"):
        table.add_column(column, justify="right" if column == "plugins" else "left")
    pairs = zip_longest(data["plugins_by_type"].items(), data["plugins_by_framework"].items())
    for by_type, by_framework in pairs:
        kind, count = by_type or ("", "")
        framework, number = by_framework or ("", "")
        table.add_row(kind, str(count), "", framework, str(number))
    return table


def _discovery_table(data: PerformanceStats) -> Table:
    """This process's discovery: its time, the index cache, memory, per-source times."""
    from brainsmith.terminal import table as data_table

    table: Table = data_table(box=None, pad_edge=False, show_header=False)
    table.add_column()
    table.add_column()
    where = "shared (Redis)" if data["index_from_shared_cache"] else "local"
    runs = data["discoveries"]
    rows = [
        ("time", f"{data['discovery_time_ms']:,.1f} ms in {runs} run{'s' * (runs != 1)}"),
        ("index cache", f"{data['index_cache']} ({where})"),
        ("cache hit rate", f"{data['cache_hit_rate']:.0%}"),
        ("files parsed", str(data["files_parsed"])),
        ("memory", f"{data['memory_usage_mb']:,.1f} MB"),
    ]
    rows += [(f"  {name}", f"{ms:,.1f} ms") for name, ms in data["source_timings_ms"].items()]
    for key, value in rows:
        table.add_row(key, value)
    return table


@plugins.command("watch")
def watch() -> None:
    """Hot-reload the plugin folders: report every change as it happens, until Ctrl-C.

    New, edited and deleted plugin files are picked up at once: each change is printed as
    + added, - removed, ~ changed (served from the new code on next use), ! a new problem.
    """
    import threading

    from brainsmith.plugin.errors import ConfigError, PluginError
    from brainsmith.plugin.manager import get_plugin_manager

    def report(changes: RegistryChanges) -> None:
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


def _closest_miss(registry: Registry, types: list[str], name: str) -> str:
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


def _registry_or_exit() -> Registry:
    from brainsmith.plugin.errors import ConfigError
    from brainsmith.plugin.manager import get_plugin_manager

    try:
        return get_plugin_manager().registry()
    except ConfigError as exc:
        fail(str(exc), 2)
