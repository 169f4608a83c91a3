"""Level records (store.base.LevelRecords) of an index kept in its local directory: SQLite files
in `<index>/levels/` (WAL: readers never wait), one per kind, created on the first write."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable
from pathlib import Path

LEVELS_DIR = "levels"
# kind -> (file, table, key column, names table): the files and tables of indexes built before
# the records moved behind LevelRecords, so what was paid for then is read now.
TABLES = {"extractions": ("level2.sqlite", "extractions", "unit", "mentions"),
          "reports": ("level4.sqlite", "reports", "community", None)}
BATCH = 500  # keys per statement (SQLite binds at most 999 variables by default)


class SQLiteLevelRecords:
    def __init__(self, index_dir: Path):
        self.url = str(Path(index_dir) / LEVELS_DIR)
        self.index_dir = Path(index_dir)
        self._dbs: dict[str, sqlite3.Connection] = {}
        self._lock = threading.Lock()

    def _db(self, kind: str, create: bool) -> sqlite3.Connection | None:
        """The kind's database, opened once; None when it does not exist and `create` is false."""
        if kind in self._dbs:
            return self._dbs[kind]
        name, table, key, names = TABLES[kind]
        path = self.index_dir / LEVELS_DIR / name
        if not create and not path.exists():
            return None
        path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(str(path), check_same_thread=False, timeout=60)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute(f"CREATE TABLE IF NOT EXISTS {table} (model TEXT, {key} TEXT, record BLOB NOT NULL, "
                   f"PRIMARY KEY (model, {key}))")
        if names:
            db.execute(f"CREATE TABLE IF NOT EXISTS {names} (model TEXT, entity TEXT, {key} TEXT, "
                       f"PRIMARY KEY (model, entity, {key}))")
        db.commit()
        self._dbs[kind] = db
        return db

    def get(self, kind: str, model: str, keys: list[str]) -> dict[str, bytes]:
        _, table, key, _ = TABLES[kind]
        found: dict[str, bytes] = {}
        with self._lock:
            db = self._db(kind, create=False)
            for i in range(0, len(keys) if db else 0, BATCH):
                part = keys[i:i + BATCH]
                rows = db.execute(f"SELECT {key}, record FROM {table} WHERE model = ? AND {key} IN "
                                  f"({','.join('?' * len(part))})", [model, *part])
                found.update((k, bytes(r)) for k, r in rows)
        return found

    def put_new(self, kind: str, model: str, key: str, record: bytes, names: Iterable[str] = ()) -> bool:
        _, table, _, names_table = TABLES[kind]
        with self._lock:
            db = self._db(kind, create=True)
            with db:
                written = db.execute(f"INSERT OR IGNORE INTO {table} VALUES (?, ?, ?)", (model, key, record)).rowcount
                if names_table and written:
                    db.executemany(f"INSERT OR IGNORE INTO {names_table} VALUES (?, ?, ?)",
                                   [(model, name, key) for name in set(names)])
        return bool(written)

    def count(self, kind: str, model: str) -> int:
        _, table, _, _ = TABLES[kind]
        with self._lock:
            db = self._db(kind, create=False)
            return db.execute(f"SELECT COUNT(*) FROM {table} WHERE model = ?", [model]).fetchone()[0] if db else 0

    def naming(self, model: str, names: Iterable[str]) -> dict[str, set[str]]:
        _, _, key, names_table = TABLES["extractions"]
        wanted = sorted(set(names))
        found: dict[str, set[str]] = {}
        with self._lock:
            db = self._db("extractions", create=False)
            for i in range(0, len(wanted) if db else 0, BATCH):
                part = wanted[i:i + BATCH]
                rows = db.execute(f"SELECT entity, {key} FROM {names_table} WHERE model = ? AND entity IN "
                                  f"({','.join('?' * len(part))})", [model, *part])
                for name, k in rows:
                    found.setdefault(name, set()).add(k)
        return found

    def keys(self, kind: str) -> set[str]:
        _, table, key, _ = TABLES[kind]
        with self._lock:
            db = self._db(kind, create=False)
            return {k for (k,) in db.execute(f"SELECT DISTINCT {key} FROM {table}")} if db else set()

    def remove(self, kind: str, keys: Iterable[str]) -> None:
        _, table, key, names_table = TABLES[kind]
        gone = sorted(set(keys))
        with self._lock:
            db = self._db(kind, create=False)
            if db is None:
                return
            with db:
                for i in range(0, len(gone), BATCH):
                    part = gone[i:i + BATCH]
                    marks = ",".join("?" * len(part))
                    db.execute(f"DELETE FROM {table} WHERE {key} IN ({marks})", part)
                    if names_table:
                        db.execute(f"DELETE FROM {names_table} WHERE {key} IN ({marks})", part)
