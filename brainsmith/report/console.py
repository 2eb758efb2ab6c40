"""Live per-step progress: a rich table on a terminal, one plain line per event otherwise.

The display writes to the stream it was given when created, so FINN output redirected
during a step (``frameworks.finn.env.contain_finn_output``) never mixes with it.
"""

from __future__ import annotations

import sys
from typing import TextIO

from brainsmith.frameworks.finn.facts import step_label

TYPE_CHECKING = False
if TYPE_CHECKING:
    from rich.table import Table


SYMBOLS = {"ok": "✓", "skipped": "-", "failed": "✗", "running": "…", "pending": " "}
COLORS = {"ok": "green", "skipped": "yellow", "failed": "red", "running": "cyan", "pending": "dim"}


class Progress:
    """Receives step events from the runner; ``Progress.silent()`` ignores them."""

    def __init__(self, steps: list[str], stream: TextIO | None = None, title: str = "") -> None:
        self.steps = steps
        self.stream = stream or sys.stderr
        self.title = title
        self.rows: list[list[str]] = [["pending", "", ""] for _ in steps]
        self.live = None
        self.caption = ""
        from brainsmith.terminal import console

        self.console = console(file=self.stream, highlight=False)
        if self.console.is_terminal:
            from rich.live import Live

            self.live = Live(
                self._table(),
                console=self.console,
                transient=False,
                redirect_stdout=False,
                redirect_stderr=False,
                refresh_per_second=8,
            )
            self.live.start()
        elif title:
            self._line(title)

    @classmethod
    def silent(cls) -> Progress:
        return _Silent()

    def note(self, text: str) -> None:
        """A line about what happens outside the steps (e.g. loading FINN)."""
        self.caption = text
        if self.live is not None:
            self.live.update(self._table())
        else:
            self._line(text)

    def start(self, index: int) -> None:
        self.caption = ""
        self._set(index, "running", "", "")

    def finish(
        self, index: int, status: str, seconds: float | None = None, detail: str = ""
    ) -> None:
        text = f"{seconds:.2f} s" if seconds is not None else ""
        self._set(index, status, text, detail)
        if self.live is None:
            name = step_label(self.steps[index])
            parts = [f"[{index + 1}/{len(self.steps)}] {name}: {status}", text, detail]
            self._line("  ".join(p for p in parts if p))

    def close(self) -> None:
        if self.live is not None:
            self.live.update(self._table())
            self.live.stop()
            self.live = None

    def _set(self, index: int, status: str, seconds: str, detail: str) -> None:
        self.rows[index] = [status, seconds, detail]
        if self.live is not None:
            self.live.update(self._table())

    def _line(self, text: str) -> None:
        try:
            self.stream.write(text + "\n")
            self.stream.flush()
        except (OSError, ValueError):  # a closed pipe must not stop the build
            pass

    def _table(self) -> Table:
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
            color = COLORS[status]
            label = escape(f"{index:>2} {step_label(name)}")
            table.add_row(f"[{color}]{SYMBOLS[status]}[/{color}]", label, seconds, detail)
        return table


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
