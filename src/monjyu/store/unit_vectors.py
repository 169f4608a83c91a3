"""The text units' vectors of a generation as one float32 .npy file (row order of the text_units
table), which a search process memory-maps instead of holding a copy: at 1M units of 384
dimensions that copy is 1.5 GB per process, while the mapped file is shared through the page
cache and an ANN search reads only its candidates' rows. Generations are never modified, so the
mapping stays valid while a newer generation is built beside it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa

UNIT_VECTORS = "unit_vectors.npy"


def save_unit_vectors(generation_dir: Path, vectors: pa.ChunkedArray, dim: int) -> None:
    """`vectors`: the text_units table's fixed-size-list column, written chunk by chunk (no copy of
    the whole matrix in memory)."""
    out = np.lib.format.open_memmap(Path(generation_dir) / UNIT_VECTORS, mode="w+", dtype=np.float32,
                                    shape=(len(vectors), dim))
    at = 0
    for chunk in vectors.chunks:
        block = chunk.flatten().to_numpy(zero_copy_only=False).reshape(-1, dim)
        out[at:at + len(block)] = block
        at += len(block)
    out.flush()
    del out


def load_unit_vectors(generation_dir: Path) -> np.ndarray | None:
    """The mapped matrix (read-only), or None for a generation written before this file existed."""
    path = Path(generation_dir) / UNIT_VECTORS
    return np.asarray(np.load(path, mmap_mode="r")) if path.exists() else None
