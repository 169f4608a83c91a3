"""Which entity names Level 3 merges: the rule, measured on written pairs (issue 57's gold).

    python bench/entity_merge.py [--pairs bench/data/entity_pairs.jsonl] [--json]

For each pair of bench/data/entity_pairs.jsonl, the cosine of the two names' vectors (the
configured embedder, as Level 3 embeds them) and whether each rule merges them:
  - name: the same normalised name only (Level 2's rule, the reference);
  - vector >= t: the cosine reaches t;
  - vector >= t, same numbers: and the names carry the same numbers ("SARS-CoV" / "SARS-CoV-2",
    "IL-6" / "IL-8" differ there);
  - surface key: the same name once case, articles, hyphens and a plural s are taken off;
  - abbreviation: one name abbreviates the other (Schwartz and Hearst's rule);
  - middle names: one proper name is the other with middle names;
  - same_entity: Level 3's rule (levels/entity_graph.py): same numbers, and any of the three.
Precision and recall of "same" per set and overall, for each threshold t. Offline.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from monjyu.config import MonjyuConfig
from monjyu.embed.base import normalize
from monjyu.embed.factory import create_embedder
from monjyu.levels.entity_graph import abbreviates, middle_names, name_numbers, same_entity, surface_key
from monjyu.levels.extract import entity_key

THRESHOLDS = [0.80, 0.82, 0.84, 0.86, 0.88, 0.90, 0.92, 0.94, 0.96]


def scores(rows: list[dict], merged: list[bool]) -> dict:
    tp = sum(m and r["same"] for r, m in zip(rows, merged))
    fp = sum(m and not r["same"] for r, m in zip(rows, merged))
    same = sum(r["same"] for r in rows)
    return {"precision": round(tp / (tp + fp), 3) if tp + fp else 1.0, "recall": round(tp / same, 3) if same else 1.0,
            "merged_wrongly": fp}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=Path, default=Path(__file__).parent / "data" / "entity_pairs.jsonl")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = [json.loads(line) for line in args.pairs.read_text(encoding="utf-8").splitlines() if line.strip()]
    embedder = create_embedder(MonjyuConfig().embedding)
    a = normalize(embedder.embed_queries([r["a"] for r in rows]))  # e5's prefix for short symmetric text
    b = normalize(embedder.embed_queries([r["b"] for r in rows]))
    cosine = (a * b).sum(axis=1)
    same_numbers = [name_numbers(r["a"]) == name_numbers(r["b"]) for r in rows]
    rules = {"name": [entity_key(r["a"]) == entity_key(r["b"]) for r in rows],
             "surface key": [surface_key(r["a"]) == surface_key(r["b"]) for r in rows],
             "abbreviation": [abbreviates(r["a"], r["b"]) or abbreviates(r["b"], r["a"]) for r in rows],
             "middle names": [middle_names(r["a"], r["b"]) for r in rows],
             "same_entity (Level 3's rule)": [same_entity(r["a"], r["b"]) for r in rows]}
    for t in THRESHOLDS:
        rules[f"vector>={t:.2f}"] = [bool(c >= t) for c in cosine]
        rules[f"vector>={t:.2f},same numbers"] = [bool(c >= t) and s for c, s in zip(cosine, same_numbers)]
    sets = sorted({r["set"] for r in rows})
    table = {rule: {name: scores([r for r in rows if r["set"] == name], [m for r, m in zip(rows, merged) if r["set"] == name])
                    for name in sets} | {"all": scores(rows, merged)} for rule, merged in rules.items()}
    if args.json:
        print(json.dumps({"embedder": embedder.id, "rules": table,
                          "pairs": [{**r, "cosine": round(float(c), 4)} for r, c in zip(rows, cosine)]}, ensure_ascii=False))
        return
    print(f"embedder {embedder.id}; {len(rows)} pairs, {sum(r['same'] for r in rows)} the same entity")
    print(f"{'rule':34}" + "".join(f"{s:>26}" for s in [*sets, "all"]))
    for rule, by_set in table.items():
        cells = (f"P {v['precision']:.3f} R {v['recall']:.3f} ({v['merged_wrongly']} wrong)" for v in by_set.values())
        print(f"{rule:34}" + "".join(f"{c:>26}" for c in cells))
    print("\nsame entity, lowest cosine first:")
    for r, c in sorted(((r, c) for r, c in zip(rows, cosine) if r["same"]), key=lambda x: x[1])[:12]:
        print(f"  {c:.3f}  {r['a']} / {r['b']}")
    print("different entities, highest cosine first:")
    for r, c in sorted(((r, c) for r, c in zip(rows, cosine) if not r["same"]), key=lambda x: -x[1])[:12]:
        print(f"  {c:.3f}  {r['a']} / {r['b']}  (numbers {'same' if name_numbers(r['a']) == name_numbers(r['b']) else 'differ'})")


if __name__ == "__main__":
    main()
