"""The Level 1 arrays of a generation: the incidence matrix (text units x noun phrases) as a scipy
.npz, and the embeddings of the phrases that link units and of the communities' representative phrases
(ids + vectors) as numpy .npz files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import scipy.sparse as sp

INCIDENCE = Path("graph") / "incidence.npz"
INCIDENCE_KINDS = Path("graph") / "incidence_kinds.npz"  # each incidence entry's phrase type (index/level1.py)
PHRASE_VECTORS = Path("graph") / "phrase_vectors.npz"
COMMUNITY_VECTORS = Path("graph") / "community_vectors.npz"
# The relationships table's (source, target, weight) columns as arrays, for the next build's
# community update: tens of millions of rows read in a fraction of what the table takes.
LINKS = Path("graph") / "links.npz"


def save_incidence(generation_dir: Path, matrix: sp.spmatrix) -> None:
    path = generation_dir / INCIDENCE
    path.parent.mkdir(parents=True, exist_ok=True)
    sp.save_npz(path, sp.csr_matrix(matrix))


def load_incidence(generation_dir: Path) -> sp.csr_matrix | None:
    path = generation_dir / INCIDENCE
    return sp.load_npz(path).tocsr() if path.exists() else None


def save_vectors(generation_dir: Path, name: Path, ids: np.ndarray, vectors: np.ndarray) -> None:
    """Embeddings of some graph objects (PHRASE_VECTORS: node ids; COMMUNITY_VECTORS: community ids)."""
    path = generation_dir / name
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, ids=np.asarray(ids, dtype=np.int64), vectors=np.asarray(vectors, dtype=np.float32))


def load_vectors(generation_dir: Path, name: Path) -> tuple[np.ndarray, np.ndarray] | None:
    path = generation_dir / name
    if not path.exists():
        return None
    with np.load(path) as data:
        return data["ids"], data["vectors"]


def save_links(generation_dir: Path, source: np.ndarray, target: np.ndarray, weight: np.ndarray) -> None:
    path = generation_dir / LINKS
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, source=np.asarray(source, np.int32), target=np.asarray(target, np.int32),
             weight=np.asarray(weight, np.int32))


def load_links(generation_dir: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(source, target, weight), or None for a generation saved before they were kept."""
    path = generation_dir / LINKS
    if not path.exists():
        return None
    with np.load(path) as data:
        return data["source"], data["target"], data["weight"]


def list_arrays(column: pa.ChunkedArray | pa.ListArray) -> tuple[np.ndarray, np.ndarray]:
    """A list column (a community's phrases) as (offsets, values) arrays: ten million members at a
    million units are no Python lists."""
    lists = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    offsets = np.asarray(lists.offsets, np.int64)
    return offsets - offsets[0], np.asarray(lists.flatten(), np.int64)
