"""Lazy access to the ``brainsmith.plugin`` logger: ``logging`` is imported on first message."""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    import logging
LOGGER_NAME = "brainsmith.plugin"
debug_enabled = False


def logger() -> logging.Logger:

    import logging

    return logging.getLogger(LOGGER_NAME)


def debug(msg: str, *args: object) -> None:
    if debug_enabled:
        logger().debug(msg, *args)


def info(msg: str, *args: object) -> None:
    logger().info(msg, *args)


def warning(msg: str, *args: object) -> None:
    logger().warning(msg, *args)


def set_debug(enabled: bool) -> None:
    """Turn debug logging of sources, cache decisions and loads on or off."""
    global debug_enabled
    debug_enabled = bool(enabled)
    log = logger()
    if enabled:
        import logging

        log.setLevel(logging.DEBUG)
        if not log.handlers and not logging.getLogger().handlers:
            handler = logging.StreamHandler(sys.stderr)
            handler.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
            log.addHandler(handler)
