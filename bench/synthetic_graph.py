"""Phrase graphs of n synthetic units grown from a real index's graph, for the scale benches
(bounded_walk.py, hybridrag_latency.py, lazy_latency.py, add_at_scale.py). Synthetic unit i joins two real units a and b: its
phrases are the union of theirs, its title is a's. Two models of how the phrases grow:

- `union`: every phrase keeps its name, so its frequency grows with the collection (x 2n/m) and
  the vocabulary stays the real collection's. The densest graph n units could give: a walk
  through a name reaches 2n/m times as many units as it would in the real collection.
- `heaps`: the vocabulary grows as the real collection's own does (Heaps' law, V ~ n^beta, beta
  measured by subsampling its units: `heaps_exponent`). Generic phrases (in more than
  max(5, 0.2%) of the real units: what relationship search calls not specific) and hubs keep
  one name and grow with the collection, as in `union`; each specific phrase has C copies
  ("frank lloyd", "frank lloyd x1", ...), C such that the vocabulary reaches V_m (n/m)^beta.
  The units fall into about n/m sub-collections of m units; the first keeps every real name (the
  questions' own region), every other one takes one copy of each specific phrase, picked by a
  hash of the sub-collection and the phrase, so copies are shared across sub-collections at
  random and the graph stays one connected graph.

Subsampling one collection understates how a library of many topics grows (a new field brings
new names), so `heaps` is still on the dense side.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

MODELS = ("heaps", "union")


def heaps_exponent(incidence: sp.csr_matrix, is_hub: np.ndarray, rng: np.random.Generator,
                   points: int = 6) -> float:
    """Heaps' beta of the non-hub phrases: slope of log(distinct phrases) against log(units) over
    random prefixes of the units of 1/32 to all of the collection."""
    m = incidence.shape[0]
    order = incidence[rng.permutation(m)].tocsr()
    sizes = np.unique(np.geomspace(max(32, m // 32), m, points).astype(int))
    keep = ~is_hub
    vocab = [int(np.count_nonzero(np.asarray(order[:k].sum(axis=0)).ravel()[keep])) for k in sizes]
    return float(np.polyfit(np.log(sizes), np.log(vocab), 1)[0])


def exponent_for(model: str, beta: float | None, incidence: sp.csr_matrix, is_hub: np.ndarray,
                 rng: np.random.Generator) -> float | None:
    """The Heaps exponent a bench grows `heaps` graphs with: `beta` when given, else measured (and
    printed); None for `union`."""
    if model != "heaps":
        return None
    if beta is None:
        beta = heaps_exponent(incidence, is_hub, rng)
    print(f"Heaps' exponent of the real graph's phrases: {beta:.3f}")
    return beta


@dataclass
class GrownGraph:
    incidence: sp.csr_matrix
    phrases: list[str]
    is_hub: np.ndarray
    types: np.ndarray | None
    titles: list[str]
    first: np.ndarray  # each synthetic unit's real unit a
    home: np.ndarray  # True for the units of the first sub-collection (real names)
    base: np.ndarray | None = None  # each phrase's real phrase (a copy's original)


def _copy_of(sub: np.ndarray, node: np.ndarray, copies: int) -> np.ndarray:
    """Which copy of phrase `node` sub-collection `sub` uses (0 for the first sub-collection)."""
    h = sub.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15) + node.astype(np.uint64) * np.uint64(0xC2B2AE3D27D4EB4F)
    h ^= h >> np.uint64(31)
    h *= np.uint64(0x94D049BB133111EB)
    h ^= h >> np.uint64(29)
    return np.where(sub == 0, 0, (h % np.uint64(copies)).astype(np.int64))


def grow(incidence: sp.csr_matrix, phrases: list[str], is_hub: np.ndarray, types: np.ndarray | None,
         titles: np.ndarray, n: int, rng: np.random.Generator, model: str = "heaps",
         beta: float | None = None) -> GrownGraph:
    """n synthetic units from the real graph (see the module docstring); `beta` for `heaps`
    (measured by heaps_exponent when not given)."""
    from monjyu.nlp.noun_phrases import normalize_phrase
    from monjyu.retrieval.graph import _PARENTHETICAL, _WORDS

    if model not in MODELS:
        raise ValueError(f"unknown phrase model {model!r} (one of {', '.join(MODELS)})")
    m, n_phr = incidence.shape
    a, b = rng.integers(0, m, n), rng.integers(0, m, n)
    union = (incidence[a] + incidence[b]).tocsr()
    union.sum_duplicates()
    scale = max(1, round(n / m))
    sub = np.arange(n) % scale
    if model == "union" or scale == 1:
        return GrownGraph(sp.csr_matrix(union), list(phrases), is_hub, types, [str(t) for t in titles[a]], a,
                          sub == 0, np.arange(n_phr))
    if beta is None:
        beta = heaps_exponent(incidence, is_hub, rng)
    df = np.asarray((incidence > 0).sum(axis=0)).ravel()
    generic = is_hub | (df > max(5, 0.002 * m))
    present = df > 0
    specific = int(np.count_nonzero(present & ~generic))
    target = np.count_nonzero(present) * scale ** beta
    copies = max(1, round((target - np.count_nonzero(present & generic)) / max(specific, 1)))
    rows = np.repeat(np.arange(n), np.diff(union.indptr))
    cols = union.indices.astype(np.int64)
    copy = np.where(generic[cols], 0, _copy_of(sub[rows], cols, copies))
    used, new_cols = np.unique(copy * n_phr + cols, return_inverse=True)
    base, which = used % n_phr, used // n_phr
    grown = sp.csr_matrix((union.data, new_cols.astype(np.int32), union.indptr), shape=(n, len(used)))
    names = [phrases[p] if c == 0 else f"{phrases[p]} x{c}" for p, c in zip(base.tolist(), which.tolist())]
    vocab = {p: i for i, p in enumerate(phrases)}
    title_of = []
    for i, row in enumerate(a.tolist()):
        title = str(titles[row] or "")
        bare = _PARENTHETICAL.sub("", title)
        node = vocab.get(normalize_phrase([w.lower() for w in _WORDS.findall(bare)])) if bare else None
        c = 0 if node is None or generic[node] else int(_copy_of(sub[i:i + 1], np.array([node]), copies)[0])
        title_of.append(title if c == 0 else f"{bare} x{c}")
    return GrownGraph(grown, names, is_hub[base], None if types is None else types[base], title_of, a, sub == 0,
                      base)
