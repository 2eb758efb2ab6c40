"""FINN's names, defined once: the domains of its hardware layers and the resources it
estimates. Constants only (no import of FINN or QONNX), so any module can use them.

- ``HW_DOMAIN``: FINN's hardware layers before ``SpecializeLayers`` (``MVAU``);
  ``HLS_DOMAIN``/``RTL_DOMAIN``: after it (``MVAU_hls``, ``MVAU_rtl``); ``BACKEND_STYLES``
  maps each of those to its backend type, ``LAYER_DOMAINS`` lists all three.
- ``RESOURCES``: the FPGA resources FINN's estimates count, in report order (``Resource``);
  ``PLATFORM_RESOURCES``: a device's, in FINN's platform tables.
- ``step_label``: a step's name as shown (FINN's ``step_`` prefix dropped).
"""

from __future__ import annotations

from typing import Literal, Protocol

from brainsmith.plugin.names import split_name

HW_DOMAIN = "finn.custom_op.fpgadataflow"
HLS_DOMAIN = f"{HW_DOMAIN}.hls"
RTL_DOMAIN = f"{HW_DOMAIN}.rtl"
BACKEND_STYLES: dict[str, str] = {HLS_DOMAIN: "hls", RTL_DOMAIN: "rtl"}
LAYER_DOMAINS = (HW_DOMAIN, HLS_DOMAIN, RTL_DOMAIN)

Resource = Literal["LUT", "BRAM_18K", "URAM", "DSP"]
RESOURCES: tuple[Resource, ...] = ("LUT", "BRAM_18K", "URAM", "DSP")
# A device's resources in FINN's platform tables (``compute_resources`` order), FF included
PLATFORM_RESOURCES = ("LUT", "FF", "BRAM_18K", "URAM", "DSP")


class _Node(Protocol):
    domain: str


def is_hardware(node: _Node) -> bool:
    """Whether an ONNX node is one of FINN's hardware layers (specialised or not)."""
    return node.domain.startswith(HW_DOMAIN)


def step_label(name: str) -> str:
    """A step's name as shown: FINN's ``finn:step_hw_ipgen`` as ``hw_ipgen``, like brainsmith's
    own ``cleanup``. Blueprints and report.json keep the plugin's name."""
    framework, short = split_name(name)
    return short.removeprefix("step_") if framework in ("", "brainsmith", "finn") else name
