"""Pages looked at as a user does: Debian's headless Chromium at a given window width,
measuring the layout with a small script and keeping screenshots as test artefacts in
build-out/screenshots/ (BRAINSMITH_SCREENSHOTS to put them elsewhere)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.support.models import REPO

CHROMIUM = "/usr/bin/chromium"  # Debian's launcher script; it runs BROWSER
BROWSER = "/usr/lib/chromium/chromium"
MEASURE = """<pre id='layout-probe'></pre><script>
var wide = [];
document.querySelectorAll('.scroll').forEach(function (box) {
  if (box.scrollWidth > box.clientWidth + 1) wide.push(box.firstElementChild.className || box.firstElementChild.tagName);
});
document.getElementById('layout-probe').textContent = 'LAYOUT ' + JSON.stringify({
  page: document.documentElement.scrollWidth, window: window.innerWidth, scrolling: wide,
  found: SELECTORS.filter(function (s) { return document.querySelector(s) !== null; })});
</script>"""


def chromium() -> str:
    """The browser itself where Debian's launcher script names it (the script starts a
    dozen helper processes of its own before it), else the script."""
    if not os.path.exists(CHROMIUM):
        pytest.fail(f"{CHROMIUM} is missing: run `make browser` to install Debian's chromium")
    return BROWSER if os.access(BROWSER, os.X_OK) else CHROMIUM


def _flags(profile: Path, width: int, height: int, one_process: bool = True) -> list[str]:
    """One headless page, by default in one process: no zygote, the renderer in the browser's
    process (a page a test renders is brainsmith's own report, so there is nothing to isolate)."""
    alone = ["--single-process", "--no-zygote"] if one_process else []
    return [chromium(), "--headless", "--no-sandbox", *alone,
            "--disable-gpu", "--no-first-run", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--hide-scrollbars",
            f"--user-data-dir={profile}", f"--window-size={width},{height}"]  # fmt: skip


def _render(action: list[str], scratch: Path, width: int, height: int, done) -> str:
    """Run the browser on ``action`` (``--dump-dom URL`` or ``--screenshot=...``) until
    ``done(stdout)``: once in one process and, should that run end without the result
    (Chromium calls its one-process mode unsupported), once more in its usual processes.
    Each run gets a profile of its own. The stdout of the run that succeeded."""
    runs = []
    for one_process in (True, False):
        profile = Path(tempfile.mkdtemp(prefix="profile-", dir=scratch))
        ran = subprocess.run([*_flags(profile, width, height, one_process), *action],
                             capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
        if done(ran.stdout):
            return ran.stdout
        runs.append(f"exit {ran.returncode}: {ran.stderr[-800:]}")
    raise AssertionError(f"the browser gave no result for {action}:\n" + "\n".join(runs))


def dump_dom(page: Path, scratch: Path, width: int = 1280, height: int = 900) -> str:
    """The document ``page`` becomes once loaded and its scripts have run."""
    return _render(
        ["--dump-dom", page.as_uri()], scratch, width, height, lambda out: "</html>" in out
    )


def layout(page: Path, selectors: list[str], scratch: Path, width: int = 1280) -> dict:
    """How ``page`` lays out at ``width`` pixels: the page's scroll width, the window's, the
    classes of the boxes whose content scrolls sideways, and which ``selectors`` exist."""
    probe = MEASURE.replace("SELECTORS", json.dumps(selectors))
    copy = page.with_name(f".layout-{page.name}")  # beside it: relative links still resolve
    copy.write_text(page.read_text().replace("</body>", probe + "</body>"))
    try:
        dom = _render(
            ["--dump-dom", copy.as_uri()], scratch, width, 900, lambda out: "LAYOUT {" in out
        )
    finally:
        copy.unlink()
    found = re.search(r"LAYOUT (\{.*?\})</pre>", dom)
    assert found, dom[-2000:]
    return json.loads(found.group(1).replace("&quot;", '"'))


BROKEN_WORDS = """<pre id='words-probe'></pre><script>
var broken = [];
document.querySelectorAll(SELECTOR).forEach(function (cell) {
  var walk = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
  for (var node = walk.nextNode(); node; node = walk.nextNode()) {
    var word = /[A-Za-z]+/g, m;
    while ((m = word.exec(node.data)) !== null) {
      var range = document.createRange();
      range.setStart(node, m.index);
      range.setEnd(node, m.index + m[0].length);
      var tops = new Set(Array.from(range.getClientRects()).map(function (r) { return Math.round(r.top); }));
      if (tops.size > 1) broken.push(m[0]);
    }
  }
});
document.getElementById('words-probe').textContent = 'WORDS ' + JSON.stringify(broken);
</script>"""


def broken_words(page: Path, selector: str, scratch: Path, width: int = 1280) -> list[str]:
    """The words (runs of letters) in the elements ``selector`` picks that ``page`` at ``width``
    pixels splits over two lines."""
    probe = BROKEN_WORDS.replace("SELECTOR", json.dumps(selector))
    copy = page.with_name(f".words-{page.name}")
    copy.write_text(page.read_text().replace("</body>", probe + "</body>"))
    try:
        dom = _render(
            ["--dump-dom", copy.as_uri()], scratch, width, 900, lambda out: "WORDS [" in out
        )
    finally:
        copy.unlink()
    found = re.search(r"WORDS (\[.*?\])</pre>", dom)
    assert found, dom[-2000:]
    return json.loads(found.group(1).replace("&quot;", '"'))


def screenshot(page: Path, name: str, scratch: Path, width: int = 1280, height: int = 1800) -> Path:
    """A screenshot of ``page`` kept as a test artefact; its path."""
    folder = Path(os.environ.get("BRAINSMITH_SCREENSHOTS", REPO / "build-out" / "screenshots"))
    folder.mkdir(parents=True, exist_ok=True)
    png = scratch / f"{name}.png"
    _render([f"--screenshot={png}", page.as_uri()], scratch, width, height,
            lambda _: png.is_file() and png.stat().st_size > 10_000)  # fmt: skip
    shutil.copy(png, folder / png.name)
    return png
