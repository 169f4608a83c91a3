"""One index generation held in memory for search: the text_units table's columns as arrays,
row-aligned with the unit vectors (memory-mapped), BM25, the noun-phrase graph and its
communities, and the citations between the collection's papers."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa

from ..errors import MonjyuError
from ..index.citations import read_citation_graph
from ..ingest.catalog import from_catalog
from ..ingest.zotero import CATALOG_PREFIX
from ..nlp.noun_phrases import CONCEPT, MISC
from ..runtime import release_freed_memory
from ..store import LanceStore
from ..store.base import KeywordRanker, VectorCandidates
from ..store.bm25 import BM25Index
from ..store.lancedb_store import DOCUMENTS, TEXT_UNITS
from ..store.unit_vectors import load_unit_vectors
from ..types import DEFAULT_KINDS
from .communities import CommunityIndex
from ..schemas import SearchFilters
from .filters import library_documents, unit_mask
from .graph import PhraseGraph

META_COLUMNS = ["id", "document_id", "chunk_index", "text", "title", "source_path", "file_type",
                "date", "page", "start_char", "end_char", "section", "kind", "authors", "year"]


# Columns whose values differ on (almost) every unit; the others repeat a few values (a document's
# title, path, section, authors; a kind), which are held once and shared by the units' rows.
UNIQUE_COLUMNS = {"id", "text", "start_char", "end_char"}


def _object_column(values: list) -> np.ndarray:
    """A 1-d object array even when every value is a list of one length (numpy would make 2-d)."""
    out = np.empty(len(values), dtype=object)
    for i, v in enumerate(values):
        out[i] = v
    return out


def _read_units(store: LanceStore, dim: int,
                with_vectors: bool) -> tuple[dict[str, np.ndarray], np.ndarray | None, pa.ListArray]:
    """The text_units table's META_COLUMNS as object arrays, its vectors (when asked), and its
    sentence spans, read batch by batch: at 1M units the whole Arrow table would be a few GB
    besides the arrays made of it, and the allocator keeps what it once held."""
    n = store.count(TEXT_UNITS)
    values: dict[str, list] = {c: [] for c in META_COLUMNS}
    shared: dict[str, dict] = {c: {} for c in META_COLUMNS if c not in UNIQUE_COLUMNS}
    vectors = np.empty((n, dim), dtype=np.float32) if with_vectors else None
    spans, at = [], 0
    for batch in store.batches(TEXT_UNITS, META_COLUMNS + ["sentences"] + (["vector"] if with_vectors else [])):
        for c in META_COLUMNS:
            rows = batch[c].to_pylist()
            if c in shared:
                held = shared[c]
                rows = [held.setdefault(tuple(v) if isinstance(v, list) else v, v) for v in rows]
            values[c].extend(rows)
        if with_vectors:
            vectors[at:at + batch.num_rows] = batch["vector"].flatten().to_numpy(zero_copy_only=False).reshape(-1, dim)
        spans.append(batch["sentences"])
        at += batch.num_rows
    columns = {c: _object_column(v) for c, v in values.items()}
    sentences = pa.chunked_array(spans, pa.list_(pa.int32())).combine_chunks()
    return columns, vectors, sentences


OPENING_UNITS = 3  # a cited paper is reached at its first units (title, abstract, introduction)


def _citation_groups(columns: dict[str, np.ndarray], edges: list[dict]) -> list[list[int]]:
    """For each citation between papers of the collection: the units holding its citing sentences
    and the cited paper's opening units (default kinds), as rows of the text_units table."""
    rows_of: dict[str, list[int]] = {}
    for row, doc in enumerate(columns["document_id"]):
        rows_of.setdefault(doc, []).append(row)
    groups = []
    for e in edges:
        citing = {row for row in rows_of.get(e["citing"], []) for start, _ in e["marks"]
                  if columns["start_char"][row] <= start < columns["end_char"][row] and columns["kind"][row] in DEFAULT_KINDS}
        opening = [row for row in rows_of.get(e["cited"], [])
                   if columns["chunk_index"][row] < OPENING_UNITS and columns["kind"][row] in DEFAULT_KINDS]
        if citing and opening:
            groups.append(sorted(citing) + opening)
    return groups


@dataclass
class LoadedIndex:
    """Columns of the text_units table as arrays, row-aligned with the vectors and BM25."""

    columns: dict[str, np.ndarray]
    vectors: np.ndarray
    bm25: BM25Index
    graph: PhraseGraph | None = None
    communities: CommunityIndex | None = None
    ann: VectorCandidates | None = None  # the store's vector index, in generations of >= search.ann_min_units units
    fulltext: KeywordRanker | None = None  # the store's own keyword search (store.keyword: fulltext)
    named_entities: bool = False  # the build's graph.named_entities (Manifest): how its phrases were extracted
    # Sentence spans of every unit, as flat arrays (list offsets, start/end values): no Python
    # list per unit, so a million units cost a few tens of MB.
    sentence_offsets: np.ndarray | None = None
    sentence_values: np.ndarray | None = None
    citation_edges: list[tuple[str, str]] = field(default_factory=list)  # (citing, cited) papers of the collection
    generation_dir: Path | None = None  # where the documents table is read from for library filters
    _default_mask: np.ndarray | None = field(default=None, repr=False)
    _library: dict[str, dict] | None = field(default=None, repr=False)
    _holds_zotero: bool | None = field(default=None, repr=False)

    @classmethod
    def load(cls, generation_dir: Path, dim: int, title_boost: float = 1.0,
             named_entities: bool = False, citation_links: float = 0.0) -> "LoadedIndex":
        store = LanceStore(generation_dir / "lancedb")
        mapped = load_unit_vectors(generation_dir)
        columns, in_memory, spans = _read_units(store, dim, with_vectors=mapped is None)
        vectors = mapped if mapped is not None else in_memory
        graph = PhraseGraph.load(generation_dir)
        if graph is not None and title_boost != 1.0:
            graph.link_titles(columns["title"].tolist(), title_boost, columns["text"])
        citations = read_citation_graph(generation_dir)
        if graph is not None and citation_links > 0:
            graph.link_citations(_citation_groups(columns, citations["edges"]), citation_links)
        communities = None
        if graph is not None:
            communities = CommunityIndex.load(generation_dir, graph.incidence)
        ann = store.vector_index()
        if ann is not None and len(vectors):  # LanceDB loads its index on the first search: here, before the trim
            ann.candidates(np.array(vectors[0], dtype=np.float32), 10, 1)
        loaded = cls(columns=columns, vectors=vectors, bm25=BM25Index.load(generation_dir / "bm25"),
                     graph=graph, communities=communities, ann=ann, named_entities=named_entities,
                     sentence_offsets=spans.offsets.to_numpy(),
                     sentence_values=spans.values.to_numpy(zero_copy_only=False),
                     citation_edges=[(e["citing"], e["cited"]) for e in citations["edges"]],
                     generation_dir=generation_dir)
        release_freed_memory()
        return loaded

    def library(self, filtering: bool = False) -> dict[str, dict]:
        """What a reference manager knows of each of its documents (tags, collections, item
        type, Zotero's keys; documents from a Zotero library or a bibliography), read from the
        documents table on first use: by a library filter (`filtering`), or by hits, whose
        Zotero links only an index holding a Zotero library's documents (ids zotero/...) has."""
        if self._library is None:
            if self._holds_zotero is None:
                self._holds_zotero = any(d.startswith(CATALOG_PREFIX) for d in set(self.columns["document_id"].tolist()))
            if not (filtering or self._holds_zotero):
                return {}
            self._library = {}
            if self.generation_dir is not None:
                store = LanceStore(self.generation_dir / "lancedb")
                for batch in store.batches(DOCUMENTS, ["id", "metadata"]):
                    for doc, meta in zip(batch["id"].to_pylist(), batch["metadata"].to_pylist()):
                        fields = json.loads(meta or "{}")
                        if from_catalog(fields):
                            self._library[doc] = {k: fields.get(k) for k in ("tags", "collections", "item_type",
                                                                             "zotero")}
        return self._library

    def sentence_spans(self, row: int) -> list[tuple[int, int]]:
        """The unit's sentences as the chunker cut them (offsets in the unit text)."""
        if self.sentence_offsets is None:
            return []
        flat = self.sentence_values[self.sentence_offsets[row]:self.sentence_offsets[row + 1]]
        return list(zip(flat[0::2].tolist(), flat[1::2].tolist()))

    def __len__(self) -> int:
        return len(self.vectors)

    def mask(self, filters: SearchFilters | None) -> np.ndarray | None:
        """None (every unit) or the units a search may return; with no filter, the default kinds
        (reference lists and front matter only when asked for with kind=)."""
        if filters is None or not filters.active:
            if self._default_mask is None:
                self._default_mask = unit_mask(SearchFilters(), self.columns)
            if not self._default_mask.all():
                return self._default_mask
            return None
        c = self.columns
        entity_units = None
        if filters.entity_types:
            if self.graph is None or self.graph.types is None:
                raise MonjyuError("filter entity types need the Level 1 graph with phrase types: rebuild the "
                                  "index with `monjyu index` (Level 1 is on by default)")
            absent = [] if self.named_entities else \
                sorted(set(filters.entity_types) - set(self.graph.types.tolist()) - {CONCEPT, MISC})
            if absent:
                raise MonjyuError(f"no phrase of this index is typed {', '.join(absent)}: English phrases get named-entity "
                                  "labels only when the index is built with `graph.named_entities: true` (its English "
                                  "proper nouns are typed MISC); rebuild with that setting to filter by them")
            entity_units = self.graph.units_of_types(filters.entity_types)
        papers = self.citing_documents(filters)
        if filters.library_active:
            in_library = library_documents(filters, self.library(filtering=True))
            papers = in_library if papers is None else papers & in_library
        return unit_mask(filters, c, entity_units, papers)

    def citing_documents(self, filters: SearchFilters) -> set[str] | None:
        """The papers that `cites=` and `cited-by=` leave (None when neither is set)."""
        if not (filters.cites or filters.cited_by):
            return None
        known = set(self.columns["document_id"].tolist())
        for doc in filters.cites + filters.cited_by:
            if doc not in known:
                raise MonjyuError(f"filter cites/cited-by: no document with id {doc!r} in the index; "
                                  "list them with `monjyu papers`")
        docs = None
        for doc in filters.cites:
            citing = {a for a, b in self.citation_edges if b == doc}
            docs = citing if docs is None else docs & citing
        for doc in filters.cited_by:
            cited = {b for a, b in self.citation_edges if a == doc}
            docs = cited if docs is None else docs & cited
        return docs
