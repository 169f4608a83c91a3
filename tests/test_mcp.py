"""The MCP server as a client sees it: the SDK's real client, a real server process over stdio and
over streamable HTTP on 127.0.0.1, the real sample index."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from anyio.from_thread import BlockingPortal, start_blocking_portal
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError
from typer.testing import CliRunner

from monjyu import SearchFilters
from monjyu.api import ALL_MODES
from monjyu.cli import app, serve_main

from .test_options import OPTION_CASES, QUERY, expect

TOOLS = {"search", "lazy_search", "converse", "get_document", "list_documents", "papers", "paper", "missing_works",
         "bibtex", "index_status", "index"}
SECRET = "sk-monjyu-test-secret-0123456789"  # an API key in the server's environment must never come back


@dataclass
class Session:
    """A connected MCP client driven from sync tests through an anyio portal."""

    portal: BlockingPortal
    client: Client

    def call(self, tool: str, arguments: dict | None = None):
        return self.portal.call(self.client.call_tool, tool, arguments or {})

    def ok(self, tool: str, arguments: dict | None = None) -> dict:
        result = self.call(tool, arguments)
        assert not result.is_error, result.content[0].text
        assert result.structured_content == json.loads(result.content[0].text)
        return result.structured_content

    def error(self, tool: str, arguments: dict | None = None) -> str:
        result = self.call(tool, arguments)
        assert result.is_error, f"{tool}({arguments}) should have failed"
        text = result.content[0].text
        assert "Traceback" not in text and SECRET not in text
        return text


def server_args(index_dir: Path, *extra: str) -> list[str]:
    return ["-m", "monjyu.cli", "serve", "--index", str(index_dir), *extra]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, process: subprocess.Popen, log: Path, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the MCP server exited with {process.returncode}: {log.read_text()}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise TimeoutError(f"the MCP server did not listen on port {port} within {timeout}s")


@pytest.fixture(scope="module")
def portal():
    with start_blocking_portal() as p:
        yield p


@pytest.fixture(scope="module", params=["stdio", "http"])
def mcp(request, portal, sample_index, cache_dir, tmp_path_factory) -> Session:
    """One server process per transport for the module, serving the sample index."""
    env = {"MONJYU_CACHE_DIR": str(cache_dir), "OPENAI_API_KEY": SECRET}
    cwd = sample_index.index_dir.parent
    if request.param == "stdio":
        params = StdioServerParameters(command=sys.executable, args=server_args(sample_index.index_dir), env=env, cwd=cwd)
        with portal.wrap_async_context_manager(Client(params, read_timeout_seconds=300)) as client:
            yield Session(portal, client)
        return
    port = free_port()
    log = tmp_path_factory.mktemp("mcp-http") / "server.log"
    with log.open("w") as stderr:
        process = subprocess.Popen([sys.executable, *server_args(sample_index.index_dir, "--transport", "http",
                                                                 "--port", str(port))],
                                   env={**os.environ, **env}, cwd=cwd, stderr=stderr)
    try:
        wait_for_port(port, process, log)
        with portal.wrap_async_context_manager(Client(f"http://127.0.0.1:{port}/mcp", read_timeout_seconds=300)) as client:
            yield Session(portal, client)
    finally:
        process.terminate()
        process.wait(timeout=30)


# ------------------------------------------------------------------ discovery
def test_every_tool_is_listed_with_its_input_schema(mcp):
    tools = {t.name: t for t in mcp.portal.call(mcp.client.list_tools).tools}
    assert set(tools) == TOOLS
    search = tools["search"].input_schema
    assert search["required"] == ["query"]
    assert "maxLength" not in search["properties"]["query"] and search["properties"]["query"]["minLength"] == 1
    assert search["properties"]["limit"]["maximum"] == 100 and search["properties"]["limit"]["minimum"] == 1
    assert "hybridrag" in json.dumps(search["properties"]["mode"])
    assert {"document_ids", "file_types", "date_from", "date_to"} <= set(search["$defs"]["SearchFilters"]["properties"])
    assert tools["get_document"].input_schema["required"] == ["document_id"]
    writes = {"converse", "index"}  # a kept conversation's turn; files added to the index
    for name, tool in tools.items():
        assert tool.annotations.read_only_hint == (name not in writes), name
        assert tool.annotations.destructive_hint is not True and tool.annotations.open_world_hint is False
    assert "session" not in tools["search"].input_schema["properties"]
    assert tools["converse"].input_schema["required"] == ["query", "session"]
    assert all(t.description for t in tools.values())


# ------------------------------------------------------------------ search
def test_search_returns_ranked_passages_and_a_cited_answer(mcp):
    out = mcp.ok("search", {"query": "Which algorithm detects communities in the concept graph?", "limit": 3})
    assert out["engine"] == "hybrid" and out["mode"] == "hybrid"
    assert len(out["hits"]) == 3 and [h["rank"] for h in out["hits"]] == [1, 2, 3]
    assert any("Leiden" in h["text"] for h in out["hits"])
    assert out["answer"]["kind"] == "extractive" and out["answer"]["citations"]
    page2 = mcp.ok("search", {"query": "Which algorithm detects communities in the concept graph?", "limit": 3,
                              "offset": 3, "answer": False})
    assert page2["answer"] is None and [h["rank"] for h in page2["hits"]] == [4, 5, 6]
    assert not {h["text_unit_id"] for h in page2["hits"]} & {h["text_unit_id"] for h in out["hits"]}


@pytest.mark.parametrize("mode", ["vector", "keyword", "graph"])
def test_search_modes(mcp, mode):
    out = mcp.ok("search", {"query": "LazyGraphRAG の索引", "mode": mode, "limit": 2, "answer": False})
    assert out["mode"] == mode and out["hits"]


def test_hybridrag_and_auto_modes(mcp):
    args = {"query": "How are reranking and reciprocal rank fusion related?", "mode": "hybridrag", "limit": 2,
            "weights": {"keyword": 0.2, "semantic": 0.3, "graph": 0.5}, "rerank": False, "answer": False}
    assert mcp.ok("search", args)["engine"] == "hybridrag"
    args = {"query": "What are the main themes across the whole collection?", "mode": "auto", "limit": 2}
    themes = mcp.ok("search", args)
    assert themes["engine"] in {"hybrid", "lazy", "hybridrag"}
    if themes["engine"] == "lazy":  # themes: the heading sentence and each label's phrases, as the API gives them
        assert themes["coverage"]["heading"] == themes["answer"]["text"].split("\n")[0]
        assert all(t["phrases"] for t in themes["themes"])


@pytest.mark.parametrize("mode", ALL_MODES)
def test_every_option_in_every_mode_is_applied_or_refused(mcp, mode):
    """tests/test_options.py's matrix through MCP: the argument's effect shows in the result, or
    the call fails naming the modes that take it."""
    for case in OPTION_CASES:
        if case.mcp is None:  # expand, session: not arguments of the search tool
            continue
        result = mcp.call("search", {"query": QUERY, "mode": mode, **case.mcp})
        expect(mode, case, " ".join(result.content[0].text.split()) if result.is_error else result.structured_content)


def test_search_filters(mcp, sample_index):
    pdf = mcp.ok("search", {"query": "communities", "answer": False, "filters": {"file_types": ["pdf"]}})
    assert pdf["hits"] and all(h["source_path"].endswith(".pdf") for h in pdf["hits"])
    api = sample_index.search("communities", answer=False, filters=SearchFilters(file_types=["pdf"])).hits
    assert [h["text_unit_id"] for h in pdf["hits"]] == [h.text_unit_id for h in api]  # one filter type: no relevance cut unasked
    one = mcp.ok("search", {"query": "ranking", "answer": False, "filters": {"fileIds": ["abs-bm25"]}})
    assert {h["document_id"] for h in one["hits"]} == {"abs-bm25"}
    spec_defaults = {"fileIds": None, "entityTypes": None, "dateRange": None, "minRelevance": 0.3}  # as Zod sends them
    assert mcp.ok("search", {"query": "ranking", "answer": False, "filters": spec_defaults})["hits"]
    dated = mcp.ok("search", {"query": "ranking", "answer": False,
                              "filters": {"date_range": {"start": "2021-01-01", "end": "2021-12-31"}}})
    assert {h["document_id"] for h in dated["hits"]} == {"abs-bm25"}
    own_names = {"document_ids": ["abs-bm25"], "date_from": "2021-01-01", "date_to": "2021-12-31"}
    assert mcp.ok("search", {"query": "ranking", "answer": False, "filters": own_names})["hits"] == dated["hits"]
    by_author = mcp.ok("search", {"query": "ranking", "answer": False, "filters": {"authors": ["robertson"]}})
    assert {h["document_id"] for h in by_author["hits"]} == {"abs-bm25"}
    by_year = mcp.ok("search", {"query": "communities", "answer": False, "filters": {"year_range": {"start": 2019, "end": 2019}}})
    assert {h["document_id"] for h in by_year["hits"]} == {"abs-leiden"}
    assert mcp.ok("search", {"query": "ranking", "answer": False, "filters": {"kinds": ["reference"]}})["hits"] == []


@pytest.mark.parametrize("arguments,message", [
    ({}, "query: Field required"),
    ({"query": ""}, "query: String should have at least 1 character"),
    ({"query": "   "}, "query: String should have at least 1 character"),
    ({"query": "x" * 100_001}, "above search.max_query_chars=100,000"),
    ({"query": "q", "limit": 0}, "limit: Input should be greater than or equal to 1"),
    ({"query": "q", "limit": 101}, "limit: Input should be less than or equal to 100"),
    ({"query": "q", "offset": -1}, "offset: Input should be greater than or equal to 0"),
    ({"query": "q", "mode": "fuzzy"}, "mode"),
    ({"query": "q", "filters": {"date_range": {"start": "2024-05-01", "end": "2024-01-01"}}}, "start 2024-05-01 is after end"),
    ({"query": "q", "filters": {"typo": 1}}, "filters.typo: Extra inputs are not permitted"),
    ({"query": "q", "mode": "hybridrag", "weights": {"keyword": 0.5, "semantic": 0.5, "graph": 0.5}}, "weights must sum to 1.0"),
    ({"query": "q", "mode": "vector", "rerank": False}, "rerank does not apply to mode vector: it is taken by mode(s) hybridrag"),
    ({"query": "q", "mode": "auto", "budget": 5}, "budget does not apply to mode auto"),
    ({"query": "q", "filters": {"entity_types": ["wizard"]}}, "filters.entity_types.0: Input should be 'CONCEPT'"),
    ({"query": "q", "filters": {"minRelevance": 1.5}}, "filters.minRelevance: Input should be less than or equal to 1"),
])
def test_bad_search_arguments_are_clear_messages(mcp, arguments, message):
    assert message in mcp.error("search", arguments)


def test_control_characters_in_a_query_are_spaces(mcp):
    """What a client may send in JSON that is not text to search: control characters become
    spaces (a lone surrogate's escape never reaches MONJYU: the MCP SDK refuses the line)."""
    pasted = mcp.ok("search", {"query": "Leiden\x0ccommunities\x00", "mode": "keyword", "answer": False})
    clean = mcp.ok("search", {"query": "Leiden communities ", "mode": "keyword", "answer": False})
    assert pasted["hits"] and [h["text_unit_id"] for h in pasted["hits"]] == [h["text_unit_id"] for h in clean["hits"]]


# ------------------------------------------------------------------ lazy search
def test_conversations_are_the_converse_tool_which_says_it_writes(mcp):
    """search and lazy_search are marked read-only, so they keep no conversation; converse does."""
    first = mcp.ok("converse", {"query": "How does LazyGraphRAG keep indexing cheap?", "budget": 20,
                                "session": "mcp-s1"})
    again = mcp.ok("converse", {"query": "And what does it do at query time?", "budget": 20, "session": "mcp-s1"})
    assert again["turn"] == first["turn"] + 1 >= 2
    assert "session name" in mcp.error("converse", {"query": "q", "session": "../x"})
    assert "session" in mcp.error("converse", {"query": "q"})
    for tool in ("search", "lazy_search"):
        assert "session" in mcp.error(tool, {"query": "q", "session": "mcp-s1"})


def test_lazy_search(mcp):
    out = mcp.ok("lazy_search", {"query": "How does LazyGraphRAG keep indexing cheap?", "budget": 30})
    assert out["answer"]["text"] and out["budget_total"] == 30 and 0 < out["budget_used"] <= 30
    assert "preset" in mcp.error("lazy_search", {"query": "q", "preset": "z9"})
    assert "budget" in mcp.error("lazy_search", {"query": "q", "budget": 0})


# ------------------------------------------------------------------ documents
def test_list_documents_pages(mcp):
    first = mcp.ok("list_documents", {"limit": 4})
    rest = mcp.ok("list_documents", {"limit": 10, "offset": 4})
    assert first["total"] == 9 and len(first["documents"]) == 4 and len(rest["documents"]) == 5
    assert not {d["id"] for d in first["documents"]} & {d["id"] for d in rest["documents"]}
    assert "limit" in mcp.error("list_documents", {"limit": 0})


def test_get_document_and_a_passage_in_context(mcp):
    hit = mcp.ok("search", {"query": "reciprocal rank fusion", "limit": 1, "answer": False})["hits"][0]
    doc = mcp.ok("get_document", {"document_id": hit["document_id"]})
    assert doc["id"] == hit["document_id"] and hit["text"][:50] in doc["text"]
    cited = mcp.ok("get_document", {"document_id": hit["document_id"], "text_unit_id": hit["text_unit_id"],
                                    "context_units": 0, "max_chars": 10})
    assert cited["context"]["unit_text"] == hit["text"] and len(cited["text"]) == 10 and cited["truncated"]


@pytest.mark.parametrize("document_id", ["no-such-document", "/etc/passwd", "../../../etc/passwd", "papers/../../x.md"])
def test_get_document_serves_indexed_ids_only(mcp, document_id):
    assert "no document with id" in mcp.error("get_document", {"document_id": document_id})


def test_get_document_bad_arguments(mcp):
    assert "not part of document" in mcp.error("get_document", {"document_id": "abs-bm25", "text_unit_id": "nope"})
    assert "document_id: String should have at least 1 character" in mcp.error("get_document", {"document_id": ""})
    assert "context_units" in mcp.error("get_document", {"document_id": "abs-bm25", "context_units": -1})


def test_documents_are_resources(mcp):
    resources = mcp.portal.call(mcp.client.list_resources).resources
    uris = {str(r.uri) for r in resources}
    assert "monjyu://documents/papers/lazygraphrag.md" in uris and len(uris) == 9
    templates = mcp.portal.call(mcp.client.list_resource_templates).resource_templates
    assert [t.uri_template for t in templates] == ["monjyu://documents/{+document_id}"]
    content = mcp.portal.call(mcp.client.read_resource, "monjyu://documents/papers/lazygraphrag.md").contents[0]
    doc = json.loads(content.text)
    assert doc["id"] == "papers/lazygraphrag.md" and "LazyGraphRAG" in doc["text"]
    with pytest.raises(MCPError, match="no document with id"):
        mcp.portal.call(mcp.client.read_resource, "monjyu://documents/nope")


# ------------------------------------------------------------------ status, index, secrets
def test_index_status_without_secrets(mcp):
    result = mcp.call("index_status")
    status = result.structured_content
    assert status["exists"] and status["counts"]["documents"] == 9
    assert status["index_tool"] == {"enabled": False, "allowed_roots": []}
    assert SECRET not in result.content[0].text and "api_key" not in result.content[0].text


def test_index_is_disabled_by_default(mcp, tmp_path):
    assert "index tool is disabled" in mcp.error("index", {"paths": [str(tmp_path)]})
    assert "mcp.allow_index" in mcp.error("index", {"paths": ["samples"]})


# ------------------------------------------------------------------ index enabled: path safety
@pytest.fixture(scope="module")
def indexing(portal, tmp_path_factory, cache_dir):
    """A server whose config lets clients index one folder; beside it, files they must not reach."""
    root = tmp_path_factory.mktemp("mcp-index")
    allowed, outside = root / "allowed", root / "outside"
    (allowed / "notes").mkdir(parents=True)
    outside.mkdir()
    (allowed / "notes" / "tea.md").write_text("# Tea\n\nGreen tea is steamed; black tea is oxidised before drying.\n")
    (outside / "secret.md").write_text("# Secret\n\nThe launch code is 0000.\n")
    (allowed / "link.md").symlink_to(outside / "secret.md")
    (allowed / "linkdir").symlink_to(outside, target_is_directory=True)
    config = root / "monjyu.yaml"
    config.write_text(yaml.safe_dump({"mcp": {"allow_index": True, "allowed_roots": [str(allowed)]}}))
    params = StdioServerParameters(command=sys.executable, args=server_args(root / "idx", "--config", str(config)),
                                   env={"MONJYU_CACHE_DIR": str(cache_dir)}, cwd=root)
    with portal.wrap_async_context_manager(Client(params, read_timeout_seconds=300)) as client:
        yield Session(portal, client), allowed, outside


def test_path_traversal_is_refused(indexing):
    session, allowed, outside = indexing
    for path in ["../outside/secret.md", "notes/../../outside", str(outside / "secret.md"), "/etc", "linkdir",
                 "linkdir/secret.md", "link.md"]:
        assert "outside the folders MCP clients may index" in session.error("index", {"paths": [path]}), path
    assert "links to a file outside" in session.error("index", {"paths": ["."]})  # the folder holds link.md
    assert "does not exist" in session.error("index", {"paths": ["notes/missing.md"]})
    assert "not a valid path" in session.error("index", {"paths": ["notes/\x00.md"]})
    assert "paths" in session.error("index", {"paths": []})


def test_index_inside_the_allowed_root(indexing):
    session, allowed, _ = indexing
    before = session.ok("index_status")
    assert before["exists"] is False and before["index_tool"]["enabled"] is True
    report = session.ok("index", {"paths": ["notes"]})
    assert report["documents"] == 1 and not report["failures"]
    status = session.ok("index_status")
    assert status["exists"] and status["counts"]["documents"] == 1
    hits = session.ok("search", {"query": "how is black tea made", "answer": False})["hits"]
    assert hits and all("secret" not in h["text"].lower() for h in hits)


def test_serve_reports_an_unknown_transport(tmp_path, monkeypatch, capsys):
    result = CliRunner().invoke(app, ["serve", "--index", str(tmp_path), "--transport", "carrier-pigeon"])
    assert result.exit_code == 2 and "unknown transport" in result.output
    monkeypatch.setattr(sys, "argv", ["monjyu-mcp", "--index", str(tmp_path), "--transport", "carrier-pigeon"])
    with pytest.raises(SystemExit) as stop:
        serve_main()
    assert stop.value.code == 2 and "unknown transport" in capsys.readouterr().err
