"""Discovery: what fills the registry, and the index that remembers it.

``sources/`` read plugins without importing them (brainsmith's own packages and plugin
folders, pip-installed entry points, the framework adapters' shared scanner); ``index`` keeps
one persisted index per Python environment, valid while the ``stamps`` of what it read hold,
kept in a ``store`` (the cache directory's files, or the index ``shared_index`` shares between
machines through Redis); ``trust`` checks each record against its source, and ``folders``
imports plugin folders as packages of their own.
"""
