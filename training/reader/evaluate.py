"""The shipped reader model (its int8 weights on OpenVINO, as the product runs it) on paragraphs it never trained on:
JaQuAD dev and the held-out SQuAD articles. For each answerable question: does the best-scored
sentence of its paragraph hold the answer (best-sentence accuracy; the paragraph's first sentence
and a random sentence as references); for SQuAD 2.0's unanswerable questions on the same articles:
how often the best score falls under the model's "insufficient" threshold, and the score 3% of the
answerable questions' best scores fall under. With `--restatements`, over covidqa-dev's candidates:
how often the question said back as a statement (`data.restated`), which answers nothing, outscores
every sentence that holds the gold.

    python training/reader/evaluate.py --sample 800 [--restatements CANDIDATES.pkl]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from data import (SHARED_DATA, covidqa_validation, read_jsonl_gz, restated, sentences, squad_groups,  # noqa: E402
                  validation_articles, with_before)

from monjyu.engines.cross_encoder import ReaderModel  # noqa: E402


def best_sentence(model: ReaderModel, groups: list[dict]) -> dict:
    rng = random.Random(0)
    hits, first, chance, under, best = [], [], [], [], []
    for g in groups:
        texts = [s for s, _, _ in g["items"]]
        labels = [y for _, y, _ in g["items"]]
        scores = model.scores(g["question"], texts, [b for _, _, b in g["items"]])
        if any(labels):
            hits.append(labels[int(np.argmax(scores))])
            first.append(labels[0])
            chance.append(labels[rng.randrange(len(labels))])
        under.append(float(scores.max()) < model.threshold)
        if any(labels):
            best.append(float(scores.max()))
    answerable = [u for g, u in zip(groups, under) if any(y for _, y, _ in g["items"])]
    unanswerable = [u for g, u in zip(groups, under) if not any(y for _, y, _ in g["items"])]
    out = {"questions": len(hits), "best_sentence": float(np.mean(hits)), "first_sentence": float(np.mean(first)),
           "random_sentence": float(np.mean(chance)),
           "answerable_called_insufficient": float(np.mean(answerable)) if answerable else None,
           # the threshold that would call 3% of the answerable questions insufficient
           "answerable_3pct_quantile": round(float(np.quantile(best, 0.03)), 3) if best else None}
    if unanswerable:
        out["unanswerable"] = len(unanswerable)
        out["unanswerable_called_insufficient"] = float(np.mean(unanswerable))
    return out


def restatements_above_gold(model: ReaderModel, rows: list[dict]) -> dict:
    """Of the questions some candidate of which holds the gold (reader_fit.py's cached rows), those
    whose restatement the model scores above every such candidate, and its mean log-odds."""
    above, scores = [], []
    for r in rows:
        if r["holds"].any():
            gold = [q for q, h in zip(r["quotes"], r["holds"]) if h]
            s = model.scores(r["question"], [restated(r["question"], "en")] + gold)
            above.append(bool(s[0] > s[1:].max()))
            scores.append(float(s[0]))
    return {"questions": len(above), "restatement_above_gold": float(np.mean(above)),
            "restatement_log_odds": float(np.mean(scores))}


def in_paragraph_order(records: list[dict]) -> list[dict]:
    """Every sentence of each question's paragraph, in the paragraph's order (no sampling)."""
    groups = []
    for r in records:
        answers = [a["text"] for a in r["answers"]]
        items = [(s, int(any(a.strip() and a.strip() in s for a in answers)), b)
                 for s, b in with_before(sentences(r["context"]))]
        if items:
            groups.append({"question": r["question"], "items": items})
    return groups


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sample", type=int, default=800, help="questions of each set (seeded)")
    ap.add_argument("--model", type=Path, help="a folder with reader.int8.onnx and reader.json (default: the shipped one)")
    ap.add_argument("--restatements", type=Path, help="reader_fit.py's --cache file: restatements against the gold "
                    "on the held quarter of covidqa-dev's fit papers and on its test half")
    args = ap.parse_args()
    model = ReaderModel(args.model, threads=1)
    rng = random.Random(7)
    ja = read_jsonl_gz(SHARED_DATA / "jaquad-dev.jsonl.gz")
    squad = read_jsonl_gz(SHARED_DATA / "squad11-dev.jsonl.gz")
    unans = read_jsonl_gz(SHARED_DATA / "squad20-dev-unanswerable.jsonl.gz")
    held = validation_articles(squad, unans)
    report = {
        "jaquad-dev": best_sentence(model, in_paragraph_order(rng.sample(ja, min(args.sample, len(ja))))),
        "squad held-out articles": best_sentence(
            model, in_paragraph_order([r for r in squad if r["title"] in held][:args.sample])
            + [{"question": g["question"], "items": g["items"]}
               for g in squad_groups([r for r in unans if r["title"] in held][:args.sample], rng, False, 99, 0)]),
    }
    if args.restatements:
        import pickle

        rows = pickle.loads(args.restatements.read_bytes())
        held_papers = covidqa_validation(SHARED_DATA.parent / "bench-data" / "covidqa-dev")
        report["covidqa-dev held quarter, restatements"] = restatements_above_gold(
            model, [r for r in rows["fit"] if r["doc"] in held_papers])
        report["covidqa-dev test half, restatements"] = restatements_above_gold(model, rows["test"])
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
