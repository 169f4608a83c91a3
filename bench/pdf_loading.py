"""PDF loading: MONJYU's PDFium layout loader against plain pypdf and pdfplumber text, same run.

    python bench/pdf_loading.py [--dir ../shared/bench-data/papers-pdf] [--gold tests/data/papers_pdf_gold.json]
                                [--run-in-gold bench/data/papers_pdf_run_in_headings.jsonl]
                                [--footnote-gold bench/data/papers_pdf_footnotes.jsonl]
                                [--no-plumber] [--processes N] [--baseline COMMIT] [--json]

Per library: pages/s, ligature code points left in the text, and (for MONJYU, against the gold
files) titles, first authors and section headings found, and the run-in headings ("**Hardware
Failures** We faced ...") read as headings on the pages the run-in gold covers: how many of its headings,
how many of its other labels (list, algorithm and theorem labels), and how many headings on those
pages are in neither gold (false). pypdf and pdfplumber give raw page text
only; they are the speed reference the papers issue asks for. A file without a text layer counts
no pages (MONJYU reads those only with ingest.ocr), nor does one a library cannot read.

MONJYU is timed twice: in one process, and as a build loads a folder (files spread over N worker
processes, largest first, their start included; default one per core). `--baseline` times an
earlier commit's loader both ways in the same run (its rows marked with the commit).
"""

from __future__ import annotations

import argparse
import inspect
import io
import json
import logging
import os
import re
import subprocess
import sys
import tempfile
import time
import unicodedata
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from worktree import checkout, environment  # noqa: E402

LIGATURES = re.compile("[\ufb00-\ufb06]")


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", unicodedata.normalize("NFKC", text).lower()).strip()


def pypdf_text(data: bytes) -> tuple[int, str]:
    from pypdf import PdfReader

    reader = PdfReader(io.BytesIO(data))
    return len(reader.pages), "\n".join(p.extract_text() or "" for p in reader.pages)


def _or_nothing(read, data: bytes) -> tuple[int, str]:
    """A reference library's pages and text, none for a file it cannot read (papers-odd has some)."""
    try:
        return read(data)
    except Exception:  # noqa: BLE001 - any of its own errors: the file counts no pages for it
        return 0, ""


def plumber_text(data: bytes) -> tuple[int, str]:
    import pdfplumber

    with pdfplumber.open(io.BytesIO(data)) as pdf:
        return len(pdf.pages), "\n".join(p.extract_text() or "" for p in pdf.pages)


def _pages(path: Path) -> int:
    """One file loaded as the build loads it (in a worker process): its page count."""
    from monjyu.config import IngestConfig
    from monjyu.errors import IngestError
    from monjyu.index.distributed import run_all
    from monjyu.ingest import load_file

    from monjyu.errors import IngestError

    try:
        return sum(doc.metadata.get("pages", 0) for doc in load_file(path, path.name, IngestConfig()))
    except IngestError:  # as the one-process run counts it: no text pages
        return 0


def gold_figures(docs: dict, gold_path: Path, run_in_path: Path, footnote_path: Path | None = None) -> dict:
    """MONJYU's documents against the gold files: titles, first authors and section headings
    (`gold_path`), the run-in headings of the pages `run_in_path` covers, and the footnotes of the
    pages `footnote_path` covers."""
    out: dict = {}
    sections: dict[str, set[str]] = {}
    if gold_path.exists():
        gold = json.loads(gold_path.read_text(encoding="utf-8"))
        titles = authors = found = total = 0
        per_paper = {}
        for g in gold:
            sections[g["file"]] = {_norm(h) for h in g["sections"]}
            doc = docs.get(g["file"])
            if doc is None:
                continue
            titles += _norm(doc.title) == _norm(g["title"])
            authors += bool(doc.authors) and _norm(doc.authors[0]) == _norm(g["first_author"])
            # every heading of a path, and the heading a section opens with where it opens with two
            # ("Appendix", then "A Error Patterns": structure.assemble gives a heading alone no section)
            headings = {_norm(h) for s in doc.sections for h in s.path.split(" > ")} | \
                {_norm(doc.text[s.start:s.end].split("\n\n", 1)[0]) for s in doc.sections}
            hit = sum(_norm(h) in headings for h in g["sections"])
            found, total = found + hit, total + len(g["sections"])
            per_paper[g["file"]] = {"sections_found": hit, "sections_gold": len(g["sections"]),
                                    "sections_detected": len({s.path for s in doc.sections if s.path})}
        out.update({"titles": f"{titles}/{len(gold)}", "first_authors": f"{authors}/{len(gold)}",
                    "section_recall": round(found / max(total, 1), 3), "per_paper": per_paper})
    if run_in_path.exists():
        pages = [json.loads(line) for line in run_in_path.read_text(encoding="utf-8").splitlines() if line.strip()]
        hit = other = false = total = 0
        for g in pages:
            doc = docs.get(g["file"])
            total += len(g["run_in_headings"])
            if doc is None:
                continue
            # the headings that open a section on the page (a section's path ends with its heading)
            # (after the heading that opens the section with it, if one does: "3.3 Architectures", then
            # "Plain Network. Our ...")
            on_page = {_norm(s.path.rsplit(" > ", 1)[-1]) for s in doc.sections
                       if s.path and doc.page_at(s.start) == g["page"] and any(
                           piece.startswith(s.path.rsplit(" > ", 1)[-1])
                           for piece in doc.text[s.start:s.end].split("\n\n", 2)[:2])}
            wanted = {_norm(h) for h in g["run_in_headings"]}
            labels = {_norm(x["text"]) for x in g["other_labels"]}
            hit += len(on_page & wanted)
            other += len(on_page & labels - wanted)
            # numbered and named section headings are the section gold's
            false += sum(1 for h in on_page - wanted - labels if h not in sections.get(g["file"], set()))
        out["run_in"] = f"{hit}/{total} (other labels {other}, false {false})"
    if footnote_path is not None and footnote_path.exists():
        out["footnotes"] = footnote_figures(docs, footnote_path)
    return out


_MARK = re.compile(r"^[\d∗*†‡§¶.]{1,3}\s*")


def footnote_figures(docs: dict, gold_path: Path) -> str:
    """The footnote gold's footnotes and foot lines in the text: how many footnotes open a paragraph
    of their own; of the page columns where a footnote cuts a body sentence, how many leave the
    paragraph before the footnotes cut ("... in sequence modeling and" + "∗Equal contribution ...");
    how many foot lines ("31st Conference on ...") open a paragraph with no body text after them."""
    own = total = cut = columns = alone = lines = 0
    for g in (json.loads(x) for x in gold_path.read_text(encoding="utf-8").splitlines() if x.strip()):
        doc = docs.get(g["file"])
        if doc is None:
            continue
        paragraphs = [p.strip() for p in doc.text.split("\n\n")]
        plain = [_norm(p) for p in paragraphs]
        unmarked = [_norm(_MARK.sub("", p)) for p in paragraphs]

        def opening(words: str) -> int | None:
            key = _norm(words)
            return next((i for i, (a, b) in enumerate(zip(plain, unmarked)) if a.startswith(key) or b.startswith(key)), None)

        seen_columns = set()
        for note in g["footnotes"]:
            total += 1
            at = opening(note["opening"])
            own += at is not None
            if note["interrupts"] and note["column"] not in seen_columns:
                seen_columns.add(note["column"])
                columns += 1
                before = paragraphs[at - 1] if at else ""
                cut += bool(before) and (before[-1].isalnum() or before[-1] in ",-")
        for line in g["foot_lines"]:
            lines += 1
            at = opening(line)
            alone += at is not None and len(paragraphs[at].split()) <= len(line.split()) + 12
    return (f"{own}/{total} open a paragraph, {cut}/{columns} cut sentences left cut, "
            f"{alone}/{lines} foot lines alone")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dir", type=Path, default=Path("../shared/bench-data/papers-pdf"))
    parser.add_argument("--gold", type=Path, default=Path(__file__).resolve().parents[1] / "tests/data/papers_pdf_gold.json")
    parser.add_argument("--run-in-gold", type=Path,
                        default=Path(__file__).resolve().parent / "data/papers_pdf_run_in_headings.jsonl")
    parser.add_argument("--footnote-gold", type=Path,
                        default=Path(__file__).resolve().parent / "data/papers_pdf_footnotes.jsonl")
    parser.add_argument("--no-plumber", action="store_true", help="skip pdfplumber (slow)")
    parser.add_argument("--processes", type=int, default=os.cpu_count() or 1, help="worker processes of the build's loading")
    parser.add_argument("--baseline", help="an earlier commit whose loader is timed too, same run")
    parser.add_argument("--monjyu-only", action="store_true", help=argparse.SUPPRESS)  # a baseline's run
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    logging.disable(logging.WARNING)  # pypdf's warnings are not what is measured
    warnings.simplefilter("ignore")
    from monjyu.config import IngestConfig
    from monjyu.errors import IngestError
    from monjyu.index.distributed import run_all
    from monjyu.ingest import load_file

    files = sorted(args.dir.glob("*.pdf"))
    blobs = {f: f.read_bytes() for f in files}
    results: dict[str, dict] = {}

    def run(name: str, fn) -> None:
        pages = ligatures = 0
        t0 = time.perf_counter()
        for f in files:
            n, text = fn(f)
            pages += n
            ligatures += len(LIGATURES.findall(text))
        seconds = time.perf_counter() - t0
        results[name] = {"pages": pages, "seconds": round(seconds, 2), "pages_per_s": round(pages / seconds, 1),
                         "ligatures": ligatures}

    docs = {}

    def monjyu(f: Path) -> tuple[int, str]:
        try:
            [doc] = load_file(f, f.name, IngestConfig())
        except IngestError:  # no text layer (scanned, read with ingest.ocr) or unreadable: no text pages
            return 0, ""
        docs[f.name] = doc
        return doc.metadata.get("pages", 0), doc.text

    run("monjyu (pypdfium2 layout)", monjyu)
    t0 = time.perf_counter()
    largest_first = {"sizes": [len(blobs[f]) for f in files]} if "sizes" in inspect.signature(run_all).parameters else {}
    pages = sum(run_all(None, _pages, [(f,) for f in files], lambda n: None, processes=args.processes, **largest_first))
    seconds = time.perf_counter() - t0
    results[f"monjyu, {args.processes} processes"] = {"pages": pages, "seconds": round(seconds, 2),
                                                      "pages_per_s": round(pages / seconds, 1)}
    results["monjyu (pypdfium2 layout)"].update(gold_figures(docs, args.gold, args.run_in_gold, args.footnote_gold))
    if args.monjyu_only:
        print(json.dumps({name: {k: v for k, v in r.items()} for name, r in results.items()}))
        return
    if args.baseline:
        with tempfile.TemporaryDirectory() as tmp, checkout(args.baseline, Path(tmp) / "baseline") as src:
            out = subprocess.run([sys.executable, __file__, "--dir", str(args.dir), "--processes", str(args.processes),
                                  "--monjyu-only"], env=environment(src), capture_output=True, text=True, check=True)
        results.update({f"{name} @ {args.baseline}": r for name, r in json.loads(out.stdout.splitlines()[-1]).items()})
    run("pypdf", lambda f: _or_nothing(pypdf_text, blobs[f]))
    if not args.no_plumber:
        run("pdfplumber", lambda f: _or_nothing(plumber_text, blobs[f]))

    if args.json:
        print(json.dumps(results, indent=1))
        return
    for name, r in results.items():
        extra = {k: v for k, v in r.items() if k not in ("per_paper",)}
        print(f"{name:28} " + "  ".join(f"{k}={v}" for k, v in extra.items()))
    for f, r in results["monjyu (pypdfium2 layout)"].get("per_paper", {}).items():
        print(f"  {f:18} sections {r['sections_found']}/{r['sections_gold']} of the gold headings, "
              f"{r['sections_detected']} section paths")


if __name__ == "__main__":
    sys.exit(main())
