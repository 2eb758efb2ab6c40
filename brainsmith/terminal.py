"""Text from files, caches, servers and plugins made safe to show on a terminal.

An error string read from a forged ``explore-node.json``, a Redis record or a build folder
could carry escape sequences: ANSI codes that move the cursor or clear the screen, OSC codes
that set the window title, write the clipboard or make links, bidirectional overrides that
reorder what is read. ``printable`` shows every such character as an escape (``\\x1b``), and
the console from ``console()`` applies it to everything it renders, leaving its own colours.
Rich markup in such text (``[link=…]``, ``[conceal]``) is the other way in: tables from
``table()`` show string cells as text, and the console never emits links or concealed text.
"""

from __future__ import annotations

import os
import re
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TextIO

# C0 controls but tab and newline, DEL, C1 controls, and Unicode's bidirectional overrides
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


# A reader that left (``| head -1``): the exit status of a program SIGPIPE stopped (128 + 13),
# never a command's own codes (health's 1 degraded, 2 unhealthy)
BROKEN_PIPE = 141


def reader_left() -> None:
    """Stop quietly because the reader closed the output: later writes go nowhere."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    raise SystemExit(BROKEN_PIPE)


def printable(text: str) -> str:
    """``text`` with every character that could control a terminal shown as an escape."""
    return UNSAFE.sub(_escape, text)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def console(**options: Any) -> Any:
    """A rich ``Console`` whose rendered text goes through ``printable`` (its own styles and
    the control codes of live displays are kept) and which never emits a hyperlink or
    concealed text, whatever markup reached it."""
    global _Console
    if _Console is None:
        from rich.console import Console
        from rich.segment import Segment
        from rich.style import Style

        shown = Style(conceal=False)

        class SafeConsole(Console):
            def render(self, renderable: Any, options: Any = None) -> Any:
                for segment in super().render(renderable, options):
                    text, style = segment.text, segment.style
                    if segment.control:
                        yield segment
                        continue
                    if style is not None and (style.link or style.conceal):
                        style = style.clear_meta_and_links() + shown  # never emitted by us
                    if UNSAFE.search(text):
                        text = printable(text)
                    changed = text is not segment.text or style is not segment.style
                    yield Segment(text, style) if changed else segment

            def on_broken_pipe(self) -> None:  # rich's own exits with 1
                reader_left()

        _Console = SafeConsole
    return _Console(**options)


_Console: Any = None


def table(**options: Any) -> Any:
    """A rich ``Table`` whose string cells are shown as written: names and descriptions from
    files, caches or plugins are data, so their brackets (``[link=…]``, ``[/]``) are text,
    never markup."""
    global _Table
    if _Table is None:
        from rich.table import Table
        from rich.text import Text

        class DataTable(Table):
            def add_row(self, *cells: Any, **row: Any) -> None:
                super().add_row(*(Text(c) if isinstance(c, str) else c for c in cells), **row)

        _Table = DataTable
    return _Table(**options)


_Table: Any = None


class LiveDisplay:
    """What a long run shows as it goes: on a terminal a rich display redrawn from
    ``render()`` ``per_second`` times (through ``console()``, so text from files stays
    text); elsewhere one plain line per event. Writing never raises: a closed pipe must not
    stop the run it shows."""

    def __init__(
        self,
        stream: TextIO | None,
        render: Callable[[], Any],
        per_second: int,
        title: str = "",
        **console_options: Any,
    ) -> None:
        self.stream = stream or sys.stderr
        self.console = console(file=self.stream, highlight=False, **console_options)
        self.live: Any = None
        if self.console.is_terminal:
            from rich.live import Live

            self.live = Live(
                console=self.console,
                get_renderable=render,  # redrawn on each refresh, so running times tick
                transient=False,
                redirect_stdout=False,  # FINN's output is redirected apart from the display
                redirect_stderr=False,
                refresh_per_second=per_second,
            )
            self.live.start()
        elif title:
            self.line(title)

    def update(self, text: str) -> None:
        """Redraw the display; where there is none, write ``text`` as a line."""
        if self.live is not None:
            self.live.refresh()
        else:
            self.line(text)

    def refresh(self) -> None:
        if self.live is not None:
            self.live.refresh()

    def line(self, text: str) -> None:
        try:
            self.stream.write(text + "\n")
            self.stream.flush()
        except (OSError, ValueError):
            pass

    def stop(self) -> None:
        """Draw the display a last time and leave it on the screen."""
        if self.live is not None:
            self.live.refresh()
            self.live.stop()
            self.live = None
