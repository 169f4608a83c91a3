"""The Level 1 arrays of a generation: the incidence matrix (text units x noun phrases), the links,
and the embeddings of the phrases that link units and of the communities' representative phrases.

Each is a folder of raw .npy files (graph/<name>/<array>.npy): written and read at disk speed and
mappable, where the .npz archives of earlier generations went through zip (at a million units a
build spent ~20 s reading and writing them). Those archives are still read.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pyarrow as pa
import scipy.sparse as sp

INCIDENCE = Path("graph") / "incidence"
INCIDENCE_KINDS = Path("graph") / "incidence_kinds"  # each incidence entry's phrase type (index/level1.py)
PHRASE_VECTORS = Path("graph") / "phrase_vectors"
COMMUNITY_VECTORS = Path("graph") / "community_vectors"
# The relationships table's (source, target, weight) columns as arrays, for the next build's
# community update: tens of millions of rows read in a fraction of what the table takes.
LINKS = Path("graph") / "links"


def save_arrays(generation_dir: Path, name: Path, **arrays: np.ndarray) -> None:
    folder = generation_dir / name
    folder.mkdir(parents=True, exist_ok=True)
    for key, value in arrays.items():
        np.save(folder / f"{key}.npy", value, allow_pickle=False)


def load_arrays(generation_dir: Path, name: Path, keys: tuple[str, ...], mmap: bool = False
                ) -> tuple[np.ndarray, ...] | None:
    """The arrays `keys` of `name` (mapped read-only with `mmap`), from its folder or from the
    .npz archive an earlier generation wrote; None when the generation has neither."""
    folder = generation_dir / name
    if folder.is_dir():
        return tuple(np.load(folder / f"{key}.npy", mmap_mode="r" if mmap else None, allow_pickle=False)
                     for key in keys)
    archive = folder.with_suffix(".npz")
    if not archive.exists():
        return None
    with np.load(archive) as data:
        return tuple(data[key] for key in keys)


def save_incidence(generation_dir: Path, matrix: sp.spmatrix, kinds: np.ndarray, kind_names: list[str]) -> None:
    """The incidence's structure only (its values are all ones) and each entry's type."""
    matrix = sp.csr_matrix(matrix)
    save_arrays(generation_dir, INCIDENCE, indptr=matrix.indptr, indices=matrix.indices,
                shape=np.array(matrix.shape, np.int64))
    save_arrays(generation_dir, INCIDENCE_KINDS, kinds=kinds, names=np.array(kind_names, dtype=str))


def load_incidence(generation_dir: Path) -> sp.csr_matrix | None:
    """The incidence as saved (its folder, or the scipy .npz an earlier generation wrote: the same
    arrays under the same names), its values ones."""
    found = load_arrays(generation_dir, INCIDENCE, ("indptr", "indices", "shape"))
    if found is None:
        return None
    indptr, indices, shape = found
    return sp.csr_matrix((np.ones(len(indices), np.float32), indices, indptr), shape=tuple(shape.tolist()))


def load_incidence_kinds(generation_dir: Path) -> tuple[np.ndarray, list[str]] | None:
    found = load_arrays(generation_dir, INCIDENCE_KINDS, ("kinds", "names"))
    return None if found is None else (found[0], found[1].tolist())


def save_vectors(generation_dir: Path, name: Path, ids: np.ndarray, vectors: np.ndarray) -> None:
    """Embeddings of some graph objects (PHRASE_VECTORS: node ids; COMMUNITY_VECTORS: community ids)."""
    save_arrays(generation_dir, name, ids=np.asarray(ids, dtype=np.int64),
                vectors=np.asarray(vectors, dtype=np.float32))


def save_vector_blocks(generation_dir: Path, name: Path, ids: np.ndarray, dim: int, blocks: Iterable[np.ndarray]
                       ) -> None:
    """Vectors saved as `name` (with `ids`) from consecutive blocks of rows, written as they come:
    millions of phrase vectors never in memory at once, nor mapped (a mapped file's pages count
    in the process's resident memory)."""
    save_arrays(generation_dir, name, ids=np.asarray(ids, dtype=np.int64))
    rows = 0
    with open(generation_dir / name / "vectors.npy", "wb") as fh:
        np.lib.format.write_array_header_1_0(fh, {"descr": np.lib.format.dtype_to_descr(np.dtype(np.float32)),
                                                  "fortran_order": False, "shape": (len(ids), dim)})
        for block in blocks:
            fh.write(np.ascontiguousarray(block, dtype=np.float32).tobytes())
            rows += len(block)
    if rows != len(ids):
        raise ValueError(f"{name}: {rows} vectors written for {len(ids)} ids")


def load_vectors(generation_dir: Path, name: Path, mmap: bool = False) -> tuple[np.ndarray, np.ndarray] | None:
    return load_arrays(generation_dir, name, ("ids", "vectors"), mmap)


def save_links(generation_dir: Path, source: np.ndarray, target: np.ndarray, weight: np.ndarray) -> None:
    save_arrays(generation_dir, LINKS, source=np.asarray(source, np.int32), target=np.asarray(target, np.int32),
                weight=np.asarray(weight, np.int32))


def load_links(generation_dir: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(source, target, weight), or None for a generation saved before they were kept."""
    return load_arrays(generation_dir, LINKS, ("source", "target", "weight"))


def list_arrays(column: pa.ChunkedArray | pa.ListArray) -> tuple[np.ndarray, np.ndarray]:
    """A list column (a community's phrases) as (offsets, values) arrays: ten million members at a
    million units are no Python lists."""
    lists = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    offsets = np.asarray(lists.offsets, np.int64)
    return offsets - offsets[0], np.asarray(lists.flatten(), np.int64)
