"""Global questions answered offline (lazy search, no LLM): themes from the community hierarchy,
checked against what a thematic answer owes its reader, with Baseline RAG in the same run.

    python bench/global_questions.py [--questions bench/data/covidqa_global_questions.jsonl]
                                     [--docs ../shared/bench-data/covidqa-dev/docs] [--index DIR]

Per question: a cited answer (not "insufficient") of at most 10 themes, each with >= 2 cited
sentences, no two labels sharing more than half their phrases, every label phrase named in its
theme's cited sentences (compared on index terms); the distinct papers cited, against Baseline
RAG (`monjyu search --mode vector --top-k 10` with its extractive answer). Off-topic questions
must say the collection does not cover them. The index is `monjyu eval --qa`'s unless given; a
given index that exists is used as it is (2wiki: `monjyu eval --beir`'s, with
`--questions bench/data/2wiki_global_questions.jsonl`).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import time
from pathlib import Path

from monjyu import Monjyu
from monjyu.nlp.analyzer import Analyzer

DATA = Path(__file__).resolve().parents[2] / "shared" / "bench-data" / "covidqa-dev"


def check(result, analyzer: Analyzer) -> list[str]:
    """What a thematic answer got wrong (empty: nothing)."""
    problems = []
    if result.answer is None or result.answer.kind == "insufficient":
        return ["no answer"]
    themes = result.themes
    if not 1 <= len(themes) <= 10:
        problems.append(f"{len(themes)} themes")
    labels = []
    for t in themes:
        if len(t["sentences"]) < 2:
            problems.append(f"theme {t['label']} cites {len(t['sentences'])} sentence(s)")
        cited = set()
        for s in t["sentences"]:
            cited |= set(analyzer.terms(s["text"]))
        missing = [p for p in t["label"] if not set(analyzer.terms(p)) <= cited]
        if missing:
            problems.append(f"label phrases {missing} not in the theme's sentences")
        label = set(t["label"])
        if any(len(label & other) > len(label) / 2 for other in labels):
            problems.append(f"label {t['label']} repeats an earlier one")
        labels.append(label)
    return problems


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--questions", type=Path, default=Path(__file__).parent / "data" / "covidqa_global_questions.jsonl")
    ap.add_argument("--docs", type=Path, default=DATA / "docs")
    ap.add_argument("--index", type=Path, default=None)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    docs = args.docs.resolve()
    key = hashlib.sha256(str(docs).encode()).hexdigest()[:8]
    name = docs.parent.name if docs.name == "docs" else docs.name
    m = Monjyu(args.index or Path(".monjyu-eval") / f"{name}-{key}")
    if args.index is None or not args.index.exists():  # an existing index (2wiki's, built by eval --beir) is used as is
        m.index([docs])
    analyzer = Analyzer()
    rows = []
    for line in args.questions.read_text(encoding="utf-8").splitlines():
        q = json.loads(line)
        t0 = time.perf_counter()
        lazy = m.lazy_search(q["question"])
        ms = (time.perf_counter() - t0) * 1000
        base = m.search(q["question"], mode="vector", top_k=10)
        row = {"id": q["id"], "kind": q["kind"], "lang": q["lang"], "ms": round(ms),
               "themes": len(lazy.themes), "papers": len({c.document_id for c in lazy.citations}),
               "baseline_papers": len({c.document_id for c in base.citations}),
               "baseline_kind": base.answer.kind if base.answer else None}
        if q["kind"] == "off-topic":
            ok = lazy.answer.kind == "insufficient" and lazy.stop_reason == "not covered"
            row["problems"] = [] if ok else ["answered an off-topic question"]
        else:
            row["problems"] = check(lazy, analyzer)
        rows.append(row)
        print(f"{row['id']} {row['lang']} {row['kind']:9} themes {row['themes']:2} papers {row['papers']:2} "
              f"(baseline {row['baseline_papers']}) {row['ms']:5} ms {'; '.join(row['problems']) or 'ok'}")
    glob = [r for r in rows if r["kind"] == "global"]
    papers = statistics.mean(r["papers"] for r in glob)
    baseline = statistics.mean(r["baseline_papers"] for r in glob)
    summary = {"global questions": len(glob), "answered with no problem": sum(not r["problems"] for r in glob),
               "off-topic said not covered": sum(not r["problems"] for r in rows if r["kind"] == "off-topic"),
               "off-topic": sum(r["kind"] == "off-topic" for r in rows),
               "mean papers cited": round(papers, 2), "mean papers cited by Baseline RAG": round(baseline, 2),
               "ratio": round(papers / baseline, 2) if baseline else None,
               "p50 ms": statistics.median(r["ms"] for r in glob)}
    print(json.dumps(summary, ensure_ascii=False) if args.json else "\n".join(f"{k}: {v}" for k, v in summary.items()))


if __name__ == "__main__":
    main()
