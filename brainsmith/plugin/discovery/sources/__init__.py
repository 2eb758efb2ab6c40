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
    from typing import Any, Protocol

    State = dict[str, Any]  # a source's record in the discovery index
    StoredScan = Callable[[], object]  # loads the per-file scan data stored with it (unchecked)

    class Source(Protocol):
        def scan(
            self, previous: State | None, full: bool = ..., scan_data: StoredScan = ...
        ) -> State: ...
