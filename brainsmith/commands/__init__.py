"""The commands beside the build: ``brainsmith check`` and ``brainsmith verify-rtl``."""
