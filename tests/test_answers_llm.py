"""Answers through an LLM: the product's OpenAI-compatible client against a real local server
(tests/llm_server.py) over the real sample index. Fault cases end in an answer, never a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from monjyu import Monjyu
from tests.llm_server import Scripted, llm_server  # noqa: F401  (fixture)

from .conftest import SAMPLES

QUESTION = "Which algorithm detects hierarchical communities?"


@pytest.fixture
def llm_index(tmp_path, make_config, sample_index, llm_server):  # noqa: F811
    """The sample index opened with an LLM pointed at the test server (reusing its embeddings)."""
    def make(**llm) -> Monjyu:
        return Monjyu(sample_index.index_dir, make_config(llm=llm_server.config(**llm)))
    return make


def test_llm_answer_cites_the_sources_it_was_given(llm_index, llm_server):  # noqa: F811
    result = llm_index().search(QUESTION, top_k=5)
    assert result.answer.kind == "llm"
    [cite] = result.answer.citations
    assert cite.number == 1 and cite.text_unit_id == result.hits[0].text_unit_id
    assert result.answer.text.endswith("[1]")
    # usage is what the server counted, and the prompt carried the numbered sources
    assert result.usage["calls"] == 1 and result.usage["prompt_tokens"] == llm_server.prompt_tokens
    assert result.usage["completion_tokens"] == llm_server.completion_tokens
    user = llm_server.requests[0].body["messages"][-1]["content"]
    assert "[1] " in user and QUESTION in user
    assert result.timings_ms["answer_ms"] > 0 and result.timings_ms["retrieval_ms"] > 0


def test_a_question_about_what_no_document_mentions_costs_no_llm_call(llm_index, llm_server):  # noqa: F811
    result = llm_index().search("How does DetectGPT decide whether a text was machine-generated?", top_k=3)
    assert result.answer.kind == "insufficient" and "“DetectGPT”" in result.answer.text
    assert llm_server.requests == [] and result.hits  # the passages are still listed


def test_citation_numbers_that_point_nowhere_are_dropped(llm_index, llm_server):  # noqa: F811
    llm_server.push(Scripted(content="Leiden does it [2]. Also [99] and [1, 42]."))
    answer = llm_index().search(QUESTION, top_k=3).answer
    assert answer.text == "Leiden does it [2]. Also and [1]."
    assert [c.number for c in answer.citations] == [2, 1]


def test_japanese_question_uses_the_japanese_prompt(llm_index, llm_server):  # noqa: F811
    answer = llm_index().search("検索拡張生成とは何ですか？", top_k=3).answer
    system = llm_server.requests[0].body["messages"][0]["content"]
    assert "出典" in system and answer.language == "ja"


def test_streaming_delivers_the_answer_in_pieces(llm_index, llm_server):  # noqa: F811
    pieces: list[str] = []
    result = llm_index().search(QUESTION, top_k=3, on_token=pieces.append)
    assert len(pieces) > 1 and "".join(pieces).strip() == result.answer.text
    assert llm_server.requests[0].body["stream"] is True and result.usage["calls"] == 1


def test_rate_limit_then_success(llm_index, llm_server):  # noqa: F811
    llm_server.push(Scripted(status=429, headers={"Retry-After": "0"}), Scripted(status=500))
    result = llm_index(max_retries=3).search(QUESTION, top_k=3)
    assert result.answer.kind == "llm" and len(llm_server.requests) == 3


@pytest.mark.parametrize("fault", [
    Scripted(status=500), Scripted(delay_s=2.0), Scripted(body=b"<html>gateway error</html>"),
])
def test_failing_llm_falls_back_to_an_extractive_answer(llm_index, llm_server, fault):  # noqa: F811
    llm_server.push(*[fault] * 3)
    result = llm_index(max_retries=2, timeout_s=0.5).search(QUESTION, top_k=3)
    assert result.answer.kind == "extractive" and result.answer.citations
    assert "LLM failed" in result.answer.note


def test_query_expansion_merges_rewrites(llm_index, llm_server):  # noqa: F811
    llm_server.push(Scripted(content='```json\n{"queries": ["Leiden algorithm", "community detection method",}\n```'))
    result = llm_index().search(QUESTION, top_k=5, expand=True, answer=False)
    assert result.expanded_queries == [QUESTION, "Leiden algorithm", "community detection method"]
    ids = [h.text_unit_id for h in result.hits]
    assert len(ids) == len(set(ids)) == 5 and [h.rank for h in result.hits] == [1, 2, 3, 4, 5]


def test_cli_answers_through_the_configured_endpoint(tmp_path, sample_index, llm_server, cache_dir):  # noqa: F811
    cfg = tmp_path / "monjyu.yaml"
    cfg.write_text(f"cache_dir: {cache_dir}\nllm:\n  provider: openai\n  base_url: {llm_server.v1}\n  model: tiny\n"
                   "  api_key_env: MONJYU_TEST_LLM_KEY\n")
    env = {**os.environ, "MONJYU_TEST_LLM_KEY": "sk-secret-value"}
    proc = subprocess.run([sys.executable, "-m", "monjyu.cli", "search", QUESTION, "--index", str(sample_index.index_dir),
                           "--config", str(cfg), "--json"], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["answer"]["kind"] == "llm" and out["answer"]["citations"][0]["number"] == 1
    assert out["usage"]["calls"] == 1 and out["usage"]["total_tokens"] > 0
    assert llm_server.requests[0].body["model"] == "tiny"
    [check] = out["answer"]["sentences"]  # the support figure of each sentence, in --json too
    assert check["status"] == "supported" and check["citations"] == [1] and check["support"] >= 0.45


def test_mcp_search_gives_the_support_of_each_sentence(sample_index, llm_server, make_config):  # noqa: F811
    import asyncio

    from monjyu.mcp_server import create_server

    server = create_server(Monjyu(sample_index.index_dir, make_config(llm=llm_server.config())))
    result = asyncio.run(server.call_tool("search", {"query": QUESTION, "mode": "hybrid", "limit": 3}))
    answer = result.structured_content["answer"]
    assert answer["kind"] == "llm" and answer["sentences"][0]["status"] == "supported"
    assert 0.45 <= answer["sentences"][0]["support"] <= 1.0


# ------------------------------------------------------------------ citations checked against the passages
def sources_in_prompt(llm_server) -> dict[int, str]:  # noqa: F811
    """The numbered sources of the last answer prompt: {n: the longest sentence of its text}."""
    import re

    user = llm_server.requests[-1].body["messages"][-1]["content"]
    found = re.findall(r"^\[(\d+)\][^\n]*\n(.+?)(?=\n\s*\n\[\d+\]|\Z)", user, re.MULTILINE | re.DOTALL)
    return {int(n): max(re.split(r"(?<=[.!?])\s+", " ".join(text.split())), key=len) for n, text in found}


def test_a_wrong_citation_is_recited_to_the_passage_that_supports_it(llm_index, llm_server):  # noqa: F811
    m = llm_index()
    m.search(QUESTION, top_k=5)
    sources = sources_in_prompt(llm_server)
    assert len(sources) >= 2
    second = sources[2].rstrip(".")
    llm_server.push(Scripted(content=f"{second} [1]."))  # the model cites [1] for what [2] says
    answer = m.search(QUESTION, top_k=5).answer
    [check] = answer.sentences
    assert check["status"] == "recited" and check["citations"] == [2] and check["support"] >= 0.45
    assert answer.text == f"{second} [2]." and [c.number for c in answer.citations] == [2]
    assert "re-cited" in answer.note


def test_an_unsupported_sentence_is_dropped_and_reported(llm_index, llm_server):  # noqa: F811
    m = llm_index()
    m.search(QUESTION, top_k=5)
    first = sources_in_prompt(llm_server)[1].rstrip(".")
    invented = "The committee awarded the prize to a Norwegian violinist in 1887 for his sonatas"
    llm_server.push(Scripted(content=f"{first} [1]. {invented} [1]."))
    answer = m.search(QUESTION, top_k=5).answer
    assert [s["status"] for s in answer.sentences] == ["supported", "dropped"]
    assert answer.sentences[0]["support"] >= 0.45 > answer.sentences[1]["support"]
    assert answer.text == f"{first} [1]." and invented in answer.note and "dropped" in answer.note


def test_insufficient_when_the_passages_do_not_cover_the_question(llm_index, llm_server):  # noqa: F811
    """A model that answers from its memory (and cites a passage anyway) is not believed."""
    llm_server.push(Scripted(content="The Eiffel Tower is 330 metres tall and was finished in 1889 [1]. "
                                     "Gustave Eiffel's company built it for the World's Fair [2]."))
    answer = llm_index().search("How tall is the Eiffel Tower?", top_k=3).answer
    assert answer.kind == "insufficient" and "no passage supports what the model wrote" in answer.note
    assert [s["status"] for s in answer.sentences] == ["dropped", "dropped"] and not answer.citations


def test_the_check_can_be_turned_off(llm_index, llm_server, make_config, sample_index):  # noqa: F811
    llm_server.push(Scripted(content="The Eiffel Tower is 330 metres tall [1]."))
    config = make_config(llm=llm_server.config(), answer={"verify": False})
    answer = Monjyu(sample_index.index_dir, config).search("How tall is the Eiffel Tower?", top_k=3).answer
    assert answer.kind == "llm" and answer.sentences == [] and answer.text.endswith("[1].")
