"""What a new user waits for: set-up from nothing, the demo, ``make test-fast``.

Each figure is a fresh process timed from outside: wall time, and CPU time (user + system)
of the process and every helper it waited for (``os.wait4``). Each part records the load
average before and after and the 1-minute load sampled every 5 s while it ran.

- ``setup``: ``scripts/bootstrap.sh`` of a fresh clone of the checkout's HEAD into an empty
  temporary virtualenv (``BRAINSMITH_VENV``), 1 run; pip's configuration and the size of
  its download cache are recorded (a warm cache or a local wheel index skips downloads).
- ``demo`` (implies ``setup``): ``python -m scripts.demo`` in that clone with that venv and an
  empty brainsmith cache: the first run right after set-up, then the median of warm runs;
  then, without brainsmith's bytecode, with ``PYTHONDONTWRITEBYTECODE=1`` (as a user with
  that setting sees it every time). Other runs have it unset. The time the demo reports
  for loading FINN and the model is split out.
- ``testfast``: ``make test-fast``'s pytest command in this checkout, 1 run.

    .venv/bin/python -m benchmarks.first_hour [--only setup,demo,testfast] [--runs 3]

Writes benchmarks/results/first_hour.json (a part not run keeps its previous figures) and
its section of benchmarks/RESULTS.md. The temporary clone and venv are removed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
RESULT = HERE / "results" / "first_hour.json"
HEADING = "## First hour: set-up, demo, make test-fast"
PARTS = ("setup", "demo", "testfast")
TEST_FAST = ["-m", "pytest", "-q", "-n", "2", "--dist", "loadgroup", "-m", "not slow"]
FINN_LOAD = re.compile(r"([\d.]+) s loading FINN and the model")
DEMO_TOTAL = re.compile(r"demo finished in ([\d.]+) s")


def user_env(**extra: str) -> dict[str, str]:
    """This environment without ``PYTHONDONTWRITEBYTECODE`` (set on this machine), plus extra."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**env, **extra}


def timed(cmd: list[str], env: dict[str, str], cwd: Path, stop_after: float | None = None) -> dict:
    """Run cmd; its wall and CPU seconds, exit code and output (stdout + stderr).
    ``stop_after``: seconds after which cmd gets SIGINT. A Ctrl-C here stops cmd (it gets the
    terminal's SIGINT too), not this wait, so what cmd finished is still counted."""
    with tempfile.TemporaryFile("w+") as out:
        began = time.perf_counter()
        proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=out, stderr=subprocess.STDOUT)
        stop = threading.Timer(stop_after or 0, os.kill, (proc.pid, signal.SIGINT))
        if stop_after:
            stop.start()
        before = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            signal.signal(signal.SIGINT, before)
            stop.cancel()
        wall = time.perf_counter() - began
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read()
    return {
        "wall_s": round(wall, 2),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
        "exit_code": proc.returncode,
        "output": text,
        "pid": proc.pid,
    }


def check(run: dict, what: str) -> dict:
    """run, or SystemExit with the end of its output when it failed."""
    if run["exit_code"]:
        raise SystemExit(f"{what} failed ({run['exit_code']}):\n{run['output'][-3000:]}")
    return run


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


@contextmanager
def watching_load(record: dict) -> Iterator[None]:
    """Record the load average before and after, and the 1-minute load every 5 s between."""
    samples: list[float] = []
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(5.0):
            samples.append(os.getloadavg()[0])

    record["load_before"] = load()
    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        record["load_after"] = load()
        if samples:
            record["load_1min_during"] = {
                "mean": round(statistics.mean(samples), 2),
                "max": round(max(samples), 2),
                "samples": len(samples),
            }


def pip_output(*args: str) -> str:
    cmd = [sys.executable, "-m", "pip", *args]
    return subprocess.run(cmd, capture_output=True, text=True).stdout.strip()


def pip_cache_mib() -> float:
    """The size of pip's cache, which holds what pip downloaded over HTTP (not file:// indexes)."""
    cache = Path(pip_output("cache", "dir"))
    files = (f for f in cache.rglob("*") if f.is_file()) if cache.is_dir() else ()
    return round(sum(f.stat().st_size for f in files) / 2**20, 1)


def bytecode(root: Path) -> dict:
    """How many .py files under root have bytecode for this Python."""
    tag = sys.implementation.cache_tag
    sources = compiled = 0
    for folder, _, files in os.walk(root):
        cached = (
            set(os.listdir(os.path.join(folder, "__pycache__")))
            if "__pycache__" in os.listdir(folder)
            else set()
        )
        for name in files:
            if name.endswith(".py"):
                sources += 1
                compiled += any(c.startswith(f"{name[:-3]}.{tag}.") for c in cached)
    return {"py_files": sources, "with_bytecode": compiled}


def folder_gib(root: Path) -> float:
    size = sum(f.lstat().st_size for f in root.rglob("*") if f.is_file() and not f.is_symlink())
    return round(size / 2**30, 2)


def now() -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S")


def commit() -> str:
    cmd = ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"]
    return subprocess.run(cmd, capture_output=True, text=True).stdout.strip()


def changed_files() -> list[str]:
    """Files of this checkout that differ from its commit (the tests run on them)."""
    cmd = ["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"]
    return subprocess.run(cmd, capture_output=True, text=True).stdout.splitlines()


def set_up(tmp: Path) -> tuple[dict, Path, Path]:
    """Clone HEAD into tmp and time its bootstrap into tmp/venv: (record, clone, venv)."""
    clone, venv = tmp / "clone", tmp / "venv"
    subprocess.run(["git", "clone", "--quiet", str(REPO), str(clone)], check=True)
    record: dict = {
        "what": "scripts/bootstrap.sh of a fresh clone into an empty virtualenv",
        "commit": commit(),
        "runs": 1,
        "measured": now(),
        "env": "PYTHONDONTWRITEBYTECODE unset",
        "pip_sources": pip_sources(pip_output("config", "list").splitlines()),
        "pip_cache_mib_before": pip_cache_mib(),
    }
    env = user_env(BRAINSMITH_VENV=str(venv))
    with watching_load(record):
        run = check(timed(["bash", "scripts/bootstrap.sh"], env, clone), "set-up")
    record["pip_cache_mib_after"] = pip_cache_mib()
    record.update(wall_s=run["wall_s"], cpu_s=run["cpu_s"], venv_gib=folder_gib(venv))
    site = next((venv / "lib").glob("python*/site-packages"))
    record["site_packages_bytecode"] = bytecode(site)
    return record, clone, venv


def demo_run(clone: Path, venv: Path, env: dict[str, str]) -> dict:
    """One ``python -m scripts.demo`` with the figures it prints."""
    cmd = [str(venv / "bin" / "python"), "-m", "scripts.demo", "--output-root", "demo-out"]
    before = load()
    run = {**check(timed(cmd, env, clone), "the demo"), "load_before": before}
    finn, total = FINN_LOAD.search(run["output"]), DEMO_TOTAL.search(run["output"])
    run["finn_load_s"] = float(finn.group(1)) if finn else None
    run["reported_s"] = float(total.group(1)) if total else None
    del run["output"]
    return run


def medians(runs: list[dict]) -> dict:
    keys = ("wall_s", "cpu_s", "finn_load_s")
    out = {f"median_{k}": statistics.median(r[k] for r in runs) for k in keys if runs[0][k]}
    return {**out, "runs": runs}


def remove_bytecode(root: Path) -> None:
    for folder in list(root.rglob("__pycache__")):
        shutil.rmtree(folder, ignore_errors=True)


def demos(clone: Path, venv: Path, tmp: Path, runs: int) -> dict:
    """The first demo after set-up, warm runs, and runs with PYTHONDONTWRITEBYTECODE=1."""
    env = user_env(BRAINSMITH_CACHE_DIR=str(tmp / "brainsmith-cache"))
    record: dict = {
        "what": "python -m scripts.demo in the fresh clone, empty brainsmith cache at first",
        "measured": now(),
        "brainsmith_bytecode_after_setup": bytecode(clone / "brainsmith"),
    }
    with watching_load(record):
        record["first"] = demo_run(clone, venv, env)
        record["warm"] = medians([demo_run(clone, venv, env) for _ in range(runs)])
        remove_bytecode(clone)
        quiet = {**env, "PYTHONDONTWRITEBYTECODE": "1"}
        record["dont_write_bytecode"] = medians([demo_run(clone, venv, quiet) for _ in range(runs)])
    return record


def test_fast() -> dict:
    """``make test-fast``'s pytest command in this checkout, 1 run."""
    record: dict = {
        "what": "python -m pytest " + " ".join(TEST_FAST[2:]) + " (make test-fast)",
        "commit": commit(),
        "files_changed_since_commit": len(changed_files()),
        "measured": now(),
        "runs": 1,
        "env": "PYTHONDONTWRITEBYTECODE unset",
    }
    with watching_load(record):
        run = timed([sys.executable, *TEST_FAST], user_env(), REPO)
    lines = [line for line in run["output"].splitlines() if line.strip()]
    record.update(wall_s=run["wall_s"], cpu_s=run["cpu_s"], exit_code=run["exit_code"])
    record["summary"] = lines[-1].strip("= ") if lines else ""
    record["failed"] = [line for line in lines if line.startswith("FAILED ")]
    return record


def measure(parts: set[str], runs: int) -> dict:
    """The parts asked for."""
    found: dict = {}
    if parts & {"setup", "demo"}:
        with tempfile.TemporaryDirectory(prefix="brainsmith-first-hour-") as name:
            tmp = Path(name)
            found["setup"], clone, venv = set_up(tmp)
            if "demo" in parts:
                found["demo"] = demos(clone, venv, tmp, runs)
    if "testfast" in parts:
        found["testfast"] = test_fast()
    return found


def fmt_load(part: dict) -> str:
    """``1.2 → 1.9 (mean 1.6, max 2.3 during)``: the 1-minute load average."""
    text = f"{part['load_before'][0]:.2f} → {part['load_after'][0]:.2f}"
    during = part.get("load_1min_during")
    if during:
        text += f" (mean {during['mean']:.2f}, max {during['max']:.2f} during)"
    return text


def setup_row(setup: dict) -> str:
    return (
        f"| set-up from nothing: `scripts/bootstrap.sh` into an empty virtualenv (1 run; "
        f"{setup['venv_gib']} GiB installed) | {setup['wall_s']:.0f} s | {setup['cpu_s']:.0f} s | "
        f"{fmt_load(setup)} |"
    )


def pip_sources(config: list[str]) -> list[str]:
    """Which package sources pip is configured with, by kind (no paths or addresses): e.g.
    ``find-links: a local folder``, ``extra-index-url: file:// index``."""
    found = []
    for line in config:
        key, _, value = line.partition("=")
        name = key.rpartition(".")[2]
        if name not in ("index-url", "extra-index-url", "find-links"):
            continue
        kinds = {"file:// index" if v.startswith("file:") else "a local folder"
                 if v.startswith("/") else "a remote index" for v in value.strip("'\"").split()}  # fmt: skip
        found.append(f"{name}: {', '.join(sorted(kinds))}")
    return sorted(set(found))


def setup_note(setup: dict) -> str:
    """Where pip took the packages from: its cache and the kinds of sources configured."""
    config = "; ".join(setup.get("pip_sources", [])) or "PyPI only"
    before, after = setup["pip_cache_mib_before"], setup["pip_cache_mib_after"]
    return (
        f"Set-up: pip's cache held {before} MiB before and {after} MiB after it (pip caches "
        "what it downloads over HTTP, not what it reads from a local folder or file:// "
        f"index); pip's package sources: {config}."
    )


def demo_row(label: str, run: dict, load: str = "") -> str:
    wall = run.get("median_wall_s", run.get("wall_s"))
    cpu = run.get("median_cpu_s", run.get("cpu_s"))
    finn = run.get("median_finn_load_s", run.get("finn_load_s"))
    split = f" ({finn:.1f} s of it loading FINN and the model)" if finn else ""
    runs = run.get("runs")
    walls = ", ".join(f"{r['wall_s']:.1f}" for r in runs or ())
    each = f"; runs {walls} s" if runs else ""
    return f"| {label}{each} | {wall:.1f} s{split} | {cpu:.1f} s | {load} |"


def demo_rows(demo: dict) -> list[str]:
    n = len(demo["warm"]["runs"])
    return [
        demo_row(
            "`python -m scripts.demo` (`make demo`), first run after set-up",
            demo["first"],
            fmt_load(demo) + ", over all the demo runs",
        ),
        demo_row(f"the demo again, warm (median of {n})", demo["warm"]),
        demo_row(
            f"the demo with `PYTHONDONTWRITEBYTECODE=1`, so brainsmith's own modules are "
            f"compiled in every run (median of {n})",
            demo["dont_write_bytecode"],
        ),
    ]


def demo_note(demo: dict, setup: dict) -> str:
    site = setup.get("site_packages_bytecode") or {}
    own = demo["brainsmith_bytecode_after_setup"]
    installed = (
        f", the installed packages for {site['with_bytecode']} of {site['py_files']} "
        "(pip compiles what it installs)"
        if site
        else ""
    )
    return (
        "Demo: in the clone and venv of the set-up, with an empty brainsmith cache at the "
        f"first run; after set-up brainsmith's own modules had bytecode for "
        f"{own['with_bytecode']} of {own['py_files']} files{installed}. Its wall time "
        "follows the load; its CPU time hardly does."
    )


def test_row(test: dict) -> str:
    return (
        f'| `make test-fast` (`pytest -n 2 --dist loadgroup -m "not slow"`, 1 run: '
        f"{test['summary']}) | {test['wall_s']:.0f} s | {test['cpu_s']:.0f} s | "
        f"{fmt_load(test)} |"
    )


def test_note(test: dict) -> str:
    failed = "; ".join(f"`{line[7:]}`" for line in test.get("failed", [])) or "none"
    return (
        f"`make test-fast`: in this checkout at {test['commit']} with "
        f"{test['files_changed_since_commit']} file(s) changed since; failed: {failed}."
    )


def section(data: dict) -> list[str]:
    """The RESULTS.md section of a first_hour.json."""
    m = data["machine"]
    lines = [
        "",
        HEADING,
        "",
        "What a new user waits for, each a fresh process timed from outside "
        "(`python -m benchmarks.first_hour`): wall time, and CPU time of the process and the "
        "helpers it waited for; load = 1-minute load average before → after (mean and max "
        f"sampled every 5 s during), on {m['cpu_count']} cores ({m['cpu']}). "
        "`PYTHONDONTWRITEBYTECODE` unset unless said.",
        "",
        "| what | wall | CPU | load |",
        "|---|---:|---:|---|",
    ]
    notes = []
    if "setup" in data:
        lines.append(setup_row(data["setup"]))
        notes.append(setup_note(data["setup"]))
    if "demo" in data:
        lines += demo_rows(data["demo"])
        notes.append(demo_note(data["demo"], data.get("setup", {})))
    if "testfast" in data:
        lines.append(test_row(data["testfast"]))
        notes.append(test_note(data["testfast"]))
    dates = ", ".join(f"{p} {data[p]['measured']}" for p in PARTS if p in data)
    notes.append(f"Measured: {dates}. Raw numbers: `benchmarks/results/first_hour.json`.")
    return lines + [line for note in notes for line in ("", note)]


def update_results(lines: list[str], heading: str = HEADING) -> None:
    """Replace (or append) the section of benchmarks/RESULTS.md under ``heading``."""
    path = HERE / "RESULTS.md"
    text = path.read_text() if path.exists() else "# Benchmark results\n"
    body = "\n".join(lines).lstrip("\n") + "\n"
    start = text.find(heading)
    if start < 0:
        path.write_text(text.rstrip("\n") + "\n\n" + body)
        return
    end = text.find("\n## ", start + len(heading))
    rest = text[end + 1 :] if end >= 0 else ""
    path.write_text(text[:start] + body + ("\n" + rest if rest else ""))


def publish(data: dict, lines: list[str], result: Path, heading: str) -> int:
    """Write a benchmark's ``data`` to ``result`` and its section ``lines`` to RESULTS.md
    under ``heading``; print the section. Returns 0, a benchmark's exit code."""
    result.write_text(json.dumps(data, indent=2) + "\n")
    update_results(lines, heading)
    print("\n".join(lines))
    print(f"-> {result.relative_to(HERE.parent)}, benchmarks/RESULTS.md")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--only", default=",".join(PARTS), help="comma-separated: " + ",".join(PARTS)
    )
    parser.add_argument("--runs", type=int, default=3, help="warm demo runs (median)")
    args = parser.parse_args()
    parts = {p.strip() for p in args.only.split(",") if p.strip()}
    if parts - set(PARTS):
        parser.error(f"unknown part(s): {', '.join(sorted(parts - set(PARTS)))}")
    from benchmarks.machine import machine_info

    old = json.loads(RESULT.read_text()) if RESULT.exists() else {}
    data = {**old, "benchmark": "first_hour", **measure(parts, max(1, args.runs))}
    data["machine"] = machine_info()
    RESULT.parent.mkdir(exist_ok=True)
    RESULT.write_text(json.dumps(data, indent=2) + "\n")
    lines = section(data)
    update_results(lines)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
