"""Live progress of an exploration: variants done, failed, running and waiting, and what
runs now. A rich display on a terminal, one plain line per event otherwise. Events may
come from Dask's thread, so every update holds a lock."""

from __future__ import annotations

import threading
import time
from typing import TextIO

from brainsmith.terminal import LiveDisplay

TYPE_CHECKING = False
if TYPE_CHECKING:
    from rich.console import Group


class ExploreProgress:
    """Receives segment events; ``ExploreProgress.silent()`` ignores them."""

    def __init__(
        self,
        labels: dict[str, str],
        variants: dict[str, list[str]],
        stream: TextIO | None = None,
        title: str = "",
    ) -> None:
        self.labels = labels  # segment id -> what it runs
        self.variants = variants  # segment id -> the variants it serves
        self.total = len({v for vs in variants.values() for v in vs})
        self.title = title
        self.lock = threading.Lock()
        self.running: dict[str, float] = {}
        self.done: dict[str, str] = {}  # variant -> ok | failed
        self.recent: list[str] = []
        self.display = LiveDisplay(stream, self._view, 4, title, soft_wrap=True)

    @classmethod
    def silent(cls) -> ExploreProgress:
        return _Silent()

    def counts(self) -> str:
        done, running_nodes = dict(self.done), list(self.running)
        ok = sum(s == "ok" for s in done.values())
        failed = len(done) - ok
        running = len({v for n in running_nodes for v in self.variants.get(n, ())} - set(done))
        waiting = self.total - len(done) - running
        return f"{ok} ok, {failed} failed, {running} running, {waiting} waiting of {self.total} variants"

    def started(self, node: str) -> None:
        with self.lock:
            if node in self.running or node not in self.labels:
                return
            self.running[node] = time.monotonic()
            self.display.update(f"start  {self.labels[node]}")

    def finished(self, node: str, status: str, summary: str, variants: dict[str, str]) -> None:
        """``node`` ended with ``status``; ``variants`` maps the variants it settled to
        their status (a variant's own segment, or all below a failed shared one)."""
        with self.lock:
            began = self.running.pop(node, None)
            self.done.update(variants)
            seconds = f" {time.monotonic() - began:.1f} s" if began is not None else ""
            text = f"{status:<6} {self.labels.get(node, node)}{seconds}" + (
                f"  {summary}" if summary else ""
            )
            self.recent = [*self.recent[-7:], text]
            self.display.update(f"{text}  [{self.counts()}]")

    def close(self) -> None:
        with self.lock:
            self.display.stop()

    def _view(self) -> Group:
        """The display; reads copies (a copy of a dict is atomic), as the refresh thread
        calls it without the lock."""
        from rich.console import Group
        from rich.text import Text

        now = time.monotonic()
        lines = [Text(self.title, style="bold")] if self.title else []
        lines.append(Text(self.counts()))
        lines += [
            Text(f"  … {self.labels[n]}  {now - t:.0f} s", style="cyan")
            for n, t in dict(self.running).items()
        ]
        lines += [
            Text(f"  {text}", style="red" if text.startswith("failed") else "")
            for text in list(self.recent)
        ]
        return Group(*lines)


class _Silent(ExploreProgress):
    def __init__(self) -> None:
        self.lock = threading.Lock()

    def started(self, node: str) -> None:
        pass

    def finished(self, node: str, status: str, summary: str, variants: dict[str, str]) -> None:
        pass

    def close(self) -> None:
        pass
