"""Search filters at work: the CLI's `key=value` form read into `schemas.SearchFilters` (the one
filter type), and a filter applied as a boolean mask over text units before ranking.

Filter values are compared as data (set membership, glob match, date comparison); they are never
spliced into a query string, so no value can change what the filter means.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

import numpy as np
from pydantic import ValidationError

from ..errors import ConfigError
from ..schemas import SearchFilters
from ..types import DEFAULT_KINDS

# The CLI's keys (with the spellings also read) and the field each fills; list fields repeat.
FILTER_FIELDS = {
    "doc": "document_ids", "document": "document_ids", "document_id": "document_ids",
    "type": "file_types", "file_type": "file_types", "path": "path_glob", "glob": "path_glob",
    "from": "date_from", "after": "date_from", "date_from": "date_from",
    "to": "date_to", "before": "date_to", "date_to": "date_to",
    "entity": "entity_types", "entity_type": "entity_types", "author": "authors", "authors": "authors",
    "year": "year", "kind": "kinds", "cites": "cites", "cited-by": "cited_by", "cited_by": "cited_by",
    "collection": "collections", "collections": "collections", "tag": "tags", "tags": "tags",
    "item-type": "item_types", "item_type": "item_types", "itemtype": "item_types",
    "min": "min_relevance", "min_relevance": "min_relevance",
}
LIST_FIELDS = {name for name, field in SearchFilters.model_fields.items() if field.default_factory is list}
FILTER_KEYS = "doc, type, path, from, to, author, year, kind, entity, cites, cited-by, collection, tag, item-type, min"


def parse_filters(expressions: list[str]) -> SearchFilters:
    """The CLI form: doc=ID, type=pdf, path=GLOB, from=YYYY-MM-DD, to=YYYY-MM-DD, author=NAME,
    year=2019 or year=2015-2019, kind=reference, entity=PERSON, cites=DOC, cited-by=DOC,
    collection=NAME or PATH/NAME, tag=NAME, item-type=journalArticle, min=0.5 (repeatable)."""
    values: dict[str, object] = {}
    for expr in expressions:
        key, sep, value = expr.partition("=")
        name = FILTER_FIELDS.get(key.strip().lower())
        if not sep:
            raise ConfigError(f"filter '{expr}' must look like key=value (keys: {FILTER_KEYS})")
        if name is None:
            raise ConfigError(f"unknown filter key '{key.strip().lower()}' in '{expr}' (keys: {FILTER_KEYS})")
        if name == "year":
            m = re.fullmatch(r"\s*(\d{4})?\s*(-)?\s*(\d{4})?\s*", value)
            if not m or not (m.group(1) or m.group(3)) or (m.group(2) is None and m.group(3)):
                raise ConfigError(f"filter '{expr}': year must look like 2019, 2015-2019, 2015- or -2019")
            values["year_from"] = int(m.group(1)) if m.group(1) else None
            values["year_to"] = (int(m.group(3)) if m.group(3) else None) if m.group(2) else values["year_from"]
        elif name in LIST_FIELDS:
            values.setdefault(name, []).append(value)
        else:
            values[name] = value
    try:
        return SearchFilters(**values)
    except ValidationError as exc:
        problems = "; ".join(("{}: ".format(".".join(map(str, e["loc"]))) if e["loc"] else "")
                             + e["msg"].removeprefix("Value error, ") for e in exc.errors())
        raise ConfigError(f"filter {' '.join(expressions)!r}: {problems}") from None


def trim(filters: SearchFilters | None, ranked: list[tuple[int, float]]) -> list[tuple[int, float]]:
    """The (row, score) results scoring at least min_relevance x the best one's score: scores of
    different modes live on different scales, their share of the best does not."""
    if filters is None or filters.min_relevance <= 0 or not ranked or ranked[0][1] <= 0:
        return ranked
    floor = filters.min_relevance * max(score for _, score in ranked)
    return [(row, score) for row, score in ranked if score >= floor]


def library_documents(filters: SearchFilters, library: dict[str, dict]) -> set[str]:
    """The documents whose library fields (document id -> tags, collections, item_type) pass: in
    one of the collections or a subcollection of one, with one of the tags, of one of the item
    types (each that is set)."""
    collections = [c.strip("/").lower() for c in filters.collections]
    tags = {t.lower() for t in filters.tags}
    types = {t.lower() for t in filters.item_types}
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


def unit_mask(filters: SearchFilters, columns: dict[str, np.ndarray], entity_units: np.ndarray | None = None,
              papers: set[str] | None = None) -> np.ndarray:
    """Units that pass, from the text_units columns; `entity_units` marks the units that name a
    phrase of `entity_types`, `papers` the documents `cites`, `cited_by` and the library fields
    leave. Values are compared as data, never spliced into a query."""
    keep = np.isin(columns["kind"], np.array(filters.kinds or DEFAULT_KINDS, dtype=object))
    if filters.entity_types:
        keep &= entity_units
    if filters.document_ids:
        keep &= np.isin(columns["document_id"], np.array(filters.document_ids, dtype=object))
    if papers is not None:
        keep &= np.isin(columns["document_id"], np.array(sorted(papers), dtype=object))
    if filters.file_types:
        keep &= np.isin(columns["file_type"], np.array(filters.file_types, dtype=object))
    if filters.path_glob:
        source_path = columns["source_path"]
        matching = [p for p in np.unique(source_path) if PurePosixPath(p).match(filters.path_glob)]
        keep &= np.isin(source_path, np.array(matching, dtype=object))
    if filters.date_from or filters.date_to:
        day = np.array([d[:10] for d in columns["date"]], dtype=object)
        if filters.date_from:
            keep &= day >= filters.date_from.isoformat()
        if filters.date_to:
            keep &= day <= filters.date_to.isoformat()
    if filters.year_from or filters.year_to:
        year = np.array([y or 0 for y in columns["year"]])
        keep &= (year >= (filters.year_from or 0)) & (year <= (filters.year_to or 9999)) & (year > 0)
    if filters.authors:
        wanted = [a.lower() for a in filters.authors]
        keep &= np.array([any(w in name.lower() for w in wanted for name in names or []) for names in columns["authors"]])
    return keep
