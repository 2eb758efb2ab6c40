"""``brainsmith check MODEL [BLUEPRINT]``: what each node will become, before building."""

from __future__ import annotations

import json
import sys

import click

from brainsmith.blueprint.choices import PREFERENCES, board_examples
from brainsmith.cli.output import console, echo

TYPE_CHECKING = False
if TYPE_CHECKING:
    from rich.console import Console

    from brainsmith.commands.check_model import CheckResult, NodeVerdict

PLACES = {  # padded to one width: rich markup is not counted
    "hardware": "[green]hardware[/green]",
    "before": "    host",
    "after": "    host",
    "host": "    host",
    "tail": "    [yellow]host[/yellow]",
    "between": "  [bold red]BLOCKS[/bold red]",
    "fork": "  [bold red]BLOCKS[/bold red]",
    "backend": "  [bold red]BLOCKS[/bold red]",
    "unrunnable": "  [bold red]BLOCKS[/bold red]",
}
HEAD = ("node", "op type", "kernel", "backend")  # then the reason, "why"


@click.command()
@click.argument("model", type=click.Path(dir_okay=False))
@click.argument("blueprint", type=click.Path(dir_okay=False), required=False)
@click.option("--part", "fpga_part", metavar="PART", help="FPGA part (as for build).")
@click.option(
    "--board",
    metavar="BOARD",
    help="A board instead of a part (as for build): one of FINN's (Pynq-Z1, U250, ...) or "
    f"one brainsmith makes bitstreams for ({board_examples()}, ...; every layer RTL).",
)
@click.option(
    "--prefer",
    type=click.Choice(PREFERENCES),
    help="Backend type for layers that can have either (as for build).",
)
@click.option(
    "--exclude",
    multiple=True,
    metavar="KERNEL",
    help="Never use this kernel (repeatable; as for build).",
)
@click.option("--json", "as_json", is_flag=True, help="One JSON document, for tools.")
def check(model: str, blueprint: str | None, fpga_part: str | None, board: str | None,
          prefer: str | None, exclude: tuple[str, ...], as_json: bool) -> None:  # fmt: skip
    """Show what each node of MODEL will become with BLUEPRINT (default: the default
    blueprint), in seconds: no code is generated.

    Runs the flow up to hardware_inference and prints every node: the kernel and backend
    it becomes (and why that backend), what stays on the host and why, and for every node
    that would block the build, each installed kernel that would take it and the transform
    that does it, or that no installed plugin implements it.

    \b
    Exit codes: 0 the model can build; 1 nodes block the build (or a step failed);
    2 bad model or blueprint; 130 interrupted (SIGINT).
    """
    from brainsmith.builder import BuildError
    from brainsmith.commands.check_model import check as run_check
    from brainsmith.planning.errors import command_line_names

    with command_line_names():
        try:
            result = run_check(
                model, blueprint, options={"fpga_part": fpga_part, "board": board},
                prefer=prefer, exclude=exclude,
            )  # fmt: skip
        except BuildError as exc:
            echo(f"error: {exc.message()}", err=True)
            sys.exit(exc.exit_code)
        except KeyboardInterrupt:  # not "blocked" (1): the check did not finish
            echo("error: check interrupted (SIGINT); nothing was written", err=True)
            sys.exit(130)
    if as_json:
        click.echo(json.dumps(result.to_dict(), indent=2))
    else:
        show(result)
    sys.exit(0 if result.ok else 1)


def show(result: CheckResult) -> None:
    from rich.markup import escape

    out = console()
    _print_nodes(out, result.nodes)
    hardware = sum(n.placement == "hardware" for n in result.nodes)
    host = sum(n.placement in ("before", "after", "host", "tail") for n in result.nodes)
    out.print(
        f"{hardware} hardware layer(s), {host} node(s) on the host, "
        f"{len(result.blocking)} blocking; checked in {result.seconds:.1f} s"
    )
    if result.error:
        out.print(f"[bold red]error[/bold red] {escape(result.error)}", soft_wrap=True)
    elif result.blocking:
        out.print(_blocked(result.blocking))
    else:
        out.print(_ready(result.nodes) if hardware else NO_HARDWARE)
    if result.road:
        out.print(f"[bold]to a board[/bold]: {escape(result.road)}", soft_wrap=True)


NO_HARDWARE = "[bold red]no node becomes hardware[/bold red]: add kernels or use kernels: auto"


def _print_nodes(out: Console, nodes: list[NodeVerdict]) -> None:
    """One line per node: where it goes, its kernel and backend, and why."""
    from rich.markup import escape

    rows = [(n.name, n.op_type, n.kernel or "-", n.backend or "-", n.placement, n.reason)
            for n in nodes]  # fmt: skip
    widths = [max([len(r[i]) for r in rows] + [len(HEAD[i])]) for i in range(4)]
    head = "  ".join(h.ljust(w) for h, w in zip(HEAD, widths, strict=True))
    out.print(f"[bold]   place  {escape(head)}  why[/bold]", soft_wrap=True)
    for name, op, kernel, backend, placement, reason in rows:
        cells = [name, op, kernel, backend]
        text = "  ".join(escape(c.ljust(w)) for c, w in zip(cells, widths, strict=True))
        out.print(f"{PLACES[placement]}  {text}  {escape(reason)}", soft_wrap=True)


def _blocked(blocking: list[NodeVerdict]) -> str:
    """Where the build would stop."""
    places = {n.placement for n in blocking}
    if places == {"unrunnable"}:
        return (
            "[bold red]the build would stop[/bold red]: the host cannot run the nodes marked BLOCKS"
        )
    step = "specialize" if places == {"backend"} else "hardware_inference"
    return f"[bold red]the build would stop at {step}[/bold red] (the nodes marked BLOCKS)"


def _ready(nodes: list[NodeVerdict]) -> str:
    """Ready to build, naming the nodes left on the host after the accelerator."""
    from rich.markup import escape

    tail = sum(n.placement in ("tail", "after") for n in nodes)
    starts = ", ".join(n.name for n in nodes if n.placement == "tail")
    if not starts:
        return "[green]ready to build[/green]"
    return (
        f"[yellow]ready to build[/yellow], with {tail} node(s) on the host after the "
        f"accelerator, from {escape(starts)} on (no hardware layer computes it)"
    )
