"""Level 0 build time per 1,000 text units, split into embedding and everything else.

    python bench/level0_build.py --beir ../shared/bench-data/2wiki --n 1000

Indexes the first N passages of a BEIR corpus into a fresh index with an empty embedding cache,
then re-indexes with one file changed to show the incremental cost.
"""

from __future__ import annotations

import argparse
import os
import json
import tempfile
from pathlib import Path

from monjyu import Monjyu, MonjyuConfig


def main() -> None:
    os.environ.pop("MONJYU_CACHE_DIR", None)  # the environment would beat cache_dir: the point is a cold cache
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--beir", required=True, type=Path)
    ap.add_argument("--n", type=int, default=1000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        lines = (args.beir / "corpus.jsonl").read_text(encoding="utf-8").splitlines()[: args.n]
        corpus = tmp / "corpus"
        corpus.mkdir()
        half = len(lines) // 2
        (corpus / "a.jsonl").write_text("\n".join(lines[:half]) + "\n", encoding="utf-8")
        (corpus / "b.jsonl").write_text("\n".join(lines[half:]) + "\n", encoding="utf-8")
        m = Monjyu(tmp / "idx", MonjyuConfig(cache_dir=str(tmp / "cache")))
        report = m.index([corpus])
        s = report.seconds
        total = s["total"]
        rest = total - s["embed"]
        per_k = 1000 / report.text_units
        print(f"full build: {report.text_units} units in {total:.1f}s "
              f"-> per 1,000 units: total {total * per_k:.1f}s, embedding {s['embed'] * per_k:.1f}s, "
              f"everything else {rest * per_k:.2f}s ({100 * rest / total:.1f}% of total)")
        print("  stages:", json.dumps({k: round(v, 2) for k, v in s.items()}))
        print(f"  embedding throughput: {report.embedded / s['embed']:.1f} units/s")

        (corpus / "b.jsonl").write_text("\n".join(lines[half:-1]) + "\n", encoding="utf-8")
        again = m.index([corpus])
        print(f"incremental (one of two files changed, 1 record dropped): {again.seconds['total']:.2f}s, "
              f"embedded {again.embedded}, stages {json.dumps({k: round(v, 2) for k, v in again.seconds.items()})}")


if __name__ == "__main__":
    main()
