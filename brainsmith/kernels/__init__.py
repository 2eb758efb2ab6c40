"""brainsmith's hardware kernels: FINN kernels, each mapped to the transform that infers it.

FINN and QONNX ship no type information, so the FINN layers these kernels build on are ``Any``
to mypy; each class built on one carries ``# type: ignore[misc]`` on its ``class`` line for that
reason alone.
"""
