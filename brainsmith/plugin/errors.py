"""The hub's exceptions. Each carries the culprit and says what to do next."""

from __future__ import annotations

from brainsmith.errors import BrainsmithError


class PluginError(BrainsmithError):
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
    """A decorator was given invalid metadata or applied to the wrong kind of object;
    ``where`` is the decorated object's file:line, ``plugin_type`` the decorator's type."""

    def __init__(self, message: str, where: str = "", plugin_type: str = "") -> None:
        super().__init__(message)
        self.where = where
        self.plugin_type = plugin_type


class ConfigError(PluginError, ValueError):
    """A configuration value is invalid; ``file`` is the config file or environment variable
    that holds it, ``key`` the setting (either may be empty)."""

    def __init__(self, message: str, file: str = "", key: str = "") -> None:
        super().__init__(message)
        self.file = file
        self.key = key


class CacheDirectoryError(PluginError):
    """The cache directory ``path`` is not the user's own, so brainsmith leaves it alone."""

    def __init__(self, message: str, path: str = "") -> None:
        super().__init__(message)
        self.path = path
