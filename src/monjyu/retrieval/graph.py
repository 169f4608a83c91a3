"""Graph retrieval without an LLM: query phrases -> phrase nodes -> personalised PageRank over the
phrase / text-unit bipartite graph (HippoRAG-style) -> ranked text units.

Seeds are the query's phrases found in the graph (weighted by inverse unit frequency, so rare
names count most) plus, optionally, the best dense-retrieval units. PageRank spreads from them to
units that share phrases with the seeds: the second hop of a multi-hop question.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from ..nlp.lang import detect_language
from ..nlp.noun_phrases import MAX_WORDS, normalize_phrase
from ..runtime import cpu_cores
from ..store import LanceStore
from ..store.lancedb_store import ENTITIES
from ..store.sparse import PHRASE_VECTORS, load_incidence, load_vectors

PARALLEL_NNZ = 1_000_000  # from this many links on, a walk step runs on every core (scipy frees the GIL)
_pool: ThreadPoolExecutor | None = None


class _RowBlocks:
    """A sparse matrix whose product with a vector runs as one row block per core when it is
    large (1.7x faster on 2 cores at 3.4M links); the same arithmetic row by row."""

    def __init__(self, matrix: sp.csr_matrix):
        self.matrix: sp.csr_matrix | None = matrix
        cores = cpu_cores()
        self.blocks = []
        if matrix.nnz >= PARALLEL_NNZ and cores > 1:
            bounds = np.searchsorted(matrix.indptr, np.linspace(0, matrix.nnz, cores + 1)[1:-1])
            edges = [0, *bounds.tolist(), matrix.shape[0]]
            self.blocks = [matrix[a:b] for a, b in zip(edges, edges[1:]) if b > a]
            self.matrix = None  # the blocks hold it (no second copy in memory)

    def csr(self) -> sp.csr_matrix:
        """The whole matrix (the blocks stacked back when it was split)."""
        return self.matrix if self.matrix is not None else sp.vstack(self.blocks).tocsr()

    def __matmul__(self, vector: np.ndarray) -> np.ndarray:
        global _pool
        if not self.blocks:
            return self.matrix @ vector
        if _pool is None:
            _pool = ThreadPoolExecutor(cpu_cores(), thread_name_prefix="monjyu-walk")
        return np.concatenate(list(_pool.map(lambda block: block @ vector, self.blocks)))


_PARENTHETICAL = re.compile(r"\s*\([^)]*\)\s*$")  # "Inherent Vice (film)" is about "inherent vice"
_WORDS = re.compile(r"[\w][\w'’\-\.]*|[^\s\w]")


def _names(text: str, title: str) -> bool:
    """`title` (lower case) occurs in `text` (lower case) as whole words."""
    start = text.find(title)
    while start >= 0:
        end = start + len(title)
        if (start == 0 or not text[start - 1].isalnum()) and (end == len(text) or not text[end].isalnum()):
            return True
        start = text.find(title, start + 1)
    return False


@dataclass
class PhraseGraph:
    """Units x phrases incidence (row order = text_units table), phrase strings and hub flags."""

    incidence: sp.csr_matrix
    phrases: list[str]
    is_hub: np.ndarray
    types: np.ndarray | None = None  # entity type per phrase (None: an index built before types were kept)
    vector_nodes: np.ndarray | None = None  # the embedded phrases (graph.embed_min_units) ...
    vectors: np.ndarray | None = None  # ... and their vectors, row-aligned

    def __post_init__(self) -> None:
        self.vocab = {p: i for i, p in enumerate(self.phrases)}
        n_units = self.incidence.shape[0]
        self.df = df = np.asarray((self.incidence > 0).sum(axis=0)).ravel()
        self.idf = np.log((n_units + 1) / (df + 1)).astype(np.float32)
        usable = sp.diags((~self.is_hub).astype(np.float32))
        inc = ((self.incidence > 0).astype(np.float32) @ usable).tocsr()
        self._links = inc  # units x phrases, 1 where a non-hub phrase occurs in a unit
        self.about: dict[int, list[int]] = {}  # filled by link_titles
        self._texts: list[str] | None = None
        self._comma_titles: dict[int, list[tuple[int, str]]] = {}  # a part of a title -> (unit, full title)
        self._named_within: dict[int, list[int]] = {}  # phrase -> title phrases inside it (memo)
        self._vector_languages: np.ndarray | None = None
        self._title_links: sp.csr_matrix | None = None  # link_titles: extra weight, phrase -> the units titled by it
        self._extra_nodes: dict[str, sp.csr_matrix] = {}  # link_citations, link_entities: units x their nodes
        self._by_column: tuple | None = None  # (the walk, it by column and each node's links), for bounded walks
        self._incidence_by_column: sp.csc_matrix | None = None  # units_of
        self._scratch_lock = threading.Lock()
        self._free_scratch: list[tuple[_SparseMass, _SparseMass]] = []  # bounded walks' scratch space, for reuse
        self._set_transitions(inc, inc)

    @property
    def walk_nodes(self) -> int:
        """Nodes the walk has beside units: the phrases, a node per citation (link_citations) and
        per Level 3 entity (link_entities)."""
        return self.incidence.shape[1] + sum(nodes.shape[1] for nodes in self._extra_nodes.values())

    def _relink(self) -> None:
        """The walk from the phrase links with what link_titles, link_citations and link_entities
        add; each is kept small (one entry per titled unit, per citing or cited unit, per unit
        naming an entity), never the whole walk."""
        unit_to_phrase = self._links
        phrase_to_unit = self._links if self._title_links is None else \
            (self._links.maximum(self._title_links > 0) + self._title_links).tocsr()
        if self._extra_nodes:
            extra = list(self._extra_nodes.values())
            unit_to_phrase = sp.hstack([unit_to_phrase, *extra]).tocsr()
            phrase_to_unit = sp.hstack([phrase_to_unit, *extra]).tocsr()
        self._set_transitions(unit_to_phrase, phrase_to_unit)

    def _set_transitions(self, unit_to_phrase: sp.csr_matrix, phrase_to_unit: sp.csr_matrix) -> None:
        """Column-stochastic walks: unit -> its phrases (uniform), phrase -> its units (by weight)."""
        unit_deg = np.asarray(unit_to_phrase.sum(axis=1)).ravel()
        phrase_deg = np.asarray(phrase_to_unit.sum(axis=0)).ravel()
        # One assignment of both directions: a walk reads the pair it started with, while Level 3
        # may relink the graph under a concurrent search (link_entities).
        self._walk = (_RowBlocks((sp.diags(1.0 / np.maximum(unit_deg, 1)) @ unit_to_phrase).T.tocsr()),  # phrases x units
                      _RowBlocks((phrase_to_unit @ sp.diags(1.0 / np.maximum(phrase_deg, 1))).tocsr()),  # units x phrases
                      unit_to_phrase.shape[1])
        self._by_column = None

    def link_titles(self, titles: list[str], boost: float, texts: list[str] | None = None) -> None:
        """A unit whose title names a phrase is *about* it ("Frank Lloyd" is the page of the phrase
        frank lloyd, the films that mention him are not): the walk from that phrase goes to it
        `boost` times as often as to a unit that merely mentions the phrase. With the units'
        `texts`, `linked_units` also finds the titles no phrase holds whole (see there)."""
        if boost == 1.0:
            return
        rows, cols = [], []
        for row, title in enumerate(titles):
            words = [w.lower() for w in _WORDS.findall(_PARENTHETICAL.sub("", title or ""))]
            node = self.vocab.get(normalize_phrase(words)) if words else None
            if node is not None and not self.is_hub[node]:
                rows.append(row)
                cols.append(node)
        self.about = {}  # phrase node -> the units titled by it
        for row, node in zip(rows, cols):
            self.about.setdefault(node, []).append(row)
        self._texts, self._named_within, self._comma_titles = texts, {}, {}
        for row, title in enumerate(titles if texts is not None else []):
            base = _PARENTHETICAL.sub("", title or "")
            if "," not in base:
                continue
            # Looked for where either part is a phrase of the unit ("Frederick I, Holy Roman
            # Emperor": the tagger reads the "I" as a pronoun, so only the second part is one).
            for part in base.split(",", 1):
                node = self.vocab.get(normalize_phrase([w.lower() for w in _WORDS.findall(part)]))
                if node is not None and not self.is_hub[node]:
                    self._comma_titles.setdefault(node, []).append((row, " ".join(base.lower().split())))
        self._title_links = sp.csr_matrix((np.full(len(rows), boost - 1.0, np.float32), (rows, cols)),
                                          shape=self._links.shape)
        self._relink()

    def link_citations(self, groups: list[list[int]], weight: float) -> None:
        """Citations join the walk (search.citation_links): one node per citation, linking the
        unit that cites a paper of the collection to that paper's opening units, `weight` times
        as strong as a phrase's link. A walk can then go from a passage to the paper it cites,
        or from a paper to the passages that cite it, with no phrase in common."""
        if weight > 0 and groups:
            self._link_nodes("citations", groups, weight)

    def link_entities(self, groups: list[list[int]]) -> None:
        """Level 3's entities join the walk: one node per entity linking the units that name it
        (under any of its names), as strong as a phrase's link. Called again when Level 3 grows;
        no groups: the walk without them."""
        self._link_nodes("entities", [g for g in groups if len(g) > 1], 1.0)

    def _link_nodes(self, kind: str, groups: list[list[int]], weight: float) -> None:
        """Replace the walk's `kind` nodes (citations before entities), one node per group of units."""
        if not groups and kind not in self._extra_nodes:
            return
        if groups:
            rows = [u for group in groups for u in group]
            cols = [j for j, group in enumerate(groups) for _ in group]
            self._extra_nodes[kind] = sp.csr_matrix((np.full(len(rows), weight, np.float32), (rows, cols)),
                                                    shape=(self.incidence.shape[0], len(groups)))
        else:
            del self._extra_nodes[kind]
        self._extra_nodes = {k: self._extra_nodes[k] for k in ("citations", "entities") if k in self._extra_nodes}
        self._relink()

    @classmethod
    def load(cls, generation_dir: Path) -> "PhraseGraph | None":
        """The graph of a generation, or None when it was built without Level 1."""
        incidence = load_incidence(generation_dir)
        if incidence is None:
            return None
        store = LanceStore(generation_dir / "lancedb")
        has_types = "type" in store.column_names(ENTITIES)
        entities = store.read(ENTITIES, ["title", "is_hub"] + (["type"] if has_types else []))
        types = np.array(entities["type"].to_pylist(), dtype=object) if has_types else None
        embedded = load_vectors(generation_dir, PHRASE_VECTORS, mmap=True)  # shared through the page cache
        return cls(incidence, entities["title"].to_pylist(), np.array(entities["is_hub"].to_pylist(), dtype=bool),
                   types, *(embedded or (None, None)))

    def units_of(self, node: int) -> np.ndarray:
        """The units a phrase occurs in (rows), from a by-column copy of the incidence made once."""
        if self._incidence_by_column is None:
            self._incidence_by_column = self.incidence.tocsc()
        csc = self._incidence_by_column
        return csc.indices[csc.indptr[node]:csc.indptr[node + 1]]

    def units_of_types(self, entity_types: list[str]) -> np.ndarray:
        """Boolean mask of the units that name at least one phrase of the given types."""
        wanted = np.isin(self.types, np.array(entity_types, dtype=object)).astype(np.float32)
        return (self.incidence > 0).astype(np.float32) @ wanted > 0

    # ------------------------------------------------------------------ query
    def match(self, query: str, phrases: Iterable[str] = ()) -> dict[int, float]:
        """Phrase nodes named in the query: every word n-gram of the query that is a node, plus the
        query's own normalised noun `phrases` (GraphRanker.phrases). Weight = idf; hubs never seed."""
        words = [w.lower() for w in _WORDS.findall(query)]
        found: dict[int, float] = {}
        for n in range(1, MAX_WORDS + 1):
            for i in range(len(words) - n + 1):
                node = self.vocab.get(normalize_phrase(words[i:i + n]))
                if node is not None:
                    found[node] = float(self.idf[node])
        for phrase in phrases:
            node = self.vocab.get(phrase)
            if node is not None:
                found[node] = float(self.idf[node])
        # A phrase inside a longer matched phrase ("wayne" in "lil wayne") adds little: keep the longest.
        longest = {n: w for n, w in found.items()
                   if not any(o != n and f" {self.phrases[n]} " in f" {self.phrases[o]} " for o in found)}
        return {n: w for n, w in longest.items() if not self.is_hub[n]}

    def vector_languages(self) -> np.ndarray:
        """The language of each embedded phrase ('en' / 'ja'), computed once."""
        if self._vector_languages is None:
            nodes = [] if self.vector_nodes is None else self.vector_nodes
            self._vector_languages = np.array([detect_language(self.phrases[n]) for n in nodes], dtype=object)
        return self._vector_languages

    def similar(self, phrase_vectors: np.ndarray, languages: list[str], threshold: float) -> list[tuple[int, int, float]]:
        """For each query phrase (as a vector, with its language), the nearest embedded phrase in
        another language when their cosine reaches `threshold`: (query phrase index, node,
        weight). Weight = idf x how far above the threshold the match is, so a loose match seeds
        less than a close one."""
        if self.vectors is None or not len(self.vector_nodes) or not len(phrase_vectors):
            return []
        sims = np.asarray(phrase_vectors, dtype=np.float32) @ self.vectors.T
        found = []
        for i, row in enumerate(sims):
            row = np.where(self.vector_languages() != languages[i], row, -1.0)
            best = int(np.argmax(row))
            if row[best] >= threshold:
                node = int(self.vector_nodes[best])
                strength = (row[best] - threshold) / max(1.0 - threshold, 1e-6)
                found.append((i, node, float(self.idf[node]) * (0.5 + 0.5 * float(strength))))
        return found

    def neighbours(self, nodes: list[int], hops: int = 1, limit: int = 50) -> list[tuple[int, int, float]]:
        """Phrases within `hops` co-occurrence steps of `nodes` (hubs neither reached nor crossed):
        (node, hop, strength) nearest hop first, then by strength = shared text units with the
        previous hop's frontier, weighted by idf so specific links rank above generic ones."""
        inc = self._links
        seen = set(nodes)
        frontier = np.zeros(inc.shape[1], np.float32)
        frontier[list(nodes)] = 1.0
        found: list[tuple[int, int, float]] = []
        for hop in range(1, hops + 1):
            units = (inc @ frontier > 0).astype(np.float32)
            reach = (inc.T @ units) * self.idf
            reach[list(seen)] = 0.0
            new = np.flatnonzero(reach > 0)
            new = new[np.lexsort((new, -reach[new]))]
            found.extend((int(n), hop, float(reach[n])) for n in new)
            if len(found) >= limit or len(new) == 0:
                break
            seen.update(new.tolist())
            frontier = np.zeros_like(frontier)
            frontier[new] = 1.0
        return found[:limit]

    def linked_units(self, row: int) -> list[tuple[int, str]]:
        """Units titled by a phrase of unit `row` (its outgoing "page links"), with the words that
        name them. Also titles no phrase holds whole: one ending a longer phrase ("king gundobad"
        names the page Gundobad) and, given the texts, a title with a comma written out in full
        ("daughter of Albert III, Duke of Bavaria": the phrases are "albert iii" and "duke of
        bavaria"; the bare head "Albert III" would name every Albert III, so it does not link)."""
        inc = self._links
        out = []
        text, written_out = None, set()
        for node in inc.indices[inc.indptr[row]:inc.indptr[row + 1]].tolist():
            for named in (node, *self._titles_within(node)):
                out.extend((u, self.phrases[named]) for u in self.about.get(named, []) if u != row)
            for u, title in self._comma_titles.get(node, []):
                text = " ".join(self._texts[row].lower().split()) if text is None else text
                if u != row and (u, title) not in written_out and _names(text, title):
                    written_out.add((u, title))
                    out.append((u, title))
        return out

    def _titles_within(self, node: int) -> list[int]:
        """Title phrases that end phrase `node` ("gundobad" in "king gundobad"): the last words of
        a noun phrase name what it is; its first words only qualify it ("frank lloyd" in "frank
        lloyd wright" is someone else)."""
        found = self._named_within.get(node)
        if found is None:
            words = self.phrases[node].split()
            tails = (" ".join(words[a:]) for a in range(1, len(words)))
            found = [n for n in (self.vocab.get(t) for t in tails) if n is not None and n in self.about]
            self._named_within[node] = found
        return found

    def personalized_pagerank(self, phrase_seeds: dict[int, float], unit_seeds: dict[int, float] | None = None,
                              damping: float = 0.5, iterations: int = 20, tolerance: float = 1e-4,
                              epsilon: float = 0.0) -> np.ndarray:
        """Scores of every text unit after `iterations` steps of the walk (fewer once it has
        converged). The walk alternates units and phrases; restarts go to the seeds. The units at
        step k depend only on the phrases at step k-1, and those only on the units at k-2, so
        the walk is followed along that one chain from the unit seeds: one pass over the
        incidence per step, half the work of updating both sides every step, with the very
        same units at every even step. It stops once a two-step cycle moves less than
        `tolerance` of the mass (L1): with damping 0.5, about six cycles. With `epsilon` > 0 each
        step is taken only from the nodes whose mass reaches epsilon times their links (bounded_walk)."""
        if epsilon > 0:
            return self.bounded_walk(phrase_seeds, unit_seeds or {}, damping, iterations, tolerance, epsilon)
        u2p, p2u, n_phr = self._walk
        n_units = self.incidence.shape[0]
        restart_p = np.zeros(n_phr, np.float32)
        restart_u = np.zeros(n_units, np.float32)
        for node, w in phrase_seeds.items():
            restart_p[node] += w
        for row, w in (unit_seeds or {}).items():
            restart_u[row] += w
        total = restart_p.sum() + restart_u.sum()
        if total <= 0:
            return np.zeros(n_units, np.float32)
        restart_p /= total
        restart_u /= total
        p, u = restart_p, restart_u.copy()
        for _ in range((iterations + 1) // 2):
            p_next = damping * (u2p @ u) + (1 - damping) * restart_p
            u_next = damping * (p2u @ p_next) + (1 - damping) * restart_u
            moved = float(np.abs(p_next - p).sum() + np.abs(u_next - u).sum())
            p, u = p_next, u_next
            if moved < tolerance:
                break
        return u

    def bounded_walk(self, phrase_seeds: dict[int, float], unit_seeds: dict[int, float], damping: float,
                     iterations: int, tolerance: float, epsilon: float) -> np.ndarray:
        """The walk of personalized_pagerank with each step taken only from the nodes whose mass
        reaches `epsilon` times their number of links (as in Andersen, Chung and Lang's local
        PageRank): a step then reads at most 1/epsilon links, so the work follows the seeds'
        neighbourhood and not the graph's size (search.walk_epsilon). A node below its bar passes
        nothing on (that mass is dropped), so a generic phrase reached by little mass is not
        spread over its thousands of units. The mass is kept as sparse vectors (the nodes that
        hold some, and how much), so no step touches a node the walk has not reached; only the
        scores returned are a full vector. The walk's matrices are kept by column for it (built
        on the first bounded walk)."""
        walk = self._walk
        by_column = self._by_column
        if by_column is None or by_column[0] is not walk:
            u2p, p2u = walk[0].csr().tocsc(), walk[1].csr().tocsc()
            by_column = self._by_column = (walk, (u2p, p2u, np.diff(u2p.indptr).astype(np.float32),
                                                  np.diff(p2u.indptr).astype(np.float32)))
        with self._scratch(walk[2]) as (units, phrases):
            return self._bounded_walk(by_column[1], units, phrases, phrase_seeds, unit_seeds, damping, iterations,
                                      tolerance, epsilon)

    @contextmanager
    def _scratch(self, nodes: int) -> Iterator[tuple["_SparseMass", "_SparseMass"]]:
        """Scratch space of a bounded walk, kept for the next one: a million units' worth of
        fresh memory costs more page faults than the walk's own work. One per concurrent walk; a
        walk that failed half-way does not give its space back (it may not be all zero)."""
        with self._scratch_lock:
            pair = self._free_scratch.pop() if self._free_scratch else None
        if pair is None or len(pair[1].total) != nodes:  # none yet, or from before link_citations / link_entities
            pair = (_SparseMass(self.incidence.shape[0]), _SparseMass(nodes))
        yield pair
        with self._scratch_lock:
            self._free_scratch.append(pair)

    def _bounded_walk(self, by_column: tuple, units: "_SparseMass", phrases: "_SparseMass",
                      phrase_seeds: dict[int, float], unit_seeds: dict[int, float], damping: float, iterations: int,
                      tolerance: float, epsilon: float) -> np.ndarray:
        u2p, p2u, unit_links, phrase_links = by_column
        seeds_p, seeds_u = (np.fromiter(seeds, np.int64, len(seeds)) for seeds in (phrase_seeds, unit_seeds))
        mass_p, mass_u = (np.fromiter(seeds.values(), np.float64, len(seeds)) for seeds in (phrase_seeds, unit_seeds))
        total = mass_p.sum() + mass_u.sum()
        if total <= 0:
            return np.zeros(len(unit_links), np.float32)
        mass_p, mass_u = mass_p / total, mass_u / total
        restart = (seeds_p, (1 - damping) * mass_p, seeds_u, (1 - damping) * mass_u)
        u = (seeds_u, mass_u)
        p = (np.zeros(0, np.int64), np.zeros(0))
        for _ in range((iterations + 1) // 2):
            send = u[1] >= epsilon * unit_links[u[0]]
            p_next = phrases.push(u2p, u[0][send], damping * u[1][send], *restart[:2])
            send = p_next[1] >= epsilon * phrase_links[p_next[0]]
            u_next = units.push(p2u, p_next[0][send], damping * p_next[1][send], *restart[2:])
            moved = phrases.distance(p, p_next) + units.distance(u, u_next)
            p, u = p_next, u_next
            if moved < tolerance:
                break
        scores = np.zeros(len(unit_links), np.float32)
        scores[u[0]] = u[1]
        return scores


class _SparseMass:
    """Sparse vectors over n nodes (node ids, masses) for the bounded walk, with scratch space so
    that a step costs the links it reads, not n."""

    def __init__(self, n: int):
        self.total = np.zeros(n)  # all zero between pushes
        self.last = np.empty(n, np.int64)  # per node, a position it was sent to (finds the nodes reached)

    def push(self, matrix: sp.csc_matrix, nodes: np.ndarray, mass: np.ndarray, plus_nodes: np.ndarray,
             plus_mass: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """matrix[:, nodes] @ mass, plus `plus_mass` at `plus_nodes`, as (nodes, masses)."""
        starts = matrix.indptr[nodes]
        counts = matrix.indptr[nodes + 1] - starts
        positions = np.repeat(starts - np.cumsum(counts) + counts, counts) + np.arange(int(counts.sum()))
        rows = np.concatenate([matrix.indices[positions], plus_nodes])
        sent = np.concatenate([matrix.data[positions] * np.repeat(mass, counts), plus_mass])
        np.add.at(self.total, rows, sent)
        order = np.arange(len(rows))
        self.last[rows] = order
        reached = rows[self.last[rows] == order]  # one position per node, whichever write won
        out = (reached, self.total[reached])
        self.total[reached] = 0.0
        return out

    def distance(self, a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]) -> float:
        """L1 distance of two non-negative sparse vectors."""
        self.total[a[0]] = a[1]
        before = self.total[b[0]]
        self.total[a[0]] = 0.0
        return float(np.abs(b[1] - before).sum() + a[1].sum() - before.sum())
