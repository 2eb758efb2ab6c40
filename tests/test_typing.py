"""The hub is typed for its users: the decorators keep the decorated class's or function's
type, and the lazily imported public names are visible to type checkers (real mypy)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

SAMPLE = """
from brainsmith.plugin import kernel, step, transform
from brainsmith.plugin.lifecycle import KernelBuilder


@transform
class Bare:
    pass


@transform(name="Named", stage="cleanup")
class Named:
    pass


@kernel(name="K")
class K:
    pass


@step
def plain(model: int, cfg: object) -> int:
    return model


@step(name="named_step")
def named(model: str, cfg: object) -> str:
    return model


reveal_type(Bare)
reveal_type(Named)
reveal_type(K)
reveal_type(plain)
reveal_type(named)
reveal_type(KernelBuilder)
"""


def test_decorators_keep_the_type_of_what_they_decorate(tmp_path, tool_caches):
    """mypy keeps what it learnt of brainsmith and its imports in the run's kept tool cache
    (it checks each file's hash before trusting an entry), so a later run checks the sample
    alone."""
    sample = tmp_path / "sample.py"
    sample.write_text(textwrap.dedent(SAMPLE))
    cache = tool_caches / "mypy"
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--disallow-untyped-decorators", f"--cache-dir={cache}",
         "--follow-imports=silent", "--ignore-missing-imports", str(sample)],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )  # fmt: skip
    revealed = [line.split("Revealed type is ")[1] for line in result.stdout.splitlines()
                if "Revealed type is" in line]  # fmt: skip
    assert revealed == [
        '"def () -> sample.Bare"',
        '"def () -> sample.Named"',
        '"def () -> sample.K"',
        '"def (model: int, cfg: object) -> int"',
        '"def (model: str, cfg: object) -> str"',
        '"def (name: str, num_inputs: int =) -> '
        'brainsmith.plugin.lifecycle.kernel_builder.KernelBuilder"',
    ], result.stdout
    assert "error" not in result.stdout, result.stdout
