"""Japanese PDFs against the same text as plain text, this tree and a baseline commit in one run.

    python bench/japanese_pdfs.py [--baseline fdfd795]

The 12 articles of tests/data/ja_paragraphs.json are written as PDFs set in IPA Gothic (as the
tests make them) and as plain text; each tree indexes both (hybrid search, its own index, one
embedding cache) and answers the 36 questions. Prints per tree and format: doc@1 and doc@5 (the
article holding the answer is the first hit / among the first five), titles and bylines read
right, and spaces between two Japanese characters in the stored text outside the front matter
(the source has none there; its bylines, "山田 太郎", have theirs).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from tests.japanese_pdfs import ARTICLES, write_collection  # noqa: E402
from worktree import checkout  # noqa: E402

RUN = r"""
import json, re, sys
from pathlib import Path
from monjyu import Monjyu, MonjyuConfig
folder, index, cache = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
questions = json.loads(sys.argv[4])
m = Monjyu(index, MonjyuConfig(cache_dir=cache))
m.index([folder])
ranks = []
for question, name in questions:
    hits = m.search(question, "hybrid", top_k=5, answer=False).hits
    ranks.append(next((i for i, h in enumerate(hits) if h.document_id.endswith(name)), None))
docs = [m.documents.get(d["id"]) for d in m.documents.list(limit=100)["documents"]]
body = [d["text"][s["start"]:s["end"]] for d in docs for s in d["sections"] if s["kind"] != "front"]
pairs = sum(len(re.findall(r"[\u3040-\u30ff\u4e00-\u9fff] [\u3040-\u30ff\u4e00-\u9fff]", t)) for t in body)
print(json.dumps({"ranks": ranks, "docs": [(d["id"], d["title"], d["authors"]) for d in docs], "pairs": pairs}))
"""


def run(src: Path, folder: Path, index: Path, cache: Path, questions: list) -> dict:
    env = dict(os.environ, PYTHONPATH=str(src))
    done = subprocess.run([sys.executable, "-c", RUN, str(folder), str(index), str(cache), json.dumps(questions)],
                          env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--baseline", default="fdfd795")
    args = parser.parse_args()
    truth = {a["id"]: (a["title"], a["authors"]) for a in ARTICLES}
    with tempfile.TemporaryDirectory(prefix="monjyu-ja-") as tmp_name:
        tmp = Path(tmp_name)
        questions = {kind: write_collection(tmp / kind, as_pdf=kind == "pdf") for kind in ("pdf", "txt")}
        with checkout(args.baseline, tmp / "wt") as old_src:
            for label, src in ((args.baseline, old_src), ("this tree", ROOT / "src")):
                for kind in ("pdf", "txt"):
                    asked = [(q, name) for q, _, name in questions[kind]]
                    out = run(src, tmp / kind, tmp / f"idx-{label.replace(' ', '-')}-{kind}", tmp / "cache", asked)
                    ranks = out["ranks"]
                    right = sum(truth[Path(doc).stem] == (title, authors) for doc, title, authors in out["docs"])
                    print(f"{label:<10} {kind}: doc@1 {sum(r == 0 for r in ranks) / len(ranks):.3f}  "
                          f"doc@5 {sum(r is not None for r in ranks) / len(ranks):.3f}  "
                          f"title and byline right {right}/{len(out['docs'])}  "
                          f"spaces between Japanese characters in the body {out['pairs']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
