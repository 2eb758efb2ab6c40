"""The running brainsmith's version (a leaf module: importing it imports nothing else)."""

__version__ = "0.1.0"
