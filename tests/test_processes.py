"""The one tool runner as Yosys, nextpnr and the packers use it: a job's ``Processes``
stopped together, and a tool's log bounded (``run_mounted``)."""

from __future__ import annotations

import os
import threading
import time

import pytest

from brainsmith.hardware.processes import Processes
from brainsmith.hardware.synthesis import yosys


def test_stopping_a_job_kills_its_running_tool_and_starts_no_more(tmp_path):
    """A place and route interrupted: the tool waited for in a worker thread is killed
    within moments (not after its 60 s), its run answers no exit code, and a tool asked for
    after the stop never starts."""
    marker = tmp_path / "pid"
    processes = Processes()
    answers: list[object] = []

    def place() -> None:
        command = ["sh", "-c", f"echo $$ > {marker}; exec sleep 60"]
        answers.append(yosys.run_mounted(command, str(tmp_path), "tool.log", 600, processes)[0])

    worker = threading.Thread(target=place)
    worker.start()
    while not marker.exists() or not marker.read_text().strip():
        time.sleep(0.05)
    began = time.monotonic()
    processes.stop()
    worker.join(50)
    assert not worker.is_alive() and time.monotonic() - began < 50
    assert answers == [None] and processes.stopped
    with pytest.raises(ProcessLookupError):  # killed and reaped
        os.kill(int(marker.read_text()), 0)
    later = tmp_path / "later"
    assert yosys.run_mounted(["touch", str(later)], str(tmp_path), "t.log", 5, processes)[0] is None
    assert not later.exists()


def test_a_tool_printing_without_end_is_stopped_and_its_log_says_why(tmp_path, monkeypatch):
    """A tool that prints past the log's bound is killed; its log holds the bound's bytes
    and an ERROR line naming the repeated line, which is what a failed run reports."""
    monkeypatch.setattr(yosys, "MAX_LOG_BYTES", 64 * 1024)
    command = ["sh", "-c", "while :; do echo 'Warning: the same line'; done"]
    code, log = yosys.run_mounted(command, str(tmp_path), "tool.log", 60, Processes())
    assert code == 1 and os.path.getsize(log) < 64 * 1024 + 1024
    error = yosys.first_error(log)
    assert "printed more than" in error and "Warning: the same line" in error, error


def test_a_tool_that_ends_gives_its_exit_code_and_full_log(tmp_path):
    code, log = yosys.run_mounted(
        ["sh", "-c", "echo placed; exit 3"], str(tmp_path), "tool.log", 60, Processes()
    )
    with open(log) as handle:
        assert code == 3 and handle.read() == "placed\n"


def test_a_tool_whose_webassembly_build_crashes_is_said_to_have_crashed_and_where(tmp_path):
    """nextpnr-himbaechel-gatemate 0.11.1 stopped after routing the shipped MLP folded for
    1,000,000 fps (the CCGM1A1, 30 November) with a wasmtime trap: its log's last line, the
    trap's cause, read as if it were the design's error. The message says the tool crashed,
    after which stage, and what may avoid it."""
    log = tmp_path / "nextpnr.log"
    log.write_text(
        "Info: Routing complete.\n"
        "Info: Router1 time 2.70s\n"
        "Warning: Max frequency for clock 'accelerator.n0.ap_clk': 41.95 MHz (FAIL at 45.00 MHz)\n"
        "Info: [ 25998,  27521) |*****+\n"  # the slack histogram's last bar
        "Traceback (most recent call last):\n"
        '  File "wasmtime/_func.py", line 238, in enter_wasm\n'
        "wasmtime._trap.Trap: error while executing at wasm backtrace:\n"
        "    0: 0x26c7e7 - <unknown>!<wasm function 4230>\n"
        "Caused by:\n"
        "    0: memory fault at wasm address 0x10000001c in linear memory of size 0x9bf30000\n"
        "    1: wasm trap: out of bounds memory access\n"
    )
    error = yosys.first_error(str(log))
    assert error.startswith("crashed (its WebAssembly build stopped: out of bounds memory"), error
    assert 'after "Info: Router1 time 2.70s"' in error and "not the design's" in error, error


# a nextpnr stand-in: its seed read from its arguments; with seed 1 it traps as
# nextpnr-himbaechel-gatemate 0.11.1 did after routing, or fails plainly when told to
NEXTPNR = (
    'for a in "$@"; do [ "$prev" = --seed ] && seed=$a; prev=$a; done; '
    'echo "Info: Routing complete."; '
    'if [ "$seed" = 1 ]; then [ -n "$PLAIN" ] && exit 1; '
    'echo "    1: wasm trap: out of bounds memory access"; exit 1; fi; '
    'echo "Info: Program finished normally."'
)


@pytest.mark.parametrize("plain", [False, True])
def test_a_crashed_nextpnr_runs_once_more_with_the_next_seed_and_says_so(tmp_path, plain):
    """The crash follows the placement (seed 2 routed the same design to its end): a run
    whose WebAssembly build trapped runs again with seed 2, its seconds added to the stage's;
    a plain failure is not run again."""
    from brainsmith.hardware.place_route.toolchain import run_nextpnr
    from brainsmith.hardware.plan import Stages

    command = ["sh", "-c", NEXTPNR, "nextpnr", "--freq", "45", "--seed", "1"]
    env = {"PLAIN": "1"} if plain else {}
    with pytest.MonkeyPatch.context() as patch:
        for name, value in env.items():
            patch.setenv(name, value)
        with Stages() as stages:
            code, log, said = run_nextpnr(stages, "place_route", command, str(tmp_path), 60)
    if plain:
        assert (code, said) == (1, "") and log.endswith("nextpnr.log")
        assert not (tmp_path / "nextpnr-reseeded.log").exists()
        return
    assert code == 0 and log.endswith("nextpnr-reseeded.log"), log
    assert said.startswith("seed 2: nextpnr crashed with seed 1 (crashed (its WebAssembly"), said
    assert "Program finished normally" in (tmp_path / "nextpnr-reseeded.log").read_text()
    assert set(stages.seconds) == {"place_route"}
