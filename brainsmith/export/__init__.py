"""A build's accelerator as a folder that leaves the build machine (``brainsmith export``)."""

from brainsmith.export.folder import Exported, ExportError, export_build

__all__ = ["ExportError", "Exported", "export_build"]
