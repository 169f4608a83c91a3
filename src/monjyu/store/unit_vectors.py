"""The text units' vectors of a generation as one float32 .npy file (row order of the text_units
table), which a search process memory-maps instead of holding a copy: at 1M units of 384
dimensions that copy is 1.5 GB per process, while the mapped file is shared through the page
cache and an ANN search reads only its candidates' rows. Generations are never modified, so the
mapping stays valid while a newer generation is built beside it, and pages a search mapped can be
dropped from the process's resident set after it (release_pages): they come back from the page
cache on the next access."""

from __future__ import annotations

import mmap
from pathlib import Path

import numpy as np
import pyarrow as pa

UNIT_VECTORS = "unit_vectors.npy"


def save_unit_vectors(generation_dir: Path, vectors: pa.ChunkedArray, dim: int) -> None:
    """`vectors`: the text_units table's fixed-size-list column, written chunk by chunk (no copy of
    the whole matrix in memory)."""
    out = np.lib.format.open_memmap(Path(generation_dir) / UNIT_VECTORS, mode="w+", dtype=np.float32,
                                    shape=(len(vectors), dim))
    _write_column(out, 0, vectors, dim)
    out.flush()
    del out


def carry_unit_vectors(generation_dir: Path, previous: np.ndarray, keep: np.ndarray, added: pa.ChunkedArray,
                       dim: int, block: int = 1 << 16) -> None:
    """The rows of the previous generation's matrix at `keep` (a mask), then `added` (the new
    units' vector column): a carried table's row order. Runs of kept rows are copied as slices,
    a block at a time (an add keeps one run: the whole file)."""
    edges = np.flatnonzero(np.diff(np.r_[0, keep.astype(np.int8), 0]))
    runs = edges.reshape(-1, 2)  # [start, end) of each run of kept rows
    out = np.lib.format.open_memmap(Path(generation_dir) / UNIT_VECTORS, mode="w+", dtype=np.float32,
                                    shape=(int(keep.sum()) + len(added), dim))
    at = 0
    for start, end in runs.tolist():
        for a in range(start, end, block):
            b = min(a + block, end)
            out[at:at + b - a] = previous[a:b]
            at += b - a
    _write_column(out, at, added, dim)
    out.flush()
    del out


def _write_column(out: np.ndarray, at: int, vectors: pa.ChunkedArray, dim: int) -> None:
    """A fixed-size-list vector column into `out` from row `at`, a chunk at a time."""
    for chunk in vectors.chunks:
        block = chunk.flatten().to_numpy(zero_copy_only=False).reshape(-1, dim)
        out[at:at + len(block)] = block
        at += len(block)


def load_unit_vectors(generation_dir: Path) -> np.ndarray | None:
    """The mapped matrix (read-only), or None for a generation written before this file existed."""
    path = Path(generation_dir) / UNIT_VECTORS
    if not path.exists():
        return None
    with open(path, "rb") as fh:
        version = np.lib.format.read_magic(fh)
        read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        shape, fortran_order, dtype = read_header(fh)
        offset = fh.tell()
        mapping = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    assert not fortran_order, path  # save_unit_vectors writes C order
    return np.frombuffer(mapping, dtype=dtype, count=int(np.prod(shape)), offset=offset).reshape(shape)


def _mapping(vectors: np.ndarray) -> mmap.mmap | None:
    """The file mapping a load_unit_vectors matrix lies in; None for a matrix in memory (or where
    the platform cannot hand pages back)."""
    if not hasattr(mmap, "MADV_DONTNEED"):
        return None
    base = vectors
    while isinstance(base, np.ndarray):
        base = base.base
    if isinstance(base, memoryview):
        base = base.obj
    return base if isinstance(base, mmap.mmap) else None


def release_pages(vectors: np.ndarray) -> None:
    """Unmap the pages of a load_unit_vectors matrix from this process (they stay in the page
    cache). An ANN search maps more around each candidate than its row, so a long-running search
    process would otherwise end up holding the whole file in its RSS. Safe while other threads
    read the matrix: their next access faults the page back in. Does nothing for a matrix in memory."""
    mapping = _mapping(vectors)
    if mapping is not None:
        mapping.madvise(mmap.MADV_DONTNEED)


def scores_of_all(vectors: np.ndarray, query: np.ndarray, block: int = 1 << 16) -> np.ndarray:
    """vectors @ query over every row, a block at a time, each block's pages handed back once
    scored: an exact search over 1M units would otherwise map the whole file (1.5 GB) at once."""
    mapping = _mapping(vectors)
    if mapping is None:
        return vectors @ query
    out = np.empty(len(vectors), dtype=np.float32)
    for a in range(0, len(vectors), block):
        out[a:a + block] = vectors[a:a + block] @ query
        mapping.madvise(mmap.MADV_DONTNEED)  # ~0.1 ms over the whole file, the block's pages mapped
    return out
