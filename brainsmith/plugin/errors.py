"""The hub's exceptions. Each carries the culprit and says what to do next."""

from __future__ import annotations


class PluginError(Exception):
    """Base class for every error the plugin hub raises."""


class PluginNotFoundError(PluginError, AttributeError, LookupError):
    """No plugin of that type and name (an AttributeError too, so ``getattr`` defaults work)."""

    def __init__(self, message: str, plugin_type: str = "", name: str = "") -> None:
        super().__init__(message)
        self.plugin_type = plugin_type
        self.name = name


class PluginLoadError(PluginError, ImportError):
    """A registered plugin could not be imported or is unavailable."""

    def __init__(self, message: str, spec: object | None = None) -> None:
        super().__init__(message)
        self.spec = spec


class PluginMetadataError(PluginError, TypeError):
    """A decorator was given invalid metadata or applied to the wrong kind of object."""


class ConfigError(PluginError, ValueError):
    """A configuration value (file or environment) is invalid."""


class CacheDirectoryError(PluginError):
    """The cache directory is not the user's own, so brainsmith leaves it alone."""
