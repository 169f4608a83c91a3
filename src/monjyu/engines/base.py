"""The one call every engine answers: a search of an analysed question with one request.

Baseline RAG (engines.baseline), HybridRAG (engines.hybrid) and lazy search (engines.lazy) are each
built once per index generation (facade.workspace.IndexContext) and keep nothing of a search
between calls: what one search asks for is its `SearchRequest`.
"""

from __future__ import annotations

from typing import Protocol

from ..query import Query
from ..types import HybridSearchResult, LazySearchResult, SearchResults
from .request import SearchRequest


class Engine(Protocol):
    async def run(self, query: Query, request: SearchRequest) -> SearchResults | LazySearchResult | HybridSearchResult:
        """The ranked passages of the request's page and, unless `request.answer` is False, an
        answer citing them."""
        ...
