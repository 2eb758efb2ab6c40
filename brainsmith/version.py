"""The running brainsmith's version (a leaf module: importing it imports nothing else)."""

__version__ = "0.1.0"

# Deprecated names and settings are removed in this release (tests/test_public_surface.py
# fails once __version__ reaches it).
REMOVED_IN = "0.3.0"
