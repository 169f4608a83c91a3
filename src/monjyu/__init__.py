"""MONJYU: search research document collections with cited answers, offline by default."""

from .api import Monjyu
from .config import MonjyuConfig, load_config
from .errors import MonjyuError
from .retrieval import SearchFilters
from .types import Document, SearchHit, SearchResults, TextUnit

__all__ = ["Document", "Monjyu", "MonjyuConfig", "MonjyuError", "SearchFilters", "SearchHit",
           "SearchResults", "TextUnit", "load_config"]
__version__ = "0.1.0"
