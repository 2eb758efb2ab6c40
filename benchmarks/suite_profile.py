"""Where the test suite's time goes: each test's and each group's seconds in one tier.

Runs a tier's pytest command exactly as the Makefile's target does (``test``, ``test-wide``,
``test-fast``), with a JUnit XML report; the seconds of each test (set-up, call and
tear-down, as the worker measured them) are summed per ``xdist_group`` (tests without one
are spread over the workers: "(none)") and per module. Wall time, CPU time of pytest and its
workers and every process they waited for, and the load average are recorded beside them.

    .venv/bin/python -m benchmarks.suite_profile --tier test [--label after]
    .venv/bin/python -m benchmarks.suite_profile --tier test --junit run.xml --wall 3338 [--note TEXT]

``--junit`` reads a report an earlier run of the same command wrote (``--wall`` its wall
seconds) instead of running; ``--keep-junit PATH`` keeps a run's report, every test in it;
``--stop-after MINUTES`` stops a long tier with SIGINT and records the tests it ran by then.
Writes benchmarks/results/suite_profile.json (one entry per tier and label; others kept) and
its section of benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shlex
import shutil
import struct
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

from benchmarks.first_hour import timed, update_results, watching_load
from benchmarks.machine import machine_info

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
RESULT = HERE / "results" / "suite_profile.json"
HEADING = "## The test suite's time (make test, test-wide, test-fast)"
TARGETS = {"test": "test", "wide": "test-wide", "fast": "test-fast"}
BUDGET = REPO / "tests" / "budget.yaml"
LONG_TEST_S = 10.0  # every test over this is kept whole in the results (the rest summed)
SUMMARY = re.compile(r"^=* ?(\d+ (?:passed|failed).*) in [\d.]+s", re.M)


def pytest_words(target: str) -> list[str]:
    """The arguments after ``-m pytest`` of the Makefile's ``target`` recipe."""
    text = (REPO / "Makefile").read_text()
    found = re.search(rf"^{re.escape(target)}:.*\n\t@\$\(PY\) -m pytest (.*)$", text, re.M)
    if not found:
        raise SystemExit(f"the Makefile has no pytest recipe for {target}")
    return shlex.split(found.group(1))


def read_junit(path: Path) -> list[dict]:
    """Each test case of a JUnit XML report: id, module, group, seconds, outcome."""
    cases = []
    for case in ET.parse(path).getroot().iter("testcase"):
        name = case.get("name", "")
        cut = name.rfind("]") + 1  # xdist's "@group" follows the parameters, which may hold "@"
        head, _, group = name[cut:].partition("@")
        name = name[:cut] + head
        outcome, message = "passed", ""
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome, message = child.tag, (child.get("message") or "")[:300]
        properties = {p.get("name"): p.get("value") for p in case.iter("property")}
        module = case.get("classname", "").split(".")
        cases.append({
            "id": f"{'.'.join(module)}::{name}",
            "module": next((m for m in module if m.startswith("test_")), module[-1]),
            "group": group or "(none)",
            "seconds": round(float(case.get("time") or 0), 2),
            "cpu_s": float(properties.get("cpu_s") or 0),
            "processes": int(properties.get("processes") or 0),
            "outcome": outcome,
            **({"message": message} if outcome in ("failure", "error") else {}),
        })  # fmt: skip
    return cases


def summed(cases: list[dict], by: str) -> list[dict]:
    """Tests, seconds, CPU seconds and processes started per value of ``by`` (group or
    module), the longest first."""
    totals: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0.0, 0])
    for case in cases:
        row = totals[case[by]]
        row[0] += 1
        row[1] += case["seconds"]
        row[2] += case.get("cpu_s", 0)
        row[3] += case.get("processes", 0)
    rows = [{by: k, "tests": int(n), "seconds": round(s, 1), "cpu_s": round(c, 1),
             "processes": int(p)} for k, (n, s, c, p) in totals.items()]  # fmt: skip
    return sorted(rows, key=lambda row: -row["seconds"])


def profile(cases: list[dict], wall: float, extra: dict) -> dict:
    outcomes = defaultdict(int)
    for case in cases:
        outcomes[case["outcome"]] += 1
    return {
        "wall_s": round(wall, 1),
        "worker_s": round(sum(c["seconds"] for c in cases), 1),
        "tests": len(cases),
        "outcomes": dict(outcomes),
        "groups": summed(cases, "group"),
        "modules": summed(cases, "module"),
        "longest": sorted(cases, key=lambda c: -c["seconds"])[:30],
        "cases": [c for c in cases if max(c["seconds"], c.get("cpu_s", 0)) > LONG_TEST_S],
        "failed": [c for c in cases if c["outcome"] in ("failure", "error")],
        "measured": time.strftime("%Y-%m-%d %H:%M:%S"),
        **extra,
    }


@contextlib.contextmanager
def accounting(record: Path) -> Iterator[bool]:
    """Linux process accounting into ``record`` while the block runs: a line for every
    process that ends (threads not counted, forks without an exec counted). Needs the
    right to switch it on (root); False when it could not be. Unlike tracing, it changes
    nothing in the processes (signals, timing)."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    record.touch(mode=0o600)
    on = libc.acct(str(record).encode()) == 0
    try:
        yield on
    finally:
        if on:
            libc.acct(None)


ACCT_V3 = struct.Struct("<BBHIIIIIIfHHHHHHHH16s")  # linux/acct.h: struct acct_v3, 64 bytes


def _comp_t(value: int) -> int:
    """linux/acct.h's comp_t: 13 bits of mantissa, 3 of base-8 exponent (clock ticks)."""
    return (value & 0x1FFF) << (3 * (value >> 13))


def started(record: Path, root_pid: int) -> dict:
    """How many processes the run started (``root_pid`` and every process whose parents at
    exit lead to it), how many of each name and the CPU seconds of each name."""
    data = record.read_bytes() if record.is_file() else b""
    parent, names, cpu = {}, {}, {}
    ticks = os.sysconf("SC_CLK_TCK")
    for offset in range(0, len(data) - ACCT_V3.size + 1, ACCT_V3.size):
        fields = ACCT_V3.unpack_from(data, offset)
        if fields[1] != 3:  # not a version-3 record
            continue
        pid, ppid = fields[6], fields[7]
        parent[pid], names[pid] = ppid, fields[-1].split(b"\0")[0].decode(errors="replace")
        cpu[pid] = (_comp_t(fields[10]) + _comp_t(fields[11])) / ticks
    ours: dict[int, bool] = {root_pid: True}

    def mine(pid: int) -> bool:
        chain = []
        while pid not in ours and pid in parent and len(chain) < 10_000:
            chain.append(pid)
            pid = parent[pid]
        verdict = ours.get(pid, False)
        ours.update(dict.fromkeys(chain, verdict))
        return verdict

    counted: dict[str, int] = defaultdict(int)
    seconds: dict[str, float] = defaultdict(float)
    for pid in parent:
        if mine(pid):
            counted[names[pid]] += 1
            seconds[names[pid]] += cpu[pid]
    top = dict(sorted(counted.items(), key=lambda kv: -kv[1])[:15])
    busiest = {k: round(v) for k, v in sorted(seconds.items(), key=lambda kv: -kv[1])[:10]}
    return {"processes_started": sum(counted.values()), "processes_by_name": top,
            "cpu_s_by_name": busiest}  # fmt: skip


def run(target: str, keep_junit: Path | None = None, stop_after: float | None = None) -> dict:
    words = pytest_words(target)
    with tempfile.TemporaryDirectory() as folder:
        xml, accounts = Path(folder) / "junit.xml", Path(folder) / "accounts"
        record: dict = {}
        command = [sys.executable, "-m", "pytest", *words, f"--junitxml={xml}"]
        with watching_load(record), accounting(accounts) as counting:
            ran = timed(command, dict(os.environ), REPO, stop_after)  # as make runs it
        if counting:
            record.update(started(accounts, ran["pid"]))
        summary = SUMMARY.findall(ran["output"])
        log = RESULT.with_name(f"suite_profile_{target}.log")  # (not committed)
        log.write_text(ran["output"])
        if keep_junit is not None and xml.exists():
            shutil.copyfile(xml, keep_junit)
        extra = {"command": f"pytest {shlex.join(words)}", "cpu_s": ran["cpu_s"],
                 "exit_code": ran["exit_code"], "summary": summary[-1] if summary else "",
                 **record}  # fmt: skip
        return profile(read_junit(xml), ran["wall_s"], extra)


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min"


def read_budget() -> dict:
    """``tests/budget.yaml``: make test's wall minutes, processes, each group's share."""
    import yaml

    return yaml.safe_load(BUDGET.read_text())


def over_budget(run_: dict, budget: dict, tier: str = "test") -> list[str]:
    """What in ``run_`` (a run of ``tier``: test or wide) is over ``budget``, one line each."""
    if tier == "wide":
        return _wide_over_budget(run_, budget)
    lines = []
    if run_["wall_s"] > budget["wall_minutes"] * 60:
        lines.append(f"the run: {_minutes(run_['wall_s'])}, over {budget['wall_minutes']} min")
    programs = run_.get("processes_started")
    if programs is not None and programs > budget["processes"]:
        lines.append(f"the run started {programs} processes, over {budget['processes']}")
    shares = budget["groups"]
    for row in run_["groups"]:
        share = shares.get(row["group"], shares["(none)"] if row["group"] == "(none)" else 0)
        if row["seconds"] > share:
            lines.append(f"group {row['group']}: {row['seconds']:.0f} worker-s, over its share "
                         f"of {share} s (tests/budget.yaml)")  # fmt: skip
    limit, listed = budget["test_cpu_seconds"], budget.get("long_tests") or {}
    moved = {f"tests.{name}" for name in budget.get("moved") or {}}  # in make test-wide since
    for case in run_.get("cases", []):
        names = (case["id"], case["id"].partition("[")[0])  # the case, or any case of it
        named = any(name in listed or name in moved for name in names)
        if max(case.get("cpu_s", 0), case["seconds"]) > limit and not named:
            lines.append(f"{case['id']}: {case.get('cpu_s', 0):.0f} CPU-s, {case['seconds']:.0f} s;"
                         f" over {limit} s and not listed in tests/budget.yaml long_tests")  # fmt: skip
    return lines


def _wide_over_budget(run_: dict, budget: dict) -> list[str]:
    """make test-wide's wall minutes, and each test over the seconds a wide test may take
    (a longer one belongs in make test-big)."""
    lines, limit = [], budget["wide_test_seconds"]
    if run_["wall_s"] > budget["wide_wall_minutes"] * 60:
        lines.append(f"the run: {_minutes(run_['wall_s'])}, over {budget['wide_wall_minutes']} min")
    for case in run_.get("cases", []):
        if case["seconds"] > limit:
            lines.append(f"{case['id']}: {case['seconds']:.0f} s, over {limit} s: move it to "
                         "make test-big (tests/budget.yaml moved: \"big: why\")")  # fmt: skip
    return lines


def budget_table(run_: dict, budget: dict) -> list[str]:
    """Each group's worker seconds, CPU seconds and processes beside its share."""
    shares = budget["groups"]
    lines = ["| group | tests | worker-s | CPU-s | processes | share | |",
             "|---|---:|---:|---:|---:|---:|---|"]  # fmt: skip
    for row in run_["groups"]:
        share = shares.get(row["group"], 0)
        mark = "over" if row["seconds"] > share else ""
        lines.append(f"| {row['group']} | {row['tests']} | {row['seconds']:.0f} | "
                     f"{row.get('cpu_s', 0):.0f} | {row.get('processes', 0)} | {share} | {mark} |")  # fmt: skip
    return lines


def _processes(key: str, run_: dict) -> list[str]:
    """The programs run ``key`` started most often, and their CPU seconds by name."""
    lines = []
    if run_.get("processes_by_name"):
        named = ", ".join(f"{k} {v}" for k, v in run_["processes_by_name"].items())
        lines += ["", f"Processes {key} started, the most frequent: {named}."]
    if run_.get("cpu_s_by_name"):
        busiest = ", ".join(f"{k} {v} s" for k, v in run_["cpu_s_by_name"].items())
        lines += ["", f"CPU seconds of the processes {key} started, by name: {busiest}."]
    return lines


def section(data: dict) -> list[str]:
    """The RESULTS.md section of a suite_profile.json."""
    lines = [
        HEADING,
        "",
        "Each tier's pytest command as its Makefile target runs it (`python -m benchmarks.suite_profile "
        "--tier test|wide|fast`), on the reference machine (2 cores); a test's seconds are its set-up, "
        "call and tear-down on its worker, so a group's sum is the worker time it occupies (a group "
        "runs on one worker). Load = 1-minute load average before → after (mean during).",
        "",
        "| tier · label | tests | wall | worker time | CPU | processes started | load | outcome |",
        "|---|---:|---:|---:|---:|---:|---|---|",
    ]
    runs = data["runs"]
    for key, run_ in runs.items():
        during = run_.get("load_1min_during", {})
        load = (f"{run_['load_before'][0]} → {run_['load_after'][0]} (mean {during.get('mean')})"
                if "load_before" in run_ else run_.get("load", ""))  # fmt: skip
        cpu = f"{_minutes(run_['cpu_s'])}" if run_.get("cpu_s") else ""
        programs = run_.get("processes_started", "")
        lines.append(f"| {key} | {run_['tests']} | {_minutes(run_['wall_s'])} | "
                     f"{_minutes(run_['worker_s'])} | {cpu} | {programs} | {load} | "
                     f"{run_.get('summary', '')} |")  # fmt: skip
    notes = [f"- {key}: {run_['note']}" for key, run_ in runs.items() if run_.get("note")]
    lines += ["", *notes] if notes else []
    latest = [key for key, run_ in runs.items()
              if key.partition(" · ")[0] == "make test" and "cases" in run_]  # fmt: skip
    if latest:
        run_, budget = runs[latest[-1]], read_budget()
        lines += ["", f"{latest[-1]} against the budget of `tests/budget.yaml` ({budget['wall_minutes']}"
                  f" min, {budget['processes']} processes; each group's share of the two workers' "
                  "time in seconds):", "", *budget_table(run_, budget)]  # fmt: skip
        lines += ["", *[f"- over: {line}" for line in over_budget(run_, budget)]]
        lines += _processes(latest[-1], run_)
    wide = [key for key, run_ in runs.items()
            if key.partition(" · ")[0] == "make test-wide" and "cases" in run_]  # fmt: skip
    if wide:
        budget = read_budget()
        over = over_budget(runs[wide[-1]], budget, "wide")
        lines += ["", f"{wide[-1]} against make test-wide's budget ({budget['wide_wall_minutes']} "
                  f"min; a test over {budget['wide_test_seconds']} s belongs in make test-big): "
                  + ("within it." if not over else ""), *[f"- over: {line}" for line in over]]  # fmt: skip
        lines += _processes(wide[-1], runs[wide[-1]])
    groups: dict[str, dict[str, float]] = defaultdict(dict)
    for key, run_ in runs.items():
        for row in run_["groups"]:
            groups[row["group"]][key] = row["seconds"]
    keys = list(runs)
    lines += ["", "Seconds per `xdist_group` (tests without one: \"(none)\"), the largest first:", "",
              "| group | " + " | ".join(keys) + " |", "|---|" + "---:|" * len(keys)]  # fmt: skip
    order = sorted(groups, key=lambda g: -max(groups[g].values()))
    for group in order:
        cells = [f"{groups[group][k]:.0f}" if k in groups[group] else "-" for k in keys]
        lines.append(f"| {group} | " + " | ".join(cells) + " |")
    for key, run_ in runs.items():
        lines += ["", f"The 15 longest tests of {key}:", "", "| test | group | seconds |",
                  "|---|---|---:|"]  # fmt: skip
        for case in run_["longest"][:15]:
            lines.append(f"| `{case['id']}` | {case['group']} | {case['seconds']:.0f} |")
    machine = data.get("machine", {})
    lines += ["", f"Machine: {machine.get('cpu', '?')}, {machine.get('cpu_count', '?')} cores, "
              f"{machine.get('memory_gib', '?')} GiB. Raw numbers (every test): "
              "`benchmarks/results/suite_profile.json`."]  # fmt: skip
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tier", choices=sorted(TARGETS), default="test")
    parser.add_argument("--label", default="", help="kept beside other runs of the tier")
    parser.add_argument("--junit", type=Path, help="read this report instead of running")
    parser.add_argument("--wall", type=float, default=0.0, help="with --junit: its wall seconds")
    parser.add_argument("--note", default="", help="what a reader should know about the run")
    parser.add_argument("--keep-junit", type=Path, help="copy the run's JUnit report here")
    parser.add_argument("--stop-after", type=float, metavar="MINUTES",
                        help="stop the tier with SIGINT after this long; the tests run by then "
                        "are recorded (so is a Ctrl-C's)")  # fmt: skip
    args = parser.parse_args()
    target = TARGETS[args.tier]
    if args.junit:
        cases = read_junit(args.junit)
        counts = {kind: sum(c["outcome"] == kind for c in cases)
                  for kind in ("failure", "error", "passed", "skipped")}  # fmt: skip
        words = {"failure": "failed", "error": "errors"}
        summary = ", ".join(f"{n} {words.get(k, k)}" for k, n in counts.items() if n)
        extra = {"command": f"pytest {shlex.join(pytest_words(target))}", "load": "not recorded",
                 "summary": summary}  # fmt: skip
        result = profile(cases, args.wall, extra)
    else:
        stop = args.stop_after * 60 if args.stop_after else None
        result = run(target, args.keep_junit, stop)
    if args.note:
        result["note"] = args.note
    old = json.loads(RESULT.read_text()) if RESULT.exists() else {}
    key = f"make {target}" + (f" · {args.label}" if args.label else "")
    data = {"benchmark": "suite_profile", "runs": {**old.get("runs", {}), key: result},
            "machine": machine_info()}  # fmt: skip
    RESULT.write_text(json.dumps(data, indent=1) + "\n")
    update_results(section(data), HEADING)
    print("\n".join(section(data)))
    if args.tier in ("test", "wide"):
        over = over_budget(result, read_budget(), args.tier)
        print(
            "\n".join(
                ["", f"Over make {target}'s budget:", *over] if over else ["", "Within budget."]
            )
        )
    return 0 if result.get("exit_code", 0) == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
