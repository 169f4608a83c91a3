"""Figure and table text out of the body: what `text` units keep and lose against an earlier commit.

    python bench/figure_text.py [--baseline REV] [--dir ../shared/bench-data/papers-pdf] [--show N]

Loads every PDF with this tree's loader and with REV's (a git worktree, same environment) and
chunks it, then prints per paper and in total: the `text` units' words kept (a multiset of
words, today's against REV's; all words, and words of three or more letters without digits), the `text` units whose tokens are mostly numbers (more than half
of them hold a digit), the units of kind `figure` and `table`, and the words that left `text`
units, most frequent first, for review (--show N of them, and N removed passages).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from worktree import checkout  # noqa: E402

DUMP = r"""
import json, pathlib, sys
from monjyu.config import MonjyuConfig, ChunkingConfig
from monjyu.ingest.chunker import Chunker
from monjyu.ingest.loaders import load_file
out = {}
for f in sorted(pathlib.Path(sys.argv[1]).glob("*.pdf")):
    [doc] = load_file(f, f.name, MonjyuConfig().ingest)
    out[f.name] = [(u.kind, u.text) for u in Chunker(ChunkingConfig()).chunk(doc)]
json.dump(out, sys.stdout)
"""
DIGIT = re.compile(r"\d")
PROSE = re.compile(r"^[^\W\d_]{3,}$")


def units(src: Path, folder: Path) -> dict[str, list[tuple[str, str]]]:
    env = dict(os.environ, PYTHONPATH=str(src))
    done = subprocess.run([sys.executable, "-c", DUMP, str(folder)], env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


FUNCTION = frozenset("the of and in to we is for with that this are by on as an it from be".split())


def prose_sentences(text: str) -> list[str]:
    """Sentences of running prose in a unit's text (single-spaced): eight or more words, two or
    more function words, ending in a stop."""
    flat = " ".join(text.split())
    out = []
    for sentence in re.split(r"(?<=[.!?])\s+(?=[A-Z(\[])", flat):
        tokens = sentence.split()
        if len(tokens) >= 8 and sentence.endswith((".", "!", "?")) and sum(t.lower() in FUNCTION for t in tokens) >= 2:
            out.append(sentence)
    return out


def mostly_numbers(text: str) -> bool:
    tokens = text.split()
    return bool(tokens) and sum(bool(DIGIT.search(t)) and not re.search(r"[a-z]{3}", t.lower()) for t in tokens) > 0.5 * len(tokens)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--baseline", default="HEAD", help="the commit to compare with (default HEAD)")
    parser.add_argument("--dir", type=Path, default=ROOT / "../shared/bench-data/papers-pdf")
    parser.add_argument("--show", type=int, default=40)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="monjyu-figtext-") as tmp, checkout(args.baseline, Path(tmp) / "wt") as old_src:
        before = units(old_src, args.dir)
    after = units(ROOT / "src", args.dir)
    kept_total = old_total = prose_kept = prose_total = sentences_kept = sentences_total = 0
    lost_sentences: list[tuple[str, str]] = []
    removed: Counter[str] = Counter()
    passages: list[tuple[str, str]] = []
    print(f"{'paper':<18} {'kept':>6} {'numeric text units':>19} {'figure':>7} {'table':>6}  (baseline {args.baseline})")
    for name in sorted(after):
        old = Counter(w for kind, text in before[name] if kind == "text" for w in words(text))
        new = Counter(w for kind, text in after[name] if kind == "text" for w in words(text))
        kept = sum((old & new).values())
        prose_old = Counter({w: c for w, c in old.items() if PROSE.match(w)})
        prose_kept += sum((prose_old & new).values())
        prose_total += sum(prose_old.values())
        kept_total, old_total = kept_total + kept, old_total + sum(old.values())
        removed.update(old - new)
        prose = Counter(w for kind, text in before[name] if kind == "text" for sentence in prose_sentences(text)
                        for w in words(sentence))
        sentences_kept += sum((prose & new).values())
        sentences_total += sum(prose.values())
        new_text = " ".join(" ".join(text.split()) for kind, text in after[name] if kind == "text")
        lost_sentences += [(name, sentence) for kind, text in before[name] if kind == "text"
                           for sentence in prose_sentences(text) if sentence not in new_text]
        numeric_old = sum(kind == "text" and mostly_numbers(text) for kind, text in before[name])
        numeric_new = sum(kind == "text" and mostly_numbers(text) for kind, text in after[name])
        kinds = Counter(kind for kind, _ in after[name])
        passages += [(name, text) for kind, text in after[name] if kind in ("figure", "table")]
        print(f"{name:<18} {kept / max(sum(old.values()), 1):>6.3f} {numeric_old:>9} -> {numeric_new:<7} "
              f"{kinds['figure']:>7} {kinds['table']:>6}")
    print(f"\ntext units keep {kept_total / max(old_total, 1):.4f} of the baseline's body words "
          f"({kept_total:,} of {old_total:,}); {sum(removed.values()):,} left them")
    print(f"words of three or more letters (no digits) keep {prose_kept / max(prose_total, 1):.4f} "
          f"({prose_kept:,} of {prose_total:,})")
    print(f"words of the baseline's prose sentences (8+ words, 2+ function words, a final stop) kept in text "
          f"units: {sentences_kept / max(sentences_total, 1):.4f} ({sentences_kept:,} of {sentences_total:,}); "
          f"{len(lost_sentences)} such sentences changed, some shown below")
    print(f"most frequent words that left text units: " + ", ".join(f"{w} {c}" for w, c in removed.most_common(args.show)))
    for name, sentence in lost_sentences[:: max(1, len(lost_sentences) // max(args.show // 4, 1))][: args.show // 4]:
        print(f"  lost sentence [{name}] {sentence[:160]}")
    for name, text in passages[:: max(1, len(passages) // max(args.show // 4, 1))][: args.show // 4]:
        print(f"  [{name}] {' '.join(text.split())[:160]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
