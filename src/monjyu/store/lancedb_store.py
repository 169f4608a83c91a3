"""LanceDB tables of one index generation: `documents` and `text_units` (GraphRAG-like columns).

A generation is written once into a fresh directory and never modified, so readers of the
current generation are never disturbed by a build in progress. A build that adds or removes a
few documents carries the previous generation's tables over (`LanceStore.carry`): their data
and index files are linked, not copied, and only the change is written.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import asdict, astuple
from pathlib import Path

import lancedb
import numpy as np
import pyarrow as pa
from lancedb.index import IvfHnswSq

from ..types import Document, TextUnit

# The parts of a Lance dataset whose files Lance writes once under a new name and never changes:
# a carried table links them; its manifests are copied (Lance rewrites its version hint in place).
LINKED_PARTS = {"data", "_indices", "_deletions"}
DELETE_BATCH = 8192  # row ids per delete
DOCUMENTS = "documents"
TEXT_UNITS = "text_units"
ENTITIES = "entities"  # Level 1 noun phrases
RELATIONSHIPS = "relationships"
COMMUNITIES = "communities"


def units_schema(dim: int) -> pa.Schema:
    return pa.schema([
        ("id", pa.string()),
        ("document_id", pa.string()),
        ("chunk_index", pa.int32()),
        ("text", pa.string()),
        ("n_tokens", pa.int32()),
        ("start_char", pa.int64()),
        ("end_char", pa.int64()),
        ("page", pa.int32()),
        ("title", pa.string()),
        ("source_path", pa.string()),
        ("file_type", pa.string()),
        ("date", pa.string()),
        ("section", pa.string()),  # heading path
        ("kind", pa.string()),  # text | caption | reference | front
        ("authors", pa.list_(pa.string())),
        ("year", pa.int32()),
        ("sentences", pa.list_(pa.int32())),  # sentence spans in the unit text, flattened: start, end, start, end ...
        ("terms", pa.list_(pa.string())),  # analyzed BM25 terms, kept so rebuilds need not re-analyze
        ("vector", pa.list_(pa.float32(), dim)),
    ])


DOCUMENTS_SCHEMA = pa.schema([
    ("id", pa.string()),
    ("title", pa.string()),
    ("source_path", pa.string()),
    ("file_type", pa.string()),
    ("date", pa.string()),
    ("text", pa.string()),
    ("text_unit_ids", pa.list_(pa.string())),
    ("metadata", pa.string()),  # JSON
    ("authors", pa.list_(pa.string())),
    ("year", pa.int32()),
    ("structure", pa.string()),  # JSON: sections, page_starts, line_boxes (offsets into text)
    ("references", pa.string()),  # JSON: {"entries": [...], "citations": [...]} (ingest.references)
])


def units_to_table(units: list[TextUnit], terms: list[list[str]] | pa.Array | pa.ChunkedArray, vectors: np.ndarray,
                   dim: int) -> pa.Table:
    flat = pa.array(np.asarray(vectors, dtype=np.float32).reshape(-1), type=pa.float32())
    return pa.table({
        "id": [u.id for u in units],
        "document_id": [u.document_id for u in units],
        "chunk_index": pa.array([u.chunk_index for u in units], pa.int32()),
        "text": [u.text for u in units],
        "n_tokens": pa.array([u.n_tokens for u in units], pa.int32()),
        "start_char": pa.array([u.start_char for u in units], pa.int64()),
        "end_char": pa.array([u.end_char for u in units], pa.int64()),
        "page": pa.array([u.page for u in units], pa.int32()),
        "title": [u.title for u in units],
        "source_path": [u.source_path for u in units],
        "file_type": [u.file_type for u in units],
        "date": [u.date for u in units],
        "section": [u.section for u in units],
        "kind": [u.kind for u in units],
        "authors": pa.array([u.authors for u in units], pa.list_(pa.string())),
        "year": pa.array([u.year for u in units], pa.int32()),
        "sentences": pa.array([[x for span in u.sentences for x in span] for u in units], pa.list_(pa.int32())),
        "terms": terms if isinstance(terms, (pa.Array, pa.ChunkedArray)) else pa.array(terms, pa.list_(pa.string())),
        "vector": pa.FixedSizeListArray.from_arrays(flat, dim),
    }, schema=units_schema(dim))


def documents_to_table(docs: list[Document], unit_ids: dict[str, list[str]]) -> pa.Table:
    return pa.table({
        "id": [d.id for d in docs],
        "title": [d.title for d in docs],
        "source_path": [d.source_path for d in docs],
        "file_type": [d.file_type for d in docs],
        "date": [d.date for d in docs],
        "text": [d.text for d in docs],
        "text_unit_ids": pa.array([unit_ids.get(d.id, []) for d in docs], pa.list_(pa.string())),
        "metadata": [json.dumps(d.metadata, ensure_ascii=False, default=str) for d in docs],
        "authors": pa.array([d.authors for d in docs], pa.list_(pa.string())),
        "year": pa.array([d.year for d in docs], pa.int32()),
        "structure": [json.dumps({"sections": [asdict(s) for s in d.sections], "page_starts": d.page_starts,
                                  "line_boxes": [astuple(b) for b in d.line_boxes]}) for d in docs],
        "references": [json.dumps({"entries": d.references, "citations": d.citation_marks}, ensure_ascii=False)
                       for d in docs],
    }, schema=DOCUMENTS_SCHEMA)


class LanceStore:
    """The tables of one generation directory."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._db = lancedb.connect(str(self.path))

    def write(self, tables: dict[str, pa.Table]) -> None:
        # Create empty then add: creating with data makes lance log a warning on every build.
        for name, table in tables.items():
            created = self._db.create_table(name, schema=table.schema)
            if table.num_rows:
                created.add(table)

    def carry(self, previous: "LanceStore", name: str, dropped_rows: np.ndarray, added: pa.Table) -> None:
        """Table `name` of the previous generation with the rows at `dropped_rows` (row ids from
        `row_ids`) deleted and `added` appended after the rest, in this generation; the previous one
        is left as it was. Its vector index comes along: appended rows are searched exactly until
        the index is rebuilt (`unindexed_rows`)."""
        _clone_dataset(previous.path / f"{name}.lance", self.path / f"{name}.lance")
        table = self._db.open_table(name)
        for start in range(0, len(dropped_rows), DELETE_BATCH):
            ids = ",".join(str(int(r)) for r in dropped_rows[start:start + DELETE_BATCH])
            table.delete(f"_rowid IN ({ids})")  # integers of the table's own: no user value in the predicate
        if added.num_rows:
            table.add(added)

    def row_ids(self, name: str, column: str) -> tuple[pa.ChunkedArray, np.ndarray]:
        """One column of every row, with the row ids `carry` deletes by (read order)."""
        table = self._db.open_table(name)
        found = table.search().with_row_id(True).select([column]).limit(max(1, table.count_rows())).to_arrow()
        return found[column], found["_rowid"].to_numpy()

    def has(self, name: str) -> bool:
        return (self.path / f"{name}.lance").exists()

    def read(self, name: str, columns: list[str] | None = None) -> pa.Table:
        if columns is None:
            return self._db.open_table(name).to_arrow()
        return self._scan(name, columns).to_arrow()

    def batches(self, name: str, columns: list[str], batch_size: int = 65_536):
        """The table's rows in record batches (read order): a reader of a large table holds one
        batch at a time rather than the whole Arrow table beside what it makes of it."""
        return self._scan(name, columns).to_batches(batch_size)

    def _scan(self, name: str, columns: list[str]):
        """Every row's `columns` (a plain query stops at 10 rows unless given a limit)."""
        table = self._db.open_table(name)
        return table.search().select(columns).limit(max(1, table.count_rows()))

    def count(self, name: str) -> int:
        return self._db.open_table(name).count_rows()

    def column_names(self, name: str) -> list[str]:
        return self._db.open_table(name).schema.names

    def take(self, name: str, offsets: list[int], columns: list[str]) -> pa.Table:
        """Rows by position (the order `read` returns them in): lookups with no query string to escape."""
        return self._db.open_table(name).take_offsets(offsets).select(columns).to_arrow()

    def create_vector_index(self) -> None:
        """An IVF_HNSW_SQ index on the text units' vectors (cosine): approximate top-k,
        faster than exact search at large sizes (benchmarks page, Latency at scale)."""
        self._db.open_table(TEXT_UNITS).create_index("vector", config=IvfHnswSq(distance_type="cosine"))

    def unindexed_rows(self) -> int | None:
        """Text units the vector index does not hold yet (None without an index)."""
        table = self._db.open_table(TEXT_UNITS)
        index = next((idx for idx in table.list_indices() if "vector" in idx.columns), None)
        if index is None:
            return None
        os.environ.setdefault("LANCE_INCLUDE_VECTOR_CENTROIDS", "false")  # statistics without the centroids
        return int(table.index_stats(index.name).num_unindexed_rows)

    def vector_index(self) -> "VectorANN | None":
        """The text units' ANN index when the generation has one."""
        table = self._db.open_table(TEXT_UNITS)
        has = any("vector" in idx.columns for idx in table.list_indices())
        return VectorANN(table) if has else None

    def units(self, columns: list[str] | None = None) -> pa.Table:
        return self.read(TEXT_UNITS, columns)

    def documents(self, columns: list[str] | None = None) -> pa.Table:
        return self.read(DOCUMENTS, columns)


def _clone_dataset(source: Path, target: Path) -> None:
    """A copy of a Lance dataset that a new version can be written to without touching `source`:
    data, index and deletion files hard-linked (copied where the file system cannot link), the
    rest copied."""
    for root, _dirs, files in os.walk(source):
        rel = Path(root).relative_to(source)
        (target / rel).mkdir(parents=True, exist_ok=True)
        linked = bool(rel.parts) and rel.parts[0] in LINKED_PARTS
        for name in files:
            src, dst = Path(root) / name, target / rel / name
            if linked:
                try:
                    os.link(src, dst)
                    continue
                except OSError:
                    pass
            shutil.copy2(src, dst)


class VectorANN:
    """Approximate nearest text units through LanceDB's vector index: candidate ids only; the
    caller re-scores them with the exact vectors it holds (cheaper than LanceDB's refine step,
    which reads the full vectors back from disk)."""

    def __init__(self, table):
        self._table = table

    def candidates(self, vector: np.ndarray, n: int, nprobes: int) -> list[str]:
        found = (self._table.search(np.asarray(vector, dtype=np.float32)).metric("cosine").limit(n)
                 .nprobes(nprobes).select(["id", "_distance"]).to_arrow())  # naming _distance: no lance warning
        return found["id"].to_pylist()
