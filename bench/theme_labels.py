"""The themes of global questions, laid out for a reader's judgement (issue 55's judgement set).

    python bench/theme_labels.py --index covidqa-dev=IDX --index papers-pdf=IDX2
                                 [--questions bench/data/theme_questions.jsonl] [--json]

For each question of the set whose collection is given: the answer's heading, and per theme its
label phrases, each with its share of the community's units against its share of the
collection's units (a phrase that stands for its community has a far larger share there), and
its quoted sentences with their documents. Run it on two commits (bench/worktree.py, or
PYTHONPATH=OTHER/src) to set them side by side. Offline: no LLM is configured.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from monjyu import Monjyu


def phrase_shares(searcher, community_id: int, label: list[str], phrases: list[dict] | None) -> list[dict]:
    """Each label phrase's share of its community's units and of the collection's: as the answer
    gives them, or (older answers, which showed the graph phrase itself as the label and read
    all the passages naming one of the community's phrases) computed here."""
    index = searcher.index
    graph, community = index.graph, index.communities.by_id[community_id]
    rows = community.unit_rows
    n_units = index.graph.incidence.shape[0]
    out = []
    for i, text in enumerate(label):
        if phrases:  # the answer's own figures: shares of the community's own passages
            out.append({key: phrases[i][key] for key in ("label", "phrase", "community_share", "collection_share")})
            continue
        phrase = text
        node = graph.vocab.get(phrase)
        if node is None:
            out.append({"label": text, "phrase": phrase, "community_share": None, "collection_share": None})
            continue
        inside = int((graph.incidence[rows][:, node] > 0).sum())
        out.append({"label": text, "phrase": phrase, "community_share": round(inside / len(rows), 3),
                    "collection_share": round(float(graph.df[node]) / n_units, 3)})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--questions", type=Path, default=Path(__file__).parent / "data" / "theme_questions.jsonl")
    ap.add_argument("--index", action="append", default=[], metavar="SET=DIR", help="a collection's index")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    indexes = dict(item.split("=", 1) for item in args.index)
    if not indexes:
        ap.error("give at least one --index SET=DIR (SET: the 'set' field of the questions)")
    rows = []
    for line in args.questions.read_text(encoding="utf-8").splitlines():
        q = json.loads(line)
        if q["set"] not in indexes:
            continue
        m = Monjyu(Path(indexes[q["set"]]))
        searcher = m.workspace.current().searcher
        result = m.lazy_search(q["question"])
        docs = {c.text_unit_id: c.document_id for c in result.citations}
        themes = [{"label": t["label"], "shares": phrase_shares(searcher, t["community_id"], t["label"], t.get("phrases")),
                   "quotes": [{"document": docs.get(s["text_unit_id"], "?"), "text": " ".join(s["text"].split())}
                              for s in t["sentences"]]} for t in result.themes]
        heading = result.answer.text.split("\n")[0] if result.answer else ""
        rows.append({"set": q["set"], "id": q["id"], "question": q["question"], "heading": heading, "themes": themes})
        if not args.json:
            print(f"\n## {q['set']} {q['id']}: {q['question']}\n{heading}")
            for n, t in enumerate(themes, start=1):
                shares = "; ".join(f"{s['label']} {s['community_share']} vs {s['collection_share']}" for s in t["shares"])
                print(f"{n}. {', '.join(t['label'])}  [{shares}]")
                for quote in t["quotes"]:
                    print(f"     - ({quote['document']}) {quote['text'][:160]}")
    if args.json:
        print(json.dumps(rows, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    main()
