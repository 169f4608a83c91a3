"""Search filters, applied as a boolean mask over text units before ranking.

Filter values are compared as data (set membership, glob match, date comparison); they are never
spliced into a query string, so no value can change what the filter means.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date
from pathlib import PurePosixPath

import numpy as np

from .. import schemas
from ..errors import ConfigError
from ..types import DEFAULT_KINDS, KINDS
from ..nlp.noun_phrases import ENTITY_TYPES

FILTER_KEYS = "doc, type, path, from, to, author, year, kind, entity, cites, cited-by, collection, tag, item-type, min"


@dataclass
class SearchFilters:
    document_ids: list[str] = field(default_factory=list)
    file_types: list[str] = field(default_factory=list)  # "pdf", "md", ...
    path_glob: str = ""  # matched from the right: "papers/*.pdf" matches /any/where/papers/x.pdf
    date_from: str = ""  # inclusive ISO dates (YYYY-MM-DD)
    date_to: str = ""
    entity_types: list[str] = field(default_factory=list)  # units naming a phrase of these types (Level 1)
    min_relevance: float = 0.0  # drop results scoring below this share of the best result's score
    authors: list[str] = field(default_factory=list)  # any author whose name contains one of these (case-insensitive)
    year_from: int | None = None  # inclusive publication years
    year_to: int | None = None
    kinds: list[str] = field(default_factory=list)  # unit kinds; empty: DEFAULT_KINDS
    cites: list[str] = field(default_factory=list)  # papers citing each of these documents (citation graph)
    cited_by: list[str] = field(default_factory=list)  # papers each of these documents cites
    # A reference manager's (Zotero's): its collections (with their subcollections), tags and
    # item types; any value of a list matches, ignoring case.
    collections: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    item_types: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        for name in ("date_from", "date_to"):
            value = getattr(self, name)
            if value:
                try:
                    date.fromisoformat(value)
                except ValueError as exc:
                    raise ConfigError(f"filter {name}='{value}' is not an ISO date (YYYY-MM-DD)") from exc
        if self.date_from and self.date_to and self.date_from > self.date_to:
            raise ConfigError(f"filter date range is reversed: {self.date_from} > {self.date_to}")
        self.file_types = [t.lower().lstrip(".") for t in self.file_types]
        self.entity_types = [t.upper() for t in self.entity_types]
        unknown = sorted(set(self.entity_types) - set(ENTITY_TYPES))
        if unknown:
            raise ConfigError(f"filter entity type(s) {', '.join(unknown)} unknown; use {', '.join(ENTITY_TYPES)}")
        self.kinds = [k.lower() for k in self.kinds]
        if bad := sorted(set(self.kinds) - set(KINDS)):
            raise ConfigError(f"filter kind={','.join(bad)} unknown; use {', '.join(KINDS)}")
        if self.year_from and self.year_to and self.year_from > self.year_to:
            raise ConfigError(f"filter year range is reversed: {self.year_from} > {self.year_to}")
        if not 0.0 <= self.min_relevance <= 1.0:
            raise ConfigError(f"filter min_relevance={self.min_relevance} must be between 0 and 1")

    @property
    def active(self) -> bool:
        """Whether the filter restricts which units may be found (min_relevance only trims scores)."""
        return bool(self.document_ids or self.file_types or self.path_glob or self.date_from or self.date_to
                    or self.entity_types or self.authors or self.year_from or self.year_to or self.kinds
                    or self.cites or self.cited_by or self.library_active)

    @property
    def library_active(self) -> bool:
        """Whether it filters by a reference manager's collections, tags or item types."""
        return bool(self.collections or self.tags or self.item_types)

    def library_documents(self, library: dict[str, dict]) -> set[str]:
        """The documents whose library fields (document id -> tags, collections, item_type)
        pass: in one of the collections or a subcollection of one, with one of the tags, of one
        of the item types (each that is set)."""
        collections = [c.strip("/").lower() for c in self.collections]
        tags = {t.lower() for t in self.tags}
        types = {t.lower() for t in self.item_types}
        kept = set()
        for doc, fields in library.items():
            held = [c.lower() for c in fields.get("collections") or []]
            if collections and not any(h == c or h.startswith(c + "/") for c in collections for h in held):
                continue
            if tags and not tags & {t.lower() for t in fields.get("tags") or []}:
                continue
            if types and (fields.get("item_type") or "").lower() not in types:
                continue
            kept.add(doc)
        return kept

    def trim(self, ranked: list[tuple[int, float]]) -> list[tuple[int, float]]:
        """The (row, score) results scoring at least min_relevance x the best one's score: scores
        of different modes live on different scales, their share of the best does not."""
        if self.min_relevance <= 0 or not ranked or ranked[0][1] <= 0:
            return ranked
        floor = self.min_relevance * max(score for _, score in ranked)
        return [(row, score) for row, score in ranked if score >= floor]

    @classmethod
    def from_request(cls, request: schemas.SearchFilters | None) -> "SearchFilters | None":
        """The public request schema (file ids, file types, entity types, date range, min
        relevance) in the form the retrieval core applies."""
        if request is None:
            return None
        dates, years = request.date_range, request.year_range
        return cls(document_ids=request.file_ids or [], file_types=request.file_types or [],
                   date_from=dates.start.isoformat() if dates and dates.start else "",
                   date_to=dates.end.isoformat() if dates and dates.end else "",
                   entity_types=request.entity_types or [], min_relevance=request.min_relevance,
                   authors=request.authors or [], year_from=years.start if years else None,
                   year_to=years.end if years else None, kinds=list(request.kinds or []),
                   cites=request.cites or [], cited_by=request.cited_by or [],
                   collections=request.collections or [], tags=request.tags or [], item_types=request.item_types or [])

    def to_request(self) -> schemas.SearchFilters:
        """The public request form (the path glob has no field there and is left out)."""
        dates = None
        if self.date_from or self.date_to:
            dates = schemas.DateRange(start=self.date_from or None, end=self.date_to or None)
        years = schemas.YearRange(start=self.year_from, end=self.year_to) if self.year_from or self.year_to else None
        return schemas.SearchFilters(file_ids=self.document_ids or None, file_types=self.file_types or None,
                                     entity_types=self.entity_types or None, date_range=dates,
                                     min_relevance=self.min_relevance, authors=self.authors or None,
                                     year_range=years, kinds=self.kinds or None, cites=self.cites or None,
                                     cited_by=self.cited_by or None, collections=self.collections or None,
                                     tags=self.tags or None, item_types=self.item_types or None)

    @classmethod
    def parse(cls, expressions: list[str]) -> "SearchFilters":
        """CLI form: doc=ID, type=pdf, path=GLOB, from=YYYY-MM-DD, to=YYYY-MM-DD, author=NAME,
        year=2019 or year=2015-2019, kind=reference, entity=PERSON, cites=DOC, cited-by=DOC,
        collection=NAME or PATH/NAME, tag=NAME, item-type=journalArticle, min=0.5 (repeatable)."""
        f = cls()
        docs, types, entity_types, authors, kinds, cites, cited_by = [], [], [], [], [], [], []
        collections, tags, item_types = [], [], []
        for expr in expressions:
            key, sep, value = expr.partition("=")
            key = key.strip().lower()
            if not sep:
                raise ConfigError(f"filter '{expr}' must look like key=value (keys: {FILTER_KEYS})")
            if key in ("doc", "document", "document_id"):
                docs.append(value)
            elif key in ("type", "file_type"):
                types.append(value)
            elif key in ("path", "glob"):
                f.path_glob = value
            elif key in ("from", "after", "date_from"):
                f.date_from = value
            elif key in ("to", "before", "date_to"):
                f.date_to = value
            elif key in ("entity", "entity_type"):
                entity_types.append(value)
            elif key in ("author", "authors"):
                authors.append(value)
            elif key == "kind":
                kinds.append(value)
            elif key == "cites":
                cites.append(value)
            elif key in ("cited-by", "cited_by"):
                cited_by.append(value)
            elif key in ("collection", "collections"):
                collections.append(value)
            elif key in ("tag", "tags"):
                tags.append(value)
            elif key in ("item-type", "item_type", "itemtype"):
                item_types.append(value)
            elif key == "year":
                m = re.fullmatch(r"\s*(\d{4})?\s*(-)?\s*(\d{4})?\s*", value)
                if not m or not (m.group(1) or m.group(3)) or (m.group(2) is None and m.group(3)):
                    raise ConfigError(f"filter '{expr}': year must look like 2019, 2015-2019, 2015- or -2019")
                f.year_from = int(m.group(1)) if m.group(1) else None
                f.year_to = (int(m.group(3)) if m.group(3) else None) if m.group(2) else f.year_from
            elif key in ("min", "min_relevance"):
                try:
                    f.min_relevance = float(value)
                except ValueError:
                    raise ConfigError(f"filter '{expr}': min_relevance must be a number between 0 and 1") from None
            else:
                raise ConfigError(f"unknown filter key '{key}' in '{expr}' (keys: {FILTER_KEYS})")
        return cls(document_ids=docs, file_types=types, path_glob=f.path_glob, date_from=f.date_from,
                   date_to=f.date_to, entity_types=entity_types, min_relevance=f.min_relevance, authors=authors,
                   year_from=f.year_from, year_to=f.year_to, kinds=kinds, cites=cites, cited_by=cited_by,
                   collections=collections, tags=tags, item_types=item_types)

    def mask(self, columns: dict[str, np.ndarray], entity_units: np.ndarray | None = None,
             papers: set[str] | None = None) -> np.ndarray:
        """Units that pass, from the text_units columns; `entity_units` marks the units that name a
        phrase of `entity_types`, `papers` the documents `cites` and `cited_by` leave. Values are
        compared as data, never spliced into a query."""
        keep = np.isin(columns["kind"], np.array(self.kinds or DEFAULT_KINDS, dtype=object))
        if self.entity_types:
            keep &= entity_units
        if self.document_ids:
            keep &= np.isin(columns["document_id"], np.array(self.document_ids, dtype=object))
        if papers is not None:
            keep &= np.isin(columns["document_id"], np.array(sorted(papers), dtype=object))
        if self.file_types:
            keep &= np.isin(columns["file_type"], np.array(self.file_types, dtype=object))
        if self.path_glob:
            source_path = columns["source_path"]
            matching = [p for p in np.unique(source_path) if PurePosixPath(p).match(self.path_glob)]
            keep &= np.isin(source_path, np.array(matching, dtype=object))
        if self.date_from or self.date_to:
            day = np.array([d[:10] for d in columns["date"]], dtype=object)
            if self.date_from:
                keep &= day >= self.date_from
            if self.date_to:
                keep &= day <= self.date_to
        if self.year_from or self.year_to:
            year = np.array([y or 0 for y in columns["year"]])
            keep &= (year >= (self.year_from or 0)) & (year <= (self.year_to or 9999)) & (year > 0)
        if self.authors:
            wanted = [a.lower() for a in self.authors]
            keep &= np.array([any(w in name.lower() for w in wanted for name in names or []) for names in columns["authors"]])
        return keep
