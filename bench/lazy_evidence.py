"""Lazy search without an LLM: evidence recall of the text units it keeps, against hybrid top-k
with the same number of units, per preset.

    python bench/lazy_evidence.py --beir ../shared/bench-data/2wiki --index /tmp/idx-2wiki --presets z100,z500
    python bench/lazy_evidence.py --qa ../shared/bench-data/covidqa-dev/questions.jsonl --index IDX --presets z100

For each question, lazy search keeps the units in which a sentence passed the (local) relevance
test. Evidence recall = share of the gold passages among the kept units' documents; complete =
all gold passages kept. The hybrid reference takes exactly as many units per question from
`search --mode hybrid`. Also prints the mean units kept, budget spent and time per question.
With --qa (papers and answer spans, covidqa-dev): the share of questions whose kept units include
one from the gold paper (doc) and one holding the answer (ans), against hybrid at equal units.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from monjyu import Monjyu, load_config
from monjyu.eval import BeirDataset
from monjyu.eval.qa import QADataset, holds_answer


def evidence(gold: set[str], docs: list[str]) -> tuple[float, bool]:
    found = gold & set(docs)
    return len(found) / len(gold), found == gold


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--beir", type=Path)
    ap.add_argument("--qa", type=Path, help="a questions JSONL with answer spans (covidqa-dev) instead of --beir")
    ap.add_argument("--index", required=True, type=Path)
    ap.add_argument("--presets", default="z100,z500")
    ap.add_argument("--config", type=Path, default=None)
    ap.add_argument("--limit", type=int, default=0, help="first N questions only")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()

    if bool(args.beir) == bool(args.qa):
        ap.error("give one of --beir and --qa")
    config = load_config(args.config)
    config.search.passage_units = 1  # the hybrid reference takes units, as many as lazy keeps, not passages of two
    m = Monjyu(args.index, config)
    if args.qa:
        qa_evidence(m, QADataset.load(args.qa), args)
        return
    dataset = BeirDataset.load(args.beir)
    m.index([dataset.corpus])  # reuses the index when nothing changed
    qids = list(dataset.qrels)[:args.limit or None]
    report = {}
    for preset in args.presets.split(","):
        rows = []
        for qid in qids:
            gold = {d for d, rel in dataset.qrels[qid].items() if rel > 0}
            t0 = time.perf_counter()
            lazy = m.lazy_search(dataset.queries[qid], preset=preset)
            seconds = time.perf_counter() - t0
            kept = lazy.kept_text_unit_ids
            doc_of = {s.text_unit_id: s.document_id for s in lazy.relevant_sentences}
            lazy_docs = [doc_of[u] for u in kept]
            n = max(1, len(kept))
            hybrid_docs = [h.document_id for h in m.search(dataset.queries[qid], mode="hybrid", top_k=n, answer=False).hits]
            lr, lc = evidence(gold, lazy_docs)
            hr, hc = evidence(gold, hybrid_docs)
            cited = [c.document_id for c in lazy.citations]
            rows.append({"units": len(kept), "budget_used": lazy.budget_used, "seconds": seconds,
                         "lazy_recall": lr, "lazy_complete": lc, "hybrid_recall": hr, "hybrid_complete": hc,
                         "cited_recall": evidence(gold, cited)[0], "stop": lazy.stop_reason})
        mean = {k: statistics.fmean(float(r[k]) for r in rows) for k in rows[0] if k != "stop"}
        mean["stops"] = {s: sum(r["stop"] == s for r in rows) for s in {r["stop"] for r in rows}}
        report[preset] = mean
        print(f"{preset}: units kept {mean['units']:.1f}, budget used {mean['budget_used']:.0f}, "
              f"{mean['seconds']:.2f} s/question | evidence recall lazy {mean['lazy_recall']:.3f} vs hybrid "
              f"{mean['hybrid_recall']:.3f} | complete lazy {mean['lazy_complete']:.3f} vs hybrid "
              f"{mean['hybrid_complete']:.3f} | answer citations recall {mean['cited_recall']:.3f} | stops {mean['stops']}",
              flush=True)
    if args.out:
        args.out.write_text(json.dumps(report, indent=1))


def qa_evidence(m: Monjyu, dataset: QADataset, args: argparse.Namespace) -> None:
    m.index([dataset.docs_dir])  # reuses the index when nothing changed
    questions = dataset.questions[:args.limit or None]
    for preset in args.presets.split(","):
        sums = dict.fromkeys(("units", "lazy_doc", "lazy_ans", "hybrid_doc", "hybrid_ans"), 0.0)
        for q in questions:
            lazy = m.lazy_search(q.question, preset=preset, answer=False, top_k=100)
            n = max(1, len(lazy.kept_text_unit_ids))
            hybrid = m.search(q.question, mode="hybrid", top_k=n, answer=False).hits
            sums["units"] += len(lazy.kept_text_unit_ids)
            for name, hits in (("lazy", lazy.hits), ("hybrid", hybrid)):
                sums[f"{name}_doc"] += any(Path(h.source_path).name == q.doc for h in hits)
                sums[f"{name}_ans"] += any(holds_answer(h.text, q.answers) for h in hits)
        mean = {k: v / len(questions) for k, v in sums.items()}
        print(f"{preset}: units kept {mean['units']:.1f} | doc over kept units lazy {mean['lazy_doc']:.3f} vs hybrid "
              f"{mean['hybrid_doc']:.3f} | ans lazy {mean['lazy_ans']:.3f} vs hybrid {mean['hybrid_ans']:.3f}", flush=True)


if __name__ == "__main__":
    main()
