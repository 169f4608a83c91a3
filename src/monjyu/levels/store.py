"""Level 2's extractions in the index's level records (store.base.LevelRecords: local SQLite
files, or the index's object store or database), keyed by the unit's text and the model's id: a
unit is never sent twice for the same model, an edited unit is a new key, and a removed unit's
extraction is dropped with it. Each unit is stored as soon as its reply arrives, so an extraction
that is killed resumes from the units already done. Each record is also listed under the
entities it names, so the units an entity links are found without reading every record."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable

from ..store.base import LevelRecords

EXTRACTION_VERSION = 1  # bump when the prompt or the schema changes: older records are not read
EXTRACTIONS = "extractions"


def unit_key(text: str) -> str:
    """A unit as the store knows it: the hash of its text."""
    return hashlib.sha256(text.encode()).hexdigest()


class ExtractionStore:
    def __init__(self, records: LevelRecords):
        self.kept = records

    @staticmethod
    def model_key(model: str) -> str:
        return f"{model}#v{EXTRACTION_VERSION}"

    def records(self, model: str, units: list[str]) -> dict[str, dict]:
        """The stored records of those units (unit keys) that have one."""
        return {k: json.loads(v) for k, v in self.kept.get(EXTRACTIONS, self.model_key(model), units).items()}

    def units_naming(self, model: str, entities: Iterable[str]) -> dict[str, set[str]]:
        """entity -> the units (keys) whose extraction names it."""
        return self.kept.naming(self.model_key(model), entities)

    def put(self, model: str, unit: str, record: dict, entities: Iterable[str]) -> None:
        """One unit's record and the entities it names, written once (another process may have
        written the unit meanwhile: its record stays)."""
        self.kept.put_new(EXTRACTIONS, self.model_key(model), unit,
                          json.dumps(record, ensure_ascii=False).encode(), entities)

    def total(self, model: str) -> int:
        """Records stored for the model, of any unit: grows with every unit extracted."""
        return self.kept.count(EXTRACTIONS, self.model_key(model))
