"""Levels 2 and 4 built on demand against building them up front, on covidqa-dev, with the test
LLM server standing in for the model (a scripted responder: the figures are what is sent to the
LLM and what is reused, not answer quality).

    python bench/levels_on_demand.py --index IDX [--data ../shared/bench-data] [--pairs 20] [--json]

IDX is a covidqa-dev index; it is copied (hard links) so that its levels/ folder starts empty.
Runs, in order, each question a lazy search at the default level (4):

1. the 35 global questions of bench/data/covidqa_global_questions.jsonl (30 global, 5 off-topic);
2. the same questions again;
3. local questions in pairs on the same paper (the first two questions of each of `--pairs`
   papers): the first of each pair, then the second, "a new question in the same region".

Printed per run: questions that deepened to Level 2 and that answered from Level 4 reports, units
sent to extraction and read from the index, reports written and read, and tokens per level;
against them what `monjyu index --level 2` and `--level 4` would send for the whole collection
(every unit, every community), from `Monjyu.level_estimate`.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests.llm_server import LLMTestServer, echo_responder  # noqa: E402

from monjyu import Monjyu, load_config  # noqa: E402
from monjyu.nlp.analyzer import EN_STOPWORDS  # noqa: E402

DATA = ROOT.parent / "shared" / "bench-data"
GLOBAL = ROOT / "bench" / "data" / "covidqa_global_questions.jsonl"
_WORD = re.compile(r"[a-z0-9]+")
_NAME = re.compile(r"\b[A-Z][\w-]+(?: [A-Z][\w-]+)*")


def words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if len(w) > 3 and w not in EN_STOPWORDS}


def responder(request: dict) -> str:
    """Plays each role from its prompt: relevance by the share of the question's words a sentence
    holds (0-10), entities as the capitalised names of a passage (relations between neighbours),
    reports from the community's first sentences, claims one per sentence, the answer by echo."""
    system, user = request["messages"][0]["content"], request["messages"][-1]["content"]
    numbered = re.findall(r"^(\d+)\. (.*)$", user, re.M)
    if '"subqueries"' in system:
        return json.dumps({"subqueries": [user], "expanded_query": user})
    if '"scores"' in system:
        question = words(re.search(r"Question: (.*)", system).group(1)) if "Question: " in system else set()
        return json.dumps({"scores": [round(10 * len(question & words(s)) / max(len(question), 1), 1)
                                      for _, s in numbered]})
    if '"relations"' in system:
        names = list(dict.fromkeys(_NAME.findall(user)))[:8]
        return json.dumps({"entities": [{"name": n, "type": "name"} for n in names],
                           "relations": [{"source": a, "target": b, "description": f"{a} is mentioned with {b}"}
                                         for a, b in zip(names, names[1:])]})
    if '"summary"' in system:
        return json.dumps({"title": user.splitlines()[0][11:], "summary": numbered[0][1] if numbered else "",
                           "claims": [{"statement": s, "sources": [int(i)]} for i, s in numbered[:5]]})
    if '"claims"' in system:
        return json.dumps({"claims": [{"statement": s, "sources": [int(i)]} for i, s in numbered]})
    return echo_responder(request)


def run(m: Monjyu, questions: list[str]) -> dict:
    totals: dict = defaultdict(int)
    tokens: dict = defaultdict(int)
    for q in questions:
        r = m.lazy_search(q)
        totals["questions"] += 1
        totals["deepened to level 2"] += bool(r.level2)
        totals["answered from level 4 reports"] += bool(r.level4)
        totals["units sent to extraction"] += r.level2.get("units_sent", 0)
        totals["units read from the index"] += r.level2.get("units_reused", 0)
        totals["reports written"] += r.level4.get("reports_written", 0)
        totals["reports read"] += r.level4.get("reports_read", 0)
        for level, usage in r.usage_by_level.items():
            tokens[f"level {level}"] += usage.get("total_tokens", 0)
    return {**totals, "tokens": dict(tokens)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--index", type=Path, required=True)
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--pairs", type=int, default=20)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    global_questions = [json.loads(line)["question"] for line in GLOBAL.read_text(encoding="utf-8").splitlines()]
    by_paper: dict[str, list[str]] = defaultdict(list)
    for line in (args.data / "covidqa-dev" / "questions.jsonl").read_text(encoding="utf-8").splitlines():
        q = json.loads(line)
        by_paper[q["doc"]].append(q["question"])
    pairs = [qs[:2] for _, qs in sorted(by_paper.items()) if len(qs) >= 2][:args.pairs]
    results = {}
    with tempfile.TemporaryDirectory() as tmp, LLMTestServer(responder) as server:
        index = Path(tmp) / "index"
        shutil.copytree(args.index, index, copy_function=os.link, ignore=shutil.ignore_patterns("levels"))
        config = load_config(None, llm=server.config().model_dump(), cache_dir=str(args.index / "cache"))
        m = Monjyu(index, config)
        results["eager --level 2"] = m.level_estimate(2)
        results["eager --level 4"] = m.level_estimate(4)
        results["global questions"] = run(m, global_questions)
        results["global questions again"] = run(m, global_questions)
        results["local: first of each pair"] = run(m, [a for a, _ in pairs])
        results["local: second, same paper"] = run(m, [b for _, b in pairs])
        results["coverage"] = m.levels()
    if args.json:
        print(json.dumps(results, indent=1))
        return
    for name in ("eager --level 2", "eager --level 4"):
        e = results[name]
        print(f"{name}: {e['items']} {e['what']}, ~{e['prompt_tokens']:,} prompt + {e['completion_tokens']:,} output tokens")
    for name, r in results.items():
        if name.startswith(("global", "local")):
            print(f"\n{name}:")
            for k, v in r.items():
                print(f"  {k}: {v}")
    print("\ncoverage after the runs:", json.dumps(results["coverage"]))


if __name__ == "__main__":
    main()
