"""Index builders (Level 0), manifest and incremental update.

The names are imported on first use (PEP 562), as the package's own are: a build's worker
process imports `index.distributed` for its tasks, and the builder with the store it imports
(LanceDB alone is a second of every worker's start) is not needed there.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .builder import BuildReport, IndexBuilder
    from .manifest import Manifest, read_manifest

_EXPORTS = {"BuildReport": ".builder", "IndexBuilder": ".builder", "Manifest": ".manifest",
            "read_manifest": ".manifest"}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'monjyu.index' has no attribute '{name}'")
    return getattr(importlib.import_module(_EXPORTS[name], __name__), name)
