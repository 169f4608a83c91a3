"""Papers as papers against gold read from the PDFs themselves (tests/data/papers_refs_gold.json,
tests/data/papers_odd_bylines_gold.json): reference lists, sampled entries, the collection's
citation graph and bylines.

    python bench/papers_refs.py [--pdf-dir ../shared/bench-data/papers-pdf]
                                [--odd-dir ../shared/bench-data/papers-odd] [--show]

Loads every PDF with MONJYU's loader (no index needed), links the reference entries to the
collection's papers as a build does, and prints:
- per paper: reference entries found against the true count (within 5%: ok);
- sampled entries (the gold's every-k-th rule): title, first author's surname and year right;
- in-collection citation edges: precision and recall;
- bylines: every author in order (papers-pdf, and 20 papers-odd PDFs).
A title is right when it equals the gold's (case, accents and punctuation aside) or differs by a
few characters (similarity >= 0.9); surnames and years must be equal.
"""

from __future__ import annotations

import argparse
import difflib
import json
import sys
from pathlib import Path

import pyarrow as pa

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from monjyu.config import MonjyuConfig  # noqa: E402
from monjyu.index.citations import build_citation_graph  # noqa: E402
from monjyu.ingest.loaders import load_file  # noqa: E402
from monjyu.ingest.references import name_key, surname  # noqa: E402
from monjyu.store.lancedb_store import documents_to_table  # noqa: E402


def same_title(ours: str, gold: str) -> bool:
    a, b = name_key(ours), name_key(gold)
    return a == b or difflib.SequenceMatcher(None, a, b).ratio() >= 0.9


def same_names(ours: list[str], gold: list[str]) -> bool:
    return [name_key(n) for n in ours] == [name_key(n) for n in gold]


def same_surname(name: str, gold: str) -> bool:
    """"Victor Campos Camunez" has the surname "Campos Camunez" or "Camunez": where a given name
    ends is not printed, so either reading counts."""
    ours, gold = name_key(surname(name)), name_key(gold)
    return bool(ours) and (ours.endswith(gold) or gold.endswith(ours)) and name_key(name).endswith(gold)


def closest(entries: list[dict], gold: dict) -> dict | None:
    """Our entry for a gold entry: the one whose text is most like the gold's text."""
    key = name_key(gold.get("text") or gold["title"])
    best = max(entries, key=lambda e: difflib.SequenceMatcher(None, name_key(e["text"]), key).ratio(), default=None)
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pdf-dir", type=Path, default=ROOT / "../shared/bench-data/papers-pdf")
    parser.add_argument("--odd-dir", type=Path, default=ROOT / "../shared/bench-data/papers-odd")
    parser.add_argument("--show", action="store_true", help="print every miss")
    args = parser.parse_args()
    cfg = MonjyuConfig().ingest
    gold = json.loads((ROOT / "tests/data/papers_refs_gold.json").read_text(encoding="utf-8"))
    docs = {}
    for g in gold:
        [doc] = load_file(args.pdf_dir / g["file"], g["file"], cfg)
        docs[g["file"]] = doc
    graph = build_citation_graph(documents_to_table(list(docs.values()), {}))

    counts_ok = bylines_ok = 0
    fields = {"title": 0, "first_author": 0, "year": 0, "all_three": 0}
    sampled = 0
    print(f"{'paper':<18} {'refs':>5} {'gold':>5} {'ok':>3}  byline")
    for g in gold:
        doc = docs[g["file"]]
        n, true = len(doc.references), g["reference_count"]
        ok = abs(n - true) <= 0.05 * true
        counts_ok += ok
        byline = same_names(doc.authors, g["authors"])
        bylines_ok += byline
        print(f"{g['file']:<18} {n:>5} {true:>5} {'ok' if ok else '--':>3}  {'ok' if byline else '--'}")
        if args.show and not byline:
            print(f"    ours: {doc.authors}\n    gold: {g['authors']}")
        for ge in g["sampled_entries"]:
            sampled += 1
            ours = closest(doc.references, ge) or {}
            t = same_title(ours.get("title", ""), ge["title"] or "")
            a = bool(ours.get("authors")) and same_surname(ours["authors"][0], ge["first_author_surname"]) \
                if ge.get("first_author_surname") else not ours.get("authors")
            y = ours.get("year") == ge.get("year")
            for k, v in (("title", t), ("first_author", a), ("year", y), ("all_three", t and a and y)):
                fields[k] += v
            if args.show and not (t and a and y):
                print(f"    #{ge['index']}: title {t} author {a} year {y}\n      gold: {ge['first_author_surname']} | "
                      f"{ge['title']} | {ge['year']}\n      ours: {(ours.get('authors') or [''])[0]} | "
                      f"{ours.get('title')} | {ours.get('year')}")
    truth = {(g["file"], c["file"]) for g in gold for c in g["cites_in_collection"]}
    found = {(e["citing"], e["cited"]) for e in graph["edges"]}
    hit = len(truth & found)
    print(f"\nreference counts within 5%: {counts_ok}/{len(gold)}")
    print(f"sampled entries ({sampled}): " + ", ".join(f"{k} {v / max(sampled, 1):.3f}" for k, v in fields.items()))
    print(f"in-collection citation edges: {len(found)} found, {len(truth)} true, {hit} right: "
          f"precision {hit / max(len(found), 1):.3f}, recall {hit / max(len(truth), 1):.3f}")
    if args.show:
        for pair in sorted(found - truth):
            print(f"    wrong: {pair[0]} -> {pair[1]}")
        for pair in sorted(truth - found):
            print(f"    missed: {pair[0]} -> {pair[1]}")
    print(f"papers-pdf bylines right: {bylines_ok}/{len(gold)}")
    odd_path = ROOT / "tests/data/papers_odd_bylines_gold.json"
    if odd_path.exists() and args.odd_dir.exists():
        odd = json.loads(odd_path.read_text(encoding="utf-8"))
        right = 0
        for g in odd:
            try:
                [doc] = load_file(args.odd_dir / g["file"], g["file"], cfg)
                authors = doc.authors
            except Exception as exc:  # a refused file counts as wrong, and says why
                authors = [f"({exc})"]
            ok = same_names(authors, g["authors"])
            right += ok
            if args.show and not ok:
                print(f"    {g['file'][:60]}\n      ours: {authors}\n      gold: {g['authors']}")
        print(f"papers-odd bylines right: {right}/{len(odd)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
