"""Source of a one-transform plugin file for tests: ``PLUGIN.format(name=..., prelude=...)``
(``prelude``: module code run before the class, e.g. an import or a raise)."""

PLUGIN = """
from qonnx.transformation.base import Transformation
from brainsmith.plugin.core import transform
{prelude}

@transform(name="{name}")
class {name}(Transformation):
    def apply(self, model):
        return model, False
"""
