"""What the facade and the searcher need from a store, by kind (no implementation imported here).

- `IndexStore`: where index state lives when it is not the local index directory. The build runs
  in the local directory and `push` publishes its generation (the manifest last: the commit);
  `pull` brings the local cache to the store's current generation. Sessions travel the same way.
- `VectorCandidates`: an approximate nearest-neighbour index over the text units' vectors.
- `KeywordRanker`: keyword search run by the store itself (PostgreSQL full text).
- `LevelRecords`: what an LLM wrote for the index (Level 2 extractions, Level 4 reports), kept
  where the index lives, so every search process reads what another paid for.
"""

from __future__ import annotations

from collections.abc import Iterable
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


class LevelRecords(Protocol):
    """Records keyed by (kind, model, key): `kind` "extractions" (key: a unit's text hash) or
    "reports" (key: a community's phrase hash). A record is written once: a second write of its
    key, by this process or another, is ignored. An extraction is also listed under the entity
    names it holds (`names`), so the units naming an entity are found without reading every
    record. Reading never creates anything in the store."""

    url: str

    def get(self, kind: str, model: str, keys: list[str]) -> dict[str, bytes]:
        """The records of those keys that exist."""

    def put_new(self, kind: str, model: str, key: str, record: bytes, names: Iterable[str] = ()) -> bool:
        """Write the record unless its key exists (atomically: a reader sees all of it or none);
        True when this call wrote it."""

    def count(self, kind: str, model: str) -> int:
        """Records of the model, of any key."""

    def naming(self, model: str, names: Iterable[str]) -> dict[str, set[str]]:
        """entity name -> the extraction keys listed under it."""

    def keys(self, kind: str) -> set[str]:
        """Every key with a record, of any model."""

    def remove(self, kind: str, keys: Iterable[str]) -> None:
        """Drop those keys' records (every model's) and their names."""


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

    def level_records(self) -> LevelRecords:
        """Where the index's Level 2 extractions and Level 4 reports are kept."""
