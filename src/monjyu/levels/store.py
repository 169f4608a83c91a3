"""What an LLM extracted, kept in the index directory (`levels/level2.sqlite`) and keyed by the
unit's text and the model's id: a unit is never sent twice for the same model, an edited unit is
a new key, and a removed unit's extraction is simply no longer read (only the units of the
current generation are looked up). Each unit is stored as soon as its reply arrives, so an
extraction that is killed resumes from the units already done. A second table lists which units
name each entity, so the units an entity links are found without reading every record."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from collections.abc import Iterable
from pathlib import Path

EXTRACTION_VERSION = 1  # bump when the prompt or the schema changes: older records are not read
LEVELS_DIR = "levels"


def unit_key(text: str) -> str:
    """A unit as the store knows it: the hash of its text."""
    return hashlib.sha256(text.encode()).hexdigest()


def open_level_db(index_dir: Path, name: str, *tables: str) -> sqlite3.Connection:
    """`<index>/levels/<name>`, its tables created when missing (WAL: readers never wait)."""
    path = Path(index_dir) / LEVELS_DIR / name
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(str(path), check_same_thread=False, timeout=60)
    db.execute("PRAGMA journal_mode=WAL")
    for table in tables:
        db.execute(f"CREATE TABLE IF NOT EXISTS {table}")
    db.commit()
    return db


class ExtractionStore:
    def __init__(self, index_dir: Path):
        self._db = open_level_db(index_dir, "level2.sqlite",
                                 "extractions (model TEXT, unit TEXT, record BLOB NOT NULL, PRIMARY KEY (model, unit))",
                                 "mentions (model TEXT, entity TEXT, unit TEXT, PRIMARY KEY (model, entity, unit))")
        self._lock = threading.Lock()

    @staticmethod
    def model_key(model: str) -> str:
        return f"{model}#v{EXTRACTION_VERSION}"

    def records(self, model: str, units: list[str]) -> dict[str, dict]:
        """The stored records of those units (unit keys) that have one."""
        found: dict[str, dict] = {}
        with self._lock:
            for i in range(0, len(units), 500):
                part = units[i:i + 500]
                rows = self._db.execute(f"SELECT unit, record FROM extractions WHERE model = ? AND unit IN "
                                        f"({','.join('?' * len(part))})", [self.model_key(model), *part])
                found.update((u, json.loads(r)) for u, r in rows)
        return found

    def units_naming(self, model: str, entities: Iterable[str]) -> dict[str, set[str]]:
        """entity -> the units (keys) whose extraction names it."""
        names = sorted(set(entities))
        found: dict[str, set[str]] = {}
        with self._lock:
            for i in range(0, len(names), 500):
                part = names[i:i + 500]
                rows = self._db.execute(f"SELECT entity, unit FROM mentions WHERE model = ? AND entity IN "
                                        f"({','.join('?' * len(part))})", [self.model_key(model), *part])
                for entity, unit in rows:
                    found.setdefault(entity, set()).add(unit)
        return found

    def put(self, model: str, unit: str, record: dict, entities: Iterable[str]) -> None:
        """One unit's record and the entities it names, in one transaction."""
        m = self.model_key(model)
        with self._lock, self._db:
            self._db.execute("INSERT OR REPLACE INTO extractions VALUES (?, ?, ?)",
                             (m, unit, json.dumps(record, ensure_ascii=False).encode()))
            self._db.executemany("INSERT OR IGNORE INTO mentions VALUES (?, ?, ?)",
                                 [(m, e, unit) for e in set(entities)])

    def count(self, model: str, units: list[str]) -> int:
        return len(self.records(model, units))

    def total(self, model: str) -> int:
        """Records stored for the model, of any unit: grows with every unit extracted."""
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM extractions WHERE model = ?", [self.model_key(model)]).fetchone()[0]

    def close(self) -> None:
        self._db.close()
