"""A catalog: files whose metadata a reference manager already holds (a Zotero library, a
BibTeX file), which win over what parsing the file finds."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..types import Document


@dataclass
class CatalogEntry:
    document_id: str  # stable across runs and moves: the reference manager's key
    stamp: str  # changes when the metadata change: the file is loaded again
    title: str = ""
    authors: list[str] = field(default_factory=list)
    year: int | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def apply(self, doc: Document) -> None:
        """The catalog's metadata over the parsed ones; what it lacks, parsing keeps."""
        doc.title = self.title or doc.title
        doc.authors = list(self.authors) or doc.authors
        doc.year = self.year or doc.year
        doc.metadata.update({k: v for k, v in self.metadata.items() if v not in ("", None, [], {})})


@dataclass
class Catalog:
    """Entries by resolved file path. `prefix` marks its documents' ids: a document of the
    catalog that is no longer in it (trashed, deleted, its file gone) is removed from the index."""

    prefix: str
    entries: dict[str, CatalogEntry] = field(default_factory=dict)

    def owns(self, document_ids: list[str]) -> bool:
        return any(d.startswith(self.prefix) for d in document_ids)
