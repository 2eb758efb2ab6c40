"""Discovery: what fills the registry, and the index that remembers it.

``sources/`` read plugins without importing them (brainsmith's own packages and plugin
folders, pip-installed entry points, the framework adapters' shared scanner); ``index`` keeps
one persisted index per Python environment, valid while the ``stamps`` of what it read hold;
``trust`` checks each record against its source, ``folders`` imports plugin folders as
packages of their own, and ``shared_index`` shares the index between machines through Redis.
"""
