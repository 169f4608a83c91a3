"""What build-time sentence vectors buy: the first searches of a new index, with and without them.

    python bench/sentence_vectors.py --index IDX --questions bench/data/papers_pdf_qa.jsonl [--n 30] [--mode lazy]

IDX is an index built with `embedding.sentences` on (the default). The same questions are asked
(the default search with an answer, each once, in a fresh process per copy) of two copies of it: one as
built, its embedding cache holding every sentence's vector, and one whose embedding cache is
emptied, as an index built without sentence vectors starts (the unit vectors are in the index
itself). There, each search embeds the sentences of its passages the first time they are read,
into the cache, so later questions find more of them. Prints p50, mean and max seconds of each.
`--mode`: the search mode asked (lazy search tests sentences for relevance by their vectors too);
the index's default when not given.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def latencies(index: Path, questions: list[str], mode: str | None) -> list[float]:
    from monjyu import Monjyu

    m = Monjyu(index)
    run = (lambda q, **o: m.ask(q, mode, **o)) if mode else m.search  # noqa: E731
    run("warm up the models", top_k=5)
    seconds = []
    for q in questions:
        t0 = time.perf_counter()
        run(q, top_k=10)
        seconds.append(time.perf_counter() - t0)
    return seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--index", type=Path, required=True)
    ap.add_argument("--questions", type=Path, required=True)
    ap.add_argument("--field", default="question")
    ap.add_argument("--n", type=int, default=30)
    ap.add_argument("--mode", help="any mode of `Monjyu.ask` (lazy, hybridrag, ...); the default search if not given")
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)  # time one copy, in this process
    args = ap.parse_args()
    lines = args.questions.read_text(encoding="utf-8").splitlines()
    questions = [json.loads(line)[args.field] for line in lines if line.strip()][:args.n]
    if args.one:
        print(json.dumps(latencies(args.index, questions, args.mode)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        for label, emptied in (("with sentence vectors", False), ("without (cache emptied)", True)):
            copy = Path(tmp) / label.split()[0]
            shutil.copytree(args.index, copy)
            if emptied:
                (copy / "cache" / "embeddings.sqlite").unlink()
            out = subprocess.run([sys.executable, __file__, "--index", str(copy), "--questions", str(args.questions),
                                  "--field", args.field, "--n", str(args.n), "--one"]
                                 + (["--mode", args.mode] if args.mode else []),
                                 capture_output=True, text=True, check=True)
            s = json.loads(out.stdout.splitlines()[-1])
            print(f"{label:26} p50 {statistics.median(s):.3f} s  mean {statistics.mean(s):.3f} s  max {max(s):.3f} s"
                  f"  ({len(s)} questions)", flush=True)


if __name__ == "__main__":
    main()
