"""The CLI as a user runs it: real processes, real index, JSON output."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from .conftest import SAMPLES


def run(args, tmp_path, cache_dir, check=True):
    env = {**os.environ, "MONJYU_CACHE_DIR": str(cache_dir)}
    proc = subprocess.run([sys.executable, "-m", "monjyu.cli", *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def test_index_search_status(tmp_path, cache_dir):
    idx = str(tmp_path / "idx")
    out = json.loads(run(["index", str(SAMPLES), "--index", idx, "--json"], tmp_path, cache_dir).stdout)
    assert out["documents"] == 9 and out["failures"] == []
    res = json.loads(run(["search", "noun phrase graph without an LLM", "--index", idx, "--json",
                          "--top-k", "2", "--filter", "type=md"], tmp_path, cache_dir).stdout)
    assert len(res["hits"]) == 2 and all(h["source_path"].endswith(".md") for h in res["hits"])
    assert res["mode"] == "hybrid"
    assert res["answer"]["kind"] == "extractive" and res["answer"]["citations"] and res["usage"]["calls"] == 0
    assert {"retrieval_ms", "answer_ms"} <= set(res["timings_ms"])
    text = run(["search", "Which algorithm detects communities?", "--index", idx, "--mode", "keyword"],
               tmp_path, cache_dir).stdout
    assert "Answer (extractive" in text and "Leiden" in text and "Passages" in text
    assert re.search(r"Leiden algorithm[^\n]*\n?[^\n]*\[\d\]", text)  # the quote, cited
    hits_only = json.loads(run(["search", "Leiden", "--index", idx, "--no-answer", "--json"], tmp_path, cache_dir).stdout)
    assert hits_only["answer"] is None and hits_only["hits"]
    status = json.loads(run(["status", "--index", idx, "--json"], tmp_path, cache_dir).stdout)
    assert status["counts"]["documents"] == 9


def test_failures_set_the_exit_code_and_name_the_file(tmp_path, cache_dir):
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "good.txt").write_text("A perfectly good document about retrieval.")
    (folder / "bad.pdf").write_bytes(b"%PDF-1.4 broken")
    proc = run(["index", str(folder), "--index", str(tmp_path / "idx")], tmp_path, cache_dir, check=False)
    assert proc.returncode == 1
    assert "bad.pdf" in proc.stderr and "PDF" in proc.stderr
    assert "1 added" not in proc.stdout and "1 documents" in proc.stdout


def test_errors_are_messages_not_tracebacks(tmp_path, cache_dir):
    proc = run(["search", "x", "--index", str(tmp_path / "none")], tmp_path, cache_dir, check=False)
    assert proc.returncode == 2 and "no index at" in proc.stderr and "Traceback" not in proc.stderr
    proc = run(["search", "x", "--filter", "colour=red", "--index", str(tmp_path / "none")], tmp_path, cache_dir, check=False)
    assert proc.returncode == 2 and "unknown filter key" in proc.stderr
    (tmp_path / "monjyu.yaml").write_text("chunking:\n  size: 10\n  overlap: 50\n")
    proc = run(["status"], tmp_path, cache_dir, check=False)
    assert proc.returncode == 2 and "chunking" in proc.stderr and "Traceback" not in proc.stderr


def test_eval_on_a_tiny_beir_set(tmp_path, cache_dir):
    beir = tmp_path / "tiny"
    (beir / "qrels").mkdir(parents=True)
    corpus = [
        {"_id": "d1", "title": "Kyoto", "text": "Kyoto was the capital of Japan for over a thousand years."},
        {"_id": "d2", "title": "Osaka", "text": "Osaka is known for its street food and merchant history."},
        {"_id": "d3", "title": "Sapporo", "text": "Sapporo hosts a famous snow festival every February."},
        {"_id": "d4", "title": "Naha", "text": "Naha is the capital of Okinawa Prefecture."},
    ]
    (beir / "corpus.jsonl").write_text("\n".join(json.dumps(d) for d in corpus))
    (beir / "queries.jsonl").write_text("\n".join(json.dumps(q) for q in [
        {"_id": "q1", "text": "Which city was Japan's capital for a millennium?"},
        {"_id": "q2", "text": "Where is the snow festival held?"},
        {"_id": "q3", "text": "capital cities"},
    ]))
    (beir / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td3\t1\nq3\td1\t1\nq3\td4\t1\n")
    every = "vector,keyword,hybrid,graph,hybridrag,hybridrag-norerank,hybridrag-crag,lazy,auto"
    out = run(["eval", "--beir", str(beir), "--index", str(tmp_path / "idx"), "--json", "--mode", every,
               "--preset", "z100"], tmp_path, cache_dir).stdout
    res = json.loads(out)
    assert list(res) == every.split(",")
    for mode, m in res.items():
        assert m["queries"] == 3
        for key in ("recall@2", "recall@5", "recall@10", "ndcg@10", "mrr@10", "precision@5", "complete@8"):
            assert 0.0 <= m[key] <= 1.0, (mode, key)
        if mode not in ("lazy", "hybridrag-crag"):  # those keep only what passed their relevance tests
            assert m["recall@10"] == 1.0, mode  # four documents: everything is in the top 10
    assert res["lazy"]["recall@10"] > 0
    assert res["vector"]["mrr@10"] >= 2 / 3
    refused = run(["eval", "--beir", str(beir), "--index", str(tmp_path / "idx"), "--mode", "hybrid", "--preset", "z100"],
                  tmp_path, cache_dir, check=False)
    assert refused.returncode == 2 and "--preset only with lazy" in " ".join(refused.stderr.split())
    (beir / "queries.jsonl").write_text("\n".join(json.dumps(q) for q in [
        {"_id": "q1", "text": "Which city was Japan's capital for a millennium?", "metadata": {"multihop": False}},
        {"_id": "q2", "text": "Where is the snow festival held?", "metadata": {"multihop": False}},
        {"_id": "q3", "text": "capital cities", "metadata": {"multihop": True}},
    ]))
    per_query = tmp_path / "ranks.jsonl"
    res = json.loads(run(["eval", "--beir", str(beir), "--index", str(tmp_path / "idx"), "--json", "--mode",
                          "vector,hybrid", "--by", "multihop", "--per-query", str(per_query)], tmp_path, cache_dir).stdout)
    assert res["hybrid"]["by"]["true"]["queries"] == 1 and res["hybrid"]["by"]["false"]["queries"] == 2
    records = [json.loads(line) for line in per_query.read_text().splitlines()]
    assert [r["multihop"] for r in records] == ["false", "false", "true"]
    assert records[2]["relevant"] == ["d1", "d4"] and set(records[2]["modes"]) == {"vector", "hybrid"}
    assert records[2]["modes"]["hybrid"]["ranks"]["d1"] in range(1, 11)
    for r in records:  # the per-query fusion decision of hybrid; vector decides nothing
        decision = r["modes"]["hybrid"]["decision"]
        assert 0.0 <= decision["lexical"] <= 1.0 and decision["graph"] in (0.0, 1.0) and "feedback" in decision
        assert "decision" not in r["modes"]["vector"]
    table = run(["eval", "--beir", str(beir), "--index", str(tmp_path / "idx"), "--mode", "hybrid", "--by", "multihop"],
                tmp_path, cache_dir).stdout
    assert "multihop = true" in table and "multihop = false" in table
    refused = run(["eval", "--beir", str(beir), "--index", str(tmp_path / "idx"), "--mode", "hybrid", "--by", "nope"],
                  tmp_path, cache_dir, check=False)
    assert refused.returncode == 2 and "has the field 'nope'" in " ".join(refused.stderr.split())


def test_init_writes_a_config_that_loads(tmp_path, cache_dir):
    run(["init"], tmp_path, cache_dir)
    from monjyu.config import load_config

    cfg = load_config(tmp_path / "monjyu.yaml")
    assert cfg.llm.provider == "none" and cfg.embedding.provider == "e5openvino"
    assert "ollama" in (tmp_path / "monjyu.yaml").read_text().lower()
    again = run(["init"], tmp_path, cache_dir, check=False)
    assert again.returncode == 2 and "--force" in again.stderr


def test_unknown_environment_settings_are_refused(tmp_path, cache_dir, monkeypatch):
    monkeypatch.setenv("MONJYU_SEARCH__MOED", "keyword")
    proc = run(["status", "--index", str(tmp_path / "none")], tmp_path, cache_dir, check=False)
    assert proc.returncode == 2 and "MONJYU_SEARCH__MOED names no setting" in proc.stderr
    assert "MONJYU_SEARCH__MODE" in proc.stderr and "Traceback" not in proc.stderr
    monkeypatch.delenv("MONJYU_SEARCH__MOED")
    from monjyu.config import ConfigError, load_config
    monkeypatch.setenv("MONJYU_STORE__BAKEND", "lancedb")
    with pytest.raises(ConfigError, match="MONJYU_STORE__BAKEND"):
        load_config()
    monkeypatch.delenv("MONJYU_STORE__BAKEND")
    monkeypatch.setenv("MONJYU_STORE__BACKEND", "postgres")  # a store not built yet: refused, never ignored
    with pytest.raises(ConfigError, match="store.backend"):
        load_config()
    monkeypatch.delenv("MONJYU_STORE__BACKEND")
    monkeypatch.setenv("MONJYU_MY_KEY", "secret")  # named by an *_env setting: a key, not a setting
    monkeypatch.setenv("MONJYU_LLM__API_KEY_ENV", "MONJYU_MY_KEY")
    assert load_config().llm.api_key_env == "MONJYU_MY_KEY"


def test_unknown_keys_inside_a_section_are_refused_at_every_level(tmp_path, cache_dir, monkeypatch):
    """`search: {moed: vector}` used to run with the default mode, and a misspelt store namespace
    wrote into the default one."""
    from pydantic import ValidationError

    from monjyu.config import ConfigError, MonjyuConfig, load_config

    for text, named in [("search: {moed: vector}", "unknown setting search.moed; did you mean search.mode?"),
                        ("store: {nmespace: other}", "did you mean store.namespace?"),
                        ("hybrid: {crag: true, weigths: {}}", "did you mean hybrid.weights?"),
                        ("serch: {mode: vector}", "did you mean search?")]:
        (tmp_path / "m.yaml").write_text(text)
        with pytest.raises(ConfigError, match=re.escape(named)):
            load_config(tmp_path / "m.yaml")
    proc = run(["status", "--config", str(tmp_path / "m.yaml"), "--index", str(tmp_path / "none")], tmp_path,
               cache_dir, check=False)
    assert proc.returncode == 2 and "did you mean search?" in proc.stderr
    with pytest.raises(ValidationError, match="unknown setting 'moed'; did you mean 'mode'"):
        MonjyuConfig(search={"moed": "vector"})  # the API
    monkeypatch.setenv("MONJYU_LAZY__PRESTE", "z500")
    with pytest.raises(ConfigError, match="MONJYU_LAZY__PRESTE names no setting; did you mean MONJYU_LAZY__PRESET"):
        load_config()


def test_error_text_prints_literally_never_as_markup(tmp_path, cache_dir):
    """The terminal library read `[postgres]` in `pip install 'monjyu[postgres]'` as markup and
    dropped it."""
    proc = run(["search", "x", "--filter", "[postgres]", "--index", str(tmp_path / "none")], tmp_path, cache_dir,
               check=False)
    assert proc.returncode == 2 and "'[postgres]'" in proc.stderr, proc.stderr
    (tmp_path / "monjyu.yaml").write_text("search: {'[bold]mode[/bold]': vector}\n")
    proc = run(["status", "--index", str(tmp_path / "none")], tmp_path, cache_dir, check=False)
    assert proc.returncode == 2 and "search.[bold]mode[/bold]" in proc.stderr, proc.stderr
