"""brainsmith's HLS and RTL backends of its kernels, built on FINN's implementations.

FINN ships no type information, so the FINN layers these backends build on are ``Any`` to mypy;
each class built on one carries ``# type: ignore[misc]`` on its ``class`` line for that reason.
"""
