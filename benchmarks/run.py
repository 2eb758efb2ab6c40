"""Plugin-hub benchmarks P1-P5 (fresh processes, medians, each beside its baseline).

    make bench        # or: .venv/bin/python -m benchmarks.run [--runs N]

Writes benchmarks/RESULTS.md and benchmarks/results/hub.json.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.machine import machine_info

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
LIST_ALL = (
    "from brainsmith.plugins import transforms, kernels, backends, steps\n"
    "n = sum(len(c.list_plugins()) for c in (transforms, kernels, backends, steps))\n"
)
IMPORT_ALL = (
    "import runpy\nns = runpy.run_path(%r)\n"
    "from brainsmith.frameworks.finn.env import prepare_finn\nprepare_finn()\n"
    "ns['import_all']('qonnx')\nns['import_all']('finn')"
)


BLUEPRINT_MODE = (
    "from brainsmith.plugin import load_blueprint_plugins\n"
    "chosen = load_blueprint_plugins(%r)\n"
    "n = sum(len(c.list_plugins()) for c in chosen.values())\n"
)
ONE_LOOKUP = (
    "from brainsmith.plugins import transforms\nspec = transforms.qonnx.get_spec('FoldConstants')\n"
)
# Where a warm listing's time goes, measured inside one fresh process.
PHASES = """
import time
t0 = time.perf_counter()
import brainsmith.plugins as plugins
t1 = time.perf_counter()
from brainsmith.plugin.manager import get_plugin_manager
registry = get_plugin_manager().registry()
t2 = time.perf_counter()
records = registry.unchecked
registry.specs()
t3 = time.perf_counter()
n = sum(len(c.list_plugins()) for c in (plugins.transforms, plugins.kernels, plugins.backends,
                                        plugins.steps))
t4 = time.perf_counter()
import json
ms = lambda a, b: (b - a) * 1000
print(json.dumps({"import_ms": ms(t0, t1), "discovery_ms": ms(t1, t2), "check_ms": ms(t2, t3),
                  "list_ms": ms(t3, t4), "records": records}))
"""
HELP = (
    "import sys\nsys.argv = ['brainsmith', '--help']\nfrom brainsmith.cli import main\n"
    "try:\n    main()\nexcept SystemExit:\n    pass\n"
)


# The child reports its own peak RSS (VmHWM): a fork's ru_maxrss would include the parent's.
PEAK = (
    "\nimport os as _o\n_o.write({fd}, open('/proc/self/status').read()"
    ".split('VmHWM:')[1].split()[0].encode())\n_o._exit(0)"
)


def child(code: str, env: dict) -> tuple[float, float]:
    """Run ``python -c code``; return (wall seconds, peak RSS MB) of that process."""
    read, write = os.pipe()
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-c", code + PEAK.format(fd=write)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        pass_fds=(write,),
    )
    os.close(write)
    err = proc.stderr.read()
    proc.wait()
    wall = time.perf_counter() - started
    peak = os.read(read, 64)
    os.close(read)
    proc.stderr.close()
    if proc.returncode:
        raise SystemExit(f"benchmark child failed: {err.decode()[-2000:]}")
    return wall, int(peak) / 1024


def median_runs(code: str, env: dict, runs: int, before=None) -> tuple[float, float]:
    walls, rss = [], []
    for _ in range(runs):
        if before:
            before()
        wall, mem = child(code, env)
        walls.append(wall)
        rss.append(mem)
    return statistics.median(walls) * 1000, statistics.median(rss)


def in_process(code: str, env: dict) -> dict:
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(out.stderr[-2000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


P4_CODE = """
import json, time, timeit
from brainsmith.plugin.manager import get_plugin_manager
from brainsmith.plugins import transforms
manager = get_plugin_manager()
manager.discover_plugins()
n = 20000
repeat = min(timeit.repeat(manager.discover_plugins, number=n, repeat=5)) / n
transforms.qonnx.FoldConstants
ns = transforms.qonnx
m = 200000


def per_call(statement, **names):
    return min(timeit.repeat(statement, globals=names, number=m, repeat=5)) / m


exact = per_call("tfm.qonnx.FoldConstants", tfm=transforms)  # the expression users write
bound = per_call("ns.FoldConstants", ns=ns)
class Plain: pass
plain = Plain(); plain.FoldConstants = 1
base = per_call("plain.FoldConstants", plain=plain)
d = {"transform:FoldConstants": 1}
dict_base = per_call('d["transform:FoldConstants"]', d=d)
checks = []
for _ in range(20):  # what a long-running process pays once per TTL when nothing changed
    t = time.perf_counter()
    manager.refresh()
    checks.append(time.perf_counter() - t)
checks.sort()
print(json.dumps({"repeat_discover_us": repeat * 1e6, "lookup_us": exact * 1e6,
                  "lookup_prebound_us": bound * 1e6, "plain_attribute_us": base * 1e6,
                  "dict_lookup_us": dict_base * 1e6, "recheck_ms": checks[10] * 1000}))
"""

P3_CODE = """
import json, sys, time
from brainsmith.plugin.manager import get_plugin_manager
get_plugin_manager().discover_plugins()
t = time.perf_counter()
from brainsmith.blueprint import load_blueprint_plugins
load_blueprint_plugins(%r)
first = (time.perf_counter() - t) * 1000
t0 = time.perf_counter()
plugins = load_blueprint_plugins(%r)
resolve = (time.perf_counter() - t0) * 1000
count = sum(len(c.list_plugins()) for c in plugins.values())
heavy = sorted(m for m in ("finn", "torch", "onnx", "qonnx") if m in sys.modules)
t1 = time.perf_counter()
for collection in plugins.values():
    for name in collection.list_plugins():
        getattr(collection, name)
load = (time.perf_counter() - t1) * 1000
print(json.dumps({"resolve_ms": resolve, "first_call_ms": first, "plugins": count, "imported_before_use": heavy,
                  "import_all_ms": load}))
"""

BLUEPRINT_20 = """\
name: bench-20
description: twenty named plugins for the resolution benchmark
hw_compiler:
  kernels:
    - finn:MVAU
    - {kernel: finn:Thresholding, backends: [hls]}
    - finn:LayerNorm
  transforms:
    - finn:Streamline
    - qonnx:FoldConstants
    - qonnx:InferShapes
    - qonnx:InferDataTypes
    - qonnx:GiveUniqueNodeNames
    - qonnx:GiveReadableTensorNames
    - qonnx:RemoveStaticGraphInputs
    - finn:ConvertQONNXtoFINN
    - finn:InferLayerNorm
    - finn:InferHWSoftmax
    - finn:CreateDataflowPartition
    - finn:SpecializeLayers
    - finn:SetFolding
    - finn:MinimizeAccumulatorWidth
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21, help="fresh processes per figure")
    parser.add_argument("--cold-runs", type=int, default=7, help="runs of the cold discovery")
    args = parser.parse_args()
    compileall.compile_dir(str(REPO / "brainsmith"), quiet=1)
    work = Path(tempfile.mkdtemp(prefix="brainsmith-bench-"))
    cache = work / "cache"
    config = work / "config.yaml"
    config.write_text("plugin_system: {}\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("BRAINSMITH_")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # installed packages ship .pyc files
    env.update(BRAINSMITH_CACHE_DIR=str(cache), BRAINSMITH_CONFIG=str(config))
    results: dict = {"machine": machine_info(), "date": time.strftime("%Y-%m-%d %H:%M:%S")}

    def cold() -> None:
        shutil.rmtree(cache, ignore_errors=True)

    # P2 first (it also leaves a warm index for the rest)
    p2_wall, p2_rss = median_runs(LIST_ALL, env, args.cold_runs, before=cold)
    base_wall, base_rss = median_runs("pass", env, args.runs)
    cold()
    p2_stats = in_process(
        LIST_ALL + "from brainsmith.plugin.manager import get_plugin_manager as g\n"
        "import json; print(json.dumps(g().get_performance_stats()))",
        env,
    )
    truth = str(REPO / "tests" / "support" / "framework_truth.py")
    all_wall, all_rss = median_runs(IMPORT_ALL % truth, env, 1)
    results["P2"] = {
        "cold_listing_ms": p2_wall,
        "cold_rss_mb": p2_rss,
        "discovery_ms_in_process": p2_stats["discovery_time_ms"],
        "source_timings_ms": p2_stats["source_timings_ms"],
        "plugins": p2_stats["plugin_count"],
        "baseline_import_everything_ms": all_wall,
        "baseline_import_everything_rss_mb": all_rss,
    }
    # P1, P5, P6, P7: warm listing, blueprint mode, --help vs bare interpreter, interleaved
    mode = BLUEPRINT_MODE % str(REPO / "blueprints" / "mlp.yaml")
    first_blueprint = child(mode, env)[0] * 1000  # resolves and remembers the selection
    warm, bare, imports, blueprint_mode, helps, lookups = [], [], [], [], [], []
    for _ in range(args.runs):
        warm.append(child(LIST_ALL, env))
        bare.append(child("pass", env))
        imports.append(child("import brainsmith.plugins", env))
        blueprint_mode.append(child(mode, env))
        helps.append(child(HELP, env))
        lookups.append(child(ONE_LOOKUP, env))
    phases = [in_process(PHASES, env) for _ in range(args.runs // 2 + 1)]
    results["import"] = {
        "import_brainsmith_plugins_ms": statistics.median(w for w, _ in imports) * 1000,
        "python_pass_ms": statistics.median(b for b, _ in bare) * 1000,
        "one_lookup_ms": statistics.median(w for w, _ in lookups) * 1000,
        "phases_ms": {k: statistics.median(p[k] for p in phases) for k in phases[0]},
    }
    results["P1"] = {
        "warm_listing_ms": statistics.median(w for w, _ in warm),
        "python_pass_ms": statistics.median(b for b, _ in bare),
    }
    results["P1"]["overhead_ms"] = (
        results["P1"]["warm_listing_ms"] - results["P1"]["python_pass_ms"]
    )
    for key in ("warm_listing_ms", "python_pass_ms", "overhead_ms"):
        results["P1"][key] *= 1000
    results["P5"] = {
        "warm_listing_rss_mb": statistics.median(m for _, m in warm),
        "python_pass_rss_mb": statistics.median(m for _, m in bare),
    }
    bare_ms = results["P1"]["python_pass_ms"]
    results["P6"] = {
        "blueprint_mode_ms": statistics.median(w for w, _ in blueprint_mode) * 1000,
        "first_resolution_ms": first_blueprint,
        "warm_listing_ms": results["P1"]["warm_listing_ms"],
        "python_pass_ms": bare_ms,
    }
    results["P6"]["overhead_ms"] = results["P6"]["blueprint_mode_ms"] - bare_ms
    results["P6"]["over_full_mode_ms"] = (
        results["P6"]["blueprint_mode_ms"] - results["P1"]["warm_listing_ms"]
    )
    results["P6"]["full_mode_overhead_ms"] = results["P1"]["overhead_ms"]
    results["P7"] = {"help_ms": statistics.median(w for w, _ in helps) * 1000}
    results["P7"]["overhead_ms"] = results["P7"]["help_ms"] - bare_ms
    # P3: blueprint resolution of 20 plugins (warm index)
    blueprint = work / "bench20.yaml"
    blueprint.write_text(BLUEPRINT_20)
    try:
        p3 = [
            in_process(P3_CODE % (str(blueprint), str(blueprint)), env)
            for _ in range(args.runs // 2 + 1)
        ]
        results["P3"] = {
            "resolve_ms": statistics.median(r["resolve_ms"] for r in p3),
            "first_call_ms": statistics.median(r["first_call_ms"] for r in p3),
            "plugins": p3[0]["plugins"],
            "imported_before_use": p3[0]["imported_before_use"],
            "baseline_import_those_plugins_ms": statistics.median(r["import_all_ms"] for r in p3),
        }
    except SystemExit as exc:
        results["P3"] = {"error": str(exc)[-500:]}
    # P4: in-process repeat discovery and lookup
    results["P4"] = in_process(P4_CODE, env)
    results["baseline_python_pass_ms"] = base_wall
    results["baseline_python_pass_rss_mb"] = base_rss
    results["load_average"] = list(os.getloadavg())
    write(results)
    shutil.rmtree(work, ignore_errors=True)


TARGETS = [
    (
        "P1 warm list-all in a fresh process, overhead over `python -c pass` (bytecode on)",
        "P1",
        "overhead_ms",
        "ms",
        6.0,
        lambda r: (
            f"python -c pass: {r['P1']['python_pass_ms']:.1f} ms; warm listing: "
            f"{r['P1']['warm_listing_ms']:.1f} ms"
        ),
    ),
    (
        "P6 blueprint mode: `load_blueprint_plugins('blueprints/mlp.yaml')` in a fresh process, "
        "overhead over `python -c pass`",
        "P6",
        "overhead_ms",
        "ms",
        10.0,
        lambda r: (
            f"full mode (warm listing) {r['P6']['warm_listing_ms']:.1f} ms, blueprint mode "
            f"{r['P6']['blueprint_mode_ms']:.1f} ms ({r['P6']['over_full_mode_ms']:+.1f} ms); "
            f"first resolution (reads the YAML) {r['P6']['first_resolution_ms']:.0f} ms"
        ),
    ),
    (
        "P6 blueprint mode against full mode (blueprint mode's time minus the warm listing's)",
        "P6",
        "over_full_mode_ms",
        "ms",
        0.0,
        lambda r: (
            f"full mode {r['P6']['full_mode_overhead_ms']:.1f} ms, blueprint mode "
            f"{r['P6']['overhead_ms']:.1f} ms over python -c pass"
        ),
    ),
    (
        "P7 `brainsmith --help`, overhead over `python -c pass`",
        "P7",
        "overhead_ms",
        "ms",
        25.0,
        lambda r: f"--help {r['P7']['help_ms']:.1f} ms",
    ),
    (
        "P2 cold discovery (empty cache) of list-all, whole process",
        "P2",
        "cold_listing_ms",
        "ms",
        250.0,
        lambda r: (
            f"importing all of QONNX+FINN instead: {r['P2']['baseline_import_everything_ms']:.0f} ms"
        ),
    ),
    (
        "P2 cold discovery, max RSS",
        "P2",
        "cold_rss_mb",
        "MB",
        150.0,
        lambda r: f"importing everything: {r['P2']['baseline_import_everything_rss_mb']:.0f} MB",
    ),
    (
        "P3 blueprint resolution of 20 plugins (no imports)",
        "P3",
        "resolve_ms",
        "ms",
        5.0,
        lambda r: (
            f"first call incl. loading the YAML/blueprint modules: "
            f"{r['P3'].get('first_call_ms', 0):.1f} ms; then importing those plugins: "
            f"{r['P3'].get('baseline_import_those_plugins_ms', 0):.0f} ms"
        ),
    ),
    (
        "P4 repeat `discover_plugins()` in process (within the TTL)",
        "P4",
        "repeat_discover_us",
        "µs",
        20.0,
        lambda r: f"plain dict lookup: {r['P4']['dict_lookup_us']:.3f} µs",
    ),
    (
        "P4 `tfm.qonnx.FoldConstants`, the whole expression, plugin loaded",
        "P4",
        "lookup_us",
        "µs",
        1.0,
        lambda r: (
            f"plain attribute read: {r['P4']['plain_attribute_us']:.3f} µs; "
            f"`ns.FoldConstants` with `ns = tfm.qonnx` bound before: "
            f"{r['P4'].get('lookup_prebound_us', 0):.3f} µs"
        ),
    ),
    (
        "P5 RSS of a warm listing",
        "P5",
        "warm_listing_rss_mb",
        "MB",
        60.0,
        lambda r: f"python -c pass: {r['P5']['python_pass_rss_mb']:.1f} MB",
    ),
]


PHASE_KEYS = ("import_ms", "discovery_ms", "check_ms", "list_ms")


def load_average(data: dict) -> str:
    """The load average a result file recorded (1, 5 and 15 minutes), or that it has none."""
    if "load_average" not in data:
        return "load average not recorded"
    return f"load average {', '.join(f'{x:.2f}' for x in data['load_average'])}"


def write(results: dict) -> None:
    out = HERE / "results"
    out.mkdir(exist_ok=True)
    (out / "hub.json").write_text(json.dumps(results, indent=2, default=str) + "\n")
    lines = [
        "# Benchmark results",
        "",
        "Produced by `make bench` (`python -m benchmarks.run`): medians over fresh processes, each "
        "figure beside its baseline from the same run. Raw numbers: `benchmarks/results/hub.json`.",
        "",
        f"Run {results['date']} on: "
        + ", ".join(f"{k} {v}" for k, v in results["machine"].items())
        + f"; {load_average(results)}",
        "",
        "| figure | measured | target | baseline (same run) | |",
        "|---|---|---|---|---|",
    ]
    for title, group, key, unit, target, baseline in TARGETS:
        value = results.get(group, {}).get(key)
        if value is None:
            lines.append(
                f"| {title} | not measured: {results.get(group, {}).get('error', '')[:80]} "
                f"| ≤ {target:g} {unit} | | ✗ |"
            )
            continue
        ok = "✓" if value <= target else "✗"
        lines.append(
            f"| {title} | {value:.3f} {unit} | ≤ {target:g} {unit} | {baseline(results)} | {ok} |"
        )
    imp = results["import"]
    phase = imp["phases_ms"]
    lines += [
        "",
        f"`import brainsmith.plugins` in a fresh process: "
        f"{imp['import_brainsmith_plugins_ms']:.1f} ms (bare `python -c pass`: "
        f"{imp['python_pass_ms']:.1f} ms).",
        "",
        f"Where P1's {results['P1']['overhead_ms']:.1f} ms go, timed inside a fresh process "
        f"(medians): importing the hub {phase['import_ms']:.1f} ms; discovery (reading and "
        f"stamp-checking the index of {phase['records']:.0f} records) "
        f"{phase['discovery_ms']:.1f} ms; checking every record against its source and "
        f"entering it in the registry {phase['check_ms']:.1f} ms (a listing needs them all); "
        f"the four listings {phase['list_ms']:.1f} ms (garbage collection included in each; "
        "the phases are medians of other processes than P1's, so they need not add up to it: "
        f"{results['P1']['overhead_ms'] - sum(phase[k] for k in PHASE_KEYS):+.1f} ms). "
        "A full listing needs every one of these: the hub's modules, the index with the stamps "
        "of every file it was made from, and each record checked against its source before "
        "its name is listed.",
        "",
        f"A fresh process that looks one plugin up (`transforms.qonnx.get_spec('FoldConstants')`) "
        f"checks that plugin's record alone: {imp['one_lookup_ms'] - imp['python_pass_ms']:.1f} "
        "ms over `python -c pass`.",
    ]
    if "recheck_ms" in results.get("P4", {}):
        lines += [
            "",
            f"A long-running process re-checks the index once per TTL on its next discovery or "
            f"lookup; when nothing changed that costs {results['P4']['recheck_ms']:.2f} ms "
            "(median of 20 `refresh()` calls).",
        ]
    p2 = results["P2"]
    lines += [
        "",
        f"Cold discovery found {p2['plugins']} plugins; in-process discovery "
        f"{p2['discovery_ms_in_process']:.0f} ms, per source (ms): "
        + ", ".join(f"{k} {v:.0f}" for k, v in p2["source_timings_ms"].items())
        + ".",
    ]
    build = out / "build_overhead.json"
    if build.exists():
        data = json.loads(build.read_text())
        lines += ["", "## Build overhead", "", "```json", json.dumps(data, indent=2)[:3000], "```"]
    finn = out / "finn_builder.json"
    if finn.exists():
        data = json.loads(finn.read_text())
        ours, theirs = data["brainsmith"], data["finn_build_dataflow_cfg"]
        lines += [
            "",
            "## Build vs FINN's builder (shipped CNV, verification off)",
            "",
            f"`brainsmith build` {ours['process_wall_s']:.2f} s wall, {ours['cpu_s']:.2f} s CPU; "
            f"FINN's `build_dataflow_cfg` on the same 13 steps {theirs['process_wall_s']:.2f} s "
            f"wall, {theirs['cpu_s']:.2f} s CPU (medians of {data['runs']} fresh processes each, "
            "`python -m benchmarks.finn_builder`): "
            f"**{data['ratio_wall']:.3f}x wall, {data['ratio_cpu']:.3f}x CPU** (target "
            f"≤ {data['target_ratio']:.2f}x for both: {'✓' if data['meets_target'] else '✗'}; "
            f"{load_average(data)}).",
        ]
    explore = out / "explore.json"
    if explore.exists():
        data = json.loads(explore.read_text())
        med = data["median_seconds"]
        lines += [
            "",
            "## Design-space exploration (brainsmith explore)",
            "",
            f"The {data['variants']} variants of `{data['blueprint']}` (medians of "
            f"{data['runs']} rounds, `python -m benchmarks.explore`): explore at 2 workers "
            f"{med['explore_2_workers']:.1f} s ({data['steps_run']} step runs instead of "
            f"{data['steps_without_reuse']}); the variants as `brainsmith build` processes, two "
            f"at a time {med['builds_2_parallel']:.1f} s "
            f"({data['speedup_vs_builds_2_parallel']:.1f}x as long), one at a time "
            f"{med['builds_sequential']:.1f} s ({data['speedup_vs_builds_sequential']:.1f}x as "
            f"long); explore at 1 worker {med['explore_1_worker']:.1f} s, in-process "
            f"{med['explore_in_process']:.1f} s. The Dask path (1 worker against in-process): "
            f"{data['dask_overhead_per_variant_seconds']:.2f} s per variant, plus "
            f"{data['dask_local_cluster_start_and_stop_seconds']:.1f} s to start and stop the "
            f"local cluster ({load_average(data)}).",
        ]
    cost = out / "verify_cost.json"
    if cost.exists():
        lines += ["", "## Verification cost (verify: each vs none)", ""]
        lines.append(
            "Each model with no blueprint at 100,000 fps, fresh processes, alternating "
            "(`python -m benchmarks.verify_cost`); target: verify each at most 1.3x."
        )
        lines.append("")
        for data in json.loads(cost.read_text())["models"]:
            none, each = data["verify_none"], data["verify_each"]
            steps = ", ".join(
                f"{s['step']} {s['seconds']:.2f}/"
                + ("unchanged" if s["unchanged"] else f"{s['verify_seconds']:.2f}")
                for s in each["steps_of_median_run"]
            )
            lines.append(
                f"- `{data['model']}` (median of {data['runs']}): verify none "
                f"{none['process_wall_s']:.1f} s, verify each {each['process_wall_s']:.1f} s: "
                f"**{data['ratio_wall']:.2f}x** wall, {data['ratio_cpu']:.2f}x CPU (load average "
                f"{', '.join(f'{x:.2f}' for x in data['load_average'])}); per step, step s / "
                f"verification s: {steps}."
            )
    ties = out / "ties.json"
    if ties.exists():
        from benchmarks.ties import table as ties_table

        lines += ties_table(json.loads(ties.read_text()))
    folding = out / "folding.json"
    if folding.exists():
        from benchmarks.folding import table

        lines += table(json.loads(folding.read_text()))
    measured_folding = out / "folding_measured.json"
    if measured_folding.exists():
        from benchmarks.folding_measured import table as measured_table

        lines += measured_table(json.loads(measured_folding.read_text()))
    rtlsim = out / "rtlsim.json"
    if rtlsim.exists():
        from benchmarks.rtlsim import table as rtlsim_table

        lines += rtlsim_table(json.loads(rtlsim.read_text()))
    synthesis = out / "synth.json"
    if synthesis.exists():
        from benchmarks.synth import section as synthesis_section

        lines += synthesis_section(json.loads(synthesis.read_text()))
    networks = out / "synth_networks.json"
    if networks.exists():
        from benchmarks.synth_networks import section as networks_section

        lines += networks_section(json.loads(networks.read_text()))
    part_fit = out / "part_fit.json"
    if part_fit.exists():
        from benchmarks.part_fit import section as part_fit_section

        lines += part_fit_section(json.loads(part_fit.read_text()))
    fitted = out / "synth_fit.json"
    if fitted.exists():
        from benchmarks.synth_fit import section as fit_section

        lines += fit_section(json.loads(fitted.read_text()))
    shared = out / "shared_index.json"
    if shared.exists():
        data = json.loads(shared.read_text())
        lines += [
            "",
            "## Shared discovery index (Redis)",
            "",
            f"Cold start of a second machine (empty `cache_dir`, list all plugins, median of "
            f"{data['runs']}): {data['second_machine_cold_s'] * 1000:.0f} ms scanning, "
            f"{data['second_machine_shared_s'] * 1000:.0f} ms with the index the first machine "
            f"published (`python -m benchmarks.shared_index`; load average "
            f"{', '.join(f'{x:.2f}' for x in data['load_average'])}).",
        ]
    first_hour = out / "first_hour.json"
    if first_hour.exists():
        from benchmarks.first_hour import section

        lines += section(json.loads(first_hour.read_text()))
    text = with_written_sections("\n".join(lines) + "\n", HERE / "RESULTS.md")
    (HERE / "RESULTS.md").write_text(text)
    print(text, end="")


def sections(text: str) -> list[tuple[str, str]]:
    """(heading, text) of each ``## `` section of ``text``, the part before the first as ""."""
    found: list[tuple[str, str]] = []
    for part in ("\n" + text).split("\n## "):
        heading = part.split("\n", 1)[0] if found else ""
        found.append((heading, part if not found else "## " + part))
    return found


def with_written_sections(generated: str, previous: Path) -> str:
    """``generated`` with the sections of ``previous`` it has no heading for (written from
    other benchmarks' runs: the full-size networks, streamlining) kept, each after the
    section it followed there."""
    if not previous.exists():
        return generated
    made = sections(generated)
    headings = {heading for heading, _ in made}
    after: dict[str, list[str]] = {}
    anchor = ""
    for heading, body in sections(previous.read_text()):
        if heading in headings:
            anchor = heading
        else:
            after.setdefault(anchor, []).append(body.rstrip("\n"))
    parts = []
    for heading, body in made:
        parts.append(body.strip("\n"))
        parts += after.pop(heading, [])
    parts += [body for bodies in after.values() for body in bodies]
    return "\n\n".join(part for part in parts if part) + "\n"


if __name__ == "__main__":
    main()
