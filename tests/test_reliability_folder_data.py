"""Data in a build folder, or given beside one, that brainsmith did not write: a report.json
whose strings and numbers reach a page, vector files whose headers declare what they hold,
and numbers of build options beyond what a build can use.

- no string of a report becomes markup: every value reaching report.html or a notebook's
  view is escaped, a value that is not a number where one belongs shows as "-", and a
  section of the wrong shape is named instead of stopping the page;
- a ``.npy`` or ``.npz`` is refused from its headers (exit 2, naming the file and array)
  when a dimension is negative or an archive's member is not the size its header declares;
- a clock period or frame rate out of range is refused on the command line (exit 2).
"""

from __future__ import annotations

import copy
import io
import json
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest

from tests.support.processes import Ran, invoke

REPO = Path(__file__).resolve().parents[1]
MODELS = REPO / "examples" / "models"
BLUEPRINTS = REPO / "blueprints"
PART = "xczu7ev-ffvc1156-2-e"
# closes a single- or double-quoted attribute, then opens an element
MARKUP = "'\"><img src=x onerror=alert(1)>"


def brainsmith(*args: str, cwd: Path | None = None) -> Ran:
    return invoke(*args, cwd=cwd)


def live_markup(page: str) -> bool:
    """Whether ``page`` holds an element or attribute ``MARKUP`` brought in."""
    return "<img" in page or "onerror=alert(1)>" in page.replace("&gt;", "")


# -- report.json's strings and numbers on a page -------------------------------------------------


def hostile_report() -> dict:
    """A report.json as an ok build of two RTL layers writes it (rtlsim and synthesis
    included), with the values a page shows as numbers replaced by ``MARKUP``."""
    layer = {
        "name": "MVAU_rtl_0",
        "op_type": "MVAU",
        "backend": "rtl",
        "PE": 1,
        "SIMD": 2,
        "input_datatype": "INT4",
        "output_datatype": "INT4",
        "weight_datatype": "INT4",
        "reads": [{"from": None, "bits": 8}],
        "estimated": True,
        "LUT": 10,
        "BRAM_18K": 0,
        "URAM": 0,
        "DSP": 0,
        "not_estimated": [],
        "cycles": 64,
        "MACs": 128,
        "params": 128,
    }
    return {
        "name": "mlp",
        "status": "ok",
        "error": None,
        "model": "mlp.onnx",
        "fpga_part": PART,
        "clock_ns": 5.0,
        "seconds": 1.0,
        "notes": [],
        "steps": [{"name": "folding", "status": "ok", "seconds": 0.1}],
        "layers": [layer, {**layer, "name": "MVAU_rtl_1", "reads": [{"from": "MVAU_rtl_0"}]}],
        "totals": {"LUT": 20, "BRAM_18K": 0, "URAM": 0, "DSP": 0},
        "incomplete": {},
        "performance": {"estimated_fps": 1e6, "max_cycles": 64, "max_cycles_layer": "MVAU_rtl_0"},
        "target": {
            "target_fps": 1000,
            "met": True,
            "target_cycles": 200_000,
            "bottleneck": "MVAU_rtl_0",
            "bottleneck_cycles": 64,
            "estimated_fps": 1e6,
            "finn_warnings_superseded": MARKUP,
        },
        "warnings": [{"level": "WARNING", "source": "finn", "message": "m", "count": MARKUP}],
        "rtlsim": {
            "tool": "Verilator",
            "ok": True,
            "seconds": 1.0,
            "summary": "2 RTL layer(s) match",
            "layers": [{"name": "MVAU_rtl_0", "op_type": "MVAU", "status": MARKUP}],
            "stitched": {
                "status": "match",
                "layers": MARKUP,
                "frames": MARKUP,
                "cycles_per_frame": 64,
                "fps": 1e6,
                "latency_cycles": 80,
                "latency_ns": 400,
                "fifos": [],
            },
        },
    }


def test_no_string_of_a_report_becomes_markup_on_its_page():
    """The warnings' counts, the superseded warnings, the stitched partition's layers and
    frames and a simulated layer's status went onto report.html unescaped."""
    from brainsmith.report.html import first_screen, render

    report = hostile_report()
    page = render(report, {}, None)  # type: ignore[arg-type]
    assert not live_markup(page), [line for line in page.splitlines() if "<img" in line]
    assert not live_markup(first_screen(report))  # type: ignore[arg-type]
    assert "MVAU_rtl_0" in page  # the page is still drawn


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("error",), MARKUP),
        (("steps", 0, "seconds"), MARKUP),
        (("layers", 0, "cycles"), MARKUP),
        (("performance", "estimated_fps"), MARKUP),
        (("rtlsim", "seconds"), MARKUP),
        (("rtlsim", "stitched", "fps"), MARKUP),
        (("rtlsim",), MARKUP),
        (("layers",), {"a": 1}),
    ],
    ids=["error-text", "step-seconds-text", "layer-cycles-text", "fps-text",
         "rtlsim-seconds-text", "stitched-fps-text", "rtlsim-text", "layers-object"],
)  # fmt: skip
def test_a_report_value_of_the_wrong_type_is_named_and_the_page_still_drawn(tmp_path, path, value):
    """Text where a number belongs raised TypeError or ValueError (no page at all: verify-rtl
    failed after its simulation, a notebook showed a traceback)."""
    from brainsmith.report.contents import write_html
    from brainsmith.report.html import first_screen

    report = hostile_report()
    place = report
    for key in path[:-1]:
        place = place[key]
    place[path[-1]] = value
    first = first_screen(report)  # type: ignore[arg-type]
    assert not live_markup(first)
    write_html(str(tmp_path), report)  # type: ignore[arg-type]
    page = (tmp_path / "report.html").read_text()
    assert not live_markup(page)
    assert "MVAU_rtl_1" in page or path == ("layers",)


def test_a_folder_named_with_two_dots_first_is_linked_as_a_file(tmp_path, monkeypatch):
    """A folder ``..x`` in the working folder: its relative path starts with ``..`` but is
    inside; the view raised ValueError (a relative path has no file URI)."""
    from brainsmith.builder.result import BuildResult

    report = {"name": "mlp", "status": "ok", "performance": {}, "totals": {}, "steps": []}
    (tmp_path / "..x").mkdir()
    monkeypatch.chdir(tmp_path)
    result = BuildResult("..x", report, html_path="..x/report.html")  # type: ignore[arg-type]
    assert "href='./..x/report.html'" in result._repr_html_()


def test_a_report_outside_the_working_folder_is_linked_by_its_file_uri_once_encoded(
    tmp_path, monkeypatch
):
    """A space became ``%2520``: the file URI was percent-encoded twice."""
    from brainsmith.builder.result import BuildResult

    report = {"name": "mlp", "status": "ok", "performance": {}, "totals": {}, "steps": []}
    folder = tmp_path / "a b" / "javascript:x"
    folder.mkdir(parents=True)
    (tmp_path / "here").mkdir()
    monkeypatch.chdir(tmp_path / "here")
    result = BuildResult(str(folder), report, html_path=str(folder / "report.html"))  # type: ignore[arg-type]
    view = result._repr_html_()
    assert f"href='{(folder / 'report.html').as_uri()}'" in view, view[-300:]


@pytest.fixture(scope="module")
def full_report(hub, farm, tmp_path_factory) -> dict:
    """report.json of the run's all-RTL MLP for an UltraScale+ part, synthesised, after
    ``verify-rtl``: every section a page draws."""
    built = farm.build(
        MODELS / "mlp_4bit.onnx",
        BLUEPRINTS / "mlp.yaml",
        options={"fpga_part": PART, "synth": True},
        prefer="rtl",
        verify="none",
    )
    folder = Path(shutil.copytree(built.output_dir, tmp_path_factory.mktemp("full") / "mlp"))
    result = brainsmith("verify-rtl", str(folder))
    assert result.returncode == 0, result.stderr
    report = json.loads((folder / "report.json").read_text())
    assert report["rtlsim"]["stitched"] and report["synthesis"]["layers"]
    return report


def leaves(node: object, path: tuple = ()) -> list[tuple]:
    if isinstance(node, dict):
        return [p for key, value in node.items() for p in leaves(value, (*path, key))]
    if isinstance(node, list):
        return [p for index, value in enumerate(node) for p in leaves(value, (*path, index))]
    return [path]


@pytest.mark.slow
@pytest.mark.wide  # breadth: some 900 pages per value over a synthesised and simulated build
@pytest.mark.xdist_group("synthesis")
@pytest.mark.parametrize("value", [MARKUP, float("nan"), [MARKUP]], ids=["markup", "nan", "list"])
def test_every_value_of_a_real_report_replaced_never_becomes_markup_or_stops_the_page(
    full_report, tmp_path, value
):
    """Each of the report's values in turn (some 900) replaced by markup, NaN or a list:
    report.html, its dataflow picture and a notebook's view are drawn with no element of it."""
    from brainsmith.report.contents import write_html
    from brainsmith.report.html import first_screen

    failures = []
    for path in leaves(full_report):
        report = copy.deepcopy(full_report)
        place = report
        for key in path[:-1]:
            place = place[key]
        place[path[-1]] = value
        try:
            write_html(str(tmp_path), report)
            page = (tmp_path / "report.html").read_text() + first_screen(report, "r.html")
        except Exception as exc:  # every failure is listed
            failures.append(f"{path}: {type(exc).__name__} {exc}")
            continue
        if live_markup(page):
            failures.append(f"{path}: live markup")
    assert not failures, "\n".join(failures[:40])


# -- vector files declaring what they do not hold ----------------------------------------------


def npy_header(shape: tuple[int, ...], dtype: str = "<f4") -> bytes:
    """A version 1.0 .npy header declaring ``shape`` (numpy accepts negative dimensions)."""
    text = f"{{'descr': '{dtype}', 'fortran_order': False, 'shape': {shape!r}, }}"
    text += " " * (117 - len(text)) + "\n"
    return b"\x93NUMPY\x01\x00" + len(text).to_bytes(2, "little") + text.encode()


def write_npz(path: Path, members: dict[str, bytes]) -> None:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)


@pytest.mark.parametrize("shape", [(-5,), (-2, -3), (4, -1)], ids=["one", "two", "one-of-two"])
@pytest.mark.parametrize("kind", ["npy", "npz"])
def test_a_negative_dimension_in_a_vector_header_is_refused_naming_the_file(tmp_path, shape, kind):
    """numpy reads ``(-2, -3)`` from a header: ``reshape`` raised ValueError (a traceback,
    exit 1), and ``(-5,)`` made the read take the whole file or archive member."""
    body = npy_header(shape) + b"\0" * 96
    x, y = tmp_path / "x.npy", tmp_path / "y.npy"
    np.save(x, np.zeros((1, 64), np.float32))
    np.save(y, np.zeros((1, 10), np.float32))
    if kind == "npy":  # --input: one array
        flag, given = "--input", x
        x.write_bytes(body)
    else:  # --expected: an archive of one array per output
        flag, given = "--expected", tmp_path / "y.npz"
        write_npz(given, {"global_out.npy": body})
        y = given
    result = brainsmith(
        "build", str(MODELS / "mlp_4bit.onnx"), str(BLUEPRINTS / "mlp.yaml"),
        "--input", str(x), "--expected", str(y), "-o", str(tmp_path / "out"),
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    assert f"{flag} {given}" in result.stderr, result.stderr
    assert "a negative dimension" in result.stderr, result.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("extra", [64, -16], ids=["longer", "shorter"])
def test_an_npz_member_not_the_size_its_header_declares_is_refused(tmp_path, extra):
    """A member with bytes after its values (or fewer than declared) is not what
    ``numpy.savez`` writes: refused from the sizes, naming the archive and the array."""
    from brainsmith.files import DamagedFile, read_npz

    body = npy_header((10,)) + b"\0" * 40
    body = body + b"\0" * extra if extra > 0 else body[:extra]
    path = tmp_path / "y.npz"
    write_npz(path, {"y.npy": body})
    with pytest.raises(DamagedFile, match=rf"{path} \(y\)"):
        read_npz(str(path))
    good = io.BytesIO()
    np.save(good, np.arange(10, dtype=np.float32))
    write_npz(path, {"y.npy": good.getvalue()})
    assert read_npz(str(path))["y"].tolist() == list(range(10))


# -- numbers of build options ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("option", "value", "said"),
    [
        ("--clock-ns", "1e-300", "build.clock_ns is 1e-300"),
        ("--clock-ns", "inf", "build.clock_ns is the number inf"),
        ("--clock-ns", "2e6", "build.clock_ns is 2e+06"),
        ("--target-fps", str(10**13), "build.target_fps is the number 10000000000000"),
    ],
    ids=["clock-1e-300", "clock-inf", "clock-2ms", "fps-1e13"],
)
def test_a_clock_or_rate_no_build_can_use_is_refused_on_the_command_line(
    tmp_path, option, value, said
):
    """``--clock-ns 1e-300`` passed validation and overflowed in the folding."""
    result = brainsmith(
        "build", str(MODELS / "mlp_4bit.onnx"), str(BLUEPRINTS / "mlp.yaml"),
        option, value, "-o", str(tmp_path / "out"),
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert f"{option}: {said}; expected" in result.stderr, result.stderr
    assert not (tmp_path / "out").exists()


def test_the_build_help_gives_the_range_of_the_clock_and_the_rate():
    result = brainsmith("build", "--help")
    text = " ".join(result.stdout.split())
    assert "0.1 to 1,000,000" in text and "1 to 10**12" in text, result.stdout
