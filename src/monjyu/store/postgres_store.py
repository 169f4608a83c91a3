"""An index kept in PostgreSQL (store.backend: postgres), mirrored in a local cache directory.

Everything lives in one schema (`store.namespace`):

- `manifest`: one row, the current generation and its manifest;
- `files`: every file of each kept generation (LanceDB tables, BM25, graph arrays), in parts;
- `units_<generation>`: the generation's text units with a pgvector column under an HNSW index
  (cosine) and a `tsvector` under a GIN index: the database's own vector and full-text search;
- `sessions`: conversation follow-ups;
- `level_records` and `level_names`: what an LLM wrote for the index (Level 2 extractions, Level
  4 reports; `PgLevelRecords`), shared by every process that searches it.

A build runs in the local directory; `push` then writes the whole generation and switches the
manifest row in one transaction, so a reader sees the old generation or the new one, never a
mix, and a killed push leaves nothing behind. One writer at a time (an advisory lock); a push
whose build started from a generation that is no longer current is refused. The previous
generation is kept, so a reader still on it finishes its searches while it moves to the new one
(every `store.refresh_s` seconds). A reader downloads the current generation's files into its
cache in one repeatable-read transaction (a consistent snapshot) and searches locally; vector
candidates come from the HNSW index in large generations (as LanceDB's ANN index does in an
embedded one) and keyword search from PostgreSQL when `store.keyword: fulltext`.

Full text differs from BM25: English units are parsed with PostgreSQL's `english` configuration
(Snowball stemmer, its stop words), Japanese ones are stored as SudachiPy's terms under `simple`;
a query is the OR of its lexemes, ranked by `ts_rank` (term frequency, divided by 1 + log of
the unit's length) with no inverse document frequency, where BM25 weighs rare terms up and
saturates term frequency.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from collections.abc import Iterable
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from ..errors import MonjyuError
from ..nlp.lang import detect_language
from ..types import DEFAULT_KINDS
from .lancedb_store import LanceStore
from .mirror import (MANIFEST, SESSIONS, atomic_write, generation_files, has_generation, install_generation,
                     mark_complete, use_generation)

PART_BYTES = 16 << 20  # a file is stored in parts of this size (bytea holds at most 1 GB)
_UNITS = re.compile(r"units_(g\d{6})")
FULLTEXT_CONFIG = {"en": "english", "ja": "simple"}  # language -> text search configuration


def public_url(url: str) -> str:
    """The url without its password, for messages and status."""
    return re.sub(r"(://[^:/@]+):[^@]*@", r"\1@", url)


class PostgresIndex:
    """The index in schema `namespace` of the database at `url`, mirrored in `local_dir`."""

    def __init__(self, url: str, local_dir: Path, refresh_s: float = 5.0, namespace: str = "monjyu",
                 password_env: str = ""):
        self.url = public_url(url)
        self._conninfo = url
        self._password = os.environ.get(password_env) if password_env else None
        if password_env and self._password is None:
            raise MonjyuError(f"store.password_env names {password_env}, which is not set: export it with the "
                              "database password")
        self.local_dir = Path(local_dir)
        self.refresh_s = refresh_s
        self.ns = namespace
        self._checked = 0.0
        self._base: str | None = None  # the generation the local build started from
        self._lock = threading.RLock()
        self._conn = None
        self._vector_type = False  # pgvector's type registered on the connection

    # -- connection ----------------------------------------------------------------------
    def _connect(self):
        try:
            import pgvector.psycopg  # noqa: F401 (needed by _register_vector)
            import psycopg
        except ImportError:
            raise MonjyuError("store.backend postgres needs the PostgreSQL driver: pip install 'monjyu[postgres]'") from None

        if self._conn is not None and not self._conn.closed:
            return self._conn
        extra = {"password": self._password} if self._password is not None else {}
        try:
            conn = psycopg.connect(self._conninfo, autocommit=True, **extra)
        except psycopg.OperationalError as exc:
            raise MonjyuError(f"cannot connect to PostgreSQL at {self.url}: {str(exc).strip()}; check store.url "
                              "(postgresql://user@host:port/database) and that the server runs") from None
        self._conn, self._vector_type = conn, False
        self._register_vector(conn)
        return conn

    def _register_vector(self, conn) -> None:
        """pgvector's adapters, once the type exists (a store nothing was pushed to has none yet)."""
        import psycopg
        from pgvector.psycopg import register_vector

        if not self._vector_type:
            try:
                register_vector(conn)
                self._vector_type = True
            except psycopg.ProgrammingError:
                pass

    @contextmanager
    def _failing_as(self, action: str):
        """psycopg errors as a MonjyuError naming the store; a lost connection is opened anew next time."""
        import psycopg

        try:
            yield
        except psycopg.Error as exc:
            if isinstance(exc, psycopg.OperationalError):
                self._conn = None
            raise MonjyuError(f"{action} {self.url} failed: {str(exc).strip()}") from None

    def _sql(self, template: str, **tables: str):
        """A statement with this store's schema and tables as quoted identifiers (values are
        always bound parameters)."""
        from psycopg import sql

        return sql.SQL(template).format(ns=sql.Identifier(self.ns),
                                        **{k: sql.Identifier(self.ns, v) for k, v in tables.items()})

    def _exists(self, conn) -> bool:
        row = conn.execute("SELECT to_regclass(%s)", (f'"{self.ns}".manifest',)).fetchone()
        return row[0] is not None

    # -- reading -------------------------------------------------------------------------
    def pull(self, force: bool = False) -> None:
        """Bring the local cache to the store's current generation (at most every refresh_s)."""
        with self._lock:
            now = time.monotonic()
            if not force and now - self._checked < self.refresh_s and (self.local_dir / MANIFEST).exists():
                return
            self._checked = now
            conn = self._connect()
            with self._failing_as("reading the index from"), conn.transaction():
                conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                row = conn.execute(self._sql("SELECT generation, body FROM {ns}.manifest")).fetchone() \
                    if self._exists(conn) else None
                if row is None:  # nothing built there yet
                    (self.local_dir / MANIFEST).unlink(missing_ok=True)
                    self._base = None
                    return
                generation, body = row[0], bytes(row[1])
                if not has_generation(self.local_dir, generation):
                    install_generation(self.local_dir, generation, lambda tmp: self._download(conn, generation, tmp))
            use_generation(self.local_dir, generation, body)
            self._base = generation

    def _download(self, conn, generation: str, target: Path) -> None:
        out, current = None, None
        try:
            with conn.cursor(name="monjyu_files") as cur:
                cur.itersize = 4  # rows of up to PART_BYTES each
                cur.execute(self._sql("SELECT path, data FROM {ns}.files WHERE generation = %s ORDER BY path, part"),
                            (generation,))
                for path, data in cur:
                    if path != current:
                        if out:
                            out.close()
                        dest = target / path
                        dest.parent.mkdir(parents=True, exist_ok=True)
                        out, current = open(dest, "wb"), path
                    out.write(data)
        finally:
            if out:
                out.close()

    def pull_session(self, name: str) -> None:
        with self._lock, self._failing_as("reading a session from"):
            conn = self._connect()
            if not self._exists(conn):
                return
            row = conn.execute(self._sql("SELECT body FROM {ns}.sessions WHERE name = %s"), (name,)).fetchone()
        if row is not None:
            atomic_write(self.local_dir / SESSIONS / f"{name}.json", bytes(row[0]))

    # -- writing -------------------------------------------------------------------------
    def push(self) -> None:
        """The local generation, its units table and indexes, and the manifest row, in one
        transaction; then generations older than the previous one are dropped."""
        data = (self.local_dir / MANIFEST).read_bytes()
        manifest = json.loads(data)
        generation = manifest["generation"]
        with self._lock:
            conn = self._connect()
            try:
                with conn.transaction():
                    conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"monjyu:{self.ns}",))
                    self._create_schema(conn)
                    row = conn.execute(self._sql("SELECT generation FROM {ns}.manifest")).fetchone()
                    current = row[0] if row else None
                    if current != self._base:
                        raise MonjyuError(f"another build committed generation {current} to {self.url} while this "
                                          f"one ran (it started from {self._base}); index again")
                    self._write_units(conn, generation, int(manifest["embedder_dim"]))
                    self._write_files(conn, generation)
                    conn.execute(self._sql("INSERT INTO {ns}.manifest (one, generation, body) VALUES (true, %s, %s) "
                                           "ON CONFLICT (one) DO UPDATE SET generation = excluded.generation, "
                                           "body = excluded.body"), (generation, data))
                    self._drop_old(conn, keep={generation, current})
            except MonjyuError:
                raise
            except Exception as exc:  # psycopg errors: the transaction rolled back, the store is unchanged
                if conn.closed or getattr(conn, "broken", False):
                    self._conn = None  # a lost server: the next call connects anew
                raise MonjyuError(f"cannot write generation {generation} to {self.url}: {str(exc).strip()}; the "
                                  "store still holds the previous generation: index again") from None
            self._base = generation
        mark_complete(self.local_dir, generation)
        self._checked = time.monotonic()

    def _create_schema(self, conn) -> None:
        try:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        except Exception as exc:
            raise MonjyuError(f"the pgvector extension is missing in {self.url} ({str(exc).strip()}): install "
                              "pgvector on the server, or have an administrator run CREATE EXTENSION vector") from None
        self._register_vector(conn)
        conn.execute(self._sql("CREATE SCHEMA IF NOT EXISTS {ns}"))
        conn.execute(self._sql("CREATE TABLE IF NOT EXISTS {ns}.manifest (one boolean PRIMARY KEY CHECK (one), "
                               "generation text NOT NULL, body bytea NOT NULL)"))
        conn.execute(self._sql("CREATE TABLE IF NOT EXISTS {ns}.files (generation text, path text, part int, "
                               "data bytea NOT NULL, PRIMARY KEY (generation, path, part))"))
        conn.execute(self._sql("CREATE TABLE IF NOT EXISTS {ns}.sessions (name text PRIMARY KEY, body bytea NOT NULL)"))

    def _write_units(self, conn, generation: str, dim: int) -> None:
        units = LanceStore(self.local_dir / "generations" / generation / "lancedb").units(
            ["id", "title", "text", "terms", "kind", "vector"])
        vectors = units["vector"].combine_chunks().flatten().to_numpy(zero_copy_only=False).reshape(-1, dim)
        write_units(conn, self._sql, generation,
                    *(units[c].to_pylist() for c in ("id", "title", "text", "terms", "kind")), vectors)

    def create_units_table(self, generation: str, ids: list[str], titles: list[str], texts: list[str],
                           terms: list[list[str]], kinds: list[str], vectors: np.ndarray) -> None:
        """One generation's units table alone, without files or manifest (the store latency bench
        searches one of synthetic units)."""
        with self._lock:
            conn = self._connect()
            with conn.transaction():
                self._create_schema(conn)
                write_units(conn, self._sql, generation, ids, titles, texts, terms, kinds, vectors)

    def _write_files(self, conn, generation: str) -> None:
        with conn.cursor().copy(self._sql("COPY {ns}.files (generation, path, part, data) FROM STDIN")) as copy:
            for relative, path in generation_files(self.local_dir, generation):
                with open(path, "rb") as src:
                    part = 0
                    while True:
                        chunk = src.read(PART_BYTES)
                        if not chunk and part:
                            break
                        copy.write_row((generation, relative, part, chunk))
                        part += 1
                        if len(chunk) < PART_BYTES:
                            break

    def _drop_old(self, conn, keep: set[str | None]) -> None:
        kept = sorted(g for g in keep if g)
        conn.execute(self._sql("DELETE FROM {ns}.files WHERE NOT (generation = ANY(%s))"), (kept,))
        tables = conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = %s", (self.ns,)).fetchall()
        for (name,) in tables:
            found = _UNITS.fullmatch(name)
            if found and found.group(1) not in kept:
                conn.execute(self._sql("DROP TABLE {t}", t=name))

    def push_session(self, name: str) -> None:
        body = (self.local_dir / SESSIONS / f"{name}.json").read_bytes()
        with self._lock, self._failing_as("writing a session to"):
            conn = self._connect()
            with conn.transaction():
                if not self._exists(conn):  # only `monjyu index` creates a namespace
                    raise MonjyuError(f"no index in {public_url(self.url)} (namespace {self.ns!r}) to keep session "
                                      f"{name!r} in; build one there with `monjyu index` or fix store.namespace")
                conn.execute(self._sql("INSERT INTO {ns}.sessions (name, body) VALUES (%s, %s) ON CONFLICT (name) "
                                       "DO UPDATE SET body = excluded.body"), (name, body))

    # -- searching in the database ---------------------------------------------------------
    def vector_search(self, generation: str) -> "PgVectorCandidates":
        return PgVectorCandidates(self, f"units_{generation}")

    def keyword_search(self, generation: str) -> "PgFullText":
        return PgFullText(self, f"units_{generation}")

    def query(self, statement, params: tuple | dict) -> list[tuple]:
        with self._lock, self._failing_as("search in"):
            conn = self._connect()
            self._register_vector(conn)
            return conn.execute(statement, params).fetchall()

    def level_records(self) -> "PgLevelRecords":
        return PgLevelRecords(self)


class PgLevelRecords:
    """Level records (store.base.LevelRecords) in the index's schema: one row per (kind, model,
    key), written with ON CONFLICT DO NOTHING in one transaction with its names, so two processes
    deepening at once write each record once and a reader sees a whole record or none. The
    tables are made on the first write (under the index's advisory lock); reading before that
    finds nothing."""

    def __init__(self, index: PostgresIndex):
        self.index = index
        self.url = index.url

    def _read(self, template: str, params: tuple, action: str = "reading the levels of") -> list[tuple]:
        ix = self.index
        with ix._lock, ix._failing_as(action):
            conn = ix._connect()
            if conn.execute("SELECT to_regclass(%s)", (f'"{ix.ns}".level_names',)).fetchone()[0] is None:
                return []
            return conn.execute(ix._sql(template), params).fetchall()

    def get(self, kind: str, model: str, keys: list[str]) -> dict[str, bytes]:
        rows = self._read("SELECT key, record FROM {ns}.level_records WHERE kind = %s AND model = %s AND "
                          "key = ANY(%s)", (kind, model, list(keys))) if keys else []
        return {k: bytes(r) for k, r in rows}

    def put_new(self, kind: str, model: str, key: str, record: bytes, names: Iterable[str] = ()) -> bool:
        ix = self.index
        with ix._lock, ix._failing_as("writing a level record to"):
            conn = ix._connect()
            with conn.transaction():
                if not ix._exists(conn):  # only `monjyu index` creates a namespace
                    raise MonjyuError(f"no index in {ix.url} (namespace {ix.ns!r}) to keep its {kind} in; build "
                                      "one there with `monjyu index` or fix store.namespace")
                self._create_tables(conn)
                written = conn.execute(ix._sql("INSERT INTO {ns}.level_records VALUES (%s, %s, %s, %s) "
                                               "ON CONFLICT DO NOTHING RETURNING key"),
                                       (kind, model, key, record)).fetchone() is not None
                if written and names:
                    with conn.cursor() as cur:
                        cur.executemany(ix._sql("INSERT INTO {ns}.level_names VALUES (%s, %s, %s) ON CONFLICT DO NOTHING"),
                                        [(model, name, key) for name in sorted(set(names))])
        return written

    def _create_tables(self, conn) -> None:
        if conn.execute("SELECT to_regclass(%s)", (f'"{self.index.ns}".level_names',)).fetchone()[0] is not None:
            return
        conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"monjyu:{self.index.ns}:levels",))
        conn.execute(self.index._sql("CREATE TABLE IF NOT EXISTS {ns}.level_records (kind text, model text, key text, "
                                     "record bytea NOT NULL, PRIMARY KEY (kind, model, key))"))
        conn.execute(self.index._sql("CREATE TABLE IF NOT EXISTS {ns}.level_names (model text, name text, key text, "
                                     "PRIMARY KEY (model, name, key))"))

    def count(self, kind: str, model: str) -> int:
        rows = self._read("SELECT count(*) FROM {ns}.level_records WHERE kind = %s AND model = %s", (kind, model))
        return int(rows[0][0]) if rows else 0

    def naming(self, model: str, names: Iterable[str]) -> dict[str, set[str]]:
        wanted = sorted(set(names))
        found: dict[str, set[str]] = {}
        for name, key in self._read("SELECT name, key FROM {ns}.level_names WHERE model = %s AND name = ANY(%s)",
                                    (model, wanted)) if wanted else []:
            found.setdefault(name, set()).add(key)
        return found

    def keys(self, kind: str) -> set[str]:
        return {k for (k,) in self._read("SELECT DISTINCT key FROM {ns}.level_records WHERE kind = %s", (kind,))}

    def remove(self, kind: str, keys: Iterable[str]) -> None:
        gone = sorted(set(keys))
        ix = self.index
        if not gone or not self._read("SELECT 1", ()):  # nothing kept yet
            return
        with ix._lock, ix._failing_as("removing level records from"):
            conn = ix._connect()
            with conn.transaction():
                conn.execute(ix._sql("DELETE FROM {ns}.level_records WHERE kind = %s AND key = ANY(%s)"), (kind, gone))
                if kind == "extractions":
                    conn.execute(ix._sql("DELETE FROM {ns}.level_names WHERE key = ANY(%s)"), (gone,))


def write_units(conn, sql, generation: str, ids: list[str], titles: list[str], texts: list[str],
                terms: list[list[str]], kinds: list[str], vectors: np.ndarray) -> None:
    """`units_<generation>`: row (the text_units table's order), id, kind, the text to search and
    its text search configuration (see the module docstring), vector; with HNSW and GIN indexes."""
    table = f"units_{generation}"
    conn.execute(sql("CREATE TABLE {t} (row int PRIMARY KEY, id text NOT NULL, kind text NOT NULL, "
                     "config regconfig NOT NULL, body text NOT NULL, "
                     "tsv tsvector GENERATED ALWAYS AS (to_tsvector(config, body)) STORED, "
                     f"vector vector({int(vectors.shape[1])}) NOT NULL)", t=table))
    with conn.cursor().copy(sql("COPY {t} (row, id, kind, config, body, vector) FROM STDIN", t=table)) as copy:
        for row, (uid, title, text, unit_terms, kind) in enumerate(zip(ids, titles, texts, terms, kinds)):
            language = detect_language(text)
            body = f"{title}\n{text}" if language == "en" else " ".join(unit_terms)
            copy.write_row((row, uid, kind or "text", FULLTEXT_CONFIG.get(language, "simple"), body, vectors[row]))
    conn.execute("SET LOCAL maintenance_work_mem = '1GB'")
    conn.execute(sql("CREATE INDEX ON {t} USING hnsw (vector vector_cosine_ops)", t=table))
    conn.execute(sql("CREATE INDEX ON {t} USING gin (tsv)", t=table))


class PgVectorCandidates:
    """Approximate nearest units through pgvector's HNSW index (ids; the searcher re-scores them
    exactly with the vectors it holds, as with LanceDB's ANN index)."""

    def __init__(self, store: PostgresIndex, table: str):
        self._store, self._table = store, table

    def candidates(self, vector: np.ndarray, n: int, nprobes: int) -> list[str]:
        # ef_search bounds how many rows the HNSW scan can return: at least n (pgvector allows 1000).
        statement = self._store._sql(
            "SELECT id FROM {t}, (SELECT set_config('hnsw.ef_search', %s, false)) AS _ "
            "ORDER BY vector <=> %s LIMIT %s", t=self._table)
        rows = self._store.query(statement, (str(min(1000, max(40, n))), np.asarray(vector, dtype=np.float32), n))
        return [r[0] for r in rows]


class PgFullText:
    """Keyword search by PostgreSQL full text (see the module docstring for how it ranks)."""

    def __init__(self, store: PostgresIndex, table: str):
        self._store, self._table = store, table

    def ranking(self, text: str, terms: list[str], language: str, n: int,
                rows: np.ndarray | None) -> list[tuple[int, float]]:
        """English text through the `english` configuration, other languages as their analysed
        terms; the query is the OR of the resulting lexemes."""
        config = FULLTEXT_CONFIG.get(language, "simple")
        body = text if config == "english" else " ".join(terms)
        where = " AND kind = ANY(%(kinds)s)" if rows is None else " AND row = ANY(%(rows)s)"
        statement = self._store._sql(
            "WITH q AS (SELECT string_agg(quote_literal(lexeme), ' | ')::tsquery AS q "
            "FROM unnest(tsvector_to_array(to_tsvector(%(config)s::regconfig, %(body)s))) AS lexeme "
            "WHERE strpos(lexeme, E'\\\\') = 0) "
            "SELECT row, ts_rank(tsv, q.q, 1) AS score FROM {t}, q WHERE tsv @@ q.q" + where +
            " ORDER BY score DESC, row LIMIT %(n)s", t=self._table)
        params = {"config": config, "body": body, "n": n, "kinds": list(DEFAULT_KINDS)}
        if rows is not None:
            params["rows"] = np.flatnonzero(rows).tolist()
        return [(int(r), float(s)) for r, s in self._store.query(statement, params)]
