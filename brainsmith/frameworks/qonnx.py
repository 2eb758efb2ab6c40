"""QONNX's adapter: its transformations, read from QONNX's installed sources."""

from __future__ import annotations

from brainsmith.plugin.discovery.sources.adapters import FrameworkAdapter


class QONNXAdapter(FrameworkAdapter):
    framework = "qonnx"
    install_hint = "QONNX is not installed; install it with `pip install qonnx==1.0.0`"
