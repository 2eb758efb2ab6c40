"""Where the discovery index is kept: ``IndexStore``, implemented by this machine's marshal
files in the cache directory (``FileStore``) and by the index a cluster shares through Redis
(``RedisStore``). What a store returns is data to check, never trusted as it is.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

from brainsmith.plugin.settings import memo

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

    from brainsmith.plugin.settings.config import PluginConfig


class IndexStore(ABC):
    """A payload per name, valid for one stamp."""

    @abstractmethod
    def load(self, name: str, stamp: list[object]) -> object:
        """The payload saved under ``name`` with ``stamp``; None when there is none."""

    @abstractmethod
    def save(self, name: str, stamp: list[object], payload: Mapping[str, object]) -> bool:
        """Keep ``payload`` under ``name``; False when it cannot be kept."""


class FileStore(IndexStore):
    """This machine's index: ``memo`` files in the cache directory."""

    def __init__(self, directory: str) -> None:
        self.directory = directory

    def load(self, name: str, stamp: list[object]) -> object:
        return memo.read(name, stamp, self.directory)

    def save(self, name: str, stamp: list[object], payload: Mapping[str, object]) -> bool:
        return memo.write(name, stamp, payload, self.directory)


# Without a key, each state read from Redis is marked with the SHA-256 of what Redis held: a
# later start asks Redis whether it still holds exactly that (see ``index``).
ORIGIN = "origin"


class RedisStore(IndexStore):
    """The index shared through Redis at ``url``, signed with the key in ``key_file`` when one
    is set. ``load`` and ``save`` raise ``shared_index.Refused`` for an unfit key file, and
    ``load`` for a forged index."""

    def __init__(self, url: str, key_file: str | None) -> None:
        self.url = url
        self.key_file = key_file

    def load(self, name: str, stamp: list[object]) -> object:
        from brainsmith.plugin.discovery import shared_index

        fetched = shared_index.read(self.url, name, stamp, self._key())
        if fetched is None:
            return None
        sources = fetched.payload.get("sources")
        if not fetched.signed and isinstance(sources, dict):
            for state in sources.values():
                if isinstance(state, dict):
                    state[ORIGIN] = fetched.digest
        return fetched.payload

    def save(self, name: str, stamp: list[object], payload: Mapping[str, object]) -> bool:
        from brainsmith.plugin.discovery import shared_index

        key = self._key()
        states = payload["sources"]
        assert isinstance(states, dict)  # an index: what ``index`` saves
        sources = {k: {f: v for f, v in st.items() if f != ORIGIN} for k, st in states.items()}
        return shared_index.write(self.url, name, stamp, {**payload, "sources": sources}, key)

    def _key(self) -> bytes | None:
        if self.key_file is None:
            return None
        from brainsmith.plugin.discovery.shared_index import load_key

        return load_key(self.key_file)


def index_stores(config: PluginConfig) -> tuple[FileStore, RedisStore | None]:
    """The stores of ``config``: the local one, and the shared one of ``cache_backend``."""
    local = FileStore(config.cache_dir)
    if config.cache_backend == "file":
        return local, None
    return local, RedisStore(config.cache_backend, config.cache_key_file)
