"""The shipped MLP on a board of each family, with the command a user types: from its model
and blueprint to a bitstream for the ULX3S-85F (ECP5), the Tang Primer 20K and Tang Nano 9K
(Gowin) and the iCEBreaker (iCE40), and for the parts of the families without a board
(``--part``: a Nexus LIFCL-40, a GateMate CCGM1A1), no clock and no target but the
blueprint's, a fresh ``brainsmith`` process each, timed from outside, one after another, the
tools' caches of this run only (a private cache folder).

    .venv/bin/python -m benchmarks.board_families [--boards tang-primer-20k,icebreaker]
        [--parts LIFCL-40-9BG400C,CCGM1A1]
        [--zoo tang-primer-20k:jet_tagger,tang-primer-20k:tfc_w2a2]
        [--again "gatemate-a1-evb:--target-fps 20000"]

``--zoo BOARD:NAME,...`` also builds zoo networks for a board (or a part, named in
capitals) the same way, with no blueprint and with the network's own vectors (``--input``,
``--expected``); ``--again
BOARD:FLAGS`` builds the shipped MLP for a board once more with those flags added. Writes
benchmarks/results/board_families.json (wall and CPU seconds, the clock asked and reached,
the folding's estimate beside what nextpnr placed, throughput, the gate-level check, the
load, the machine) and its section of benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.board_plain import facts, when_and_load
from benchmarks.first_hour import publish, watching_load
from benchmarks.quick_start_verify import timed

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
RESULT = HERE / "results" / "board_families.json"
HEADING = "## The shipped MLP on a board of each family (build --board B --bitstream)"
BOARDS = ("ulx3s-85f", "tang-primer-20k", "tang-nano-9k", "icebreaker", "gatemate-a1-evb")
PARTS = ("LIFCL-40-9BG400C",)  # the family with no board
COMMAND = (
    "brainsmith build {repo}/examples/models/mlp_4bit.onnx {repo}/blueprints/mlp.yaml "
    "--{target} --bitstream -o {out}"
)
ZOO_COMMAND = (
    "brainsmith build {zoo}/{name}.onnx --input {zoo}/{name}_input.npy "
    "--expected {zoo}/{name}_expected.npy --{target} --bitstream -o {out}"
)
ZOO = REPO / "examples" / "models" / "zoo"


def _target(name: str) -> str:
    """``--board NAME``, or ``--part NAME`` for a part (parts are named in capitals)."""
    return f"part {name}" if name.upper() == name else f"board {name}"


def placed(folder: Path) -> dict:
    """The folding's estimate and nextpnr's count of each resource, the fps at the clock made."""
    report = json.loads((folder / "report.json").read_text())
    family = report.get("family_resources") or {}
    counts = family.get("placed") or {}
    return {
        "part": report["bitstream"]["part"],
        "clock_made_mhz": report["bitstream"]["clock_mhz"],
        "estimated": family.get("totals"),
        "placed": {name: count["used"] for name, count in counts.items()},
        "available": {name: count["available"] for name, count in counts.items()},
        "fps": (report.get("performance") or {}).get("fps"),
        "cycles_per_frame": (report.get("performance") or {}).get("cycles_per_frame"),
        "latency_ns": (report.get("performance") or {}).get("latency_ns"),
    }


def measure(
    boards: tuple[str, ...],
    zoo: tuple[tuple[str, str], ...] = (),
    parts: tuple[str, ...] = (),
    again: tuple[tuple[str, str], ...] = (),
) -> dict:
    runs: dict[str, dict] = {}
    record: dict = {}
    with tempfile.TemporaryDirectory(prefix="brainsmith-board-families-") as tmp:
        folder = Path(tmp)
        cache = folder / "cache"
        cache.mkdir(mode=0o700)
        os.environ["BRAINSMITH_CACHE_DIR"] = str(cache)
        for variable in ("BRAINSMITH_RTLSIM_CACHE", "BRAINSMITH_SYNTHESIS_CACHE",
                         "BRAINSMITH_BITSTREAM_CACHE", "BRAINSMITH_PLACE_ROUTE_CACHE"):  # fmt: skip
            os.environ.pop(variable, None)
        builds = [(target, "mlp", COMMAND.format(repo=REPO, target=f"{kind} {target}",
                                                 out=target))
                  for kind, targets in (("board", boards), ("part", parts))
                  for target in targets]  # fmt: skip
        builds += [(board, name, ZOO_COMMAND.format(zoo=ZOO, name=name, target=_target(board),
                                                    out=f"{board}-{name}"))
                   for board, name in zoo]  # fmt: skip
        builds += [(board, f"mlp {flags}", COMMAND.format(repo=REPO, target=f"board {board}",
                                                          out=f"{board}-again{n}") + f" {flags}")
                   for n, (board, flags) in enumerate(again)]  # fmt: skip
        with watching_load(record):
            for board, network, command in builds:
                key = board if network == "mlp" else f"{board}:{network}"
                out = folder / shlex.split(command)[shlex.split(command).index("-o") + 1]
                run: dict = {"command": command.replace(f"{REPO}/", ""), "network": network}
                try:
                    run.update(timed(shlex.split(command), folder))
                except SystemExit as failed:  # the build's error, recorded: the others run on
                    run["failed"] = str(failed).strip().splitlines()[-3:]
                else:
                    run.update({**facts(out), **placed(out)})
                runs[key] = run
                RESULT.write_text(
                    json.dumps({"benchmark": "board_families", "runs": runs}, indent=2) + "\n"
                )  # so far: kept if stopped
    return {"benchmark": "board_families", "runs": runs, "load": record,
            "measured": time.strftime("%Y-%m-%d %H:%M:%S")}  # fmt: skip


def _figures(counts: dict | None) -> str:
    return ", ".join(f"{value:,.0f} {name}" for name, value in (counts or {}).items() if value)


def section(data: dict) -> list[str]:
    """The RESULTS.md section of ``data``."""
    lines = [
        HEADING,
        "",
        "The shipped MLP and blueprint to each board's bitstream with the plain command (and "
        "zoo networks with their own vectors, no blueprint), in a fresh process, the caches of "
        f"this run only (`python -m benchmarks.board_families`, {when_and_load(data)}). The "
        "estimate is the folding's (the family's models), placed is nextpnr's count; fps is "
        "Verilator's cycles a frame at the clock made; the gate-level check's 4 frames of the "
        "netlist against the RTL and its seconds after nextpnr:",
        "",
        "| board | network | part | wall | clock made | Fmax reached | rounds | estimated | "
        "placed | fps | latency | gate level |",
        "|---|---|---|---:|---:|---:|---:|---|---|---:|---:|---|",
    ]
    for key, run in data["runs"].items():
        board, network = key.partition(":")[0], run.get("network", "mlp")
        if "failed" in run:
            said = run["failed"][0].removeprefix("error: ")  # the error, not its hint and paths
            lines.append(f"| `{board}` | {network} | failed: {said} "
                         "| | | | | | | | | |")  # fmt: skip
            continue
        passed = run.get("gate_level_passed")
        seconds = (run.get("stages_s") or {}).get("gate_level") or 0.0
        check = f"{'equal' if passed else 'not run or differs'}, {seconds:.0f} s"
        latency = f"{run['latency_ns'] / 1000:,.1f} µs" if run.get("latency_ns") else "-"
        named = "(no board)" if board.upper() == run["part"].upper() else f"`{board}`"
        lines.append(
            f"| {named} | {network} | {run['part']} | {run['wall_s']:.0f} s | "
            f"{run['clock_made_mhz']:.1f} MHz | {run['fmax_mhz']:.1f} MHz"
            f"{'' if run.get('timing_met') else ' (missed)'} | {run['rounds']} | "
            f"{_figures(run['estimated'])} | {_figures(run['placed'])} | "
            f"{run['fps'] or 0:,.0f} ({run['cycles_per_frame'] or 0:,.0f} cycles) | {latency} | "
            f"{check} |"
        )
    return lines


def main() -> int:
    from benchmarks.machine import machine_info

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--boards", default=",".join(BOARDS), help="comma-separated boards")
    parser.add_argument("--parts", default=",".join(PARTS), help="comma-separated parts")
    parser.add_argument("--zoo", default="", help="BOARD:NAME,... zoo networks to build too")
    parser.add_argument("--again", action="append", default=[],
                        help="BOARD:FLAGS: the MLP for BOARD once more, these flags added")  # fmt: skip
    args = parser.parse_args()
    zoo = tuple(tuple(item.split(":", 1)) for item in args.zoo.split(",") if item)
    again = tuple(tuple(item.split(":", 1)) for item in args.again)
    boards, parts = (tuple(x for x in a.split(",") if x) for a in (args.boards, args.parts))
    data = {**measure(boards, zoo, parts, again), "machine": machine_info()}  # type: ignore[arg-type]
    return publish(data, section(data), RESULT, HEADING)


if __name__ == "__main__":
    sys.exit(main())
