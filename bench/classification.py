"""Accuracy of the rule-based HybridRAG query classifier on the labelled queries written for the
tests (tests/data/query_types.jsonl, English and Japanese), overall and per language and type.

    python bench/classification.py
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from monjyu.engines.classify import rule_classify
from monjyu.query import Query
from monjyu.nlp.lang import detect_language

LABELLED = Path(__file__).parent.parent / "tests" / "data" / "query_types.jsonl"


def main() -> None:
    rows = [json.loads(line) for line in LABELLED.read_text(encoding="utf-8").splitlines() if line.strip()]
    right, total = Counter(), Counter()
    for row in rows:
        ok = rule_classify(Query.of(row["query"]), []).type == row["type"]
        for key in ("all", detect_language(row["query"]), row["type"]):
            total[key] += 1
            right[key] += ok
    for key in total:
        print(f"{key:14s} {right[key]:3d} / {total[key]:3d} = {right[key] / total[key]:.3f}")


if __name__ == "__main__":
    main()
