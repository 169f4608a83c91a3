"""HybridRAG on the real sample index: every stage runs (classification, triple search with the
graph mode chosen by query type, reranking, CRAG, selective generation), offline and with an LLM
and a rerank API served on 127.0.0.1."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from pydantic import ValidationError

from monjyu import Monjyu
from monjyu.engines.classify import rule_classify
from monjyu.query import Query
from monjyu.errors import MonjyuError
from monjyu import SearchFilters
from monjyu.schemas import SearchOptions, SearchQuery, SearchResult
from tests.llm_server import LLMTestServer, Scripted, llm_server  # noqa: F401  (fixture)

LABELLED = Path(__file__).parent / "data" / "query_types.jsonl"


def test_rule_classifier_on_the_labelled_queries():
    rows = [json.loads(line) for line in LABELLED.read_text(encoding="utf-8").splitlines()]
    assert len(rows) >= 60 and {r["type"] for r in rows} == {"local", "global", "relationship", "hybrid"}
    assert any("\u3040" <= ch <= "\u30ff" for r in rows for ch in r["query"])  # Japanese queries too
    correct = sum(rule_classify(Query.of(r["query"]), []).type == r["type"] for r in rows)
    assert correct / len(rows) >= 0.9


@pytest.mark.parametrize("query,kind,mode", [
    ("Which algorithm detects hierarchical communities?", "local", "entity"),
    ("What are the main themes across these documents?", "global", "community"),
    ("What is the relationship between BM25 and dense retrieval?", "relationship", "relation"),
])
def test_all_stages_run_with_the_graph_mode_of_the_query_type(sample_index, query, kind, mode):
    r = sample_index.hybrid_search(query, top_k=3, answer=False)
    assert r.classification["type"] == kind and r.strategies["graph"]["mode"] == mode
    assert set(r.strategies) == {"keyword", "semantic", "graph"}
    assert all(m["count"] > 0 and m["time_ms"] >= 0 for m in r.strategies.values())
    assert r.reranker == "local" and all(i.scores["rerank"] is not None for i in r.items)
    assert r.weights == dict(zip(("keyword", "semantic", "graph"), sample_index.config.hybrid.weights[kind]))
    for item in r.items:
        assert item.scores["combined"] > 0
        for h in item.highlights:
            assert item.hit.text[h["start"]:h["end"]] == h["text"]
    # The public response (CONV-03-05): every score 0-1 (combined: share of the best fused score).
    out = r.to_dict()
    assert all(0 < x["relevance"]["combined"] <= 1 for x in out["results"]) and out["query"]["text"] == query
    chunks = [x for x in out["results"] if x["type"] == "chunk"]
    assert [x["id"] for x in chunks] == [i.hit.text_unit_id for i in r.items]
    scores = [x["score"] for x in out["results"]]
    assert scores == sorted(scores, reverse=True)  # the score a caller sees orders the list
    communities = [x for x in out["results"] if x["type"] == "community"]
    assert bool(communities) == (mode == "community")
    for c in communities:  # labelled by their representative phrases, just before their best passage
        assert c["content"]["summary"] and c["sources"]["community_id"]
        nxt = out["results"][out["results"].index(c) + 1:]
        assert any(x["id"] == c["sources"]["chunk_id"] and x["score"] == c["score"] for x in nxt)
    for x in chunks:  # every field filled from the index
        assert x["sources"]["entity_ids"] and x["sources"]["community_ids"]
        assert x["sources"]["community_id"] == x["sources"]["community_ids"][-1]
        assert x["metadata"]["source_path"] and x["metadata"]["end_char"] > x["metadata"]["start_char"]
    assert out["strategies"]["graph"]["enabled"] and out["classification"]["type"] == kind
    SearchResult.model_validate(r.response.model_dump(by_alias=True))  # camelCase round trip


def test_results_carry_neighbouring_text_and_metadata_on_request(sample_index):
    r = sample_index.hybrid_search("How does LazyGraphRAG keep indexing cheap?", top_k=10, answer=False).to_dict()
    a = next(x for x in r["results"] if x["sources"]["file_id"].endswith("lazygraphrag.md"))  # 2 units
    doc = sample_index.documents.get(a["sources"]["file_id"])
    first, second = doc["text_units"][:2]
    assert a["content"]["context_before"] or a["content"]["context_after"]
    text = doc["text"]
    if a["id"] == first["id"]:  # the next unit's text beyond this one
        assert text[first["end_char"]:].lstrip().startswith(a["content"]["context_after"])
    else:
        assert text[:second["start_char"]].rstrip().endswith(a["content"]["context_before"])
    bare = sample_index.hybrid_search(SearchQuery(text="LazyGraphRAG indexing cost",
                                                  options=SearchOptions(include_metadata=False)), answer=False)
    assert all(x["metadata"] is None for x in bare.to_dict()["results"])


def test_weights_rerank_switch_filters_and_pages(sample_index):
    q = "How do BM25 and dense retrieval differ?"
    custom = {"keyword": 0.5, "semantic": 0.5, "graph": 0.0}
    r = sample_index.hybrid_search(q, top_k=3, weights=custom, rerank=False, answer=False)
    assert r.weights == custom and "graph" not in r.strategies and r.reranker is None
    assert all(i.scores["rerank"] is None for i in r.items)
    assert r.response.results[0].score == 1.0  # no reranking: the best fused result comes first
    with pytest.raises(MonjyuError, match="sum"):
        sample_index.hybrid_search(q, weights={"keyword": 0.5, "semantic": 0.4, "graph": 0.4})
    first = sample_index.hybrid_search(q, top_k=2, answer=False)
    second = sample_index.hybrid_search(q, top_k=2, offset=2, answer=False)
    assert not {h.text_unit_id for h in first.hits} & {h.text_unit_id for h in second.hits}
    assert [h.rank for h in second.hits] == [3, 4]
    md = sample_index.hybrid_search(q, top_k=5, filters=SearchFilters(file_types=["md"]), answer=False)
    assert md.hits and all(h.source_path.endswith(".md") for h in md.hits)
    with pytest.raises(MonjyuError, match="top_k"):
        sample_index.hybrid_search(q, top_k=101)


def test_request_schema_filters_and_options(sample_index):
    """A SearchQuery request drives the engine: type skips classification, strategies and
    weights set the fusion, entity types and min relevance filter, limit/offset page."""
    q = "Which algorithm detects hierarchical communities?"
    request = SearchQuery.model_validate({
        "text": q, "type": "relationship",
        "filters": {"entityTypes": ["misc"], "minRelevance": 0.0},
        "options": {"limit": 3, "strategies": ["keyword", "semantic"], "rerankEnabled": False}})
    r = sample_index.hybrid_search(request, answer=False)
    assert r.classification["method"] == "request" and r.classification["type"] == "relationship"
    assert r.weights["graph"] == 0.0 and abs(sum(r.weights.values()) - 1) < 1e-9 and r.reranker is None
    graph = sample_index.workspace.current().searcher.index.graph
    proper_units = graph.units_of_types(["MISC"])  # proper nouns (the index types them by part of speech)
    rows = sample_index.workspace.current().searcher.index.columns["id"].tolist()
    assert r.hits and all(proper_units[rows.index(h.text_unit_id)] for h in r.hits)
    assert len(r.hits) <= 3 and r.response.query == request
    # min_relevance keeps the results scoring at least that share of the best one
    everything = sample_index.hybrid_search(q, top_k=20, rerank=False, answer=False)
    strict = sample_index.hybrid_search(q, top_k=20, rerank=False, answer=False,
                                        filters=SearchFilters(min_relevance=0.9))
    assert 1 <= len(strict.hits) < len(everything.hits)
    assert all(x.relevance.combined >= 0.9 for x in strict.response.results)
    # The path glob travels in the public request too, and is echoed in it
    md_only = sample_index.hybrid_search(q, top_k=5, answer=False, filters=SearchFilters(path_glob="*.md"))
    assert md_only.hits and all(h.document_id.endswith(".md") for h in md_only.hits)
    assert md_only.response.query.filters.path_glob == "*.md"
    with pytest.raises(ValidationError, match="entity_types"):
        SearchFilters(entity_types=["wizard"])


def test_crag_answers_when_the_context_suffices(sample_index):
    r = sample_index.hybrid_search("Which algorithm detects hierarchical communities?", top_k=3, crag=True)
    assert r.crag["grades"]["correct"] >= 1 and r.crag["sufficiency"]["sufficient"]
    assert all(i.grade in ("correct", "ambiguous") for i in r.items)
    assert all(i.strips for i in r.items if i.grade == "ambiguous")
    assert r.answer.kind == "extractive" and "Leiden" in r.answer.text


@pytest.mark.parametrize("question", ["What does reranking do?", "How is retrieval-augmented generation evaluated?"])
def test_crag_answers_cite_the_characters_they_quote(sample_index, question):
    """A partly relevant passage is answered from its relevant strips, each cited where it stands in
    the paper (the strips joined by " … " had shifted the characters, and glued a title to a sentence)."""
    r = sample_index.hybrid_search(question, top_k=5, crag=True)
    ambiguous = {i.hit.text_unit_id for i in r.items if i.grade == "ambiguous"}
    assert ambiguous & {c.text_unit_id for c in r.answer.citations}
    for c in r.answer.citations:
        text = sample_index.documents.get(c.document_id, max_chars=10**7)["text"]
        assert " ".join(text[c.start_char:c.end_char].split()) == " ".join(c.snippet.split())
        assert not c.snippet.startswith("…") and "…" not in r.answer.text


def test_an_llm_reads_a_partly_relevant_passage_as_its_strips_without_the_blanks(sample_index):
    """The strips keep their characters' places for the reader's citations; the LLM's prompt closes
    the blanks up."""
    from monjyu.engines.context import Source, format_sources
    from monjyu.engines.hybrid.engine import _strip_hit

    r = sample_index.hybrid_search("How is retrieval-augmented generation evaluated?", top_k=5, crag=True)
    item = next(i for i in r.items if i.grade == "ambiguous" and len(i.strips) >= 2)
    hit = _strip_hit(item)
    assert "   " in hit.text.strip()  # text left out between two strips
    assert all(hit.text.find(s) == item.hit.text.find(s) >= 0 for s in item.strips)
    prompt = format_sources([Source(1, hit)])
    assert "  " not in prompt and "\n\n\n" not in prompt
    assert all(" ".join(s.split()) in " ".join(prompt.split()) for s in item.strips)


def test_crag_corrects_then_abstains_when_nothing_is_relevant(sample_index):
    r = sample_index.hybrid_search("What is the boiling point of mercury in kelvin?", top_k=3, crag=True)
    assert r.crag["grades"]["correct"] == 0 and r.crag["rewritten_query"]  # the corrective search ran
    assert r.items == [] and not r.crag["sufficiency"]["sufficient"]
    assert r.answer.kind == "insufficient" and "abstained" in r.answer.note


def test_llm_classifier_grader_and_sufficiency(sample_index, make_config, llm_server):  # noqa: F811
    llm_server.push(
        Scripted(content=json.dumps({"type": "global", "confidence": 0.9, "entities": ["leiden"], "relation_hint": ""})),
        Scripted(content=json.dumps({"grades": [{"index": i, "grade": "incorrect", "score": 0.1} for i in range(30)]})),
        Scripted(content=json.dumps({"queries": ["community detection algorithms"]})),  # CRAG's rewrite
        Scripted(content=json.dumps({"grades": [{"index": 0, "grade": "correct", "score": 0.9}]})),
        Scripted(content=json.dumps({"sufficient": False, "confidence": 0.7, "missing": ["the year it was published"]})),
    )
    m = Monjyu(sample_index.index_dir, make_config(llm=llm_server.config()))
    r = m.hybrid_search("Which algorithm detects hierarchical communities?", top_k=3, crag=True)
    assert r.classification["type"] == "global" and r.classification["method"].startswith("llm:")
    assert r.strategies["graph"]["mode"] == "community"
    assert r.crag["rewritten_query"] == "community detection algorithms"
    assert r.crag["sufficiency"]["method"].startswith("llm:")
    assert r.answer.kind == "insufficient" and "the year it was published" in r.answer.note
    assert r.usage["calls"] == len(llm_server.requests) == 5


class _RerankAPI(BaseHTTPRequestHandler):
    """A rerank endpoint in the Cohere/Jina shape: scores = number of times 'Leiden' occurs."""

    seen: list[dict] = []

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _RerankAPI.seen.append({"path": self.path, "auth": self.headers.get("Authorization"), **body})
        results = [{"index": i, "relevance_score": d.count("Leiden")} for i, d in enumerate(body["documents"])]
        payload = json.dumps({"results": results}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args) -> None:
        pass


def test_rerank_api_provider(sample_index, make_config, monkeypatch):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _RerankAPI)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("RERANK_API_KEY", "rk-secret")
    try:
        cfg = make_config(rerank={"provider": "api", "model": "rerank-test", "weight": 1.0,
                                  "base_url": f"http://127.0.0.1:{server.server_address[1]}/v1"})
        r = Monjyu(sample_index.index_dir, cfg).hybrid_search("graph clustering", top_k=3, answer=False)
    finally:
        server.shutdown()
    call = _RerankAPI.seen[-1]
    assert call["path"] == "/v1/rerank" and call["model"] == "rerank-test" and call["auth"] == "Bearer rk-secret"
    assert r.reranker == "api:rerank-test" and "Leiden" in r.items[0].hit.text


def test_cli_hybridrag_and_auto_routing(sample_index, cache_dir):
    import os
    import subprocess
    import sys

    env = {**os.environ, "MONJYU_CACHE_DIR": str(cache_dir)}

    def run(*args):
        proc = subprocess.run([sys.executable, "-m", "monjyu.cli", "search", *args, "--index", str(sample_index.index_dir),
                               "--json"], capture_output=True, text=True, env=env, timeout=300)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)

    out = run("How do BM25 and dense retrieval differ?", "--mode", "hybridrag", "--weights", "0.2,0.2,0.6", "--crag")
    assert out["engine"] == "hybridrag" and out["weights"]["graph"] == 0.6 and out["crag"]["grades"]
    themes = run("What are the main themes across these documents?", "--mode", "auto")
    assert themes["engine"] == "lazy" and themes["coverage"]["heading"] == themes["answer"]["text"].split("\n")[0]
    assert themes["themes"][0]["phrases"][0]["label"] == themes["themes"][0]["label"][0]  # with its shares
    assert run("What is nDCG@10?", "--mode", "auto")["engine"] == "hybrid"  # baseline RAG in the configured mode


def test_local_reranker_uses_index_vectors_and_prefers_the_stating_sentence(sample_index):
    """The local reranker scores with the passages' stored vectors (nothing embedded at query
    time) and the question terms its best sentence names."""
    from monjyu.engines.hybrid.rerank import LocalReranker

    manifest, searcher = sample_index.workspace.current().manifest, sample_index.workspace.current().searcher
    scorer = sample_index.workspace.answers().scorer
    embedded: list[str] = []
    inner = scorer.embed
    scorer.embed = lambda texts: embedded.extend(texts) or inner(texts)
    try:
        query = Query.of("Which algorithm detects communities?")
        qv = sample_index.workspace.current().embed_query(query)
        texts = ["Communities are groups. The Leiden algorithm detects communities in graphs.",
                 "Graphs have communities; algorithms vary; detection is a topic of study."]
        vectors = scorer.embed(texts)
        embedded.clear()
        scores = LocalReranker(scorer).scores(query, qv, texts, vectors)
        assert not embedded and scores[0] > scores[1]
        assert LocalReranker(scorer).scores(query, qv, texts).tolist() == scores.tolist()  # embeds when not given
        assert embedded == texts
    finally:
        scorer.embed = inner


def test_the_trained_reader_model_reranks_offline(sample_index):
    """rerank.provider: cross-encoder with no rerank.model is the project's own model: no
    download, no sentence-transformers; a passage scores as its best sentence."""
    from monjyu import Monjyu

    config = sample_index.config.model_copy(deep=True)
    config.rerank.provider = "cross-encoder"
    m = Monjyu(sample_index.index_dir, config)
    r = m.hybrid_search("Which algorithm detects hierarchical communities?", top_k=3, answer=False)
    assert r.reranker == "cross-encoder:monjyu-reader" and all(i.scores["rerank"] is not None for i in r.items)
    assert any("Leiden" in i.hit.text for i in r.items)
