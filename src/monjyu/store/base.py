"""What the facade and the searcher need from a store, by kind (no implementation imported here).

- `IndexStore`: where index state lives when it is not the local index directory. The build runs
  in the local directory and `push` publishes its generation (the manifest last: the commit);
  `pull` brings the local cache to the store's current generation. Sessions travel the same way.
- `VectorCandidates`: an approximate nearest-neighbour index over the text units' vectors.
- `KeywordRanker`: keyword search run by the store itself (PostgreSQL full text).
"""

from __future__ import annotations

from typing import Protocol

import numpy as np


class VectorCandidates(Protocol):
    def candidates(self, vector: np.ndarray, n: int, nprobes: int) -> list[str]:
        """Ids of about the n nearest text units (cosine), best first."""


class KeywordRanker(Protocol):
    def ranking(self, text: str, terms: list[str], language: str, n: int,
                rows: np.ndarray | None) -> list[tuple[int, float]]:
        """(row, score) of the n best units for a query (its text, its analysed terms and its
        language), best first: of the rows where `rows` (a mask) is true, or with rows None of the
        units of the default kinds (types.DEFAULT_KINDS)."""


class IndexStore(Protocol):
    url: str  # where it is, for messages and `status` (no secrets)

    def pull(self, force: bool = False) -> None: ...

    def push(self) -> None: ...

    def pull_session(self, name: str) -> None: ...

    def push_session(self, name: str) -> None: ...

    def vector_search(self, generation: str) -> VectorCandidates | None:
        """The store's own ANN index over that generation, if it keeps one."""

    def keyword_search(self, generation: str) -> KeywordRanker | None:
        """The store's own keyword search over that generation, if it has one."""
