"""LazyGraphRAG search: budgeted sentence relevance tests over communities, deepening, claims, answer."""

from .conversation import LazyConversation
from .engine import LazySearchEngine

__all__ = ["LazyConversation", "LazySearchEngine"]
