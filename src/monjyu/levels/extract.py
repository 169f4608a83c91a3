"""Level 2: the entities and relations an LLM extracts from text units, kept in the store.

One unit per call (a unit's record is then its own, reusable by any later question), calls
concurrent within the LLM's limit, each record stored as it arrives. A call that fails after the
client's retries stores nothing: the unit is sent again the next time it is needed.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field

from pydantic import BaseModel, Field

from ..llm.replies import structured_reply
from ..llm import LLM, UsageScope
from ..nlp.lang import detect_language
from ..store.base import LevelRecords
from .store import ExtractionStore, unit_key

_EDGE_PUNCTUATION = re.compile(r"^[\W_]+|[\W_]+$")


def entity_key(name: str) -> str:
    """An entity as the graph names it: lower case, single spaces, no punctuation at the ends,
    the way noun phrases are kept (so an entity and a noun phrase of the same name meet)."""
    return _EDGE_PUNCTUATION.sub("", " ".join(name.lower().split()))


class Entity(BaseModel):
    name: str = Field(min_length=1, max_length=300)
    type: str = ""
    description: str = ""


class Relation(BaseModel):
    source: str = Field(min_length=1, max_length=300)
    target: str = Field(min_length=1, max_length=300)
    description: str = ""


class Extraction(BaseModel):
    entities: list[Entity] = Field(default_factory=list)
    relations: list[Relation] = Field(default_factory=list)

    def names(self) -> set[str]:
        """Every entity the record names, relation ends included, as entity keys."""
        found = {entity_key(e.name) for e in self.entities}
        found |= {entity_key(n) for r in self.relations for n in (r.source, r.target)}
        return {n for n in found if n}


@dataclass
class ExtractionRun:
    """What one extraction cost: units sent to the LLM, units found in the store, units whose call
    failed (not stored), and the usage of the calls."""

    sent: int = 0
    reused: int = 0
    failed: int = 0
    usage: dict = field(default_factory=dict)


class LevelTwo:
    """Entity and relation extraction for text units, through the store (levels/store.py)."""

    def __init__(self, llm: LLM, records: LevelRecords, prompts_dir: str | None = None):
        """`records`: where the index keeps its levels (a search that never deepens writes
        nothing there)."""
        self.llm = llm
        self.store = ExtractionStore(records)
        self.prompts_dir = prompts_dir

    @property
    def model(self) -> str:
        return self.llm.id

    def records(self, keys: list[str]) -> dict[str, dict]:
        """The stored extractions of those unit keys."""
        return self.store.records(self.model, keys)

    def total(self) -> int:
        """How many extractions the model has stored, of any unit (0: none yet)."""
        return self.store.total(self.model)

    async def extract(self, texts: list[str], max_calls: int | None = None) -> tuple[dict[str, Extraction], ExtractionRun]:
        """The extraction of each text (by unit key), from the store or else from the LLM, at
        most `max_calls` of them sent (the others are left out this time)."""
        keys = [unit_key(t) for t in texts]
        found = {k: Extraction.model_validate(r) for k, r in self.records(keys).items()}
        todo = list({k: t for k, t in zip(keys, texts) if k not in found}.items())[:max_calls]
        run = ExtractionRun(sent=len(todo), reused=len(found))
        with UsageScope(self.llm) as usage:
            replies = await asyncio.gather(*(self._one(k, t) for k, t in todo))
        for (key, _), reply in zip(todo, replies):
            if reply is None:
                run.failed += 1
            else:
                found[key] = reply
        run.usage = usage.to_dict()
        return found, run

    async def _one(self, key: str, text: str) -> Extraction | None:
        """One unit's extraction, stored as soon as it arrives (None: the call failed)."""
        reply = await structured_reply(self.llm, "extract", detect_language(text), text, Extraction, self.prompts_dir)
        if reply is not None:
            await asyncio.to_thread(self.store.put, self.model, key, reply.model_dump(), reply.names())
        return reply

    def units_naming(self, names: set[str]) -> dict[str, set[str]]:
        """entity -> the unit keys whose stored extraction names it (any question's)."""
        return self.store.units_naming(self.model, names)
