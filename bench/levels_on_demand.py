"""Levels 2, 3 and 4 built on demand against building them up front, with the test LLM server
standing in for the model (a scripted responder: the figures are what is sent to the LLM and what
is reused, not answer quality).

    python bench/levels_on_demand.py --index IDX [--set covidqa-dev|2wiki] [--data ../shared/bench-data]
                                     [--pairs 20] [--json]

IDX is an index of the set; it is copied (hard links) so that its levels/ folder starts empty.
Runs, in order, each question a lazy search at the default level (4), then HybridRAG:

1. the set's global questions (bench/data/covidqa_global_questions.jsonl, 30 global and 5
   off-topic; bench/data/2wiki_global_questions.jsonl);
2. the same questions again;
3. covidqa-dev: local questions in pairs on the same paper (the first two questions of each of
   `--pairs` papers): the first of each pair, then the second, "a new question in the same
   region"; 2wiki: its 101 questions;
4. the questions of 3 through HybridRAG (its relationship questions deepen: hybrid.deepen_units).

Printed per run: questions that deepened (to Level 2, through Level 3's entities) and that
answered from Level 4 reports, units sent to extraction and read from the index, reports written
and read, tokens per level, and the units sent as a share of an eager build; against them what
`monjyu index --level 2` (or 3: the same extraction, then the entity graph with no LLM call) and
`--level 4` would send for the whole collection, from `m.levels.estimate`. Level 3's size at
the end comes with the coverage.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests.llm_server import LLMTestServer, echo_responder  # noqa: E402

from monjyu import Monjyu, load_config  # noqa: E402
from monjyu.nlp.analyzer import EN_STOPWORDS  # noqa: E402

DATA = ROOT.parent / "shared" / "bench-data"
GLOBAL = {"covidqa-dev": ROOT / "bench" / "data" / "covidqa_global_questions.jsonl",
          "2wiki": ROOT / "bench" / "data" / "2wiki_global_questions.jsonl"}
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


def run(m: Monjyu, questions: list[str], eager_units: int) -> dict:
    """Lazy search over the questions: what each level cost."""
    totals: dict = defaultdict(int)
    tokens: dict = defaultdict(int)
    calls: dict = defaultdict(int)
    for q in questions:
        r = m.lazy_search(q)
        totals["questions"] += 1
        totals["deepened to level 2"] += bool(r.level2)
        totals["deepened through level 3 entities"] += r.level2.get("level") == 3
        totals["answered from level 4 reports"] += bool(r.level4)
        totals["units sent to extraction"] += r.level2.get("units_sent", 0)
        totals["units read from the index"] += r.level2.get("units_reused", 0)
        totals["units linked by entities"] += r.level2.get("units_linked", 0)
        totals["reports written"] += r.level4.get("reports_written", 0)
        totals["reports read"] += r.level4.get("reports_read", 0)
        for level, usage in r.usage_by_level.items():
            tokens[f"level {level}"] += usage.get("total_tokens", 0)
            calls[f"level {level}"] += usage.get("calls", 0)
    totals["share of an eager level 2/3 build"] = round(totals["units sent to extraction"] / max(eager_units, 1), 4)
    return {**totals, "LLM calls": dict(calls), "tokens": dict(tokens)}


def run_hybrid(m: Monjyu, questions: list[str], eager_units: int) -> dict:
    """HybridRAG over the questions (no answer): its relationship questions' extraction."""
    totals: dict = defaultdict(int)
    for q in questions:
        r = m.hybrid_search(q, answer=False)
        totals["questions"] += 1
        totals["relationship questions"] += r.classification["type"] == "relationship"
        totals["deepened"] += bool(r.level3)
        totals["searched again through level 3"] += bool(r.level3.get("searched_again"))
        totals["units sent to extraction"] += r.level3.get("units_sent", 0)
        totals["units read from the index"] += r.level3.get("units_reused", 0)
        totals["LLM calls"] += r.level3.get("usage", {}).get("calls", 0)
        totals["tokens"] += r.level3.get("usage", {}).get("total_tokens", 0)
        totals["results through a level 3 entity"] += sum(i.hit.level == 3 for i in r.items)
    totals["share of an eager level 2/3 build"] = round(totals["units sent to extraction"] / max(eager_units, 1), 4)
    return dict(totals)


def questions_of(data: Path, name: str, pairs: int) -> dict[str, list[str]]:
    """The runs' questions: covidqa-dev's first two questions of `pairs` papers (as two runs),
    2wiki's questions."""
    if name == "2wiki":
        lines = (data / "2wiki" / "queries.jsonl").read_text(encoding="utf-8").splitlines()
        return {"questions": [json.loads(line)["text"] for line in lines]}
    by_paper: dict[str, list[str]] = defaultdict(list)
    for line in (data / "covidqa-dev" / "questions.jsonl").read_text(encoding="utf-8").splitlines():
        q = json.loads(line)
        by_paper[q["doc"]].append(q["question"])
    chosen = [qs[:2] for _, qs in sorted(by_paper.items()) if len(qs) >= 2][:pairs]
    return {"local: first of each pair": [a for a, _ in chosen], "local: second, same paper": [b for _, b in chosen]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--index", type=Path, required=True)
    ap.add_argument("--set", choices=sorted(GLOBAL), default="covidqa-dev")
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--pairs", type=int, default=20)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    global_questions = [json.loads(line)["question"]
                        for line in GLOBAL[args.set].read_text(encoding="utf-8").splitlines() if line.strip()]
    local = questions_of(args.data, args.set, args.pairs)
    results = {}
    with tempfile.TemporaryDirectory() as tmp, LLMTestServer(responder) as server:
        index = Path(tmp) / "index"
        shutil.copytree(args.index, index, copy_function=os.link, ignore=shutil.ignore_patterns("levels"))
        config = load_config(None, llm=server.config().model_dump(), cache_dir=str(args.index / "cache"))
        m = Monjyu(index, config)
        results["eager --level 2"] = m.levels.estimate(2)
        results["eager --level 3"] = m.levels.estimate(3)
        results["eager --level 4"] = m.levels.estimate(4)
        eager = results["eager --level 2"]["items"]
        results["global questions"] = run(m, global_questions, eager)
        results["global questions again"] = run(m, global_questions, eager)
        for name, questions in local.items():
            results[name] = run(m, questions, eager)
        results["hybridrag: " + ", ".join(local)] = run_hybrid(m, [q for qs in local.values() for q in qs], eager)
        results["coverage"] = m.levels.status()
        context = m.workspace.current()
        context._level3 = (0, None)  # one rebuild of Level 3 from everything extracted, timed
        t = time.perf_counter()
        context.level_three()
        results["coverage"]["3"]["rebuild_ms"] = round((time.perf_counter() - t) * 1000, 1)
    if args.json:
        print(json.dumps(results, indent=1))
        return
    for name in ("eager --level 2", "eager --level 3", "eager --level 4"):
        e = results[name]
        print(f"{name}: {e['items']} {e['what']}, ~{e['prompt_tokens']:,} prompt + {e['completion_tokens']:,} output tokens")
    for name, r in results.items():
        if not name.startswith(("eager", "coverage")):
            print(f"\n{name}:")
            for k, v in r.items():
                print(f"  {k}: {v}")
    print("\ncoverage after the runs:", json.dumps(results["coverage"]))


if __name__ == "__main__":
    main()
