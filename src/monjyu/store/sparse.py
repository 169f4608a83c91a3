"""The Level 1 arrays of a generation: the incidence matrix (text units x noun phrases) as a scipy
.npz, and the embeddings of the phrases that link units (node ids + vectors) as a numpy .npz."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import scipy.sparse as sp

INCIDENCE = Path("graph") / "incidence.npz"
PHRASE_VECTORS = Path("graph") / "phrase_vectors.npz"


def save_incidence(generation_dir: Path, matrix: sp.spmatrix) -> None:
    path = generation_dir / INCIDENCE
    path.parent.mkdir(parents=True, exist_ok=True)
    sp.save_npz(path, sp.csr_matrix(matrix))


def load_incidence(generation_dir: Path) -> sp.csr_matrix | None:
    path = generation_dir / INCIDENCE
    return sp.load_npz(path).tocsr() if path.exists() else None


def save_phrase_vectors(generation_dir: Path, nodes: np.ndarray, vectors: np.ndarray) -> None:
    path = generation_dir / PHRASE_VECTORS
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, nodes=nodes.astype(np.int32), vectors=vectors.astype(np.float32))


def load_phrase_vectors(generation_dir: Path) -> tuple[np.ndarray, np.ndarray] | None:
    path = generation_dir / PHRASE_VECTORS
    if not path.exists():
        return None
    with np.load(path) as data:
        return data["nodes"], data["vectors"]
