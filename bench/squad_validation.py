"""The reader's English validation set as a folder of documents: the 10 SQuAD 1.1 dev articles the
reader never trained on (training/reader/data.py: validation_articles), one text file per article
(its paragraphs), and their 1,803 questions in covidqa-dev's layout, so that the answer bench reads
them as it reads a paper set:

    python bench/squad_validation.py --out DIR
    python bench/answer_quality.py --covidqa DIR --covidqa-index IDX --half all

A reader rule or threshold may be chosen on these questions and on covidqa-dev's fit half (the
issue's validation data), never on covidqa-dev's test half. 84 held-out fit-half questions are too
few to tell a one-point change from noise; these 1,803 are Wikipedia, not papers.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "training" / "reader"))
from data import SHARED_DATA, read_jsonl_gz, validation_articles  # noqa: E402


def write_set(reader_data: Path, out: Path) -> tuple[int, int]:
    """DIR/docs/<article>.txt and DIR/questions.jsonl (id, question, answers, doc); (articles, questions)."""
    squad = read_jsonl_gz(reader_data / "squad11-dev.jsonl.gz")
    held = validation_articles(squad, read_jsonl_gz(reader_data / "squad20-dev-unanswerable.jsonl.gz"))
    articles: dict[str, tuple[str, dict[str, None]]] = {}  # file name: (title, its paragraphs in order)
    questions = []
    for r in squad:
        if r["title"] not in held:
            continue
        name = re.sub(r"[^A-Za-z0-9]+", "-", r["title"]).strip("-").lower() + ".txt"
        articles.setdefault(name, (r["title"], {}))[1][r["context"]] = None
        questions.append({"id": r["id"], "question": r["question"],
                          "answers": sorted({a["text"] for a in r["answers"]}), "doc": name})
    (out / "docs").mkdir(parents=True, exist_ok=True)
    for name, (title, texts) in articles.items():
        (out / "docs" / name).write_text(title + "\n\n" + "\n\n".join(texts), encoding="utf-8")
    with open(out / "questions.jsonl", "w", encoding="utf-8") as fh:
        for q in questions:
            fh.write(json.dumps(q, ensure_ascii=False) + "\n")
    return len(articles), len(questions)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reader-data", type=Path, default=SHARED_DATA)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    articles, questions = write_set(args.reader_data, args.out)
    print(f"{articles} articles, {questions} questions in {args.out}")


if __name__ == "__main__":
    main()
