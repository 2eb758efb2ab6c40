"""QONNX's adapter: its transformations, read from QONNX's installed sources."""

from __future__ import annotations

import os

from brainsmith.plugin.discovery.sources.adapters import FrameworkAdapter


class QONNXAdapter(FrameworkAdapter):
    framework = "qonnx"
    known_facts_file = os.path.join(os.path.dirname(__file__), "known", "qonnx.json")
    install_hint = "QONNX is not installed; install it with `pip install qonnx==1.0.0`"
