"""The ``brainsmith_hub`` fixture that brainsmith's pytest plugin gives plugin authors."""

from __future__ import annotations

import subprocess
import sys
import textwrap

AUTHOR_TESTS = '''
PLUGIN = """
from qonnx.transformation.base import Transformation
from brainsmith.plugin.core import transform

@transform(name="AuthorsOwn", stage="cleanup")
class AuthorsOwn(Transformation):
    def apply(self, model):
        return model, False
"""


def test_folder_plugin_is_found(brainsmith_hub):
    folder = brainsmith_hub.plugin_folder()
    (folder / "authors_own.py").write_text(PLUGIN)
    from brainsmith.plugins import transforms
    assert transforms.AuthorsOwn.__name__ == "AuthorsOwn"


def test_next_test_does_not_see_it(brainsmith_hub):
    from brainsmith.plugins import transforms
    assert "AuthorsOwn" not in transforms


def test_cache_is_private_to_the_test(brainsmith_hub, tmp_path):
    import os
    brainsmith_hub.registry()
    assert os.environ["BRAINSMITH_CACHE_DIR"].startswith(str(tmp_path))
    assert os.listdir(os.environ["BRAINSMITH_CACHE_DIR"])
'''


def test_plugin_authors_get_an_isolated_hub_fixture(tmp_path):
    (tmp_path / "test_authors.py").write_text(textwrap.dedent(AUTHOR_TESTS))
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "3 passed" in result.stdout
