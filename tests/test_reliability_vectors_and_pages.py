"""Vector files and report pages from elsewhere: a ``.npy`` or ``.npz`` is bounded from its
headers before any value is read or unpacked, and text where a report has a number, or a
folder name that looks like a URL, never becomes live markup on a page."""

from __future__ import annotations

import io
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest

from tests.support.processes import Ran, invoke

REPO = Path(__file__).resolve().parents[1]
MODELS = REPO / "examples" / "models"
BLUEPRINTS = REPO / "blueprints"
MARKUP = "<img src=x onerror=alert(1)>"


def npy_header(shape: tuple[int, ...], dtype: str = "<f4") -> bytes:
    """A version 1.0 .npy header declaring ``shape`` values of ``dtype``, and no values."""
    from numpy.lib import format as npy

    buffer = io.BytesIO()
    npy.write_array_header_1_0(buffer, {"descr": dtype, "fortran_order": False, "shape": shape})
    return buffer.getvalue()


def test_an_npy_claiming_more_values_than_it_holds_is_refused_from_its_header(tmp_path):
    from brainsmith.files import DamagedFile, read_npy

    liar = tmp_path / "liar.npy"
    liar.write_bytes(npy_header((200_000, 1_000_000)))  # 745 GiB of float32, 128 bytes
    with pytest.raises(DamagedFile, match="over the limit"):
        read_npy(str(liar))
    short = tmp_path / "short.npy"
    short.write_bytes(npy_header((1000,)) + b"\0" * 16)
    with pytest.raises(DamagedFile, match="declares 4,000 bytes of values but is"):
        read_npy(str(short))


def test_an_npz_that_would_unpack_past_the_limit_is_refused_unpacked(tmp_path):
    from brainsmith.files import DamagedFile, read_npz

    bomb = tmp_path / "bomb.npz"
    with (
        zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as archive,
        archive.open("y.npy", "w") as member,
    ):
        member.write(npy_header((16 * 2**20,)))
        for _ in range(8):
            member.write(bytes(8 * 2**20))  # 64 MiB of zeros: some 64 KiB packed
    assert bomb.stat().st_size < 2**20
    with pytest.raises(DamagedFile, match=r"\(y\) unpacks to 67,108,992 bytes, over the limit"):
        read_npz(str(bomb), limit=2**20)
    assert read_npz(str(bomb))["y"].shape == (16 * 2**20,)  # within the default limit


@pytest.mark.parametrize(
    "dtype", ["|O", "<c8", [("a", "<f4"), ("b", "<f4")]], ids=["object", "complex", "structured"]
)
def test_an_array_of_what_is_not_real_numbers_is_refused_from_its_header(tmp_path, dtype):
    from brainsmith.files import DamagedFile, read_npy

    path = tmp_path / "x.npy"
    path.write_bytes(npy_header((4,), dtype) + b"\0" * 64)
    with pytest.raises(DamagedFile, match="not"):
        read_npy(str(path))


def brainsmith(*args: str) -> Ran:
    return invoke(*args)


def test_build_refuses_a_vector_file_claiming_745_gib_naming_it(tmp_path):
    x = tmp_path / "x.npy"
    x.write_bytes(npy_header((200_000, 1_000_000)))
    y = tmp_path / "y.npy"
    np.save(y, np.zeros((1, 10), np.float32))
    result = brainsmith(
        "build", str(MODELS / "mlp_4bit.onnx"), str(BLUEPRINTS / "mlp.yaml"),
        "--input", str(x), "--expected", str(y), "-o", str(tmp_path / "out"),
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert f"--input {x} declares (200000, 1000000) float32 values" in result.stderr
    assert "Traceback" not in result.stderr and not (tmp_path / "out").exists()


@pytest.fixture(scope="module")
def built(hub, farm) -> Path:
    return Path(farm.build(MODELS / "mlp_4bit.onnx", BLUEPRINTS / "mlp.yaml").output_dir)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["archive-of-two", "liar", "nan"])
def test_verify_rtl_input_that_cannot_be_used_is_named_not_a_traceback(built, tmp_path, kind):
    path = tmp_path / ("x.npz" if kind == "archive-of-two" else "x.npy")
    if kind == "archive-of-two":
        np.savez(path, a=np.zeros((1, 64), np.float32), b=np.zeros((1, 64), np.float32))
        said = "is an .npz archive of 2 arrays (a, b)"
    elif kind == "liar":
        path.write_bytes(npy_header((200_000, 1_000_000)))
        said = "over the limit"
    else:
        np.save(path, np.full((1, 64), np.nan, np.float32))
        said = "NaN or infinite"
    copy = Path(shutil.copytree(built, tmp_path / "copy"))
    result = brainsmith("verify-rtl", str(copy), "--input", str(path))
    assert result.returncode == 2, result.stderr
    assert said in result.stderr and "Traceback" not in result.stderr, result.stderr


@pytest.mark.parametrize(
    "value",
    [MARKUP, "1e999", float("inf"), float("nan"), 10**4000, [1], {"a": 1}],
    ids=["markup", "text", "inf", "nan", "huge-int", "list", "object"],
)
def test_text_where_a_report_has_a_number_never_reaches_a_page(value):
    from brainsmith.report.html import first_screen
    from brainsmith.report.text import number

    assert number(value) == "-"
    report = {
        "name": "mlp",
        "status": "ok",
        "performance": {"estimated_fps": value, "estimated_latency_ns": value},
        "totals": {},
        "steps": [],
    }
    page = first_screen(report)  # type: ignore[arg-type]
    assert "<img" not in page and "onerror" not in page


def test_a_folder_named_like_a_url_is_linked_as_a_file(tmp_path, monkeypatch):
    from brainsmith.builder.result import BuildResult

    folder = tmp_path / "javascript:alert(1)"
    folder.mkdir()
    (folder / "report.html").write_text("<html></html>")
    monkeypatch.chdir(tmp_path)
    report = {"name": "mlp", "status": "ok", "performance": {}, "totals": {}, "steps": []}
    result = BuildResult(str(folder), report, html_path=str(folder / "report.html"))  # type: ignore[arg-type]
    page = result._repr_html_()
    assert "href='./javascript%3Aalert%281%29/report.html'" in page, page
    assert "href='javascript" not in page
