"""Community search over the Level 1 hierarchy: which communities hold the text units a query
found, and how to walk down into their sub-communities (what lazy search deepens through)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from ..errors import MonjyuError
from ..store import LanceStore
from ..store.lancedb_store import COMMUNITIES
from ..store.sparse import COMMUNITY_VECTORS, list_arrays, load_vectors
from .fusion import weighted_rrf


@dataclass
class Community:
    id: int
    level: int
    parent: int  # -1 at the top level
    children: list[int]
    title: str  # representative phrases
    unit_rows: np.ndarray  # rows of the text_units table, ascending
    size: int  # phrases
    phrase_ids: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # its noun phrases (entity ids)

    @cached_property
    def phrases(self) -> frozenset[int]:
        return frozenset(self.phrase_ids.tolist())


@dataclass
class CommunityHit:
    community: Community
    score: float
    matched_rows: list[int]  # the query's top units inside this community, best first

    def to_dict(self) -> dict:
        c = self.community
        return {"id": c.id, "level": c.level, "parent": c.parent, "title": c.title, "score": self.score,
                "size": c.size, "text_units": len(c.unit_rows), "matched_units": len(self.matched_rows)}


class CommunityIndex:
    def __init__(self, communities: Sequence[Community], title_vectors: tuple[np.ndarray, np.ndarray] | None = None,
                 by_unit: sp.csr_matrix | None = None):
        """`by_unit`: units x communities (by position in `communities`), when the caller has it."""
        self.by_id = {c.id: c for c in communities}
        # Embeddings of each community's representative phrases (ids, vectors), when built.
        self.title_ids, self.title_vectors = title_vectors if title_vectors is not None else (None, None)
        self.levels = sorted({c.level for c in communities})
        # unit row -> the communities (any level) that contain it, as CSR arrays: a million units
        # lie in a hundred million (community, unit) pairs.
        self._ids = np.array([c.id for c in communities], np.int64)
        if by_unit is None:
            sizes = np.array([len(c.unit_rows) for c in communities], np.int64)
            rows = np.concatenate([c.unit_rows for c in communities]) if communities else np.zeros(0, np.int64)
            by_unit = sp.csr_matrix((np.ones(len(rows), np.int8), (rows, np.repeat(np.arange(len(sizes)), sizes))),
                                    shape=(int(rows.max(initial=-1)) + 1, len(sizes)))
        self._unit_ptr, self._unit_positions = by_unit.indptr, by_unit.indices

    @classmethod
    def load(cls, generation_dir: Path, incidence: sp.csr_matrix) -> "CommunityIndex | None":
        """The hierarchy of a generation; each community's units are those holding one of its
        phrases (`incidence`: units x phrases, rows in the text_units table's order), computed
        here as arrays rather than read as strings."""
        store = LanceStore(generation_dir / "lancedb")
        if not store.has(COMMUNITIES):
            return None
        t = store.read(COMMUNITIES, ["id", "level", "parent", "children", "title", "size", "entity_ids"])
        if not t.num_rows:  # a collection too small to group its phrases: no hierarchy to walk
            return None
        offsets, members = list_arrays(t["entity_ids"])
        holding = sp.csr_matrix((np.ones(len(members), np.float32), members, offsets),
                                shape=(t.num_rows, incidence.shape[1]))
        units = (holding @ (incidence > 0).astype(np.float32).T).tocsr()
        units.sort_indices()
        by_unit = units.T.tocsr()
        by_unit.sort_indices()
        ptr, unit_rows = units.indptr, units.indices.astype(np.int64)
        del units
        columns = {k: t[k].to_pylist() for k in ("id", "level", "parent", "title", "size")}
        children = t["children"].to_pylist()
        communities = [
            Community(id=columns["id"][i], level=columns["level"][i], parent=columns["parent"][i],
                      children=list(children[i]), title=columns["title"][i], size=columns["size"][i],
                      phrase_ids=members[offsets[i]:offsets[i + 1]], unit_rows=unit_rows[ptr[i]:ptr[i + 1]])
            for i in range(t.num_rows)
        ]
        return cls(communities, load_vectors(generation_dir, COMMUNITY_VECTORS), by_unit)

    def _of_unit(self, row: int) -> np.ndarray:
        """The ids of the communities (any level) holding a unit row, in the order of the table."""
        if row >= len(self._unit_ptr) - 1:
            return self._ids[:0]
        return self._ids[self._unit_positions[self._unit_ptr[row]:self._unit_ptr[row + 1]]]

    def __len__(self) -> int:
        return len(self.by_id)

    def top_level(self) -> list[Community]:
        return [c for c in self.by_id.values() if c.parent == -1]

    def children(self, community_id: int) -> list[Community]:
        return [self.by_id[c] for c in self.by_id[community_id].children if c in self.by_id]

    def of_unit(self, row: int, level: int | None = None) -> list[Community]:
        found = [self.by_id[c] for c in self._of_unit(row).tolist()]
        return [c for c in found if level is None or c.level == level]

    def title_similarity(self, query_vectors: np.ndarray, weight: float) -> dict[int, float]:
        """Cosine of each community's representative phrases with the closest query vector, for a
        ranking that gives them `weight` (search.community_title_weight): none at weight 0, and
        refused when the index was built without them."""
        if weight <= 0 or not len(query_vectors):
            return {}
        if self.title_vectors is None:
            raise MonjyuError("search.community_title_weight ranks communities by their representative phrases' "
                              "vectors, which this index does not have: set graph.embed_communities: true and run "
                              "`monjyu index` again, or leave the weight at 0")
        sims = (self.title_vectors @ np.atleast_2d(np.asarray(query_vectors, dtype=np.float32)).T).max(axis=1)
        return dict(zip(self.title_ids.tolist(), sims.tolist()))

    def rank(self, ranked_rows: Sequence[int], level: int | None = None, rrf_k: int = 10,
             allowed: set[int] | None = None, title_scores: dict[int, float] | None = None,
             title_weight: float = 0.0) -> list[CommunityHit]:
        """Communities by the query's top units they hold: each unit adds 1 / (rrf_k + rank), so a
        community holding several high-ranked units comes first. `level` restricts to one level of
        the hierarchy (None: every level); `allowed` to a set of community ids. With
        `title_scores` (title_similarity) and a `title_weight` > 0, that order is fused (weighted
        RRF) with the order of representative-phrase similarity, which can bring in communities
        about the question that hold none of its top units."""
        scores: dict[int, float] = {}
        matched: dict[int, list[int]] = {}

        def eligible(cid: int) -> bool:
            c = self.by_id[cid]
            return (level is None or c.level == level) and (allowed is None or cid in allowed)

        for rank, row in enumerate(ranked_rows, start=1):
            for cid in self._of_unit(row).tolist():
                if eligible(cid):
                    scores[cid] = scores.get(cid, 0.0) + 1.0 / (rrf_k + rank)
                    matched.setdefault(cid, []).append(row)
        order = sorted(scores, key=lambda c: (-scores[c], c))
        if title_scores and title_weight > 0:
            by_title = sorted((c for c in title_scores if c in self.by_id and eligible(c)),
                              key=lambda c: (-title_scores[c], c))
            fused = weighted_rrf([order, by_title], [1.0 - title_weight, title_weight], rrf_k)
            scores = dict(fused)
            order = [c for c, _ in fused]
        return [CommunityHit(self.by_id[c], scores[c], matched.get(c, [])) for c in order]
