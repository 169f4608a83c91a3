"""'What do other papers say about X?' answered offline from the sentences that cite X.

    python bench/citation_contexts.py --index IDX [--questions tests/data/citation_questions.jsonl]

IDX indexes papers-pdf (`monjyu index ../shared/bench-data/papers-pdf --index IDX`). For each
question: the paper the question was resolved to, the sentences the default search's answer
quotes, and whether every quoted sentence is a sentence of a paper that cites X (the gold's
citing papers) holding a citation of X.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from monjyu import Monjyu  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--questions", type=Path, default=ROOT / "tests/data/citation_questions.jsonl")
    args = parser.parse_args()
    m = Monjyu(args.index)
    ids = {Path(d["id"]).name: d["id"] for d in m.documents.list(limit=1000)["documents"]}
    rows = [json.loads(line) for line in args.questions.read_text(encoding="utf-8").splitlines() if line.strip()]
    all_right = 0
    for row in rows:
        paper = ids[row["paper"]]
        contexts = {(c["document_id"], " ".join(c["sentence"].split())) for c in m.papers.citation_contexts(paper)}
        result = m.search(row["question"])
        resolved = m.papers.asked_about(row["question"])
        quoted = [(c.document_id, " ".join(c.snippet.split())) for c in result.answer.citations]
        right = [q in contexts and Path(q[0]).name in row["citing"] for q in quoted]
        ok = resolved == paper and quoted and all(right)
        all_right += bool(ok)
        print(f"{'ok' if ok else '--'} {row['question']}\n   resolved to {resolved}; {len(quoted)} quoted sentences from "
              f"{len({d for d, _ in quoted})} citing papers; {sum(right)} of them cite it")
    print(f"\n{all_right}/{len(rows)} questions: every quoted sentence a sentence of another paper that cites X")
    return 0


if __name__ == "__main__":
    sys.exit(main())
