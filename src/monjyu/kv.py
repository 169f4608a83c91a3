"""A small SQLite key-value table for caches keyed by content hash (embeddings, noun phrases).

SQLite transactions make it safe when a build is killed: a batch is either stored or not.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path


class SqliteKV:
    def __init__(self, path: str | Path, table: str):
        if not table.isidentifier():
            raise ValueError(f"bad table name {table!r}")
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        self._table = table
        self._db = sqlite3.connect(str(path), check_same_thread=False, timeout=60)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(f"CREATE TABLE IF NOT EXISTS {table} (key TEXT PRIMARY KEY, value BLOB NOT NULL)")
        self._db.commit()
        self._lock = threading.Lock()

    def get_many(self, keys: list[str]) -> dict[str, bytes]:
        found: dict[str, bytes] = {}
        with self._lock:
            for i in range(0, len(keys), 500):
                part = keys[i:i + 500]
                marks = ",".join("?" * len(part))
                rows = self._db.execute(f"SELECT key, value FROM {self._table} WHERE key IN ({marks})", part)
                found.update(rows)
        return found

    def put_many(self, items: list[tuple[str, bytes]]) -> None:
        with self._lock, self._db:
            self._db.executemany(f"INSERT OR REPLACE INTO {self._table} VALUES (?, ?)", items)

    def close(self) -> None:
        self._db.close()
