"""The Level 1 incidence matrix (text units x noun phrases) of a generation, as a scipy .npz."""

from __future__ import annotations

from pathlib import Path

import scipy.sparse as sp

INCIDENCE = Path("graph") / "incidence.npz"


def save_incidence(generation_dir: Path, matrix: sp.spmatrix) -> None:
    path = generation_dir / INCIDENCE
    path.parent.mkdir(parents=True, exist_ok=True)
    sp.save_npz(path, sp.csr_matrix(matrix))


def load_incidence(generation_dir: Path) -> sp.csr_matrix | None:
    path = generation_dir / INCIDENCE
    return sp.load_npz(path).tocsr() if path.exists() else None
