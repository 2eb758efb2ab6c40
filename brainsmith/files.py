"""Files written whole or not at all: to a temporary name, then renamed into place, so an
error or a full disk never leaves a cut-off file."""

from __future__ import annotations

import contextlib
import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from qonnx.core.modelwrapper import ModelWrapper

    # A JSON object of no fixed shape: a blueprint, a file FINN wrote (report.json's parts
    # are typed in brainsmith.report.schema)
    Json = dict[str, Any]


def write_atomically(path: str, write: Callable[[str], None]) -> None:
    """``write(temporary_path)``, then rename it to ``path``; on error nothing is left."""
    folder, name = os.path.split(path)
    temporary = os.path.join(folder, f".{name}.partial")
    try:
        write(temporary)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def write_text(path: str, text: str) -> None:
    def write(target: str) -> None:
        with open(target, "w", encoding="utf-8") as handle:
            handle.write(text)

    write_atomically(path, write)


def save_model(model: ModelWrapper, path: str) -> None:
    """``model.save(path)``, complete or not at all."""
    write_atomically(path, model.save)
