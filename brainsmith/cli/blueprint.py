"""``brainsmith blueprint``: validate blueprints like a compiler, show them resolved."""

from __future__ import annotations

import sys

import click

from brainsmith.cli.output import fail, print_json

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from brainsmith.blueprint import Blueprint


@click.group()
def blueprint() -> None:
    """Validate and show YAML blueprints."""


@blueprint.command("validate")
@click.argument("files", nargs=-1, required=True)
def validate(files: tuple[str, ...]) -> None:
    """Check blueprints; print one "file:line:column: error: ..." line per problem.

    Exit code 0 when every FILE is valid, 1 otherwise.
    """
    from brainsmith.blueprint import BlueprintError, load_blueprint

    failed = 0
    for path in files:
        try:
            loaded = _guarded(load_blueprint, path)
        except BlueprintError as exc:
            failed += 1
            for problem in exc.problems:
                click.echo(str(problem))
            continue
        for note in loaded.skipped:
            click.echo(str(note))
        click.echo(f"{path}: ok ({_summary(loaded)})")
    if failed:
        click.echo(f"{failed} of {len(files)} blueprint(s) have errors", err=True)
        sys.exit(1)


def _summary(loaded: Blueprint) -> str:
    """``3 transforms, 2 kernels listed + auto, 4 backends, 12 steps, 8 variants``."""
    counts = {kind: len(specs) for kind, specs in loaded.specs().items()}
    summary = ", ".join(f"{n} {kind}{'s' if n != 1 else ''}" for kind, n in counts.items())
    if loaded.auto_kernels:
        summary = summary.replace("kernels,", "kernels listed + auto,", 1)
        summary = summary.replace("kernel,", "kernel listed + auto,", 1)
    if loaded.design_space is not None:
        summary += f", {loaded.design_space.count} variants"
    return summary


@blueprint.command("show")
@click.argument("file")
@click.option("--json", "as_json", is_flag=True, help="JSON instead of YAML.")
def show(file: str, as_json: bool) -> None:
    """Print FILE resolved: after extends, every plugin name qualified, defaults filled in.

    A blueprint with a design_space: also gets its variant count and execution tree, as
    comments after the YAML.
    """
    from brainsmith.blueprint import BlueprintError, load_blueprint

    try:
        loaded = _guarded(load_blueprint, file)
    except BlueprintError as exc:
        for problem in exc.problems:
            click.echo(str(problem), err=True)
        sys.exit(1)
    for note in loaded.skipped:
        click.echo(str(note), err=True)
    if as_json:
        print_json(loaded.to_dict())
        return
    import yaml

    click.echo(yaml.safe_dump(loaded.to_dict(), sort_keys=False, allow_unicode=True), nl=False)
    if loaded.design_space is not None:
        for line in _space_lines(loaded, loaded.design_space.count):
            click.echo(f"# {line}")


def _space_lines(loaded: Blueprint, count: int) -> list[str]:
    """The variant count and execution tree, or why there is none (as YAML comments);
    ``count`` variants."""
    from brainsmith.dse.tree import describe_space
    from brainsmith.planning.plan import PlanError

    try:
        return describe_space(loaded)
    except PlanError as exc:
        return [f"design space: {count} variants; no tree: {exc}"]


def _guarded(load: Callable[[str], Blueprint], path: str) -> Blueprint:
    """Configuration problems are not the blueprint's: report them and exit 2."""
    from brainsmith.plugin.errors import ConfigError

    try:
        return load(path)
    except ConfigError as exc:
        fail(str(exc), 2)
