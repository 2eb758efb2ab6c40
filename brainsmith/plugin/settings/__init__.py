"""The hub's settings and where it keeps what it remembers.

``config`` reads the settings (environment > project ``.brainsmith/config.yaml`` > defaults)
and checks each value; ``memo`` keeps small records (the discovery index, parsed
configuration, tool caches) in the user's private cache directory.
"""
