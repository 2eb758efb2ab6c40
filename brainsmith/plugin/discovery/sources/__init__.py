"""Discovery sources. Each yields plugin specs without importing the plugins' modules
(except entry points, which stevedore loads): brainsmith's own packages, user folders,
pip-installed packages, and the QONNX and FINN adapters.

Every source has one method, ``scan(previous, full, scan_data) -> State``: its record in the
index (specs, problems, stamps, when it was checked), rescanned from ``previous``;
``scan_data()`` loads the per-file data stored with it, only when a file must be re-read.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, Protocol, TypedDict

    from brainsmith.plugin.discovery.stamps import Stamp

    Row = list[object]  # a spec or problem record: its fields are checked where it is read

    class ModuleFacts(TypedDict, total=False):
        """What a scan reads from one Python file without importing it (plain JSON data)."""

        module: str
        imports: dict[str, str]  # local name -> the dotted name it refers to
        classes: dict[str, list[object]]  # name -> [resolved bases, line, first doc line]
        functions: dict[str, list[object]]  # name -> [line, first doc line]
        plugins: list[list[object]]  # [type, name, kind, line, keywords, error, first doc line]
        registered: list[list[object]]  # a framework's own facts (FINN: its custom ops
        steps: list[list[str]]  # and build steps)
        error: str  # alone: why the file was not read

    # a scanned file: [mtime_ns, size, inode, ctime_ns, sha256 of the content, its facts]
    ScannedFile = list[int | str | ModuleFacts]

    class State(TypedDict, total=False):
        """A source's record in the discovery index (every source writes the first five)."""

        specs: list[Row]
        problems: list[Row]
        stamp: list[Stamp]
        checked: float
        files: dict[str, Any]  # the per-file scan data, its shape the source's own
        failed: bool  # the scan raised: retried after the TTL or when sys.path changes
        root: str | None  # QONNX and FINN: the installed package folder
        editable: bool
        listing: list[list[str]]  # entry points: [distribution, version, name, value]
        provides: list[str]  # a plugin folder: its top-level module names,
        shadowed: dict[str, str]  # what they shadow,
        imports: dict[str, list[str]]  # and the top-level names each file imports
        packages: dict[str, list[Stamp]]  # entry points: top-level package -> its stamps
        origin: str  # the digest of the shared index the state was read from

    StoredScan = Callable[[], object]  # loads the per-file scan data stored with it (unchecked)

    class Source(Protocol):
        def scan(
            self, previous: State | None, full: bool = ..., scan_data: StoredScan = ...
        ) -> State: ...
