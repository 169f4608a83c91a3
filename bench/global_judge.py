"""Lazy search against Baseline RAG, judged head to head by an LLM as the GraphRAG paper does it:
comprehensiveness, diversity, empowerment and directness, each answer pair judged in both orders.

    python bench/global_judge.py --index IDX [--config monjyu.yaml] [--judge-config judge.yaml]
        [--global bench/data/covidqa_global_questions.jsonl] [--local ../shared/bench-data/covidqa-dev/questions.jsonl]
        [--n-global 10] [--n-local 10] [--preset z100] [--json]

Both engines answer with the LLM the config names (llm.*, or MONJYU_LLM__* variables): Baseline RAG
is vector search, top 10, one answer call; lazy is `ask(mode="lazy", preset=...)`. The judge is the
same LLM unless --judge-config names another (a larger one should judge a smaller one). Questions:
the first --n-global English global questions (off-topic ones left out) and the first --n-local
questions of the QA file, one per paper. Per question type and criterion it prints lazy's win rate
(a tie counts half), how often the verdict followed the order rather than the answers (position
bias: the same answer lost in one order and won in the other), and LLM tokens per question of each
engine. A judge that cannot follow the format gives "unparsed" verdicts, counted and reported.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from monjyu import Monjyu, load_config
from monjyu.llm import create_llm
from monjyu.errors import MonjyuError

CRITERIA = {
    "comprehensiveness": "How much detail does the answer provide to cover all aspects and details of the question?",
    "diversity": "How varied and rich is the answer in providing different perspectives and insights on the question?",
    "empowerment": "How well does the answer help the reader understand and make informed judgements about the topic?",
    "directness": "How specifically and clearly does the answer address the question?",
}
JUDGE_SYSTEM = ("You compare two answers to a question about a collection of research papers, on one "
                "criterion only. Reply with JSON: {\"winner\": 1, 2 or 0 for a tie, \"reason\": \"one sentence\"}.")


class Verdict(BaseModel):
    winner: Literal[0, 1, 2]
    reason: str = ""


def questions(global_path: Path, local_path: Path, n_global: int, n_local: int) -> list[tuple[str, str]]:
    rows = [json.loads(line) for line in global_path.read_text(encoding="utf-8").splitlines() if line.strip()]
    glob = [r["question"] for r in rows if r.get("lang", "en") == "en" and r.get("kind") == "global"][:n_global]
    local, docs = [], set()
    for line in local_path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if row["doc"] not in docs and len(local) < n_local:
            docs.add(row["doc"])
            local.append(row["question"])
    return [("global", q) for q in glob] + [("local", q) for q in local]


def judge(llm, question: str, criterion: str, first: str, second: str) -> int | None:
    """1 or 2 (the better answer in this order), 0 for a tie, None when the reply is unusable."""
    prompt = (f"Question: {question}\n\nCriterion: {criterion}. {CRITERIA[criterion]}\n\n"
              f"Answer 1:\n{first}\n\nAnswer 2:\n{second}\n\nWhich answer is better on {criterion}?")
    try:
        result = llm.chat([{"role": "system", "content": JUDGE_SYSTEM}, {"role": "user", "content": prompt}],
                          schema=Verdict, max_tokens=120, temperature=0.0)
    except MonjyuError:
        return None
    return result.parsed.winner


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--index", type=Path, required=True)
    ap.add_argument("--config", type=Path)
    ap.add_argument("--judge-config", type=Path)
    ap.add_argument("--global", dest="global_path", type=Path, default=Path("bench/data/covidqa_global_questions.jsonl"))
    ap.add_argument("--local", type=Path, default=Path("../shared/bench-data/covidqa-dev/questions.jsonl"))
    ap.add_argument("--n-global", type=int, default=10)
    ap.add_argument("--n-local", type=int, default=10)
    ap.add_argument("--preset", default="z100")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    config = load_config(args.config)
    if config.llm.provider == "none":
        raise SystemExit("configure an LLM (llm.provider) in --config or MONJYU_LLM__*: both engines and the judge need one")
    judge_llm = create_llm(load_config(args.judge_config).llm if args.judge_config else config.llm)
    m = Monjyu(args.index, config)
    wins = {}   # (type, criterion) -> list of lazy scores (1 win, 0.5 tie, 0 loss)
    flips = {}  # (type, criterion) -> list of bools: the verdict followed the order
    unparsed = 0
    tokens = {"baseline": [], "lazy": []}
    for kind, q in questions(args.global_path, args.local, args.n_global, args.n_local):
        base = m.ask(q, "vector", top_k=10)
        lazy = m.ask(q, "lazy", preset=args.preset)
        for name, r in (("baseline", base), ("lazy", lazy)):
            tokens[name].append(r.usage.get("prompt_tokens", 0) + r.usage.get("completion_tokens", 0))
        a_base = base.answer.text if base.answer else ""
        a_lazy = lazy.answer.text if lazy.answer else ""
        for criterion in CRITERIA:
            lazy_first = judge(judge_llm, q, criterion, a_lazy, a_base)
            base_first = judge(judge_llm, q, criterion, a_base, a_lazy)
            if lazy_first is None or base_first is None:
                unparsed += 1
                continue
            # lazy's score in each order: 1 when it is named better, 0.5 on a tie
            s1 = {1: 1.0, 2: 0.0, 0: 0.5}[lazy_first]
            s2 = {2: 1.0, 1: 0.0, 0: 0.5}[base_first]
            wins.setdefault((kind, criterion), []).extend([s1, s2])
            flips.setdefault((kind, criterion), []).append(lazy_first == base_first != 0)
        print(f"[{kind}] {q[:70]}: lazy {tokens['lazy'][-1]} tokens, baseline {tokens['baseline'][-1]}", flush=True)

    rows = {f"{kind}/{c}": {"lazy_win_rate": statistics.mean(v), "verdicts": len(v),
                             "order_decided": statistics.mean(flips[(kind, c)])}
            for (kind, c), v in sorted(wins.items())}
    summary = {"judge": judge_llm.id, "answerer": f"{config.llm.provider}:{config.llm.model or config.llm.model_path}",
               "preset": args.preset, "unparsed_pairs": unparsed,
               "tokens_per_question": {k: statistics.mean(v) for k, v in tokens.items() if v}, "criteria": rows}
    if args.json:
        print(json.dumps(summary, indent=1))
        return
    print(f"\njudge {summary['judge']}; lazy {args.preset} vs Baseline RAG (vector, top 10); unparsed pairs: {unparsed}")
    print(f"{'type/criterion':32}{'lazy wins':>10}{'verdicts':>10}{'order decided':>15}")
    for name, r in rows.items():
        print(f"{name:32}{r['lazy_win_rate']:>10.2f}{r['verdicts']:>10}{r['order_decided']:>15.2f}")
    print("tokens per question: " + ", ".join(f"{k} {v:.0f}" for k, v in summary["tokens_per_question"].items()))


if __name__ == "__main__":
    main()
