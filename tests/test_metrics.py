"""Metrics of real builds and explorations: the Prometheus text file of a build, the endpoint
of a running exploration (scraped over HTTP), OpenTelemetry spans read from an in-memory
exporter, and nothing imported when none of it is asked for."""

from __future__ import annotations

import json
import socket
import time
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import run_python
from tests.support.processes import brainsmith, invoke

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
MLP = str(REPO / "examples" / "models" / "mlp_4bit.onnx")
BLUEPRINT = str(REPO / "blueprints" / "mlp.yaml")


def samples(text: str) -> dict[tuple, float]:
    """{(metric, sorted labels): value} of a Prometheus text exposition."""
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def test_a_build_writes_its_metrics_as_prometheus_text_and_exports_its_spans_before_it_exits(
    tmp_path,
):
    import os

    metrics = tmp_path / "build.prom"
    env = {**os.environ, "OTEL_TRACES_EXPORTER": "console"}
    process = brainsmith("build", MLP, BLUEPRINT, "-o", str(tmp_path / "out"), "-q",
                         "--metrics-file", str(metrics), env=env)  # fmt: skip
    stdout, stderr = process.communicate(timeout=600)
    assert process.returncode == 0, stderr
    assert '"name": "brainsmith.step cleanup"' in stdout  # batched spans flushed before exiting
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    found = samples(metrics.read_text())
    for step in report["steps"]:
        if step["status"] == "ok":
            key = ("brainsmith_build_step_seconds", (("build", "mlp"), ("step", step["name"])))
            assert found[key] == pytest.approx(step["seconds"]), step["name"]
    checked = [s for s in report["steps"] if s.get("verification")]
    assert checked
    for step in checked:
        key = (
            "brainsmith_build_verification_max_error",
            (("build", "mlp"), ("step", step["name"])),
        )
        assert found[key] == pytest.approx(step["verification"]["max_error"])
    fps = found[("brainsmith_build_estimated_fps", (("build", "mlp"),))]
    assert fps == report["performance"]["estimated_fps"]
    assert found[("brainsmith_plugins", ())] > 300


def test_a_failed_build_still_writes_its_metrics(tmp_path):
    import numpy as np
    from qonnx.core.modelwrapper import ModelWrapper

    model = ModelWrapper(MLP)
    np.save(tmp_path / "x.npy", np.zeros(model.get_tensor_shape("global_in"), dtype=np.float32))
    np.save(tmp_path / "y.npy", np.full(model.get_tensor_shape("global_out"), 100.0, "float32"))
    metrics = tmp_path / "build.prom"
    code, _, stderr = invoke("build", MLP, BLUEPRINT, "-o", str(tmp_path / "out"), "-q",
                             "--input", str(tmp_path / "x.npy"), "--expected",
                             str(tmp_path / "y.npy"), "--metrics-file", str(metrics))  # fmt: skip
    assert code == 1, stderr
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    found = samples(metrics.read_text())
    assert found[("brainsmith_build_seconds", (("build", "mlp"), ("status", "failed")))] > 0
    assert report["status"] == "failed"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_a_running_exploration_serves_its_metrics(tmp_path):
    space = tmp_path / "space.yaml"
    space.write_text(
        f"name: small\nextends: {BLUEPRINT}\nbuild: {{size_fifos: false}}\ndesign_space:\n  build: {{target_fps: [100000, 1000000]}}\n"
    )
    port = free_port()
    process = brainsmith("explore", MLP, str(space), "-o", str(tmp_path / "out"), "--workers",
                         "0", "-q", "--metrics-port", str(port))  # fmt: skip
    seen: dict = {}
    try:
        deadline = time.monotonic() + 600
        while process.poll() is None and time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as page:
                    seen = samples(page.read().decode())
            except OSError:
                pass
            done = seen.get(("brainsmith_explore_variants_total",
                             (("exploration", "small"), ("status", "ok"))), 0)  # fmt: skip
            if done >= 1:
                break
            time.sleep(0.2)
        _, stderr = process.communicate(timeout=600)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, stderr
    assert (
        seen[("brainsmith_explore_variants_total", (("exploration", "small"), ("status", "ok")))]
        >= 1
    )
    assert any(name == "brainsmith_explore_segment_seconds" for name, _ in seen)


SPANS = """
import json, sys
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)

import brainsmith
result = brainsmith.build(sys.argv[1], sys.argv[2], sys.argv[3])
print(json.dumps({
    "spans": [[s.name, dict(s.attributes), (s.end_time - s.start_time) / 1e9]
              for s in exporter.get_finished_spans()],
    "steps": [[s["name"], s["status"]] for s in result.report["steps"]],
}))
"""


def test_each_build_step_is_a_span_when_the_application_traces(tmp_path):
    code = "import sys; sys.argv[1:] = " + repr([MLP, BLUEPRINT, str(tmp_path / "out")]) + SPANS
    result = run_python(code, timeout=600)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout.strip().splitlines()[-1])
    ran = [name for name, status in data["steps"] if status == "ok"]
    spans = {name: (attributes, seconds) for name, attributes, seconds in data["spans"]}
    assert [n for n in spans if n.startswith("brainsmith.step ")] == [
        f"brainsmith.step {s}" for s in ran
    ]
    attributes, seconds = spans[f"brainsmith.step {ran[0]}"]
    assert attributes["step"] == ran[0] and attributes["index"] == 1 and seconds > 0


def test_nothing_is_imported_when_no_one_asks_for_metrics():
    code = (
        "import sys\n"
        "import brainsmith.plugins\n"
        "from brainsmith.metrics import span\n"
        "with span('x'):\n"
        "    pass\n"
        "print(sorted(m for m in sys.modules if m.partition('.')[0] in "
        "('opentelemetry', 'prometheus_client', 'redis')))\n"
    )
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
