"""What place and route raises: a run that could not start or failed, or tools not usable."""

from __future__ import annotations

from brainsmith.errors import HintedError


class PlaceRouteError(HintedError):
    """Place and route could not run or failed; ``hint`` says what to do."""


class NotUsable(PlaceRouteError):
    """nextpnr is missing or does not run, or the cache is not this user's alone."""


class BitstreamError(PlaceRouteError):
    """A board's bitstream could not be made; ``hint`` says what to do."""


__all__ = ["BitstreamError", "NotUsable", "PlaceRouteError"]
