"""QONNX's adapter: its transformations, read from QONNX's installed sources."""

from __future__ import annotations

from brainsmith.plugin.discovery.sources.adapters import FrameworkAdapter


class QONNXAdapter(FrameworkAdapter):
    framework = "qonnx"
