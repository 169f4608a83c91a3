"""Shared data model: documents, text units, search hits and results."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class Document:
    """A loaded source document (a file, or one record of a JSON/JSONL file)."""

    id: str
    title: str
    text: str
    source_path: str
    file_type: str
    date: str = ""  # ISO date (from metadata, else file modification time)
    # (char offset where the page starts, page number), ascending; empty when pages are unknown.
    page_starts: list[tuple[int, int]] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)

    def page_at(self, offset: int) -> int | None:
        page = None
        for start, number in self.page_starts:
            if start > offset:
                break
            page = number
        return page


@dataclass
class TextUnit:
    """A chunk of a document: the unit that is embedded, indexed, retrieved and cited."""

    id: str
    document_id: str
    chunk_index: int
    text: str
    start_char: int
    end_char: int
    n_tokens: int
    title: str = ""
    source_path: str = ""
    file_type: str = ""
    date: str = ""
    page: int | None = None

    @property
    def embedding_text(self) -> str:
        """What is embedded and keyword-indexed: the title gives a chunk its context."""
        return f"{self.title}\n{self.text}" if self.title else self.text


@dataclass
class SearchHit:
    text_unit_id: str
    document_id: str
    text: str
    score: float
    rank: int = 0
    chunk_index: int = 0
    document_title: str = ""
    source_path: str = ""
    page: int | None = None
    start_char: int = 0
    end_char: int = 0
    # Per-strategy scores (absent strategies stay None).
    vector_score: float | None = None
    keyword_score: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class SearchResults:
    query: str
    mode: str
    hits: list[SearchHit]
    total_count: int  # candidates that passed filters and threshold, before pagination
    timings_ms: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "mode": self.mode,
            "total_count": self.total_count,
            "timings_ms": self.timings_ms,
            "hits": [h.to_dict() for h in self.hits],
        }
