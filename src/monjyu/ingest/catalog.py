"""A catalog: files whose metadata a reference manager already holds (a Zotero library, a
BibTeX file), which win over what parsing the file finds, and the user's own highlights and
notes on them, which become units of their paper."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..types import ANNOTATION, Document, Section


def from_catalog(metadata: dict[str, Any]) -> bool:
    """A document's metadata came from a reference manager (a Zotero library, a bibliography)."""
    return bool(metadata.get("zotero") or metadata.get("bib"))


def stamp_of(record: Any) -> str:
    """A catalog entry's stamp: a short hash of what it says of its file (JSON-able)."""
    return hashlib.sha256(json.dumps(record, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:16]


@dataclass
class UserNote:
    """The user's own words on a paper: a highlight (with its comment) or a note. Indexed as a
    unit of kind "annotation" after the paper's text, cited by `heading`."""

    heading: str  # "Your highlight on p. 4", "Your note"
    text: str
    page: int | None = None  # 1-based page of the PDF it sits on; None for a note on the whole item


@dataclass
class CatalogEntry:
    document_id: str  # stable across runs and moves: the reference manager's key; "": from the path
    stamp: str  # changes when the metadata change: the file is loaded again
    title: str = ""
    authors: list[str] = field(default_factory=list)
    year: int | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    notes: list[UserNote] = field(default_factory=list)

    def apply(self, doc: Document) -> None:
        """The catalog's metadata over the parsed ones (what it lacks, parsing keeps); the user's
        notes appended to the text, each a section of its own."""
        doc.title = self.title or doc.title
        doc.authors = list(self.authors) or doc.authors
        doc.year = self.year or doc.year
        doc.metadata.update({k: v for k, v in self.metadata.items() if v not in ("", None, [], {})})
        if self.notes and not doc.sections:
            doc.sections = [Section(0, len(doc.text))]
        for note in self.notes:
            doc.text += "\n\n"
            doc.sections.append(Section(len(doc.text), len(doc.text) + len(note.text), note.heading, ANNOTATION, note.page))
            doc.text += note.text


@dataclass
class Catalog:
    """Entries by resolved file path. `prefix` marks its documents' ids: a document of the
    catalog that is no longer in it (trashed, deleted, its file gone) is removed from the index.
    A catalog without one (a bibliography) names files whose ids their paths give."""

    prefix: str | None
    entries: dict[str, CatalogEntry] = field(default_factory=dict)
    source: Path | None = None  # the file it was read from (a .bib, a CSL-JSON file), not a paper

    def owns(self, document_ids: list[str]) -> bool:
        return self.prefix is not None and any(d.startswith(self.prefix) for d in document_ids)
