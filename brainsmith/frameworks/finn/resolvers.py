"""What a FINN ``DataflowBuildConfig`` resolves, through FINN's private resolvers: used here
only, so a FINN release that renames them changes this module alone."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from finn.builder.build_dataflow_config import DataflowBuildConfig


def fpga_part(cfg: DataflowBuildConfig) -> str:
    """The FPGA part: ``fpga_part``, else the board's."""
    return str(cfg._resolve_fpga_part())


def hls_clock_ns(cfg: DataflowBuildConfig) -> float:
    """The HLS synthesis clock period: ``hls_clk_period_ns``, else the synthesis clock's."""
    return float(cfg._resolve_hls_clk_period())


def cycles_per_frame(cfg: DataflowBuildConfig) -> int | None:
    """The cycles per frame ``target_fps`` allows at the synthesis clock (None without one)."""
    return cfg._resolve_cycles_per_frame()  # type: ignore[no-any-return]
