"""Live per-step progress: a rich table on a terminal, one plain line per event otherwise.

The display writes to the stream it was given when created, so FINN output redirected
during a step (``frameworks.finn.env.contain_finn_output``) never mixes with it.
"""

from __future__ import annotations

import time
from typing import TextIO

from brainsmith.frameworks.finn.facts import step_label
from brainsmith.terminal import LiveDisplay

TYPE_CHECKING = False
if TYPE_CHECKING:
    from rich.table import Table


SYMBOLS = {"ok": "✓", "skipped": "-", "failed": "✗", "running": "…", "pending": " "}
COLORS = {"ok": "green", "skipped": "yellow", "failed": "red", "running": "cyan", "pending": "dim"}


class Progress:
    """Receives step events from the runner; ``Progress.silent()`` ignores them."""

    def __init__(self, steps: list[str], stream: TextIO | None = None, title: str = "") -> None:
        self.steps = steps
        self.title = title
        self.rows: list[list[str]] = [["pending", "", ""] for _ in steps]
        self.caption = ""
        self.started: dict[int, float] = {}  # running step -> when it began (monotonic)
        self.display = LiveDisplay(stream, self._table, 8, title)

    @classmethod
    def silent(cls) -> Progress:
        return _Silent()

    def note(self, text: str) -> None:
        """A line about what happens outside the steps (e.g. loading FINN)."""
        self.caption = text
        self.display.update(text)

    def start(self, index: int) -> None:
        self.caption = ""
        self.started[index] = time.monotonic()
        self._set(index, "running", "", "")

    def finish(
        self, index: int, status: str, seconds: float | None = None, detail: str = ""
    ) -> None:
        text = f"{seconds:.2f} s" if seconds is not None else ""
        self.started.pop(index, None)
        self._set(index, status, text, detail)
        if self.display.live is None:
            name = step_label(self.steps[index])
            parts = [f"[{index + 1}/{len(self.steps)}] {name}: {status}", text, detail]
            self.display.line("  ".join(p for p in parts if p))

    def close(self) -> None:
        self.display.stop()

    def _set(self, index: int, status: str, seconds: str, detail: str) -> None:
        self.rows[index] = [status, seconds, detail]
        self.display.refresh()

    def _table(self, now: float | None = None) -> Table:
        """The steps so far; a running step's time is its whole seconds since it began
        (at ``now``, a ``time.monotonic()``; None: this moment)."""
        from rich.markup import escape
        from rich.table import Table

        table = Table(
            title=self.title or None,
            title_justify="left",
            box=None,
            pad_edge=False,
            caption=self.caption or None,
            caption_justify="left",
        )
        for column in ("", "step", "time", "verification / note"):
            table.add_column(column)
        for index, name in enumerate(self.steps, 1):
            status, seconds, detail = self.rows[index - 1]
            began = self.started.get(index - 1)  # the refresh thread reads while steps run
            if status == "running" and began is not None:
                seconds = elapsed(began, now)
            color = COLORS[status]
            label = escape(f"{index:>2} {step_label(name)}")
            table.add_row(f"[{color}]{SYMBOLS[status]}[/{color}]", label, seconds, detail)
        return table


def elapsed(began: float, now: float | None = None) -> str:
    """A running step's time: the whole seconds since ``began`` (``time.monotonic()``)."""
    return f"{int((time.monotonic() if now is None else now) - began)} s"


class _Silent(Progress):
    def __init__(self) -> None:
        self.steps = []

    def note(self, text: str) -> None:
        pass

    def start(self, index: int) -> None:
        pass

    def finish(
        self, index: int, status: str, seconds: float | None = None, detail: str = ""
    ) -> None:
        pass

    def close(self) -> None:
        pass
