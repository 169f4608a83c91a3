"""Level 0 on the bundled samples through the real index: LanceDB, bm25s, multilingual-e5 (numpy engine)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from monjyu import Monjyu, MonjyuConfig, SearchFilters
from monjyu.errors import ConfigError, EmbedderMismatchError, MonjyuError
from monjyu.index import builder
from monjyu.index.manifest import read_manifest
from monjyu.store.lancedb_store import TEXT_UNITS, LanceStore
from monjyu.retrieval.filters import parse_filters

from .conftest import SAMPLES


def doc_ids(result):
    return [h.document_id for h in result.hits]


def test_build_holds_every_sample(sample_index):
    status = sample_index.status()
    assert status["counts"]["sources"] == 7
    assert status["counts"]["documents"] == 9  # 6 files + 3 JSONL records
    assert status["embedder"]["dim"] == 384 and status["embedder"]["id"].startswith("e5openvino")


@pytest.mark.parametrize("mode", ["vector", "keyword", "hybrid"])
def test_each_mode_finds_the_right_paper(sample_index, mode):
    result = sample_index.search("Leiden algorithm communities hierarchy", mode=mode, top_k=3)
    assert result.hits, mode
    assert {"papers/community-detection.pdf", "abs-leiden"} & set(doc_ids(result)[:2])
    hit = result.hits[0]
    assert hit.rank == 1 and hit.text and hit.source_path and hit.document_title


def test_japanese_question_finds_english_passage(sample_index):
    result = sample_index.search("相互順位融合（RRF）の定数 k はいくつか？", mode="vector", top_k=3)
    assert "papers/hybrid-retrieval.txt" in doc_ids(result)


def test_japanese_keyword_search(sample_index):
    result = sample_index.search("名詞句の共起グラフ", mode="keyword", top_k=3)
    assert doc_ids(result)[0] == "papers/kensaku-kakucho.md"


def test_hybrid_scores_carry_both_strategies(sample_index):
    result = sample_index.search("BM25 k1 length normalisation", mode="hybrid", top_k=5)
    top = result.hits[0]
    assert top.document_id == "abs-bm25"
    assert top.vector_score is not None and top.keyword_score is not None


def test_pdf_hits_cite_pages(sample_index):
    result = sample_index.search("communities ranked at query time relevance budget", mode="keyword", top_k=10)
    pdf = [h for h in result.hits if h.document_id.endswith(".pdf")]
    assert pdf and all(h.page in (1, 2) for h in pdf)


def test_pagination_is_consistent(sample_index):
    full = doc_ids(sample_index.search("retrieval", mode="hybrid", top_k=6))
    page1 = sample_index.search("retrieval", mode="hybrid", top_k=3)
    page2 = sample_index.search("retrieval", mode="hybrid", top_k=3, offset=3)
    assert doc_ids(page1) + doc_ids(page2) == full
    assert [h.rank for h in page2.hits] == [4, 5, 6]


def test_threshold_drops_weak_vector_hits(sample_index):
    loose = sample_index.search("protein intake per day", mode="vector", top_k=20, threshold=0.0)
    strict = sample_index.search("protein intake per day", mode="vector", top_k=20, threshold=0.95)
    assert len(loose.hits) > 0 and len(strict.hits) == 0


def test_filters(sample_index):
    q = "retrieval ranking passages"
    only_pdf = sample_index.search(q, mode="hybrid", top_k=10, filters=SearchFilters(file_types=["pdf"]))
    assert only_pdf.hits and {h.document_id for h in only_pdf.hits} == {"papers/community-detection.pdf"}
    glob = sample_index.search(q, mode="vector", top_k=10, filters=SearchFilters(path_glob="papers/*.md"))
    assert {h.document_id for h in glob.hits} == {"papers/lazygraphrag.md", "papers/kensaku-kakucho.md"}
    ids = sample_index.search(q, mode="keyword", top_k=10, filters=SearchFilters(document_ids=["abs-bm25", "abs-e5"]))
    assert set(doc_ids(ids)) <= {"abs-bm25", "abs-e5"}
    dated = sample_index.search(q, mode="vector", top_k=10,
                                filters=SearchFilters(date_from="2019-01-01", date_to="2021-12-31"))
    assert set(doc_ids(dated)) == {"abs-bm25", "abs-leiden"}


@pytest.mark.parametrize("hostile", [
    "' OR 1=1 --", "abs-bm25' OR document_id != '", "\"; DROP TABLE text_units; --", "*", "%", "abs-%",
    "papers/../../etc/passwd", "\x00", "a' || 'b",
])
def test_hostile_filter_values_match_nothing_and_break_nothing(sample_index, hostile):
    for filters in (SearchFilters(document_ids=[hostile]), SearchFilters(file_types=[hostile]),
                    SearchFilters(path_glob=hostile + ".nomatch")):
        result = sample_index.search("retrieval", mode="hybrid", top_k=10, filters=filters)
        assert result.hits == [] and result.total_count == 0
    assert sample_index.search("retrieval", mode="hybrid", top_k=3).hits  # index intact


def test_filter_parsing_errors():
    assert parse_filters(["type=pdf", "doc=a", "doc=b=c", "from=2020-01-01"]).document_ids == ["a", "b=c"]
    for bad in (["nokey"], ["color=red"], ["from=yesterday"], ["from=2021-01-01", "to=2020-01-01"]):
        with pytest.raises(ConfigError):
            parse_filters(bad)


def test_bad_queries(sample_index):
    with pytest.raises(MonjyuError, match="empty"):
        sample_index.search("   ")
    with pytest.raises(MonjyuError, match="unknown search mode"):
        sample_index.search("x", mode="psychic")


def test_incremental_reindex(tmp_path, samples_copy, make_config):
    m = Monjyu(tmp_path / "idx", make_config())
    first = m.index([samples_copy])
    assert len(first.added) == 7 and not first.failures
    again = m.index([samples_copy])
    assert again.nothing_changed and again.embedded == 0 and again.generation == first.generation

    (samples_copy / "new-note.md").write_text("# Note\n\nColBERT uses late interaction over token embeddings.")
    (samples_copy / "hybrid-retrieval.txt").write_text("Hybrid retrieval, revised: SPLADE learns sparse expansions.")
    (samples_copy / "rag-evaluation.html").unlink()
    third = m.index([samples_copy])
    assert [p.rsplit("/", 1)[-1] for p in third.added] == ["new-note.md"]
    assert [p.rsplit("/", 1)[-1] for p in third.changed] == ["hybrid-retrieval.txt"]
    assert [p.rsplit("/", 1)[-1] for p in third.removed] == ["rag-evaluation.html"]
    assert third.embedded == 2  # only the two new texts were embedded
    assert third.documents == first.documents
    assert doc_ids(m.search("late interaction token embeddings", mode="keyword", top_k=1)) == ["papers/new-note.md"]
    assert doc_ids(m.search("SPLADE sparse expansions", mode="keyword", top_k=1)) == ["papers/hybrid-retrieval.txt"]
    assert "papers/rag-evaluation.html" not in doc_ids(m.search("nDCG MRR", mode="hybrid", top_k=20))
    # Two generations on disk: the new one, and the one before it (a reader that loaded it keeps
    # reading until the next commit); the first is gone.
    assert sorted(p.name for p in (tmp_path / "idx" / "generations").iterdir()) == [first.generation, third.generation]


def test_a_changed_graph_setting_rebuilds_level1_though_no_file_changed(tmp_path, samples_copy, make_config):
    first = Monjyu(tmp_path / "idx", make_config()).index([samples_copy])
    m = Monjyu(tmp_path / "idx", make_config(graph={"max_cluster_size": 4, "processes": 1}))
    rebuilt = m.index([samples_copy])
    assert rebuilt.nothing_changed and rebuilt.embedded == 0 and rebuilt.generation != first.generation
    assert rebuilt.level1["communities"] != first.level1["communities"]
    assert m.workspace.manifest().graph_hash == m.config.graph_hash()
    same_graph = Monjyu(tmp_path / "idx", make_config(graph={"max_cluster_size": 4}))  # processes: not a Level 1 setting
    assert same_graph.index([samples_copy]).generation == rebuilt.generation


def test_bad_files_do_not_stop_the_batch(tmp_path, samples_copy, make_config):
    (samples_copy / "broken.pdf").write_bytes(b"%PDF-1.4 broken")
    (samples_copy / "empty.txt").write_bytes(b"")
    m = Monjyu(tmp_path / "idx", make_config())
    report = m.index([samples_copy, tmp_path / "does-not-exist"])
    failed = {p.rsplit("/", 1)[-1]: reason for p, reason in report.failures}
    assert set(failed) == {"broken.pdf", "empty.txt", "does-not-exist"}
    assert report.documents == 9
    # Failed files are retried next time (not recorded as indexed).
    assert len(m.index([samples_copy]).failures) == 2


def test_links_in_a_loop_are_reported_and_stop_nothing(tmp_path, make_config):
    papers = tmp_path / "papers"
    papers.mkdir()
    shutil.copyfile(SAMPLES / "lazygraphrag.md", papers / "lazygraphrag.md")
    for name, target in (("a", "b"), ("b", "a"), ("c.pdf", "d.pdf"), ("d.pdf", "c.pdf")):
        (papers / name).symlink_to(target)
    report = Monjyu(tmp_path / "idx", make_config()).index([papers])
    assert report.documents == 1
    assert sorted((Path(p).name, reason.startswith("cannot read file")) for p, reason in report.failures) == [
        ("c.pdf", True), ("d.pdf", True)]


def test_an_index_inside_the_folder_it_indexes_is_not_read_and_other_files_are_named(tmp_path, samples_copy,
                                                                                      make_config):
    """`monjyu index . --index idx`: the index's own files (its manifest, its BM25's n_docs.txt) are
    not papers, here or in another index kept in the folder; files of types the index does not read
    are left out with a note that names their kinds."""
    (samples_copy / "book.epub").write_bytes(b"PK\x03\x04 an EPUB")
    (samples_copy / "figures").mkdir()
    for name in ("a.png", "b.png"):
        (samples_copy / "figures" / name).write_bytes(b"\x89PNG")
    Monjyu(samples_copy / "older-index", make_config()).index([SAMPLES / "lazygraphrag.md"])
    m = Monjyu(samples_copy / "idx", make_config())
    for run in range(2):  # the second run finds the first one's generation in the folder
        report = m.index([samples_copy])
        assert not report.failures and report.documents == 9
        assert any(n.startswith("3 files in the folders given are of a type this index does not read, left out: "
                                ".png (2), .epub (1)") for n in report.notes), report.notes
    assert report.nothing_changed
    paths = [p["source_path"] for p in m.papers.list()["papers"]]
    assert len(paths) == 9 and all(Path(p).parent == samples_copy for p in paths)  # none from idx/ or older-index/


def test_duplicate_record_ids_are_reported(tmp_path, make_config):
    (tmp_path / "a.jsonl").write_text(json.dumps({"_id": "same", "text": "first"}) + "\n")
    (tmp_path / "b.jsonl").write_text(json.dumps({"_id": "same", "text": "second"}) + "\n")
    report = Monjyu(tmp_path / "idx", make_config()).index([tmp_path / "a.jsonl", tmp_path / "b.jsonl"])
    assert report.documents == 1 and "already used" in report.failures[0][1]


def test_querying_with_another_embedder_is_a_clear_error(sample_index, tmp_path):
    other = MonjyuConfig(embedding={"provider": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "m"})
    m = Monjyu(sample_index.index_dir, other)
    with pytest.raises(EmbedderMismatchError, match="built with embedder 'e5openvino"):
        m.search("anything", mode="vector")
    assert m.search("BM25", mode="keyword", answer=False).hits  # keyword hits need no embedder


@pytest.mark.parametrize("former", ["e5numpy", "e5onnx"])
def test_an_index_of_a_former_default_embedder_names_the_setting(former, tmp_path, make_config):
    """e5openvino became the default: an index of a former default says how to keep using it."""
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.md").write_text("# Ranking\n\nBM25 ranks passages by term frequency.\n", encoding="utf-8")
    Monjyu(tmp_path / "idx", make_config(embedding={"provider": former}, graph={"enabled": False})).index([tmp_path / "d"])
    assert Monjyu(tmp_path / "idx", make_config(embedding={"provider": former})).search("ranking", mode="vector").hits
    with pytest.raises(EmbedderMismatchError, match=f"MONJYU_EMBEDDING__PROVIDER={former}"):
        Monjyu(tmp_path / "idx", make_config()).search("ranking", mode="vector")


def test_chunking_change_rebuilds_everything(tmp_path, samples_copy, make_config):
    idx = tmp_path / "idx"
    Monjyu(idx, make_config()).index([samples_copy])
    report = Monjyu(idx, make_config(chunking={"size": 64, "overlap": 8})).index([samples_copy])
    assert len(report.changed) == 7 and read_manifest(idx).counts["text_units"] > 9


def test_an_index_built_by_an_earlier_pipeline_reads_its_files_again(tmp_path, samples_copy, make_config,
                                                                     monkeypatch):
    """A MONJYU whose loaders read the same files differently (a bumped INGEST_PIPELINE_VERSION)
    rebuilds every file from the caches on its first `index`, though no file and no setting changed."""
    import monjyu.config

    idx = tmp_path / "idx"
    Monjyu(idx, make_config()).index([samples_copy])
    assert not Monjyu(idx, make_config()).index([samples_copy]).changed
    monkeypatch.setattr(monjyu.config, "INGEST_PIPELINE_VERSION", monjyu.config.INGEST_PIPELINE_VERSION + 1)
    assert len(Monjyu(idx, make_config()).index([samples_copy]).changed) == 7


def test_missing_index_is_a_clear_error(tmp_path, make_config):
    with pytest.raises(MonjyuError, match="no index at"):
        Monjyu(tmp_path / "nothing", make_config()).search("x")


def test_samples_are_untouched_by_indexing(sample_index):
    assert not (SAMPLES / ".monjyu").exists()
    assert shutil.which  # the sample folder stays as shipped


def test_ann_index_answers_unfiltered_vector_search_like_exact(tmp_path, samples_copy, make_config):
    """Past search.ann_min_units a build adds LanceDB's vector index; unfiltered vector searches
    (default kinds: a reference list is left out) go through it, filtered ones stay exact, and on
    this small set both give the exact ranking."""
    (samples_copy / "cited.md").write_text(
        "# Communities In Citation Graphs\n\nLeiden communities group the papers of a field.\n\n## References\n\n"
        "[1] V. Traag, L. Waltman. From Louvain to Leiden: guaranteeing well-connected communities. 2019.\n",
        encoding="utf-8")
    m = Monjyu(tmp_path / "idx", make_config(search={"ann_min_units": 1}, graph={"enabled": False}))
    report = m.index([samples_copy])
    assert "ann_index" in report.seconds
    searcher = m.workspace.current().searcher
    ann = searcher.index.ann
    assert ann is not None and searcher.index.mask(None) is not None  # the reference list is out by default
    asked = []
    real = ann.candidates
    ann.candidates = lambda *args: asked.append(args) or real(*args)
    for query in ("Leiden communities", "検索拡張生成とは", "how is retrieval evaluated", "Louvain to Leiden"):
        searcher.index.ann = ann
        through_ann = m.search(query, mode="vector", top_k=5, answer=False)
        searcher.index.ann = None
        exact = m.search(query, mode="vector", top_k=5, answer=False)
        assert [h.text_unit_id for h in through_ann.hits] == [h.text_unit_id for h in exact.hits]
        assert [round(h.score, 4) for h in through_ann.hits] == [round(h.score, 4) for h in exact.hits]
        assert all(h.kind != "reference" for h in through_ann.hits)
    assert len(asked) == 4
    searcher.index.ann = ann
    pdf_only = m.search("Leiden communities", mode="vector", top_k=5, answer=False,
                        filters=SearchFilters(file_types=["pdf"]))
    assert pdf_only.hits and all(h.document_id.endswith(".pdf") for h in pdf_only.hits) and len(asked) == 4


def test_an_add_and_a_remove_carry_the_tables_and_vector_index_over(tmp_path, samples_copy, make_config,
                                                                     monkeypatch):
    """A build that keeps most rows carries the previous generation's tables over (linked, the
    change written): the vector index is kept, the rows it lacks are searched exactly, the previous
    generation still reads as it was, and the searches are those of a full rebuild."""
    # One file of seven is more than the share of unindexed rows a carried index keeps serving.
    monkeypatch.setattr(builder, "ANN_STALE_SHARE", 1.0)
    held = tmp_path / "held"
    held.mkdir()
    moving = samples_copy / "lazygraphrag.md"
    shutil.move(moving, held / moving.name)
    config = make_config(search={"ann_min_units": 1}, graph={"enabled": False})
    m = Monjyu(tmp_path / "idx", config)
    first = m.index([samples_copy])
    assert "ann_index" in first.seconds
    shutil.move(held / moving.name, moving)
    added = m.index([samples_copy])
    assert added.added and "ann_index" not in added.seconds  # the index came along
    before = LanceStore(tmp_path / "idx" / "generations" / first.generation / "lancedb")
    assert before.count(TEXT_UNITS) == first.text_units  # untouched by the carry
    now = LanceStore(tmp_path / "idx" / "generations" / added.generation / "lancedb")
    assert now.unindexed_rows() == added.text_units - first.text_units
    fresh = Monjyu(tmp_path / "fresh", config)
    fresh.index([samples_copy])

    def ranked(index: Monjyu) -> list:
        return [[(h.text_unit_id, round(h.score, 4)) for h in index.search(q, mode=mode, top_k=5, answer=False).hits]
                for q in ("lazy graph retrieval", "Leiden communities", "検索拡張生成とは")
                for mode in ("vector", "keyword", "hybrid")]

    assert ranked(m) == ranked(fresh)
    assert any(h.document_id.endswith("lazygraphrag.md")
               for h in m.search("deferring LLM work to query time", mode="vector", top_k=3, answer=False).hits)
    moving.unlink()
    removed = m.index([samples_copy])
    assert removed.removed and removed.text_units == first.text_units and "ann_index" not in removed.seconds
    fresh_removed = Monjyu(tmp_path / "fresh-removed", config)
    fresh_removed.index([samples_copy])
    assert ranked(m) == ranked(fresh_removed)


def test_long_queries_are_bounded_and_too_long_ones_refused(sample_index):
    """A pasted abstract is served (embedding, phrases and graph seeds from its start, its most
    distinctive terms for BM25); a query above search.max_query_chars is refused at once."""
    abstract = " ".join(["Community detection with the Leiden algorithm groups noun phrases of a concept graph"] * 400)
    for mode in ("vector", "keyword", "hybrid", "graph"):
        assert sample_index.search(abstract, mode=mode, top_k=3, answer=False).hits, mode
    assert sample_index.hybrid_search(abstract, top_k=3, answer=False).items
    too_long = "x" * (sample_index.config.search.max_query_chars + 1)
    for call in (lambda: sample_index.search(too_long), lambda: sample_index.lazy_search(too_long),
                 lambda: sample_index.hybrid_search(too_long)):
        with pytest.raises(MonjyuError, match="max_query_chars"):
            call()


def test_a_query_that_is_not_text_is_refused_at_every_door(sample_index, tmp_path, cache_dir):
    """A lone surrogate (valid JSON, and Python's stand-in for a byte that is not UTF-8 in a shell
    argument) is a clear error naming the character, not a tokenizer's traceback."""
    for call in (lambda: sample_index.search("graph \udf3a communities"),
                 lambda: sample_index.lazy_search("graph \udf3a communities"),
                 lambda: sample_index.hybrid_search("graph \udf3a communities")):
        with pytest.raises(MonjyuError, match="character 7 is a lone surrogate"):
            call()
    proc = subprocess.run([sys.executable, "-m", "monjyu.cli", "search", b"graph \xff communities",
                           "--index", str(sample_index.index_dir)], capture_output=True, text=True,
                          env={**os.environ, "MONJYU_CACHE_DIR": str(cache_dir)}, timeout=600)
    assert proc.returncode != 0 and "lone surrogate" in proc.stderr and "Traceback" not in proc.stderr
    # The web app: the JSON escape of a surrogate, as any client may send it.
    from starlette.testclient import TestClient

    from monjyu.web import create_app

    web = TestClient(create_app(sample_index, allowed_hosts=["testserver"]))
    lines = web.post("/api/search", content='{"query": "graph \\udf3a communities", "mode": "hybrid"}',
                     headers={"content-type": "application/json"}).text.splitlines()
    assert any("lone surrogate" in json.loads(line).get("error", "") for line in lines), lines


def test_one_search_with_an_answer_reads_the_manifest_once(sample_index, monkeypatch):
    """The generation is looked up once a search (the reader's term weights use the one loaded),
    and a default search builds no engine, reader or searcher of its own: they are built once."""
    from monjyu.engines.answer import AnswerEngine
    from monjyu.engines.hybrid.engine import HybridRAGEngine
    from monjyu.engines.baseline import BaselineRAG
    from monjyu.engines.lazy import LazySearchEngine
    from monjyu.engines.reader import Reader
    from monjyu.retrieval import LoadedIndex, Searcher

    import monjyu.facade.workspace

    for mode in ("hybrid", "lazy", "hybridrag"):
        sample_index.ask("What is LazyGraphRAG?", mode)  # whatever is built once is built
    reads, built = [], []
    real = monjyu.facade.workspace.read_manifest
    monkeypatch.setattr(monjyu.facade.workspace, "read_manifest", lambda *a, **k: reads.append(1) or real(*a, **k))
    for cls in (AnswerEngine, BaselineRAG, HybridRAGEngine, LazySearchEngine, Reader, Searcher, LoadedIndex):
        init = cls.__init__
        monkeypatch.setattr(cls, "__init__", lambda self, *a, _init=init, _cls=cls, **k: built.append(_cls.__name__)
                            or _init(self, *a, **k))
    result = sample_index.search("How does LazyGraphRAG keep indexing cheap?")
    assert result.answer is not None and result.answer.citations and len(reads) == 1 and built == []
    for mode in ("lazy", "hybridrag", "auto"):  # each engine too, and auto's router with the engine it picks
        reads.clear()
        assert sample_index.ask("How does LazyGraphRAG keep indexing cheap?", mode).answer is not None
        assert len(reads) == 1 and built == [], (mode, built)


def test_hybridrag_and_the_router_build_their_engine_once(sample_index, monkeypatch):
    """HybridRAG's engine keeps nothing of a search: it is built once for the loaded generation,
    and the router classifies with the same one."""
    from monjyu.engines.hybrid.engine import HybridRAGEngine

    sample_index.hybrid_search("How are communities detected?", answer=False)
    built = []
    init = HybridRAGEngine.__init__
    monkeypatch.setattr(HybridRAGEngine, "__init__", lambda self, *a, **k: built.append(1) or init(self, *a, **k))
    first = sample_index.hybrid_search("Which algorithm detects hierarchical communities?")
    route = sample_index.route("What are the main themes across all documents?")
    assert first.hits and route["engine"] == "lazy" and built == []


def test_one_search_detects_the_language_once_and_works_out_each_view_once(sample_index, monkeypatch):
    """The door makes one Query; every stage, the rankers included, reads its language instead of
    detecting it again (a prefix of the question counts as the question), and each analysis of it
    (keyword terms, relevance terms, noun phrases, graph seeds, vector) is worked out once and read
    from the Query by the stages after the first (issue 54)."""
    import sys

    from monjyu.nlp.lang import detect_language
    from monjyu.query import Query

    question = "Which algorithm detects hierarchical communities in the graph?"
    sample_index.hybrid_search(question)  # every module of the path imported
    calls: list[tuple[str, str]] = []
    for name, module in list(sys.modules.items()):
        if name.startswith("monjyu.") and getattr(module, "detect_language", None) is detect_language:
            monkeypatch.setattr(module, "detect_language",
                                lambda text, name=name: calls.append((name, text)) or detect_language(text))
    worked_out: list[tuple[int, str]] = []
    alive: list[Query] = []  # each query analysed, kept so that no id is reused
    view = Query.view
    monkeypatch.setattr(Query, "view", lambda self, name, compute: view(
        self, name, lambda: alive.append(self) or worked_out.append((id(self), name)) or compute()))
    for lang, q in (("en", question), ("ja", "グラフの階層的なコミュニティを検出するアルゴリズムは？")):
        for mode in ("hybrid", "hybridrag", "lazy", "auto"):
            calls.clear()
            worked_out.clear()
            result = sample_index.ask(q, mode)
            assert result.answer is not None and result.answer.language == lang
            assert [name for name, text in calls if q.startswith(text) and len(text) > 10] == ["monjyu.query"], calls
            twice = [(alive[i].text[:40], n) for i, (q_id, n) in enumerate(worked_out) if worked_out.index((q_id, n)) < i]
            assert not twice and {"keyword terms", "vector"} <= {n for _, n in worked_out}, (mode, twice)


def test_control_characters_in_a_query_are_spaces(sample_index):
    """A form feed pasted from a PDF or a terminal's escape is no part of what is searched."""
    pasted = sample_index.search("Leiden\x0ccommunities\x00 graph\x1b[0m", mode="hybrid", answer=False)
    clean = sample_index.search("Leiden communities  graph [0m", mode="hybrid", answer=False)
    assert [h.text_unit_id for h in pasted.hits] == [h.text_unit_id for h in clean.hits] and pasted.hits
    with pytest.raises(MonjyuError, match="the query is empty"):
        sample_index.search("\x00\x07 \x1b")


def _resident_kb(array: np.ndarray) -> int:
    """Resident kB of the mapping that holds `array`'s data (/proc/self/smaps)."""
    address, inside = array.__array_interface__["data"][0], False
    with open("/proc/self/smaps") as fh:
        for line in fh:
            fields = line.split()
            if "-" in fields[0] and len(fields) >= 5:  # a mapping's header line: start-end perms ...
                start, end = (int(x, 16) for x in fields[0].split("-"))
                inside = start <= address < end
            elif inside and fields[0] == "Rss:":
                return int(fields[1])
    raise AssertionError("no mapping holds the array")


def test_unit_vectors_are_mapped_from_the_generation(sample_index, tmp_path):
    """A search process maps the generation's unit_vectors.npy (the table's vectors, row for row)
    rather than holding a copy, and a search hands the pages it mapped back (they stay in the page
    cache); a generation written before that file existed reads them from the table, with the same
    results."""
    from monjyu.index.builder import generation_dir
    from monjyu.retrieval import LoadedIndex, Searcher
    from monjyu.store import LanceStore
    from monjyu.store.unit_vectors import UNIT_VECTORS, scores_of_all

    m = read_manifest(sample_index.index_dir)
    gen = generation_dir(sample_index.index_dir, m.generation)
    mapped = LoadedIndex.load(gen, m.embedder_dim)
    assert not mapped.vectors.flags.writeable
    table = LanceStore(gen / "lancedb").units(["id", "vector"])
    assert mapped.columns["id"].tolist() == table["id"].to_pylist()
    assert np.array_equal(mapped.vectors, np.stack(table["vector"].to_numpy(zero_copy_only=False)))
    assert _resident_kb(mapped.vectors) > 0  # every page was just read
    searcher = Searcher(mapped, sample_index.config.search)
    ranked, _ = searcher.vector.rank(mapped.vectors[0], 5, None)
    assert ranked[0][0] == 0 and _resident_kb(mapped.vectors) == 0
    query = np.array(mapped.vectors[1])
    exact = np.asarray(mapped.vectors) @ query  # maps every page; scores_of_all hands each block back
    assert np.array_equal(scores_of_all(mapped.vectors, query, block=4), exact)
    assert _resident_kb(mapped.vectors) == 0
    old = tmp_path / "old"
    shutil.copytree(gen, old)
    (old / UNIT_VECTORS).unlink()
    read = LoadedIndex.load(old, m.embedder_dim)
    assert read.vectors.flags.writeable  # in memory
    assert np.array_equal(read.vectors, mapped.vectors)
    assert {c: v.tolist() for c, v in read.columns.items()} == {c: v.tolist() for c, v in mapped.columns.items()}


def test_bm25_built_from_the_terms_column_in_slices_scores_the_same(sample_index):
    """The build converts the terms column a slice at a time, each distinct term held once; the
    index scores exactly as one built from the whole column at once."""
    from monjyu.index.builder import generation_dir
    from monjyu.store import LanceStore
    from monjyu.store.bm25 import BM25Index

    m = read_manifest(sample_index.index_dir)
    terms = LanceStore(generation_dir(sample_index.index_dir, m.generation) / "lancedb").units(["terms"])["terms"]
    whole = BM25Index.build(terms.to_pylist())
    sliced = BM25Index.build_from_column(terms, rows=3)
    for query in (["leiden", "communiti"], ["bm25", "retriev"], ["検索"]):
        assert np.array_equal(whole.scores(query), sliced.scores(query))


def test_adjacent_units_of_a_section_come_back_as_one_passage(tmp_path, make_config):
    """search.passage_units: a unit ranked below an adjacent unit of the same section joins its
    passage (the text once, the overlap not repeated, each unit in `parts`); citations inside
    the passage name the unit (and page) they fall in."""
    from monjyu.engines.citations import citation_for
    from monjyu.engines.context import Source

    sentences = [f"The harbour of Port {name} handles {n} thousand containers of grain each year." for n, name in
                 enumerate(["Alder", "Birch", "Cedar", "Dogwood", "Elm", "Fir", "Gum", "Hazel", "Ivy", "Juniper"], start=3)]
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "ports.md").write_text("# Ports\n\n## Grain\n\n" + " ".join(sentences) + "\n")
    question = "How many thousand containers of grain does each harbour handle?"
    results = {}
    for units in (1, 2):
        m = Monjyu(tmp_path / "idx", make_config(chunking={"size": 40, "overlap": 10}, search={"passage_units": units}))
        m.index([tmp_path / "docs"])
        results[units] = m.search(question, mode="keyword", top_k=3, answer=False).hits
    assert all(not h.parts for h in results[1]) and len(results[1]) == 3
    joined = [h for h in results[2] if h.parts]
    assert joined and len(results[2]) == 3
    text = m.documents.get(joined[0].document_id)["text"]
    for hit in joined:
        span = text[hit.start_char:hit.end_char]
        assert len(hit.parts) == 2 and len(hit.text) == len(span) and hit.text.split() == span.split()
        first, second = hit.parts
        assert first["start_char"] == hit.start_char and second["end_char"] == hit.end_char
        assert first["start_char"] < second["start_char"] <= first["end_char"] + 2  # next to each other
        late = hit.text.rstrip().rsplit(". ", 1)[-1]  # its last sentence, in the second unit
        at = hit.start_char + hit.text.rindex(late)
        assert at >= first["end_char"]
        assert citation_for(Source(1, hit), late, at, at + len(late)).text_unit_id == second["text_unit_id"]
        assert citation_for(Source(1, hit), hit.text[:20], hit.start_char).text_unit_id == first["text_unit_id"]


def test_unchanged_files_are_not_read_again_to_hash_them(tmp_path, samples_copy, make_config, monkeypatch):
    from monjyu.index import builder

    m = Monjyu(tmp_path / "idx", make_config())
    m.index([samples_copy])
    hashed: list[str] = []
    real_hash = builder.file_sha256
    monkeypatch.setattr(builder, "file_sha256", lambda path: hashed.append(Path(path).name) or real_hash(path))
    assert m.index([samples_copy]).nothing_changed and hashed == []  # size and mtime as recorded
    note = samples_copy / "lazygraphrag.md"
    text = note.read_text(encoding="utf-8")
    note.write_text(text.replace("budget", "BUDGET", 1), encoding="utf-8")  # same size, new content
    os.utime(note, ns=(note.stat().st_atime_ns, note.stat().st_mtime_ns + 10**9))
    report = m.index([samples_copy])
    assert hashed == ["lazygraphrag.md"] and [Path(p).name for p in report.changed] == ["lazygraphrag.md"]
    os.utime(samples_copy / "reranking.docx")  # touched, not changed: hashed once, found the same
    hashed.clear()
    assert m.index([samples_copy]).nothing_changed and hashed == ["reranking.docx"]
