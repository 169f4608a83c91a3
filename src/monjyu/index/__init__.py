"""Index builders (Level 0), manifest and incremental update."""

from .builder import BuildReport, IndexBuilder
from .manifest import Manifest, read_manifest

__all__ = ["BuildReport", "IndexBuilder", "Manifest", "read_manifest"]
