"""brainsmith's own graph transforms; one plugin per module, found by the hub without importing.

QONNX ships no type information, so its ``Transformation`` (and FINN's transforms) are ``Any``
to mypy; each class built on one carries ``# type: ignore[misc]`` on its ``class`` line for that
reason alone.
"""
