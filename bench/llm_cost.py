"""LLM cost and latency of the engines, against the OpenAI-compatible test server (tests/llm_server.py),
which counts every request and token (its tokens are whitespace-separated words).

    python bench/llm_cost.py --beir ../shared/bench-data/2wiki --index /tmp/idx-2wiki --queries 20

For each question: Baseline RAG (search with an LLM answer, top_k=10), lazy search at Z100 and
Z500. Prints, per engine, LLM calls, prompt and output tokens per question (mean), and latency
split into retrieval (or exploration) and generation, p50 / p95. The server answers every role
deterministically from its prompt (see `role_responder`), instantly, so latency here is MONJYU's
own plus HTTP; a real model adds its generation time.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.llm_server: the server the tests use

from monjyu import Monjyu, load_config  # noqa: E402
from monjyu.eval import BeirDataset  # noqa: E402
from tests.llm_server import LLMTestServer, echo_responder  # noqa: E402


def role_responder(request: dict) -> str:
    """Subqueries: the question; sentence scores: 8 when the sentence shares two words with the
    question, else 2; claims: one per sentence; lazy answer: its first claim; baseline answer: the
    first sentence of source [1], cited (echo)."""
    system = request["messages"][0]["content"]
    user = request["messages"][-1]["content"]
    numbered = re.findall(r"^(\d+)\. (.*)$", user, re.M)
    if '"subqueries"' in system:
        return json.dumps({"subqueries": [user], "expanded_query": user})
    if '"scores"' in system:
        question = set(re.findall(r"\w+", system.split("Question:")[-1].split("\n")[0].lower()))
        return json.dumps({"scores": [8 if len(question & set(re.findall(r"\w+", s.lower()))) >= 2 else 2
                                      for _, s in numbered]})
    if '"claims"' in system:
        return json.dumps({"claims": [{"statement": s, "sources": [int(i)]} for i, s in numbered]})
    claims = re.findall(r"^- (.+)$", user, re.M)
    if claims:  # lazy search's answer: its best claim, with that claim's citations
        return claims[0]
    return echo_responder(request)


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--beir", required=True, type=Path)
    ap.add_argument("--index", required=True, type=Path)
    ap.add_argument("--queries", type=int, default=20)
    args = ap.parse_args()

    dataset = BeirDataset.load(args.beir)
    questions = [dataset.queries[q] for q in list(dataset.qrels)[:args.queries]]
    with LLMTestServer(role_responder) as server:
        m = Monjyu(args.index, load_config(None, llm=server.config(timeout_s=60).model_dump()))
        m.index([dataset.corpus])
        engines = {
            "baseline RAG (k=10)": lambda q: m.search(q, top_k=10),
            "lazy Z100": lambda q: m.lazy_search(q, preset="z100"),
            "lazy Z500": lambda q: m.lazy_search(q, preset="z500"),
        }
        rows = {}
        for name, run in engines.items():
            calls, prompt, output, first, gen = [], [], [], [], []
            for q in questions:
                r = run(q)
                calls.append(r.usage["calls"])
                prompt.append(r.usage["prompt_tokens"])
                output.append(r.usage["completion_tokens"])
                t = r.timings_ms
                first.append(t.get("retrieval_ms", t.get("match_ms", 0) + t.get("explore_ms", 0)))
                gen.append(t.get("answer_ms", 0) + t.get("claims_ms", 0))
            rows[name] = {"calls": statistics.fmean(calls), "prompt_tokens": statistics.fmean(prompt),
                          "output_tokens": statistics.fmean(output),
                          "retrieval_ms_p50": pct(first, 0.5), "retrieval_ms_p95": pct(first, 0.95),
                          "generation_ms_p50": pct(gen, 0.5), "generation_ms_p95": pct(gen, 0.95)}
            print(name, json.dumps({k: round(v, 1) for k, v in rows[name].items()}), flush=True)
        base = rows["baseline RAG (k=10)"]
        total = base["prompt_tokens"] + base["output_tokens"]
        for name, r in rows.items():
            print(f"{name:22} tokens/question {r['prompt_tokens'] + r['output_tokens']:8.0f} "
                  f"({(r['prompt_tokens'] + r['output_tokens']) / total:.2f}x baseline), calls {r['calls']:.1f}")


if __name__ == "__main__":
    main()
