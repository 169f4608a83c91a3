"""Level 1: noun-phrase graph and hierarchical Leiden communities over the text units, no LLM.

Tables (GraphRAG vocabulary): `entities` (noun phrases), `relationships` (co-occurrence edges),
`communities` (hierarchy with level/parent/children). Noun phrases are cached by content hash,
so a rebuild after adding documents only runs NLP on new text. A build that carries the previous
generation over updates its incidence and links with the changed units only (PhraseIncidence,
_links_updated); other builds recompute them from every unit's cached phrases. Either way the
graph is the one a build from scratch makes, and the communities are updated where it changed
(index/communities.py) or clustered from scratch. Past graph.max_links (a collection of hundreds
of thousands of units) each phrase keeps only its strongest links, and an update keeps them
where units did not change (_links_updated_bounded).
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from array import array
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import scipy.sparse as sp

from ..config import GraphConfig
from ..nlp.noun_phrases import CONCEPT, NounPhraseExtractor
from ..kv import SqliteKV
from ..store.sparse import list_arrays, load_incidence, load_incidence_kinds, save_incidence
from .communities import Assignments, Graph, PreviousClustering, cluster, modularity

log = logging.getLogger(__name__)
LOOKUP = 16_384  # texts whose phrases are looked up (and extracted) at a time
LINK_SLICE = 8_000_000  # phrase pairs counted at a time (an upper bound: the summed lengths of their units)

ENTITIES_SCHEMA = pa.schema([
    ("id", pa.int32()), ("title", pa.string()), ("frequency", pa.int32()), ("degree", pa.int32()), ("is_hub", pa.bool_()),
    ("type", pa.string()),  # PERSON, ORG, GPE, ... or CONCEPT: the type it has in most of its units
])
RELATIONSHIPS_SCHEMA = pa.schema([
    ("source", pa.int32()), ("target", pa.int32()), ("weight", pa.int32()), ("npmi", pa.float32()),
])
COMMUNITIES_SCHEMA = pa.schema([
    ("id", pa.int32()), ("level", pa.int32()), ("parent", pa.int32()), ("children", pa.list_(pa.int32())),
    ("entity_ids", pa.list_(pa.int32())), ("size", pa.int32()),
    ("title", pa.string()),  # representative phrases
])


@dataclass
class Level1Result:
    entities: pa.Table
    relationships: pa.Table
    communities: pa.Table
    incidence: "PhraseIncidence"  # text units x phrases, rows in text_units table order
    seconds: dict[str, float] = field(default_factory=dict)
    stats: dict[str, int] = field(default_factory=dict)
    clustering: dict = field(default_factory=dict)  # for the manifest (Manifest.clustering)


class PhraseCache:
    def __init__(self, kv: SqliteKV):
        self._kv = kv

    @staticmethod
    def key(text: str, extractor_id: str) -> str:
        return hashlib.sha256(f"{extractor_id}\x00{text}".encode()).hexdigest()

    def extract(self, texts: list[str], extractor: NounPhraseExtractor, progress=None,
                batch: int = 1024) -> list[dict[str, str]]:
        return list(self.stream(texts, extractor, progress, batch))

    def stream(self, texts: list[str], extractor: NounPhraseExtractor, progress=None,
               batch: int = 1024) -> Iterator[dict[str, str]]:
        """Every text's phrases in order, from the cache or else the extractor (stored `batch` at
        a time), looked up LOOKUP texts at a time: a large build never holds them all at once."""
        for start in range(0, len(texts), LOOKUP):
            yield from self._part(texts[start:start + LOOKUP], extractor, progress, batch)

    def _part(self, texts: list[str], extractor, progress, batch: int) -> list[dict[str, str]]:
        keys = [self.key(t, extractor.id) for t in texts]
        found = {k: json.loads(v) for k, v in self._kv.get_many(keys).items()}
        todo = [i for i, k in enumerate(keys) if k not in found]
        if progress:
            progress(len(texts) - len(todo))
        # One stream over all of them when the extractor streams (its workers never wait for a
        # batch to be stored), else batch by batch; stored every `batch` texts.
        if isinstance(extractor, NounPhraseExtractor):
            results = extractor.extract_iter([texts[i] for i in todo])
        else:
            results = (p for start in range(0, len(todo), batch)
                       for p in extractor.extract([texts[i] for i in todo[start:start + batch]]))
        pending: list[tuple[str, bytes]] = []
        for n, (i, p) in enumerate(zip(todo, results), start=1):
            found[keys[i]] = p
            pending.append((keys[i], json.dumps(p, ensure_ascii=False).encode()))
            if len(pending) == batch or n == len(todo):
                self._kv.put_many(pending)
                if progress:
                    progress(len(pending))
                pending = []
        return [found[k] for k in keys]


def phrase_input(title: str, text: str) -> str:
    """What noun phrases are extracted from for one unit: its title as a sentence, then its text."""
    return f"{title}.\n{text}" if title and title[-1:].isalnum() else f"{title}\n{text}"


class PhrasesAhead:
    """A build's pipeline overlap: the new units' noun phrases are extracted by the worker
    processes in a background thread while the main process embeds; Level 1 then finds them in
    the phrase cache. Should this fail, Level 1 extracts them itself (and reports the error)."""

    def __init__(self, cache: PhraseCache, extractor: NounPhraseExtractor, progress=None):
        self.cache, self.extractor, self.progress = cache, extractor, progress
        self._thread: threading.Thread | None = None

    def start(self, texts: list[str]) -> None:
        self._thread = threading.Thread(target=self._run, args=(texts,), name="monjyu-phrases", daemon=True)
        self._thread.start()

    def _run(self, texts: list[str]) -> None:
        try:
            for _ in self.cache.stream(texts, self.extractor, self.progress):
                pass  # stored in the cache; Level 1 reads them from there
        except Exception as exc:  # noqa: BLE001 - Level 1 runs the extraction again, in the open
            log.warning("noun phrases ahead of Level 1 failed (%s); Level 1 extracts them", exc)

    def finish(self, texts: list[str]) -> Iterator[dict[str, str]]:
        """Once the extraction ahead is done: the phrases of all `texts` in order (extracting any
        not done ahead) as a stream; the workers stop when it ends."""
        self._join()
        return self._read(texts)

    def _read(self, texts: list[str]) -> Iterator[dict[str, str]]:
        try:
            yield from self.cache.stream(texts, self.extractor)
        finally:
            self.extractor.close()

    def close(self) -> None:
        self._join()
        self.extractor.close()

    def _join(self) -> None:
        if self._thread is not None:
            self._thread.join()
            self._thread = None


@dataclass
class PhraseIncidence:
    """Which noun phrases each text unit holds (rows in text_units order), with the type each
    entry was given: what the graph is computed from. Kept by a generation (graph/), so that a
    build that adds or removes documents reads only the new units' phrases."""

    matrix: sp.csr_matrix  # units x phrases, float32 ones, columns ascending within a row
    kinds: np.ndarray  # int8 per entry (matrix order): an index into kind_names
    kind_names: list[str]
    phrases: list[str]  # column -> phrase text
    change: "IncidenceChange | None" = None  # set by update

    @classmethod
    def collect(cls, unit_phrases: Iterable[dict[str, str]] | Iterable[list[str]], n_units: int) -> "PhraseIncidence":
        """From each unit's phrases and types (NounPhraseExtractor.extract) or plain phrase lists
        (all CONCEPT), phrases numbered as first met."""
        vocab: dict[str, int] = {}
        kind_ids: dict[str, int] = {}
        matrix, kinds = _collect(unit_phrases, n_units, vocab, kind_ids)
        return cls(matrix, kinds, list(kind_ids), list(vocab))

    def update(self, keep: np.ndarray, added: Iterable[dict[str, str]] | Iterable[list[str]],
               n_added: int) -> "PhraseIncidence":
        """The rows `keep` (a mask) leaves, then the `added` units' rows; new phrases numbered
        after the others, phrases no unit holds any more dropped (the rest keep their order).
        The result's `change` says what changed, for the links to be updated rather than
        recounted."""
        vocab = {p: i for i, p in enumerate(self.phrases)}
        kind_ids = {k: i for i, k in enumerate(self.kind_names)}
        new, new_kinds = _collect(added, n_added, vocab, kind_ids)
        kept = self.matrix[np.flatnonzero(keep)]
        kept.resize((kept.shape[0], len(vocab)))
        removed = self.matrix[np.flatnonzero(~keep)]
        removed.resize((removed.shape[0], len(vocab)))
        matrix = sp.vstack([kept, new], format="csr")
        kinds = np.concatenate([self.kinds[np.repeat(keep, np.diff(self.matrix.indptr))], new_kinds])
        phrases = list(vocab)
        held = np.bincount(matrix.indices, minlength=len(phrases)) > 0
        number = np.arange(len(phrases))  # id before -> id after (-1: gone)
        if not held.all():
            number = np.where(held, np.cumsum(held) - 1, -1)
            matrix, new, removed = (_renumbered(m, number) for m in (matrix, new, removed))
            phrases = [p for p, h in zip(phrases, held.tolist()) if h]
        change = IncidenceChange(number[:len(self.phrases)], new, removed)
        return PhraseIncidence(matrix, kinds, list(kind_ids), phrases, change)

    def save(self, generation_dir: Path) -> None:
        save_incidence(generation_dir, self.matrix, self.kinds, self.kind_names)

    @classmethod
    def load(cls, generation_dir: Path, phrases: list[str]) -> "PhraseIncidence | None":
        """A generation's incidence (`phrases`: its entities' titles, in id order); None for one
        saved before the entries' types were kept."""
        matrix, typed = load_incidence(generation_dir), load_incidence_kinds(generation_dir)
        if matrix is None or typed is None:
            return None
        kinds, names = typed
        if len(kinds) != matrix.nnz or len(phrases) != matrix.shape[1]:
            return None
        return cls(matrix, kinds, names, phrases)


@dataclass
class IncidenceChange:
    """What an update did: each earlier phrase id's new one (-1: gone), and the rows added and
    removed (in the new phrase ids; a gone phrase's entries dropped)."""

    number: np.ndarray
    added: sp.csr_matrix
    removed: sp.csr_matrix


def _renumbered(matrix: sp.csr_matrix, number: np.ndarray) -> sp.csr_matrix:
    """`matrix` with its columns renumbered (entries of columns numbered -1 dropped)."""
    coo = matrix.tocoo()
    cols = number[coo.col]
    alive = cols >= 0
    return sp.csr_matrix((coo.data[alive], (coo.row[alive], cols[alive])),
                         shape=(matrix.shape[0], int(number.max(initial=-1)) + 1))


def _collect(unit_phrases, n_units: int, vocab: dict[str, int], kind_ids: dict[str, int]
             ) -> tuple[sp.csr_matrix, np.ndarray]:
    """The units' incidence rows (phrases numbered in `vocab`, extended as met) and each
    entry's type (numbered in `kind_ids`)."""
    # One entry per (unit, phrase): compact arrays, since a large build holds millions of them.
    rows, cols, kinds = array("i"), array("i"), array("b")
    for u, phrases in enumerate(unit_phrases):
        for p, kind in phrases.items() if isinstance(phrases, dict) else ((p, CONCEPT) for p in dict.fromkeys(phrases)):
            rows.append(u)
            cols.append(vocab.setdefault(p, len(vocab)))
            kinds.append(kind_ids.setdefault(kind, len(kind_ids)))
    rows, cols = np.frombuffer(rows, np.int32), np.frombuffer(cols, np.int32)
    # The entries' types ride along as the values (one entry per unit and phrase) while the
    # matrix is put in row order; then the values become ones.
    coded = np.frombuffer(kinds, np.int8).astype(np.float32) + 1
    matrix = sp.csr_matrix((coded, (rows, cols)), shape=(n_units, len(vocab)))
    codes = (matrix.data - 1).astype(np.int8)
    matrix.data[:] = 1.0
    return matrix, codes


def _edge_weights(src: np.ndarray, dst: np.ndarray, cnt: np.ndarray, df: np.ndarray, n_units: int
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Each link's weight, its co-occurrence count scaled by positive NPMI (so chance
    co-occurrence of common phrases weighs less than specific pairs), and its NPMI as the
    relationships table keeps it (float32). Its own function: the per-link float64 temporaries
    are gone before the clustering starts."""
    p_xy = cnt / n_units
    p_x, p_y = df[src] / n_units, df[dst] / n_units
    with np.errstate(divide="ignore", invalid="ignore"):
        npmi = np.where(p_xy < 1.0, np.log(p_xy / (p_x * p_y)) / -np.log(p_xy), 1.0)
    return cnt * np.clip(npmi, 0.05, 1.0), npmi.astype(np.float32)


def build_level1(n_units: int, unit_phrases: Iterable[dict[str, str]] | Iterable[list[str]] | PhraseIncidence,
                 cfg: GraphConfig, previous: PreviousClustering | None = None, recluster: bool = False) -> Level1Result:
    """`unit_phrases`: per text unit (`n_units` of them), its phrases with their types (NounPhraseExtractor.extract),
    or plain phrase lists (all CONCEPT), or their PhraseIncidence. Read once: given an iterator
    over a list nothing else holds, the list is freed as soon as it is read. `previous`: the
    current generation's communities, updated rather than clustered anew (unless `recluster` or
    the drift bound says otherwise)."""
    t0 = time.perf_counter()
    held = unit_phrases if isinstance(unit_phrases, PhraseIncidence) else PhraseIncidence.collect(unit_phrases, n_units)
    incidence, phrases = held.matrix, held.phrases
    n_phr = len(phrases)
    df = np.asarray(incidence.sum(axis=0)).ravel().astype(np.int64)
    hub_limit = max(cfg.min_hub_units, int(cfg.max_phrase_share * n_units))
    is_hub = df > hub_limit

    # Co-occurrence within a text unit, among non-hub phrases found in >= 2 units.
    linkable = (~is_hub) & (df >= 2)
    if held.change is not None and previous is not None and cfg.min_edge_units == 1 and not recluster:
        if previous.link_bound:
            src, dst, cnt = _links_updated_bounded(held, linkable, previous, df, n_units)
            bound = previous.link_bound
        else:
            src, dst, cnt = _links_updated(held, linkable, previous, cfg)
            bound = 0
            if len(src) > cfg.max_links:
                src, dst, cnt, bound = _bounded(src, dst, cnt, df, n_units, cfg.max_links)
    else:
        src, dst, cnt, bound = _links_counted(incidence, linkable, cfg.min_edge_units, df, n_units, cfg.max_links)
    degree = (np.bincount(src, minlength=n_phr) + np.bincount(dst, minlength=n_phr)) if len(src) else \
        np.zeros(n_phr, np.int64)
    weight, npmi = _edge_weights(src, dst, cnt, df, n_units)
    graph = Graph(n_phr, src, dst, cnt, weight)
    t_graph = time.perf_counter()
    clustering = cluster(graph, cfg, phrases, previous, recluster, held.change.number if held.change else None)
    communities = clustering.assignments
    quality = round(modularity(graph, communities), 4)
    n_links = len(src)
    relationships = pa.table({
        "source": pa.array(src, pa.int32()), "target": pa.array(dst, pa.int32()),
        "weight": pa.array(cnt, pa.int32()), "npmi": pa.array(npmi, pa.float32()),
    }, schema=RELATIONSHIPS_SCHEMA)
    del graph, src, dst, cnt, weight, npmi  # tens of millions of links: gone before the tables
    t_leiden = time.perf_counter()
    # Each phrase's type: the one most of its units gave it; ties go to the first type by name.
    names = sorted(held.kind_names)
    width = max(len(names), 1)
    column = np.zeros(width, np.int64)  # a type's id -> its column, by name
    column[[held.kind_names.index(k) for k in names]] = np.arange(len(names))
    votes = np.bincount(incidence.indices.astype(np.int64) * width + column[held.kinds],
                        minlength=n_phr * width).reshape(n_phr, width)
    types = [names[k] for k in votes.argmax(axis=1)] if names else [CONCEPT] * n_phr
    entities = pa.table({
        "id": pa.array(np.arange(n_phr), pa.int32()), "title": phrases, "frequency": pa.array(df, pa.int32()),
        "degree": pa.array(degree, pa.int32()), "is_hub": pa.array(is_hub), "type": types,
    }, schema=ENTITIES_SCHEMA)
    community_table = _community_table(communities, n_phr, phrases, df)
    t_end = time.perf_counter()
    return Level1Result(
        entities=entities, relationships=relationships, communities=community_table, incidence=held,
        seconds={"graph": t_graph - t0, "leiden": t_leiden - t_graph, "tables": t_end - t_leiden},
        stats={"phrases": n_phr, "hubs": int(is_hub.sum()), "edges": n_links,
               "communities": community_table.num_rows},
        clustering={"mode": clustering.mode, "changed": clustering.changed, "reclustered": clustering.reclustered,
                    "drift": round(clustering.drift, 4), "modularity": quality,
                    "link_bound": bound, **clustering.state},
    )


def _links_counted(incidence: sp.csr_matrix, linkable: np.ndarray, least: int, df: np.ndarray, n_units: int,
                   max_links: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Every pair of linkable phrases sharing at least `least` units, (src < dst) ascending, the
    units they share, and 0; or, when there are more than `max_links` such pairs, only the
    strongest `bound` links of each phrase (see _strongest), and `bound`. Counted a slice of
    phrases at a time: a collection of a million units has hundreds of millions of pairs, more
    than memory holds at once."""
    ids = np.flatnonzero(linkable)
    n = len(ids)
    by_unit = incidence[:, linkable].tocsr()
    by_phrase = by_unit.T.tocsr()
    # A phrase's row of pairs holds at most the summed lengths of its units: slices of about
    # LINK_SLICE entries.
    lengths = np.diff(by_unit.indptr).astype(np.int64)
    work = np.cumsum(np.add.reduceat(lengths[by_phrase.indices], by_phrase.indptr[:-1]) if n else lengths[:0])
    cuts = np.unique(np.r_[0, np.searchsorted(work, np.arange(LINK_SLICE, work[-1] if n else 0, LINK_SLICE)), n])

    def pairs(s: int, e: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        part = by_phrase[s:e] @ by_unit
        rows = np.repeat(np.arange(s, e, dtype=np.int32), np.diff(part.indptr))
        count = part.data.astype(np.int32)
        keep = (part.indices != rows) & (count >= least)
        return rows[keep], part.indices[keep].astype(np.int32), count[keep]

    # First pass: each phrase's links, kept while they fit.
    degree, upper, held = np.zeros(n, np.int64), [], 0
    for s, e in zip(cuts[:-1], cuts[1:]):
        rows, cols, count = pairs(s, e)
        degree[s:e] += np.bincount(rows - s, minlength=e - s)
        if held <= max_links:
            up = cols > rows
            upper.append((rows[up], cols[up], count[up]))
            held += int(up.sum())
    bound = 0
    if held > max_links:  # second pass: each phrase's strongest links
        bound = _bound(degree, max_links)
        upper = []
        for s, e in zip(cuts[:-1], cuts[1:]):
            rows, cols, count = pairs(s, e)
            chosen = _strongest(rows, cols, count, df[ids], n_units, bound)
            rows, cols, count = rows[chosen], cols[chosen], count[chosen]
            upper.append((np.minimum(rows, cols), np.maximum(rows, cols), count))
    a, b, count = (np.concatenate([u[i] for u in upper]) if upper else np.zeros(0, np.int32) for i in range(3))
    keys, first = np.unique(a.astype(np.int64) * n + b, return_index=True)  # ascending; a link chosen twice once
    return ids[keys // n], ids[keys % n], count[first].astype(np.int64), bound


def _bound(degree: np.ndarray, max_links: int) -> int:
    """The most links per phrase for which the phrases' kept links cannot pass `max_links`
    (at least 1)."""
    low, high = 1, max(1, int(degree.max(initial=1)))
    while low < high:
        mid = (low + high + 1) // 2
        low, high = (mid, high) if int(np.minimum(degree, mid).sum()) <= max_links else (low, mid - 1)
    return low


def _strongest(rows: np.ndarray, cols: np.ndarray, count: np.ndarray, df: np.ndarray, n_units: int,
               bound: int) -> np.ndarray:
    """Which of the pairs (each phrase's links listed under it, `rows` and `cols` numbered as
    `df`) are among their row phrase's `bound` strongest, by the weight clustering gives a
    link (ties: the lower column first). A link stays when either of its phrases keeps it."""
    weight, _ = _edge_weights(rows, cols, count, df, n_units)
    order = np.lexsort((cols, -weight, rows))
    ranked = rows[order]
    first = np.r_[0, np.flatnonzero(ranked[1:] != ranked[:-1]) + 1]
    rank = np.arange(len(order)) - np.repeat(first, np.diff(np.r_[first, len(order)]))
    chosen = np.zeros(len(rows), bool)
    chosen[order[rank < bound]] = True
    return chosen


def _links_updated(held: PhraseIncidence, linkable: np.ndarray, previous: PreviousClustering, cfg: GraphConfig
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """What _links_counted gives, from the previous generation's links and the rows added and
    removed: the counts among phrases linkable before and after change by the changed rows only;
    the links of a phrase that became linkable (found a second time, or no longer a hub) are
    counted from its units. Exact: the same links and counts (ascending by source, then target)."""
    change, incidence = held.change, held.matrix
    n = incidence.shape[1]
    df = np.bincount(incidence.indices, minlength=n)
    df_before = (df - np.bincount(change.added.indices, minlength=n)
                 + np.bincount(change.removed.indices, minlength=n))
    units_before = incidence.shape[0] - change.added.shape[0] + change.removed.shape[0]
    hub_before = max(cfg.min_hub_units, int(cfg.max_phrase_share * units_before))
    was_linkable = (df_before <= hub_before) & (df_before >= 2)
    stable, fresh = linkable & was_linkable, linkable & ~was_linkable
    # Links among stable phrases: the previous counts (renumbered: the order of ids is kept), as
    # sorted pair keys, plus the changed rows' pairs; then the new links of fresh phrases.
    a, b = change.number[previous.src], change.number[previous.dst]
    alive = (a >= 0) & (b >= 0)
    alive[alive] = stable[a[alive]] & stable[b[alive]]
    keys, count = a[alive] * n + b[alive], previous.count[alive].copy()
    if len(keys) > 1 and not (keys[1:] > keys[:-1]).all():
        order = np.argsort(keys)
        keys, count = keys[order], count[order]
    ids = np.flatnonzero(stable)
    changed = []
    for rows, sign in ((change.added, 1), (change.removed, -1)):
        part = rows[:, stable]
        co = (part.T @ part).tocoo()
        upper = co.row < co.col
        changed.append(_upper(ids[co.row[upper]], ids[co.col[upper]], sign * co.data[upper].astype(np.int64), n))
    # Links of phrases that became linkable, counted from their units (pairs of two such once).
    if fresh.any():
        co = (incidence[:, fresh].T @ incidence[:, linkable]).tocoo()
        rows, cols = np.flatnonzero(fresh)[co.row], np.flatnonzero(linkable)[co.col]
        once = (rows != cols) & (~fresh[cols] | (rows < cols))
        changed.append(_upper(rows[once], cols[once], co.data[once].astype(np.int64), n))
    delta = sum(changed[1:], changed[0]).tocoo()
    delta_keys, delta_count = delta.row.astype(np.int64) * n + delta.col, delta.data.astype(np.int64)
    at = np.searchsorted(keys, delta_keys)
    known = at < len(keys)
    known[known] = keys[at[known]] == delta_keys[known]
    np.add.at(count, at[known], delta_count[known])
    new = ~known & (delta_count > 0)
    keys = np.insert(keys, at[new], delta_keys[new])
    count = np.insert(count, at[new], delta_count[new])
    positive = count > 0
    keys, count = keys[positive], count[positive]
    return keys // n, keys % n, count


def _links_updated_bounded(held: PhraseIncidence, linkable: np.ndarray, previous: PreviousClustering,
                           df: np.ndarray, n_units: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The links of a graph cut to each phrase's strongest (previous.link_bound), updated from the
    changed rows. A pair's count changes only when a changed row holds both its phrases (both
    touched), so a kept link with an untouched phrase keeps its count and stays; pairs of touched
    phrases are recounted from their units, and one stays when it is among the strongest of
    either phrase's candidates (its kept links and its recounted pairs). A phrase that became
    linkable untouched (no longer a hub) has its links counted from its units. Close to what a
    full count keeps, not always equal: an untouched phrase does not choose again."""
    change, incidence, bound = held.change, held.matrix, previous.link_bound
    n = incidence.shape[1]
    touched = np.zeros(n, bool)
    touched[change.added.indices] = True
    touched[change.removed.indices] = True
    touched &= linkable
    a, b = change.number[previous.src], change.number[previous.dst]
    alive = (a >= 0) & (b >= 0)
    a, b, count = a[alive], b[alive], previous.count[alive]
    ok = linkable[a] & linkable[b] & ~(touched[a] & touched[b])
    a, b, count = a[ok], b[ok], count[ok]
    was_linked = np.zeros(n, bool)
    was_linked[a], was_linked[b] = True, True
    ids = np.flatnonzero(touched)
    block = (incidence[:, ids].T @ incidence[:, ids]).tocoo()
    up = block.row < block.col
    ta, tb, tc = ids[block.row[up]], ids[block.col[up]], block.data[up].astype(np.int64)
    rows, cols = np.concatenate([a, b, ta, tb]), np.concatenate([b, a, tb, ta])
    counts = np.concatenate([count, count, tc, tc])
    recounted = np.r_[np.zeros(2 * len(a), bool), np.ones(2 * len(ta), bool)]
    mine = touched[rows]
    chosen = np.zeros(len(rows), bool)
    chosen[mine] = _strongest(rows[mine], cols[mine], counts[mine], df, n_units, bound)
    chosen &= recounted
    parts = [(a, b, count), (np.minimum(rows[chosen], cols[chosen]), np.maximum(rows[chosen], cols[chosen]),
                             counts[chosen])]
    # Linkable phrases with no link and untouched: a hub no longer (counted from its units).
    fresh = np.flatnonzero(linkable & ~touched & ~was_linked & (df >= 2))
    if len(fresh):
        co = (incidence[:, fresh].T @ incidence[:, linkable]).tocoo()
        r, c, k = fresh[co.row], np.flatnonzero(linkable)[co.col], co.data.astype(np.int64)
        other = r != c
        r, c, k = r[other], c[other], k[other]
        pick = _strongest(r, c, k, df, n_units, bound)
        parts.append((np.minimum(r[pick], c[pick]), np.maximum(r[pick], c[pick]), k[pick]))
    src, dst, count = (np.concatenate([p[i] for p in parts]) for i in range(3))
    keys, first = np.unique(src * n + dst, return_index=True)
    return keys // n, keys % n, count[first]


def _upper(a: np.ndarray, b: np.ndarray, count: np.ndarray, n: int) -> sp.csr_matrix:
    """Counts of phrase pairs as an upper-triangular matrix (each pair at (min, max))."""
    return sp.csr_matrix((count, (np.minimum(a, b), np.maximum(a, b))), shape=(n, n))


def _bounded(src: np.ndarray, dst: np.ndarray, count: np.ndarray, df: np.ndarray, n_units: int, max_links: int
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """The links (src < dst, ascending) cut to each phrase's strongest, as _links_counted cuts
    them past `max_links`."""
    n = len(df)
    bound = _bound(np.bincount(src, minlength=n) + np.bincount(dst, minlength=n), max_links)
    rows, cols = np.concatenate([src, dst]), np.concatenate([dst, src])
    chosen = _strongest(rows, cols, np.concatenate([count, count]), df, n_units, bound)
    half = chosen[:len(src)] | chosen[len(src):]
    return src[half], dst[half], count[half], bound


def previous_clustering(phrases: list[str], links: tuple[np.ndarray, np.ndarray, np.ndarray] | pa.Table,
                        communities: pa.Table, state: dict) -> PreviousClustering:
    """The current generation's Level 1 as an update starts from it: its phrases (entity titles
    in id order), the relationships' (source, target, weight) as arrays or the table, and the
    communities table."""
    if isinstance(links, pa.Table):
        links = tuple(links[c].to_numpy() for c in ("source", "target", "weight"))
    src, dst, count = (np.asarray(a, np.int64) for a in links)
    return PreviousClustering(
        titles=phrases, src=src, dst=dst, count=count, ids=communities["id"].to_pylist(),
        levels=communities["level"].to_pylist(), parents=communities["parent"].to_pylist(),
        members=list_arrays(communities["entity_ids"]),
        changed_since_full=int(state.get("changed_since_full", 0)),
        links_at_full=int(state.get("links_at_full", 0)), link_bound=int(state.get("link_bound", 0)))


def _community_table(assignments: Assignments, n_phrases: int, phrases: list[str], df: np.ndarray) -> pa.Table:
    """One row per community: its phrases (ascending ids), its children, and a title of its five
    most frequent phrases (ties by text). Its units are not stored: a search computes them from
    the phrases and the incidence (retrieval/communities.py), which a million units would make a
    hundred million strings here."""
    if not len(assignments):
        return COMMUNITIES_SCHEMA.empty_table()
    node, community, level_of, parent_of = (assignments.node, assignments.community, assignments.level,
                                            assignments.parent)
    ids, row = np.unique(community, return_inverse=True)
    level, parent = np.empty(len(ids), np.int64), np.full(len(ids), -1, np.int64)
    level[row], parent[row] = level_of, parent_of
    members = sp.csr_matrix((np.ones(len(node), np.float32), (row, node)), shape=(len(ids), n_phrases))
    members.sum_duplicates()  # one entry per phrase, ascending
    # Titles: each community's five phrases first by descending frequency, then by text.
    by_text = np.argsort(pc.sort_indices(pa.array(phrases, pa.string())).to_numpy())
    order = np.lexsort((by_text, -df))
    first = _sorted_rows(members.indptr, np.argsort(order)[members.indices])
    titles = []
    for c in range(len(ids)):
        top = order[first[members.indptr[c]:min(members.indptr[c] + 5, members.indptr[c + 1])]]
        titles.append(", ".join(phrases[n] for n in top.tolist()))
    children: dict[int, list[int]] = {}
    for c, p in zip(ids.tolist(), parent.tolist()):
        if p >= 0:
            children.setdefault(p, []).append(c)
    return pa.table({
        "id": pa.array(ids, pa.int32()), "level": pa.array(level, pa.int32()), "parent": pa.array(parent, pa.int32()),
        "children": pa.array([sorted(children.get(c, [])) for c in ids.tolist()], pa.list_(pa.int32())),
        "entity_ids": pa.ListArray.from_arrays(pa.array(members.indptr.astype(np.int32)),
                                               pa.array(members.indices.astype(np.int32))),
        "size": pa.array(np.diff(members.indptr), pa.int32()), "title": titles,
    }, schema=COMMUNITIES_SCHEMA)


def _sorted_rows(indptr: np.ndarray, values: np.ndarray) -> np.ndarray:
    """`values` (distinct within a row) sorted within each row of a CSR layout."""
    rows = sp.csr_matrix((np.ones(len(values), np.int8), values, indptr),
                         shape=(len(indptr) - 1, int(values.max(initial=0)) + 1))
    rows.has_sorted_indices = False
    rows.sort_indices()
    return rows.indices
