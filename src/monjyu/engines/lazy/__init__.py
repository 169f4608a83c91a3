"""LazyGraphRAG search: budgeted sentence relevance tests over communities, deepening, claims, answer."""

from .search import LazyConversation, LazySearchEngine

__all__ = ["LazyConversation", "LazySearchEngine"]
