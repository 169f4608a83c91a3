"""MONJYU: search research document collections with cited answers, offline by default.

The public names are imported on first use (PEP 562): a worker process that needs one module
(noun phrases, embedding) starts without importing the whole engine (1.5 s on 2 cores).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .api import Monjyu
    from .config import MonjyuConfig, load_config
    from .errors import MonjyuError
    from .schemas import SearchFilters
    from .types import Document, SearchHit, SearchResults, TextUnit

_EXPORTS = {"Monjyu": ".api", "MonjyuConfig": ".config", "load_config": ".config", "MonjyuError": ".errors",
            "SearchFilters": ".schemas", "Document": ".types", "SearchHit": ".types",
            "SearchResults": ".types", "TextUnit": ".types"}
__all__ = sorted(_EXPORTS)
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'monjyu' has no attribute '{name}'")
    return getattr(importlib.import_module(_EXPORTS[name], __name__), name)
