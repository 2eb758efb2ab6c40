"""FINN's names, defined once: the domains of its hardware layers and the resources it
estimates. Constants only (no import of FINN or QONNX), so any module can use them.

- ``HW_DOMAIN``: FINN's hardware layers before ``SpecializeLayers`` (``MVAU``);
  ``HLS_DOMAIN``/``RTL_DOMAIN``: after it (``MVAU_hls``, ``MVAU_rtl``); ``BACKEND_STYLES``
  maps each of those to its backend type, ``LAYER_DOMAINS`` lists all three.
- ``RESOURCES``: the FPGA resources FINN's estimates count, in report order (``Resource``);
  ``PLATFORM_RESOURCES``: a device's, in FINN's platform tables.
- ``ESTIMATION_METHODS``: the ``HWCustomOp`` method that estimates each resource.
- ``allowed_cycles``/``frames_per_second``: cycles per frame <-> frames per second at a
  clock, as FINN converts ``target_fps`` (``DataflowBuildConfig._resolve_cycles_per_frame``).
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
ESTIMATION_METHODS: dict[Resource, str] = {
    "LUT": "lut_estimation",
    "BRAM_18K": "bram_estimation",
    "URAM": "uram_estimation",
    "DSP": "dsp_estimation",
}
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


def allowed_cycles(target_fps: float | None, clock_ns: float) -> int | None:
    """The cycles per frame ``target_fps`` allows at a ``clock_ns`` clock (None without a
    target), rounded down as FINN does."""
    return int(10**9 / clock_ns / target_fps) if target_fps else None


def frames_per_second(cycles_per_frame: float, clock_ns: float) -> float:
    """The frames per second a design taking ``cycles_per_frame`` reaches at ``clock_ns``."""
    return 10**9 / (clock_ns * cycles_per_frame)
