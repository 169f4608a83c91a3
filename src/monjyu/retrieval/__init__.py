"""Pure ranking over a loaded index generation: vector, keyword (BM25), fusion. No LLM."""

from .fusion import linear_fusion, weighted_rrf
from .loaded import LoadedIndex
from .searcher import Searcher

__all__ = ["LoadedIndex", "Searcher", "linear_fusion", "weighted_rrf"]
