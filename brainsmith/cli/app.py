"""The ``brainsmith`` command group (click). Subcommands are imported only when run."""

from __future__ import annotations

import importlib

import click

COMMANDS = {
    "plugins": ("brainsmith.cli.plugins:plugins", "List, inspect and check plugins."),
    "cache": ("brainsmith.cli.cache:cache", "Inspect or clear the discovery cache."),
    "blueprint": ("brainsmith.cli.blueprint:blueprint", "Validate and show YAML blueprints."),
    "check": (
        "brainsmith.cli.check:check",
        "Show what each node of a model will become, before building.",
    ),
    "build": ("brainsmith.cli.build:build", "Build a QONNX model into a FINN dataflow design."),
    "explore": (
        "brainsmith.cli.explore:explore",
        "Build every variant of a design space, on Dask.",
    ),
    "verify-rtl": (
        "brainsmith.cli.verify_rtl:verify_rtl",
        "Simulate a build's RTL layers with Verilator, bit-exact against Python.",
    ),
    "synth": (
        "brainsmith.cli.synth:synth",
        "Synthesise a build's RTL layers with Yosys: LUT, FF, DSP, BRAM per layer.",
    ),
    "place-route": (
        "brainsmith.cli.place_route:place_route",
        "Place and route a whole all-RTL build on an {families} part: Fmax, resources, bitstream.",
    ),
    "bitstream": (
        "brainsmith.cli.place_route:bitstream",
        "Make a whole all-RTL build into a board's bitstream behind the UART host link.",
    ),
    "flash": (
        "brainsmith.cli.flash:flash",
        "Load a build's bitstream onto its board with openFPGALoader (SRAM, or --flash).",
    ),
    "run": (
        "brainsmith.cli.run:run",
        "Run a build's design on a board (or a simulated one) through the UART host link.",
    ),
    "export": (
        "brainsmith.cli.export:export",
        "Copy a build's accelerator to a folder that simulates and packages alone.",
    ),
    "new": ("brainsmith.cli.new:new", "Start a plugin package (a hardware layer) from a template."),
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS:
            return None
        module, _, attr = COMMANDS[name][0].partition(":")
        command: click.Command = getattr(importlib.import_module(module), attr)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        from brainsmith.hardware.place_route.parts import built_in_families  # for help only

        families = built_in_families()
        with formatter.section("Commands"):
            formatter.write_dl([(name, text.replace("{families}", families))
                                for name, (_, text) in COMMANDS.items()])  # fmt: skip


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="brainsmith", prog_name="brainsmith")
@click.option("--debug", is_flag=True, help="Log discovery, cache decisions and plugin loads.")
def cli(debug: bool) -> None:
    """brainsmith: the plugin hub for FPGA dataflow compilers on QONNX and FINN.

    \b
    Examples:
      brainsmith plugins list --type transform --framework finn
      brainsmith plugins info Streamline
      brainsmith blueprint validate blueprints/mlp.yaml
      brainsmith check model.onnx
      brainsmith build model.onnx --input x.npy --expected y.npy --verify each
      brainsmith build examples/models/mlp_4bit.onnx blueprints/mlp.yaml -o out/mlp
      brainsmith explore examples/models/mlp_4bit.onnx blueprints/mlp_explore.yaml -o out/dse
      brainsmith new kernel AcmeClip
    """
    if debug:
        from brainsmith.plugin.manager import get_plugin_manager

        get_plugin_manager().set_debug_mode(True)


def run() -> None:
    """Run the command line (``brainsmith.cli.main`` comes here unless it can answer alone)."""
    import logging

    from brainsmith.plugin.errors import PluginError

    # A command, not a library: logging's own errors never print tracebacks. (A Ctrl-C that
    # lands inside a logging handler's constructor, in FINN's setup, leaves a handler without
    # a lock, and logging.shutdown then raised AttributeError at exit.)
    logging.raiseExceptions = False
    from brainsmith.terminal import reader_left

    try:
        cli(standalone_mode=True)
    except BrokenPipeError:  # a write outside click's own handling, to a reader that left
        reader_left()
    except PluginError as exc:  # pragma: no cover - click handles most; this is a last resort
        from brainsmith.cli.output import echo

        echo(f"error: {exc}", err=True)
        raise SystemExit(2) from None
    except SystemExit as exc:
        if _pipe_closed(exc):
            reader_left()
        culprit = _foreign_exit(exc)
        if culprit is None:
            raise
        click.echo(
            f"error: {culprit} called sys.exit({exc.code!r}) while the command ran; "
            "the command did not finish (brainsmith plugins health names broken plugins)",
            err=True,
        )
        raise SystemExit(2) from None


def _pipe_closed(exc: SystemExit) -> bool:
    """Whether ``exc`` is click's exit (1) after a write to a reader that left: click then
    wraps the standard streams so that their last flush is quiet."""
    import sys

    wrapped = type(sys.stdout).__name__ == "_PacifyFlushWrapper"
    return isinstance(exc.__context__, BrokenPipeError) or (exc.code == 1 and wrapped)


def _foreign_exit(exc: SystemExit) -> str | None:
    """``file:line`` of a ``sys.exit()`` made by code other than the command line's own
    (a plugin's step, say); None for brainsmith's and click's own exits."""
    import os

    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is None:
        return None
    filename = os.path.abspath(tb.tb_frame.f_code.co_filename)
    from brainsmith import terminal

    own = (os.path.dirname(os.path.abspath(__file__)), os.path.dirname(click.__file__))
    if filename.startswith(tuple(folder + os.sep for folder in own)):
        return None
    if filename == os.path.abspath(terminal.__file__):  # reader_left
        return None
    return f"{filename}:{tb.tb_lineno}"


def top_level_help() -> str:
    """What ``brainsmith --help`` prints."""
    with cli.make_context("brainsmith", [], resilient_parsing=True) as ctx:
        return cli.get_help(ctx)
