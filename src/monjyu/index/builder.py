"""Level 0 build: files -> documents -> text units -> embeddings + BM25, committed atomically.

Incremental: sources are compared by content hash with the current manifest (a file whose size
and modification time are those recorded keeps its recorded hash: it is not read again). Only
added and changed files are loaded, chunked and embedded; units of unchanged files are carried over from
the current generation; files that disappeared from the given folders are dropped.

Atomic: everything is written into a new generation directory; the manifest rename at the end
is the commit. A build killed at any point leaves the previous generation and manifest intact.

Stages, in order (IndexBuilder._build): scan, load, embed, write, ann, bm25, level1, commit.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import shutil
import sqlite3
import time
from collections import Counter
from collections.abc import Callable, Iterable
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..config import MonjyuConfig
from ..embed import CachedEmbedder, EmbeddingCache, create_embedder
from ..errors import MonjyuError
from ..ingest import iter_source_files, unread_note
from ..ingest.sentences import statement_spans
from ..nlp.tokens import TokenCounter
from ..runtime import cpu_cores, release_freed_memory
from ..store import LanceStore
from ..store.bm25 import BM25Index
from ..store.unit_vectors import carry_unit_vectors, load_unit_vectors, release_pages, save_unit_vectors
from ..nlp.noun_phrases import NounPhraseExtractor
from ..kv import SqliteKV
from ..store.sparse import (COMMUNITY_VECTORS, PHRASE_VECTORS, load_links, load_vectors, save_links,
                            save_vector_blocks, save_vectors)
from ..store.lancedb_store import (COMMUNITIES, DOCUMENTS, ENTITIES, RELATIONSHIPS, TEXT_UNITS, documents_to_table,
                                   units_to_table)
from .citations import build_citation_graph, write_citation_graph
from ..ingest.catalog import Catalog
from .distributed import ClusterEmbedder, ClusterPhraseExtractor, LoadFailure, RayExecutor, load_source, run_all
from .communities import PreviousClustering
from .level1 import (Level1Result, PhraseCache, PhraseIncidence, PhrasesAhead, build_level1, phrase_input,
                     previous_clustering)
from ..types import DEFAULT_KINDS, TextUnit
from .manifest import (GENERATIONS, Manifest, SourceRecord, fsync_tree, is_index_dir, manifest_path, read_manifest,
                       write_manifest)

CLUSTER_CHUNK = 4096  # cache misses handed to the cluster at a time (embedding, noun phrases)
PHRASE_CHUNK = 65_536  # phrases embedded (or looked up) at a time, written into one array
UNIT_BATCH = 65_536  # new units embedded and turned into table rows at a time
LOAD_WORKERS_MIN_FILES = 4  # a build loads in worker processes from this many files ...
LOAD_WORKERS_MIN_BYTES = 1 << 20  # ... and this many bytes in all
# A build carries the previous generation's tables over (links them and writes the change) when
# it keeps at least this share of their rows; otherwise it writes them anew, compact.
CARRY_MIN_SHARE = 0.5
# A carried vector index is rebuilt once the rows it does not hold (searched exactly meanwhile)
# pass this share of the table.
ANN_STALE_SHARE = 0.1
ProgressFn = Callable[[str, int, int | None], None]  # (stage, advance, total)


@dataclass
class BuildReport:
    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unchanged: int = 0
    failures: list[tuple[str, str]] = field(default_factory=list)  # (path, reason)
    documents: int = 0
    text_units: int = 0
    embedded: int = 0  # units embedded in this run (cache misses)
    seconds: dict[str, float] = field(default_factory=dict)
    generation: str = ""
    level1: dict[str, int] = field(default_factory=dict)  # phrases, hubs, edges, communities
    clustering: dict = field(default_factory=dict)  # how the communities were built (Manifest.clustering)
    carried: bool = False  # the previous generation updated (tables linked, the change written), not rewritten
    moved: list[tuple[str, str]] = field(default_factory=list)  # (old path, new path): the same document, moved
    notes: list[str] = field(default_factory=list)  # what the build decided that a user should know

    @property
    def nothing_changed(self) -> bool:
        return not (self.added or self.changed or self.removed or self.moved)

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass
class _BuildRun:
    """What one build's stages hand each other, in the order they fill it."""

    t0: float
    report: BuildReport
    # scan
    previous: Manifest | None = None
    embedder: CachedEmbedder | None = None
    reuse: bool = False
    old_sources: dict[str, SourceRecord] = field(default_factory=dict)
    # key -> (path, sha, size, doc_id, mtime_ns)
    seen: dict[str, tuple[Path, str, int, str, int]] = field(default_factory=dict)
    sources: dict[str, SourceRecord] = field(default_factory=dict)  # the next generation's files
    to_load: list[str] = field(default_factory=list)
    levels: list[int] = field(default_factory=list)
    recluster: bool = False  # communities from scratch, not updated
    catalog: Catalog | None = None  # ids and metadata of files a reference manager holds
    old_ids: dict[str, str] | None = None  # document id -> its source in the current generation (read once)
    seen_ids: dict[str, str] = field(default_factory=dict)  # document id -> the file of this run given it
    # load, embed: the new documents and units' BM25 terms become Arrow as each file is loaded,
    # the units once embedded (UNIT_BATCH at a time): a large build never holds millions of
    # Python objects beside their tables
    new_docs: list[pa.Table] = field(default_factory=list)
    new_units: list[TextUnit | None] = field(default_factory=list)
    new_terms: list[pa.Array] = field(default_factory=list)
    new_table: pa.Table | None = None  # the new units' rows, vectors included
    # write, ann, bm25, level1, commit
    dim: int = 0
    generation: str = ""
    gen_dir: Path | None = None
    store: LanceStore | None = None
    units_table: pa.Table | None = None
    n_documents: int = 0
    kept_rows: np.ndarray | None = None  # carried: the previous generation's units kept (a mask)
    added_terms: pa.ChunkedArray | None = None  # carried: the new units' BM25 terms
    added_units: pa.Table | None = None  # carried: the new units' ids, titles and texts
    previous_phrases: list[str] | None = None  # the current generation's phrases (entity titles), read once


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def generation_dir(index_dir: Path, generation: str) -> Path:
    return index_dir / GENERATIONS / generation


class _BuildLock:
    """One build per index at a time (an advisory lock that dies with the process)."""

    def __init__(self, index_dir: Path):
        self._path = index_dir / ".build.lock"

    def __enter__(self):
        self._f = open(self._path, "w")
        try:
            fcntl.flock(self._f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            self._f.close()
            raise MonjyuError(f"another `monjyu index` is building {self._path.parent}; wait for it to finish") from exc
        return self

    def __exit__(self, *exc):
        fcntl.flock(self._f, fcntl.LOCK_UN)
        self._f.close()


class IndexBuilder:
    """`executor`: None builds in this process; a RayExecutor runs loading, embedding and noun
    phrases on its cluster (index/distributed.py)."""

    def __init__(self, index_dir: str | Path, config: MonjyuConfig, progress: ProgressFn | None = None,
                 executor: RayExecutor | None = None):
        self.index_dir = Path(index_dir)
        self.config = config
        self.progress = progress or (lambda stage, advance, total: None)
        self.executor = executor
        self._embedder: CachedEmbedder | None = None
        self._phrases: PhrasesAhead | None = None  # this build's noun phrases, extracted while it embeds

    def embedder(self) -> CachedEmbedder:
        if self._embedder is None:
            local = create_embedder(self.config.embedding)
            cache = EmbeddingCache(self._cache_dir() / "embeddings.sqlite")
            if self.executor is None:
                self._embedder = CachedEmbedder(local, cache)
            else:  # cache misses go out CLUSTER_CHUNK at a time: many tasks in flight
                self._embedder = CachedEmbedder(ClusterEmbedder(local, self.config.embedding, self.executor), cache,
                                                batch_size=CLUSTER_CHUNK)
        return self._embedder

    # ------------------------------------------------------------------ build
    def build(self, paths: Iterable[str | Path], recluster: bool = False, catalog: Catalog | None = None) -> BuildReport:
        """`recluster`: cluster the phrase graph from scratch instead of updating the current
        communities where the graph changed (a build with nothing else to do still runs).
        `catalog`: the ids and metadata of files a reference manager holds (its files are among
        `paths`); its documents no longer in it are removed."""
        self.index_dir.mkdir(parents=True, exist_ok=True)
        with _BuildLock(self.index_dir):
            try:
                return self._build([Path(p) for p in paths], recluster, catalog)
            finally:
                if self._phrases is not None:
                    self._phrases.close()
                    self._phrases = None

    def _build(self, roots: list[Path], recluster: bool, catalog: Catalog | None) -> BuildReport:
        """The build's named stages in order; each reads and fills one `_BuildRun`."""
        run = _BuildRun(t0=time.perf_counter(), report=BuildReport(), recluster=recluster, catalog=catalog)
        self._scan(run, roots)
        if self._up_to_date(run):
            return run.report
        try:
            self._load(run)
            self._embed(run)
            self._write(run)
            self._citations(run)
            self._ann(run)
            self._bm25(run)
            self._level1(run)
            self._commit(run)
        except (OSError, sqlite3.OperationalError) as exc:  # a full disk, a failing device, a lost mount
            raise self._stopped(run, exc) from exc
        return run.report

    def _stopped(self, run: _BuildRun, exc: Exception) -> MonjyuError:
        """What a build that the system stopped says: what happened and where, and that the index
        still serves its previous generation (the unfinished one is removed)."""
        if run.gen_dir is not None and not (run.report.generation and manifest_path(self.index_dir).exists()
                                            and read_manifest(self.index_dir).generation == run.generation):
            shutil.rmtree(run.gen_dir, ignore_errors=True)
        what = getattr(exc, "strerror", None) or str(exc)
        where = getattr(exc, "filename", None) or self.index_dir
        full = getattr(exc, "errno", None) == errno.ENOSPC or "full" in str(exc).lower() or "no space" in str(exc).lower()
        serving = f"generation {run.previous.generation}" if run.previous else "nothing yet"
        hint = "free disk space" if full else "fix the cause"
        return MonjyuError(f"the build stopped: {what} ({where}); the index at {self.index_dir} still serves "
                           f"{serving}: {hint} and run `monjyu index` again")

    def _scan(self, run: _BuildRun, roots: list[Path]) -> None:
        """Which files are new, changed, unchanged or gone, against the current manifest."""
        report = run.report
        previous = read_manifest(self.index_dir) if manifest_path(self.index_dir).exists() else None
        self._remove_stale_generations(previous)
        run.previous, run.embedder = previous, self.embedder()
        reuse = (previous is not None and previous.embedder_id == run.embedder.id
                 and previous.config_hash == self.config.index_hash())
        run.reuse = reuse
        run.old_sources = old_sources = previous.sources if (previous and reuse) else {}
        seen = run.seen
        unread: Counter[str] = Counter()
        # not papers: this index and any other kept in a folder given, and the bibliography describing them
        own = self.index_dir.resolve()
        library_files = [run.catalog.source] if run.catalog and run.catalog.source else []

        def an_index(folder: Path) -> bool:
            try:
                return folder.resolve() == own or is_index_dir(folder)
            except (OSError, RuntimeError):  # a link in a loop, a folder it may not read: not an index
                return False

        for root in roots:
            if not root.exists():
                report.failures.append((str(root), "path not found"))
                continue
            base = root.resolve().parent
            for path in iter_source_files([root], self.config.ingest, unread, an_index, library_files):
                try:
                    key = str(path.resolve())
                    stat = path.stat()
                    old = old_sources.get(key)
                    # Size and modification time as recorded: the file is the one hashed then.
                    same = old is not None and old.mtime_ns and (old.size, old.mtime_ns) == (stat.st_size, stat.st_mtime_ns)
                    sha = old.sha256.split("+")[0] if same else file_sha256(path)
                except (OSError, RuntimeError) as exc:  # RuntimeError: a link in a loop (Python < 3.13)
                    report.failures.append((str(path), f"cannot read file: {getattr(exc, 'strerror', None) or exc}"))
                    continue
                entry = run.catalog.entries.get(key) if run.catalog else None
                if entry is not None:  # the file's bytes and its catalog metadata: either changed, it is loaded again
                    sha = f"{sha}+{entry.stamp}"
                doc_id = entry.document_id if entry and entry.document_id else self._document_id(run, key, path.resolve(), base)
                seen[key] = (path, sha, stat.st_size, doc_id, stat.st_mtime_ns)
                run.seen_ids[doc_id] = key
        if unread:
            report.notes.append(unread_note(unread, self.config.ingest))
        if previous and not reuse:
            # Embedder or chunking changed: every source must be rebuilt, not only the roots given.
            for key, rec in previous.sources.items():
                path = Path(key)
                if key not in seen and path.exists():
                    stat = path.stat()
                    seen[key] = (path, file_sha256(path), stat.st_size,
                                 rec.documents[0] if rec.documents else path.name, stat.st_mtime_ns)
        root_keys = [str(r.resolve()) for r in roots if r.exists()]
        moved = self._moved(run)
        for key, rec in old_sources.items():
            under_roots = (any(key == rk or key.startswith(rk.rstrip("/") + "/") for rk in root_keys)
                           or (run.catalog is not None and run.catalog.owns(rec.documents)))
            if key in moved:
                continue  # its document is loaded again from where the file is now
            if key not in seen and under_roots:
                report.removed.append(key)
            elif key in seen and seen[key][1] != rec.sha256:
                report.changed.append(key)
            elif key in seen:  # unchanged (a touched file keeps its record with the new mtime)
                run.sources[key] = SourceRecord(rec.sha256, rec.size, rec.documents, seen[key][4])
            elif not under_roots:
                run.sources[key] = rec
        if previous and not reuse:
            report.changed.extend(k for k in previous.sources if k in seen)
        run.to_load = [k for k in seen if k not in run.sources]
        report.moved = [(old, new) for old, new in moved.items()]
        report.added = [k for k in run.to_load if k not in report.changed and k not in moved.values()]
        report.unchanged = len(run.sources)
        run.levels = [0, 1] if self.config.graph.enabled else [0]

    @staticmethod
    def _document_id(run: _BuildRun, key: str, path: Path, base: Path) -> str:
        """A file's document id: the one it had (ids are stable), else its path from its root's
        parent ("papers/x.pdf"). A file whose id is another existing file's (two folders holding
        the same relative name) takes more of its path ("b/papers/x.pdf"), and the report says so."""
        old = run.old_sources.get(key)
        if old is not None and len(old.documents) == 1:
            return old.documents[0]
        if run.old_ids is None:
            run.old_ids = {d: k for k, rec in run.old_sources.items() for d in rec.documents}

        def taken(doc: str) -> bool:
            other = run.seen_ids.get(doc) or run.old_ids.get(doc)
            return other is not None and other != key and (other in run.seen or Path(other).exists())

        doc_id = path.relative_to(base).as_posix()
        first, parent = doc_id, base
        while taken(doc_id) and parent != parent.parent:
            parent = parent.parent
            doc_id = path.relative_to(parent).as_posix()
        if doc_id != first:
            run.report.notes.append(f"{path}: its name {first!r} is another file's document id; indexed as {doc_id!r}")
        return doc_id

    @staticmethod
    def _moved(run: _BuildRun) -> dict[str, str]:
        """Files moved since the last build (a renamed or moved folder): a file of this run that
        is new here, whose document id and content are those of a source whose file is gone, is
        that document, moved (old key -> new key). It is loaded again from where it is now; its
        vectors come from the cache."""
        gone = [(key, rec) for key, rec in run.old_sources.items() if key not in run.seen and not Path(key).exists()]
        by_id = {rec.documents[0]: (key, rec) for key, rec in gone if len(rec.documents) == 1}
        # A file of several records (JSON Lines) has no one id: its content and its file name.
        by_content = {(rec.sha256, Path(key).name): (key, rec) for key, rec in gone if len(rec.documents) != 1}
        moved = {}
        for key, (path, sha, _, doc_id, _) in run.seen.items():
            if key in run.old_sources:
                continue
            match = by_id.get(doc_id) or by_content.get((sha, path.name))
            if match is not None and match[1].sha256 == sha and match[0] not in moved:
                moved[match[0]] = key
        return moved

    def _up_to_date(self, run: _BuildRun) -> bool:
        """Nothing changed since the current generation (files, embedder, chunking, graph settings):
        the report names it and no new generation is written."""
        previous, report = run.previous, run.report
        same_graph = run.levels == [0] or previous is None or previous.graph_hash == self.config.graph_hash()
        if run.recluster and 1 in run.levels:
            return False
        if not (previous and report.nothing_changed and not report.failures and run.reuse
                and previous.levels == run.levels and same_graph):
            return False
        report.generation = previous.generation
        report.documents, report.text_units = previous.counts.get("documents", 0), previous.counts.get("text_units", 0)
        report.seconds["total"] = time.perf_counter() - run.t0
        return True

    def _load(self, run: _BuildRun) -> None:
        """Load and chunk what is new or changed; one bad file never stops the batch."""
        t_load = time.perf_counter()
        report, seen, to_load = run.report, run.seen, run.to_load
        kept_doc_ids = {d for rec in run.sources.values() for d in rec.documents}
        self.progress("load", 0, len(to_load))
        entries = run.catalog.entries if run.catalog else {}
        sizes = [seen[key][2] for key in to_load]
        loaded = run_all(self.executor, load_source,
                         [(seen[key][0], seen[key][3], self.config, entries.get(key)) for key in to_load],
                         lambda n: self.progress("load", n, None), processes=self._load_processes(sizes), sizes=sizes)
        for i, key in enumerate(to_load):
            result, loaded[i] = loaded[i], None  # each file's objects freed once in tables
            path, sha, size, doc_id, mtime_ns = seen[key]
            if isinstance(result, LoadFailure):
                report.failures.append((result.path, result.reason))
                continue
            docs, units, terms = result
            dup = next((d.id for d in docs if d.id in kept_doc_ids), None)
            if dup is not None or len({d.id for d in docs}) != len(docs):
                report.failures.append((str(path), f"document id '{dup}' is already used by another file or record; "
                                                   "ids must be unique"))
                continue
            unit_ids: dict[str, list[str]] = {}
            for u in units:
                unit_ids.setdefault(u.document_id, []).append(u.id)
            run.new_docs.append(documents_to_table(docs, unit_ids))
            run.new_units.extend(units)
            run.new_terms.append(pa.array(terms, pa.list_(pa.string())))
            kept_doc_ids.update(d.id for d in docs)
            run.sources[key] = SourceRecord(sha256=sha, size=size, documents=[d.id for d in docs], mtime_ns=mtime_ns)
        del loaded  # the run's new units, terms and documents hold what is still needed
        report.seconds["load_chunk"] = time.perf_counter() - t_load

    def _embed(self, run: _BuildRun) -> None:
        """Embed the new units (cache first) and their sentences, UNIT_BATCH units at a time, each
        batch then turned into table rows; their noun phrases are extracted meanwhile."""
        new_units, embedder, report, previous = run.new_units, run.embedder, run.report, run.previous
        if self.config.graph.enabled and self.executor is None and new_units:
            self._phrases = PhrasesAhead(self._phrase_cache(), self._phrase_extractor(),
                                         lambda n: self.progress("phrases", n, None))
            self.progress("phrases", 0, len(new_units))
            self._phrases.start([phrase_input(u.title, u.text) for u in new_units])
        terms = pa.chunked_array(run.new_terms, pa.list_(pa.string()))
        run.new_terms = []
        t_embed, t_sentences, sentences = time.perf_counter(), 0.0, 0
        self.progress("embed", 0, len(new_units))
        tables = []
        for start in range(0, len(new_units), UNIT_BATCH):
            batch = new_units[start:start + UNIT_BATCH]
            before = embedder.misses
            vectors = embedder.embed_passages([u.embedding_text for u in batch],
                                              progress=lambda n: self.progress("embed", n, None)).reshape(len(batch), -1)
            report.embedded += embedder.misses - before
            if self.config.embedding.sentences:
                t_sent = time.perf_counter()
                sentences = self._embed_sentences(batch, embedder, sentences)
                t_sentences += time.perf_counter() - t_sent
            tables.append(units_to_table(batch, terms.slice(start, len(batch)), vectors, vectors.shape[1]))
            new_units[start:start + len(batch)] = [None] * len(batch)
            del batch, vectors
        run.dim = dim = embedder.dim or (previous.embedder_dim if previous else 0)
        run.new_table = pa.concat_tables(tables) if tables else units_to_table([], terms, np.zeros((0, dim)), dim)
        run.new_units = []
        del tables, terms
        release_freed_memory()  # the units' Python objects, before LanceDB, the ANN and BM25 allocate
        report.seconds["embed"] = time.perf_counter() - t_embed - t_sentences
        if self.config.embedding.sentences:
            report.seconds["embed_sentences"] = t_sentences

    def _write(self, run: _BuildRun) -> None:
        """The new generation's tables: rows carried over from the current one plus the new rows."""
        t_write = time.perf_counter()
        previous, dim = run.previous, run.dim
        units_table, run.new_table = run.new_table, None
        docs_table = pa.concat_tables(run.new_docs) if run.new_docs else documents_to_table([], {})
        run.new_docs = []
        carried_doc_ids = sorted({d for k, rec in run.sources.items() if k in run.old_sources and k not in run.to_load
                                  for d in rec.documents})
        run.generation = self._next_generation(previous)
        run.gen_dir = generation_dir(self.index_dir, run.generation)
        run.gen_dir.mkdir(parents=True)
        run.store = LanceStore(run.gen_dir / "lancedb")
        old = LanceStore(generation_dir(self.index_dir, previous.generation) / "lancedb") if previous else None
        if old is None or not carried_doc_ids or not self._carry(run, old, carried_doc_ids, units_table, docs_table):
            if old is not None and carried_doc_ids:
                keep = pa.array(carried_doc_ids, pa.string())
                old_units = old.units()
                old_units = old_units.filter(pc.is_in(old_units["document_id"], value_set=keep))
                old_docs = old.documents()
                old_docs = old_docs.filter(pc.is_in(old_docs["id"], value_set=keep))
                units_table = pa.concat_tables([old_units.cast(units_table.schema), units_table])
                docs_table = pa.concat_tables([old_docs.cast(docs_table.schema), docs_table])
            run.store.write({DOCUMENTS: docs_table, TEXT_UNITS: units_table})
            save_unit_vectors(run.gen_dir, units_table["vector"], dim)
            # Written: the vectors (1.5 GB at a million units) are not needed again.
            run.units_table, run.n_documents = units_table.drop_columns(["vector"]), docs_table.num_rows
        run.report.seconds["write"] = time.perf_counter() - t_write

    def _carry(self, run: _BuildRun, old: LanceStore, carried_doc_ids: list[str], units_table: pa.Table,
               docs_table: pa.Table) -> bool:
        """The previous generation's tables and vectors carried over with the change applied (their
        files linked, the deletions and new rows written): an add to a large index costs what it
        adds, not the index's size. False (nothing written) when the previous generation predates
        this layout or the build keeps less than CARRY_MIN_SHARE of its rows."""
        old_vectors = load_unit_vectors(old.path.parent)
        if (old_vectors is None or old.column_names(TEXT_UNITS) != units_table.schema.names
                or old.column_names(DOCUMENTS) != docs_table.schema.names):
            return False
        keep_ids = pa.array(carried_doc_ids, pa.string())
        unit_docs, unit_rows = old.row_ids(TEXT_UNITS, "document_id")
        keep = np.asarray(pc.is_in(unit_docs, value_set=keep_ids))
        if keep.sum() < CARRY_MIN_SHARE * len(keep):
            return False
        doc_ids, doc_rows = old.row_ids(DOCUMENTS, "id")
        doc_keep = np.asarray(pc.is_in(doc_ids, value_set=keep_ids))
        run.store.carry(old, DOCUMENTS, doc_rows[~doc_keep], docs_table)
        run.store.carry(old, TEXT_UNITS, unit_rows[~keep], units_table)
        carry_unit_vectors(run.gen_dir, old_vectors, keep, units_table["vector"], run.dim)
        run.units_table = run.store.units(["id"])
        run.n_documents = int(doc_keep.sum()) + docs_table.num_rows
        run.report.carried = True
        run.kept_rows, run.added_terms = keep, units_table["terms"]
        run.added_units = units_table.select(["id", "title", "text"])
        return True

    def _citations(self, run: _BuildRun) -> None:
        """Which reference entries are papers of the collection (index.citations), linked anew
        from every document's stored entries, so adds and removals update both directions."""
        t_cite = time.perf_counter()
        graph = build_citation_graph(run.store.documents(["id", "title", "text", "authors", "year", "metadata", "references"]))
        write_citation_graph(run.gen_dir, graph)
        run.report.seconds["citations"] = time.perf_counter() - t_cite

    def _ann(self, run: _BuildRun) -> None:
        """LanceDB's ANN index, for generations large enough to need one (PostgreSQL builds its own).
        A carried index is kept until the rows it lacks pass ANN_STALE_SHARE of the table."""
        ann_min = self.config.search.ann_min_units
        if ann_min and run.units_table.num_rows >= ann_min and self.config.store.backend == "lancedb":
            unindexed = run.store.unindexed_rows() if run.report.carried else None
            if unindexed is not None and unindexed <= ANN_STALE_SHARE * run.units_table.num_rows:
                return  # the carried index serves; the rows it lacks are searched exactly
            t_ann = time.perf_counter()
            with self._step("ann"):
                run.store.create_vector_index()
            release_freed_memory()  # what LanceDB's training threads freed, before BM25 allocates
            run.report.seconds["ann_index"] = time.perf_counter() - t_ann

    def _bm25(self, run: _BuildRun) -> None:
        """BM25 over every unit's terms; a carried generation updates the previous one's postings."""
        t_bm25 = time.perf_counter()
        with self._step("bm25"):
            index = None
            if run.report.carried:
                index = BM25Index.updated(generation_dir(self.index_dir, run.previous.generation) / "bm25",
                                          run.kept_rows, run.added_terms)
            if index is None:
                terms = (run.units_table if "terms" in run.units_table.column_names else run.store.units(["terms"]))
                index = BM25Index.build_from_column(terms["terms"])
            index.save(run.gen_dir / "bm25")
            del index
        run.report.seconds["bm25"] = time.perf_counter() - t_bm25
        # Level 1 reads only these; the vectors, terms and documents are written (at 100k units
        # the vectors alone are 150 MB).
        run.units_table = run.units_table.select([c for c in ("id", "title", "text") if c in run.units_table.column_names])
        release_freed_memory()

    def _level1(self, run: _BuildRun) -> None:
        """The noun-phrase graph, its communities and their vectors (when graph.enabled)."""
        if not self.config.graph.enabled:
            return
        level1 = self._build_level1(run, self._previous_clustering(run))
        run.store.write({ENTITIES: level1.entities, RELATIONSHIPS: level1.relationships,
                         COMMUNITIES: level1.communities})
        level1.incidence.save(run.gen_dir)
        save_links(run.gen_dir, *(level1.relationships[c].to_numpy() for c in ("source", "target", "weight")))
        # Written: what the phrase vectors need stays (each list of unit ids is a hundred million
        # strings at a million units, beside millions of phrase vectors).
        level1.entities = level1.entities.select(["title", "frequency", "is_hub"])
        level1.communities = level1.communities.select(["id", "title"])
        level1.relationships = level1.relationships.slice(0, 0)
        release_freed_memory()
        t_embed = time.perf_counter()
        self._embed_graph(run, level1)
        level1.seconds["embedding"] = time.perf_counter() - t_embed
        run.report.seconds.update({f"level1_{k}": v for k, v in level1.seconds.items()})
        run.report.level1 = level1.stats
        run.report.clustering = level1.clustering

    def _same_graph(self, run: _BuildRun) -> bool:
        """The current generation's Level 1 was built as this build's is (same settings, embedder
        and chunking)."""
        previous = run.previous
        return (previous is not None and run.reuse and 1 in previous.levels
                and previous.graph_hash == self.config.graph_hash())

    def _carried_incidence(self, run: _BuildRun) -> PhraseIncidence | None:
        """The current generation's incidence, for a carried build to update with the new units'
        phrases only (None when not carried, or that generation's graph was built otherwise)."""
        if not (run.report.carried and self._same_graph(run)):
            return None
        gen_dir = generation_dir(self.index_dir, run.previous.generation)
        held = PhraseIncidence.load(gen_dir, self._previous_phrases(run))
        return held if held is not None and held.matrix.shape[0] == len(run.kept_rows) else None

    def _previous_phrases(self, run: _BuildRun) -> list[str]:
        """The current generation's phrases (its entities' titles, in id order): the incidence,
        the community update and the phrase vectors of a build all start from them."""
        if run.previous_phrases is None:
            old = LanceStore(generation_dir(self.index_dir, run.previous.generation) / "lancedb")
            run.previous_phrases = old.read(ENTITIES, ["title"])["title"].to_pylist()
        return run.previous_phrases

    def _previous_clustering(self, run: _BuildRun) -> PreviousClustering | None:
        """The current generation's communities, for the update to start from: None when asked to
        re-cluster or when that generation's graph was built otherwise (other settings, another
        embedder or chunking, no Level 1)."""
        previous = run.previous
        if run.recluster or not self._same_graph(run):
            return None
        old = LanceStore(generation_dir(self.index_dir, previous.generation) / "lancedb")
        if not old.has(COMMUNITIES):
            return None
        links = load_links(old.path.parent) or old.read(RELATIONSHIPS, ["source", "target", "weight"])
        return previous_clustering(self._previous_phrases(run), links,
                                   old.read(COMMUNITIES, ["id", "level", "parent", "entity_ids"]), previous.clustering)

    def _commit(self, run: _BuildRun) -> None:
        """Flush the generation, then atomically point the manifest at it."""
        t_commit = time.perf_counter()
        report = run.report
        fsync_tree(run.gen_dir)
        report.documents, report.text_units = run.n_documents, run.units_table.num_rows
        report.generation = run.generation
        report.seconds["total"] = time.perf_counter() - run.t0
        manifest = Manifest(
            generation=run.generation, embedder_id=run.embedder.id, embedder_dim=int(run.dim),
            config_hash=self.config.index_hash(), token_counter=TokenCounter.name,
            counts={"documents": report.documents, "text_units": report.text_units, "sources": len(run.sources),
                    **report.level1},
            levels=run.levels, failures=[{"path": path, "reason": reason} for path, reason in report.failures],
            named_entities=self.config.graph.named_entities,
            graph_hash=self.config.graph_hash() if 1 in run.levels else "", clustering=report.clustering,
            built_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
            build_seconds={k: round(v, 3) for k, v in report.seconds.items()}, sources=run.sources,
        )
        write_manifest(self.index_dir, manifest)
        self._remove_stale_generations(manifest)
        report.seconds["commit"] = time.perf_counter() - t_commit

    def _embed_sentences(self, units: list[TextUnit], embedder: CachedEmbedder, counted: int = 0,
                         batch: int = 4096) -> int:
        """Every statement of the new units that default searches return into the vector cache
        (what queries read), in batches so a large build never holds all sentence vectors at once.
        Reference lists and front matter are searched only on request (kind=...): their
        sentences are embedded then, once, rather than in every build."""
        sentences = list(dict.fromkeys(u.text[a:b] for u in units if u.kind in DEFAULT_KINDS
                                       for a, b in statement_spans(u.text, u.sentences or None)))
        self.progress("sentences", 0, counted + len(sentences))  # `counted`: of the batches before
        for start in range(0, len(sentences), batch):
            embedder.embed_passages(sentences[start:start + batch], progress=lambda n: self.progress("sentences", n, None))
        return counted + len(sentences)

    def _build_level1(self, run: _BuildRun, previous: PreviousClustering | None = None) -> Level1Result:
        """Noun phrases are read as a stream from the phrase cache (a large build never holds
        all of them): extracted ahead while embedding, or here. A carried build reads only the
        new units' phrases and updates the current generation's incidence."""
        t0 = time.perf_counter()
        carried = self._carried_incidence(run)
        units = run.added_units if carried is not None else run.units_table
        if "text" not in units.column_names:
            units = run.store.units(["id", "title", "text"])
        inputs = [phrase_input(t, x) for t, x in zip(units["title"].to_pylist(), units["text"].to_pylist())]
        n_units = run.units_table.num_rows
        del units
        if self._phrases is None:
            self.progress("phrases", 0, len(inputs))
        progress = lambda n: self.progress("phrases", n, None)  # noqa: E731
        extractor = None
        if self.executor is not None:
            phrases = self._phrase_cache().stream(
                inputs, ClusterPhraseExtractor(self.executor, self.config.graph.named_entities), progress,
                batch=CLUSTER_CHUNK)
        elif self._phrases is not None:  # the new units' phrases were extracted while embedding
            phrases = self._phrases.finish(inputs)
            self._phrases = None
        else:
            extractor = self._phrase_extractor()
            phrases = self._phrase_cache().stream(inputs, extractor, progress)
        t1 = time.perf_counter()
        n_inputs = len(inputs)
        del inputs  # the stream holds them while it is read (a million texts), not beyond
        try:
            with self._step("graph"):
                if carried is not None:
                    phrases = carried.update(run.kept_rows, phrases, n_inputs)
                result = build_level1(n_units, phrases, self.config.graph, previous)
        finally:
            if extractor is not None:
                extractor.close()
        result.seconds["noun_phrases"] = t1 - t0  # waiting for the extraction ahead; reading is in "graph"
        return result

    @contextmanager
    def _step(self, stage: str):
        """A stage with no count to report (the ANN index, BM25, graph and communities) shows as
        one step, so a long one is seen running."""
        self.progress(stage, 0, 1)
        yield
        self.progress(stage, 1, None)

    def _load_processes(self, sizes: list[int]) -> int:
        """Processes for loading and chunking (this one and spawned workers): one per core (or
        ingest.processes) when the files are enough to pay for starting the workers (~0.4 s each:
        Python, the PDF library, the tokenizer)."""
        worth_it = len(sizes) >= LOAD_WORKERS_MIN_FILES and sum(sizes) >= LOAD_WORKERS_MIN_BYTES
        return (self.config.ingest.processes or cpu_cores()) if worth_it else 1

    def _phrase_cache(self) -> PhraseCache:
        return PhraseCache(SqliteKV(self._cache_dir() / "phrases.sqlite", "phrases"))

    def _phrase_extractor(self) -> NounPhraseExtractor:
        return NounPhraseExtractor(n_process=self.config.graph.processes or min(4, cpu_cores()),
                                   named_entities=self.config.graph.named_entities)

    def _embed_graph(self, run: _BuildRun, level1: Level1Result) -> None:
        """Vectors of the phrases that link units (non-hubs in >= graph.embed_min_units units), so
        query phrases in another language reach them, and, with graph.embed_communities, of each
        community's representative phrases, so communities can be ranked by what they are about.
        Cached by text; a carried build takes the phrases the current generation has vectors for
        from it, and looks up only the others."""
        least, communities = self.config.graph.embed_min_units, self.config.graph.embed_communities
        if not least and not communities:
            return
        entities, embedder = level1.entities, run.embedder
        linking = np.flatnonzero((entities["frequency"].to_numpy() >= least)
                                 & ~entities["is_hub"].to_numpy(zero_copy_only=False)) if least else np.array([], np.int64)
        texts = entities["title"].take(pa.array(linking))
        known, old_vectors = self._previous_phrase_vectors(run)
        at = pc.index_in(texts, value_set=known)
        hit = at.is_valid().to_numpy(zero_copy_only=False)
        titles = level1.communities["title"].to_pylist() if communities else []
        self.progress("phrase vectors", 0, int((~hit).sum()) + len(titles))
        progress = lambda n: self.progress("phrase vectors", n, None)  # noqa: E731
        dim = embedder.dim or run.dim

        def blocks():
            """PHRASE_CHUNK phrases at a time: the previous generation's vectors, the others embedded."""
            for start in range(0, len(texts), PHRASE_CHUNK):
                size = min(PHRASE_CHUNK, len(texts) - start)
                block, mine = np.zeros((size, dim), np.float32), hit[start:start + size]
                if mine.any():
                    block[mine] = old_vectors[at.slice(start, size).filter(pa.array(mine)).to_numpy()]
                    release_pages(old_vectors)  # the mapped file's pages, read, leave this process
                if not mine.all():
                    missing = texts.slice(start, size).filter(pa.array(~mine)).to_pylist()
                    block[~mine] = embedder.embed_passages(missing, progress=progress)
                yield block

        if least:
            save_vector_blocks(run.gen_dir, PHRASE_VECTORS, linking, dim, blocks())
        if communities:
            save_vectors(run.gen_dir, COMMUNITY_VECTORS, level1.communities["id"].to_numpy(),
                         embedder.embed_passages(titles, progress=progress))

    def _previous_phrase_vectors(self, run: _BuildRun) -> tuple[pa.Array, np.ndarray]:
        """The current generation's phrase vectors and their phrases' texts, for a carried build
        (empty otherwise)."""
        none = pa.array([], pa.string()), np.zeros((0, 0), np.float32)
        if not (run.report.carried and self._same_graph(run)):
            return none
        saved = load_vectors(generation_dir(self.index_dir, run.previous.generation), PHRASE_VECTORS, mmap=True)
        if saved is None:
            return none
        ids, vectors = saved
        return pa.array(self._previous_phrases(run), pa.string()).take(pa.array(ids)), vectors

    def _cache_dir(self) -> Path:
        return Path(self.config.cache_dir) if self.config.cache_dir else self.index_dir / "cache"

    def _next_generation(self, previous: Manifest | None) -> str:
        n = int(previous.generation[1:]) + 1 if previous else 1
        while generation_dir(self.index_dir, f"g{n:06d}").exists():
            n += 1
        return f"g{n:06d}"

    def _remove_stale_generations(self, current: Manifest | None) -> None:
        """Every generation but the current one and the one before it: a reader that loaded the
        previous generation keeps reading it until the next commit; the rest are replaced ones and
        leftovers of killed builds."""
        root = self.index_dir / GENERATIONS
        if not root.exists():
            return
        names = sorted(child.name for child in root.iterdir())
        keep = set()
        if current is not None:
            keep = {current.generation} | set([n for n in names if n < current.generation][-1:])
        for name in names:
            if name not in keep:
                shutil.rmtree(root / name, ignore_errors=True)

