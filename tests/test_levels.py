"""Level 2 on demand: entities and relations the LLM extracts from the units lazy search kept,
linking units that share no noun phrase; kept in the index so no unit is sent twice; nothing
of it offline."""

from __future__ import annotations

import json
from collections.abc import Callable
import re
import signal
import sqlite3
import subprocess
import sys
import time

import pytest
from typer.testing import CliRunner

from monjyu import Monjyu
from monjyu.cli import app
from monjyu.config import load_config
from monjyu.errors import MonjyuError
from monjyu.levels import LevelTwo
from monjyu.store.level_records import SQLiteLevelRecords
from monjyu.llm import run_sync
from tests.llm_server import LLMTestServer, Scripted, echo_responder

DOCS = {
    "curie.txt": "Marie Curie founded the Radium Institute in Paris.",
    "school.txt": "The Flying University trained young women in Warsaw in secret.",
    "bread.txt": "Sourdough bread rises slowly because of wild yeast.",
}
QUESTION = "Where did the founder of the Radium Institute study?"
EXTRACTIONS = {  # what the "LLM" extracts from each passage
    "Radium Institute": {"entities": [{"name": "Marie Curie", "type": "person"},
                                      {"name": "Radium Institute", "type": "organisation"}],
                         "relations": [{"source": "Marie Curie", "target": "Flying University",
                                        "description": "she studied at the Flying University"}]},
    "Flying University": {"entities": [{"name": "Flying University", "type": "organisation"}], "relations": []},
}


def scripted(extractions: dict[str, dict], relevant: str) -> Callable[[dict], str]:
    """A responder for deepening tests: subqueries the question itself; relevance 8 for sentences
    matching `relevant` (a pattern), else 1; extraction `extractions` by a word of the passage;
    claims one per sentence; the rest echoed."""
    def respond(request: dict) -> str:
        system = request["messages"][0]["content"]
        user = request["messages"][-1]["content"]
        numbered = re.findall(r"^(\d+)\. (.*)$", user, re.M)
        if '"subqueries"' in system:
            return json.dumps({"subqueries": [user], "expanded_query": user})
        if '"scores"' in system:
            return json.dumps({"scores": [8 if re.search(relevant, s) else 1 for _, s in numbered]})
        if '"relations"' in system:
            return json.dumps(next((v for k, v in extractions.items() if k in user), {"entities": [], "relations": []}))
        if '"claims"' in system:
            return json.dumps({"claims": [{"statement": s, "sources": [int(i)]} for i, s in numbered]})
        return echo_responder(request)
    return respond


responder = scripted(EXTRACTIONS, "Radium Institute|Flying University")


@pytest.fixture
def server():
    with LLMTestServer(responder) as s:
        yield s


@pytest.fixture
def collection(tmp_path, make_config):
    folder = tmp_path / "docs"
    folder.mkdir()
    for name, text in DOCS.items():
        (folder / name).write_text(text, encoding="utf-8")
    m = Monjyu(tmp_path / "idx", make_config())
    m.index([folder])
    return m


def extraction_requests(server) -> list[str]:
    return [r.body["messages"][-1]["content"] for r in server.requests if '"relations"' in r.body["messages"][0]["content"]]


def with_llm(m: Monjyu, server, make_config, **lazy) -> Monjyu:
    return Monjyu(m.index_dir, make_config(llm=server.config(), lazy=lazy))


def test_the_noun_phrase_graph_does_not_link_the_two_passages(collection):
    graph = collection.workspace.current().searcher.index.graph
    rows = {collection.workspace.current().searcher.index.columns["text"][r][:10]: r for r in range(3)}
    curie, school = graph.incidence[rows["Marie Curi"]].indices, graph.incidence[rows["The Flying"]].indices
    assert not set(curie) & set(school)


def test_a_relation_the_llm_extracts_leads_to_a_passage_sharing_no_phrase(collection, server, make_config):
    m = with_llm(collection, server, make_config)
    # One relevance test: the passage that names the Radium Institute, and nothing else.
    first = m.lazy_search(QUESTION, budget=1)
    assert first.levels_reached == [0, 1, 2, 3]  # lazy.max_level 4: its entities are Level 3's
    kept = {h.text[:10] for h in first.hits}
    assert kept == {"Marie Curi", "The Flying"}
    assert first.level2["units_sent"] == 1 and first.level2["relevant"] == 1
    assert [q[:10] for q in extraction_requests(server)] == ["Marie Curi"]
    assert first.usage_by_level["2"]["calls"] >= 2 and first.usage_by_level["1"]["calls"] >= 1
    assert sum(u["calls"] for u in first.usage_by_level.values()) == first.usage["calls"] == len(server.requests)
    # The same question again sends no passage to extraction: the index keeps what was extracted.
    again = m.lazy_search(QUESTION, budget=1)
    assert again.level2["units_sent"] == 0 and again.level2["units_reused"] == 1
    assert len(extraction_requests(server)) == 1 and set(again.kept_text_unit_ids) == set(first.kept_text_unit_ids)


def test_level_one_is_asked_for_or_offline_nothing_deepens(collection, server, make_config):
    m = with_llm(collection, server, make_config)
    capped = m.lazy_search(QUESTION, budget=1, level=1)
    assert capped.levels_reached == [0, 1] and not capped.level2 and not extraction_requests(server)
    offline = collection.lazy_search(QUESTION, budget=1)
    assert offline.levels_reached == [0, 1] and not offline.level2 and not offline.usage_by_level
    with pytest.raises(MonjyuError, match="LLM"):
        collection.lazy_search(QUESTION, level=2)
    assert not (collection.index_dir / "levels").exists()


def test_a_failed_extraction_keeps_what_was_done_and_resumes(collection, server):
    level2 = LevelTwo(server.make_llm(max_retries=0, concurrency=1), SQLiteLevelRecords(collection.index_dir))
    texts = list(DOCS.values())
    server.push(Scripted(), Scripted(status=500), Scripted(status=500))  # the second and third passage fail
    done, run = run_sync(level2.extract(texts))
    assert (run.sent, run.failed, len(done)) == (3, 2, 1)
    assert collection.search("Radium Institute", mode="hybrid").hits  # the index reads as before
    done, run = run_sync(LevelTwo(server.make_llm(), SQLiteLevelRecords(collection.index_dir)).extract(texts))
    assert (run.sent, run.reused, run.failed, len(done)) == (2, 1, 0, 3)


def llm_yaml(tmp_path, server, cache_dir, **llm) -> str:
    path = tmp_path / "monjyu.yaml"
    settings = {"provider": "openai", "base_url": server.v1, "model": "test-model",
                "api_key_env": "MONJYU_TEST_LLM_KEY", "timeout_s": 5, "max_retries": 0, **llm}
    path.write_text(json.dumps({"cache_dir": str(cache_dir), "llm": settings}), encoding="utf-8")
    return str(path)


def test_an_eager_level_two_build_estimates_first_and_serves_later_searches(collection, server, tmp_path, cache_dir):
    config = llm_yaml(tmp_path, server, cache_dir)
    docs, idx = str(tmp_path / "docs"), str(collection.index_dir)
    first = CliRunner().invoke(app, ["index", docs, "--index", idx, "--level", "2", "--config", config])
    assert first.exit_code == 0, first.output
    assert "3 passages to write" in first.output and "--yes" in first.output and not extraction_requests(server)
    done = CliRunner().invoke(app, ["index", docs, "--index", idx, "--level", "2", "--yes", "--config", config, "--json"])
    assert done.exit_code == 0, done.output
    report = json.loads(done.stdout)["level2"]
    assert report["sent"] == 3 and report["estimate"]["items"] == 3 and report["usage"]["calls"] == 3
    status = json.loads(CliRunner().invoke(app, ["status", "--index", idx, "--config", config, "--json"]).stdout)
    level2 = status["levels"]["2"]
    assert level2["model"].startswith("openai/test-model") and (level2["units_extracted"], level2["share"]) == (3, 1.0)
    # A search deepening after the eager build sends nothing more.
    m = Monjyu(collection.index_dir, load_config(config))
    assert m.lazy_search(QUESTION, budget=1).level2["units_sent"] == 0 and len(extraction_requests(server)) == 3
    refused = CliRunner().invoke(app, ["index", docs, "--index", idx, "--level", "2"])  # no LLM configured
    assert refused.exit_code == 2 and "LLM" in refused.output


def test_a_killed_eager_build_leaves_the_index_readable_and_resumes(collection, server, tmp_path, cache_dir):
    config = llm_yaml(tmp_path, server, cache_dir, concurrency=1)
    server.push(*[Scripted(delay_s=1.5) for _ in range(3)])
    cmd = [sys.executable, "-m", "monjyu.cli", "index", str(tmp_path / "docs"), "--index", str(collection.index_dir),
           "--level", "2", "--yes", "--config", config]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    store = collection.index_dir / "levels" / "level2.sqlite"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (store.exists() and _records(store) >= 1):
        time.sleep(0.1)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert 1 <= _records(store) < 3
    assert collection.search("Radium Institute", mode="hybrid").hits
    m = Monjyu(collection.index_dir, load_config(config))
    done = m.levels.build(2)
    assert done["sent"] == 3 - done["reused"] and done["reused"] >= 1 and m.levels.status()["2"]["share"] == 1.0


def _records(path) -> int:
    """Extractions stored so far; 0 while the building process has created the file but not yet
    its table (polling can land between the two)."""
    with sqlite3.connect(str(path)) as db:
        if not db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'extractions'").fetchone():
            return 0
        return db.execute("SELECT count(*) FROM extractions").fetchone()[0]


GLOBAL = "What are the main themes across these papers?"


def report_responder(request: dict) -> str:
    """Reports: a title and two claims citing the first two sentences; relevance: every claim 8;
    the rest as `responder` answers."""
    system = request["messages"][0]["content"]
    user = request["messages"][-1]["content"]
    numbered = re.findall(r"^(\d+)\. (.*)$", user, re.M)
    if '"summary"' in system:
        return json.dumps({"title": "Report on " + user.splitlines()[0][11:], "summary": "What it is about.",
                           "claims": [{"statement": s, "sources": [int(i)]} for i, s in numbered[:2]]})
    if '"scores"' in system:
        return json.dumps({"scores": [8 for _ in numbered]})
    return responder(request)  # extraction, claims and the answer as above


def report_requests(server) -> int:
    return sum('"summary"' in r.body["messages"][0]["content"] for r in server.requests)


def test_global_search_answers_from_reports_it_writes_once_within_its_budget(tmp_path, samples_copy, make_config):
    offline = Monjyu(tmp_path / "idx", make_config())
    offline.index([samples_copy])
    with LLMTestServer(report_responder) as server:
        m = Monjyu(tmp_path / "idx", make_config(llm=server.config(),
                                                 lazy={"report_communities": 3, "max_reports": 2}))
        first = m.lazy_search(GLOBAL)
        assert first.levels_reached == [0, 1, 4] and first.stop_reason == "reports"
        assert (first.level4["reports_written"], first.level4["reports_read"]) == (2, 0) and report_requests(server) == 2
        assert first.answer.kind == "llm" and first.citations
        # It cites the passages the reports' claims rest on.
        cited_by_reports = {u for c in first.claims for u in c.text_unit_ids}
        assert {c.text_unit_id for c in first.citations} <= cited_by_reports
        assert all(r["title"].startswith("Report on ") for r in first.reports)
        # The map step names each community by its report, or, where its report is missing (the
        # third: over this search's max_reports), by its offline theme label.
        titles = [v["title"] for v in first.communities_visited]
        assert len(titles) == 3 and [v["report"] for v in first.communities_visited] == [True, True, False]
        assert all(t.startswith("(report) Report on ") for t in titles[:2])
        assert titles[2] and not titles[2].startswith("(report)")
        assert first.usage_by_level["4"]["calls"] == len(server.requests) and first.usage_by_level["1"]["calls"] == 0
        # The next question builds the missing report and reads the others; then nothing is written.
        second = m.lazy_search(GLOBAL)
        assert (second.level4["reports_written"], second.level4["reports_read"]) == (1, 2)
        third = m.lazy_search("What are the main topics of the collection?")
        assert third.level4["reports_written"] == 0 and report_requests(server) == 3
        # Coverage and the community view.
        total = m.levels.status()["4"]["communities"]
        assert m.levels.status()["4"]["communities_reported"] == min(3, total)
        community = m.graph.community(first.reports[0]["community_id"])
        assert community["report"]["title"] == first.reports[0]["title"]
    assert offline.lazy_search(GLOBAL).levels_reached == [0, 1]  # offline: themes, as before
    assert offline.graph.community(first.reports[0]["community_id"])["report"] is None


def test_an_eager_level_four_build_writes_every_report_the_search_then_reads(tmp_path, samples_copy, make_config):
    Monjyu(tmp_path / "idx", make_config()).index([samples_copy])
    with LLMTestServer(report_responder) as server:
        m = Monjyu(tmp_path / "idx", make_config(llm=server.config()))
        estimate = m.levels.estimate(4)
        total = m.levels.status()["4"]["communities"]
        assert estimate["items"] == total >= 1 and estimate["prompt_tokens"] > 0 and not server.requests
        done = m.levels.build(4)
        assert (done["sent"], done["failed"]) == (total, 0) and report_requests(server) == total
        assert m.levels.status()["4"]["share"] == 1.0 and m.levels.estimate(4)["items"] == 0
        result = m.lazy_search(GLOBAL)
        assert result.level4["reports_written"] == 0 and result.level4["reports_read"] >= 1
        assert report_requests(server) == total


def test_the_mcp_lazy_search_tool_deepens_with_its_level(collection, server, tmp_path, cache_dir):
    from anyio.from_thread import start_blocking_portal
    from mcp import Client, StdioServerParameters

    config = llm_yaml(tmp_path, server, cache_dir)
    params = StdioServerParameters(command=sys.executable, env={"MONJYU_TEST_LLM_KEY": "k"},
                                   args=["-m", "monjyu.cli", "serve", "--index", str(collection.index_dir),
                                         "--config", config])
    with start_blocking_portal() as portal, portal.wrap_async_context_manager(Client(params)) as client:
        deep = portal.call(client.call_tool, "lazy_search", {"query": QUESTION, "budget": 1, "level": 2})
        capped = portal.call(client.call_tool, "lazy_search", {"query": QUESTION, "budget": 1, "level": 1})
        three = portal.call(client.call_tool, "lazy_search", {"query": QUESTION, "budget": 1, "level": 3})
        five = portal.call(client.call_tool, "lazy_search", {"query": QUESTION, "level": 5})
    assert deep.structured_content["levels_reached"] == [0, 1, 2] and deep.structured_content["level2"]["relevant"] == 1
    assert capped.structured_content["levels_reached"] == [0, 1]
    assert three.structured_content["levels_reached"] == [0, 1, 2, 3]
    assert five.is_error and "level" in five.content[0].text


def test_removing_a_document_drops_what_levels_two_and_four_hold_of_it(tmp_path, samples_copy, make_config):
    Monjyu(tmp_path / "idx", make_config()).index([samples_copy])
    with LLMTestServer(report_responder) as server:
        m = Monjyu(tmp_path / "idx", make_config(llm=server.config()))
        m.levels.build(4)
        m.levels.build(2)
        before = m.levels.status()
        columns = m.workspace.current().searcher.index.columns
        removed = {u for u, d in zip(columns["id"], columns["document_id"]) if d == "papers/lazygraphrag.md"}
        assert removed and before["2"]["share"] == 1.0
        (samples_copy / "lazygraphrag.md").unlink()
        m.index([samples_copy])
        after = m.levels.status()
        assert after["2"]["units"] == before["2"]["units"] - len(removed) and after["2"]["share"] == 1.0
        result = m.lazy_search(GLOBAL)
        assert result.claims and not {u for c in result.claims for u in c.text_unit_ids} & removed
