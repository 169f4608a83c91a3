"""Community search over the Level 1 hierarchy: which communities hold the text units a query
found, and how to walk down into their sub-communities (what lazy search deepens through)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..store import LanceStore
from ..store.lancedb_store import COMMUNITIES


@dataclass
class Community:
    id: int
    level: int
    parent: int  # -1 at the top level
    children: list[int]
    title: str  # representative phrases
    unit_rows: np.ndarray  # rows of the text_units table, ascending
    size: int  # phrases


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
    def __init__(self, communities: Sequence[Community]):
        self.by_id = {c.id: c for c in communities}
        self.levels = sorted({c.level for c in communities})
        # unit row -> the communities (any level) that contain it
        self._of_unit: dict[int, list[int]] = {}
        for c in communities:
            for r in c.unit_rows.tolist():
                self._of_unit.setdefault(r, []).append(c.id)

    @classmethod
    def load(cls, generation_dir: Path, row_of_unit: Mapping[str, int]) -> "CommunityIndex | None":
        store = LanceStore(generation_dir / "lancedb")
        if not store.has(COMMUNITIES):
            return None
        t = store.read(COMMUNITIES, ["id", "level", "parent", "children", "title", "text_unit_ids", "size"]).to_pydict()
        communities = [
            Community(id=t["id"][i], level=t["level"][i], parent=t["parent"][i], children=list(t["children"][i]),
                      title=t["title"][i], size=t["size"][i],
                      unit_rows=np.array(sorted(row_of_unit[u] for u in t["text_unit_ids"][i] if u in row_of_unit),
                                         dtype=np.int64))
            for i in range(len(t["id"]))
        ]
        return cls(communities)

    def __len__(self) -> int:
        return len(self.by_id)

    def top_level(self) -> list[Community]:
        return [c for c in self.by_id.values() if c.parent == -1]

    def children(self, community_id: int) -> list[Community]:
        return [self.by_id[c] for c in self.by_id[community_id].children if c in self.by_id]

    def of_unit(self, row: int, level: int | None = None) -> list[Community]:
        found = [self.by_id[c] for c in self._of_unit.get(row, [])]
        return [c for c in found if level is None or c.level == level]

    def rank(self, ranked_rows: Sequence[int], level: int | None = None, rrf_k: int = 10,
             allowed: set[int] | None = None) -> list[CommunityHit]:
        """Communities by the query's top units they hold: each unit adds 1 / (rrf_k + rank), so a
        community holding several high-ranked units comes first. `level` restricts to one level of
        the hierarchy (None: every level); `allowed` to a set of community ids."""
        scores: dict[int, float] = {}
        matched: dict[int, list[int]] = {}
        for rank, row in enumerate(ranked_rows, start=1):
            for cid in self._of_unit.get(row, []):
                c = self.by_id[cid]
                if (level is not None and c.level != level) or (allowed is not None and cid not in allowed):
                    continue
                scores[cid] = scores.get(cid, 0.0) + 1.0 / (rrf_k + rank)
                matched.setdefault(cid, []).append(row)
        order = sorted(scores, key=lambda c: (-scores[c], c))
        return [CommunityHit(self.by_id[c], scores[c], matched[c]) for c in order]
