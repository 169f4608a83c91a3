"""Bench comparison: refextract (GPL-2.0; never a MONJYU dependency) against the reference gold
that bench/papers_refs.py measures MONJYU's own parser on.

Run it in a venv of its own, outside the project's:
    python3 -m venv /tmp/refx/venv && /tmp/refx/venv/bin/pip install refextract pdfplumber
    /tmp/refx/venv/bin/python bench/refextract_compare.py [--xtol 1] [--mode full|refsec] [--columns] [--out FILE]

Text: pdftotext (poppler) is not installed, so each PDF is read with pdfplumber,
page by page (page.extract_text(x_tolerance=XTOL)), pages joined with "\n".
Then refextract.extract_references_from_string(text, is_only_references=...)
  mode=full   : whole document text, is_only_references=False (refextract finds the section)
  --columns   : (extra variant) two-column pages are cropped and read left half, then right half
  mode=refsec : text from the last "References"/"Bibliography" heading onwards,
                is_only_references=True
"""
import argparse
import difflib
import glob
import json
import os
import re
import sys
import time
import unicodedata
from collections import Counter

import pdfplumber
import refextract
from importlib.metadata import version
from refextract import extract_references_from_string

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GOLD = os.path.join(ROOT, "tests", "data", "papers_refs_gold.json")
PDF_DIRS = [os.path.join(ROOT, "..", "shared", "bench-data", "papers-pdf"), "/work/shared/bench-data/papers-pdf"]
CACHE = os.path.join(os.environ.get("TMPDIR", "/tmp"), "refextract-text")


def strip_accents(s):
    s = s.replace("ł", "l").replace("Ł", "L").replace("ø", "o").replace("Ø", "O").replace("ß", "ss")
    return "".join(c for c in unicodedata.normalize("NFKD", s) if not unicodedata.combining(c))


def alnum(s):
    """lower-cased alphanumeric string (used for similarity & title equality)"""
    return re.sub(r"[^a-z0-9]", "", strip_accents(s).lower())


def ratio(a, b):
    return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()


def find_pdf(name):
    for d in PDF_DIRS:
        p = os.path.join(d, name)
        if os.path.exists(p):
            return p
    raise FileNotFoundError(name)


def is_two_col(page, xtol):
    """page looks two-column: (almost) no word straddles the vertical midline"""
    words = page.extract_words(x_tolerance=xtol or 3)
    if len(words) < 50:
        return False
    mid = page.width / 2
    cross = sum(1 for w in words if w["x0"] < mid - 2 and w["x1"] > mid + 2)
    left = sum(1 for w in words if w["x1"] <= mid)
    right = sum(1 for w in words if w["x0"] >= mid)
    return cross / len(words) < 0.01 and left > 0.2 * len(words) and right > 0.2 * len(words)


def page_text(p, kw, xtol, columns):
    if columns and is_two_col(p, xtol):
        mid = p.width / 2
        l = p.crop((0, 0, mid, p.height)).extract_text(**kw) or ""
        r = p.crop((mid, 0, p.width, p.height)).extract_text(**kw) or ""
        return l + "\n" + r
    return p.extract_text(**kw) or ""


def pdf_text(path, xtol, columns=False):
    os.makedirs(CACHE, exist_ok=True)
    cache = os.path.join(CACHE, "%s.xtol%s%s.txt" % (os.path.basename(path), xtol, ".cols" if columns else ""))
    if os.path.exists(cache):
        return open(cache, encoding="utf-8").read()
    kw = {} if xtol is None else {"x_tolerance": xtol}
    with pdfplumber.open(path) as pdf:
        text = "\n".join(page_text(p, kw, xtol, columns) for p in pdf.pages)
    open(cache, "w", encoding="utf-8").write(text)
    return text


REF_HEAD = re.compile(r"^\s*(?:\d+\.?\s*|[A-Z]\.?\s+)?(references|bibliography|references and notes)\s*$", re.I)


def ref_section(text):
    lines = text.split("\n")
    idx = [i for i, l in enumerate(lines) if REF_HEAD.match(l)]
    if not idx:
        return None
    return "\n".join(lines[idx[-1] + 1:])


# ---- field checks ---------------------------------------------------------

def name_tokens(s):
    s = strip_accents(s).lower()
    return re.findall(r"[a-z]+", s)


def first_author_segment(author_str):
    # first author = text before the first separator (",", ";", "&", " and ")
    return re.split(r",|;|&|\band\b", author_str, maxsplit=1)[0]


def author_ok(gold_surname, ref):
    auths = ref.get("author") or []
    if not auths:
        return False, None
    first = auths[0]
    seg = first_author_segment(first)
    st = name_tokens(gold_surname)
    tt = name_tokens(seg)
    ok = any(tt[i:i + len(st)] == st for i in range(len(tt) - len(st) + 1)) if st else False
    return ok, first


def title_ok(gold_title, ref):
    t = " ".join(ref.get("title") or [])
    if not t:
        return False, None
    a, b = alnum(t), alnum(gold_title)
    return (a == b or ratio(a, b) >= 0.9), t


def year_ok(gold_year, ref):
    ys = ref.get("year") or []
    if not ys:
        return False, None
    return str(ys[0]).strip() == str(gold_year), ys[0]


# ---- main -----------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--xtol", type=float, default=1.0, help="pdfplumber x_tolerance; <=0 means pdfplumber default (3)")
    ap.add_argument("--mode", choices=["full", "refsec"], default="full")
    ap.add_argument("--columns", action="store_true",
                    help="extra variant: read two-column pages left half then right half (pdftotext-like order)")
    ap.add_argument("--out", default=None, help="also write per-entry JSON details here")
    args = ap.parse_args()
    xtol = None if args.xtol <= 0 else args.xtol

    gold = json.load(open(GOLD, encoding="utf-8"))
    out = []
    P = out.append
    P("refextract %s | pdfplumber %s | text: pdfplumber extract_text(x_tolerance=%s), pages joined by \\n | columns=%s | mode=%s"
      % (version("refextract"), version("pdfplumber"), "default(3)" if xtol is None else xtol,
         "split two-column pages" if args.columns else "no (plain page text)", args.mode))
    P("")
    tot = Counter()
    count_ok = 0
    details = []
    fails = Counter()
    P("%-16s %5s %5s %7s %4s | %3s %5s %5s %5s %5s | %5s %5s" % (
        "paper", "gold", "refx", "diff%", "ok5", "n", "title", "auth", "year", "all", "tfld", "match"))
    for paper in gold:
        t0 = time.time()
        text = pdf_text(find_pdf(paper["file"]), xtol, args.columns)
        if args.mode == "full":
            refs = extract_references_from_string(text, is_only_references=False)
        else:
            sec = ref_section(text)
            if sec is None:
                sec = text
            refs = extract_references_from_string(sec, is_only_references=True)
        n_gold = paper["reference_count"]
        n = len(refs)
        within = abs(n - n_gold) <= 0.05 * n_gold
        count_ok += within
        raw_norm = [alnum(" ".join(r.get("raw_ref") or [])) for r in refs]
        c = Counter()
        for e in paper["sampled_entries"]:
            g = alnum(e["text"])
            best, bi = -1.0, None
            for i, rn in enumerate(raw_norm):
                s = ratio(g, rn)
                if s > best:
                    best, bi = s, i
            ref = refs[bi] if bi is not None else {}
            tk, tval = title_ok(e["title"], ref)
            ak, aval = author_ok(e["first_author_surname"], ref)
            yk, yval = year_ok(e["year"], ref)
            misc = alnum(" ".join(ref.get("misc") or []))
            c["n"] += 1
            c["title"] += tk
            c["author"] += ak
            c["year"] += yk
            c["all"] += tk and ak and yk
            c["has_title_field"] += bool(ref.get("title"))
            c["has_author_field"] += bool(ref.get("author"))
            c["has_year_field"] += bool(ref.get("year"))
            c["match_ge_0.8"] += best >= 0.8
            c["title_in_misc"] += (alnum(e["title"]) in misc) if misc else False
            details.append(dict(file=paper["file"], index=e["index"], match_ratio=round(best, 3),
                                gold_text=e["text"], raw_ref=ref.get("raw_ref"),
                                gold_title=e["title"], refx_title=tval, title_ok=tk,
                                gold_surname=e["first_author_surname"], refx_author=aval, author_ok=ak,
                                gold_year=e["year"], refx_year=yval, year_ok=yk,
                                refx_misc=ref.get("misc")))
        tot.update(c)
        P("%-16s %5d %5d %+6.1f%% %4s | %3d %5d %5d %5d %5d | %5d %5d   (%.0fs)" % (
            paper["file"], n_gold, n, 100.0 * (n - n_gold) / n_gold, "ok" if within else "NO",
            c["n"], c["title"], c["author"], c["year"], c["all"], c["has_title_field"], c["match_ge_0.8"],
            time.time() - t0))
        sys.stderr.write(out[-1] + "\n")
    N = tot["n"]
    P("")
    P("columns: title/auth/year/all = sampled entries right; tfld = matched ref has a non-empty 'title' field;")
    P("         match = best raw_ref similarity to gold text >= 0.8 (split looks right)")
    P("")
    P("SUMMARY over %d sampled entries, %d papers" % (N, len(gold)))
    for k in ["title", "author", "year", "all"]:
        P("  %-8s right: %3d/%d = %5.1f%%" % (k, tot[k], N, 100.0 * tot[k] / N))
    P("  count within 5%% of gold: %d/%d papers" % (count_ok, len(gold)))
    P("  diagnostics: matched ref has title field %d/%d, author field %d/%d, year field %d/%d; "
      "best match ratio>=0.8 %d/%d; gold title found verbatim (alnum) inside refextract 'misc' %d/%d"
      % (tot["has_title_field"], N, tot["has_author_field"], N, tot["has_year_field"], N,
         tot["match_ge_0.8"], N, tot["title_in_misc"], N))
    print("\n".join(out))
    if args.out:
        json.dump(details, open(args.out, "w", encoding="utf-8"), indent=1, ensure_ascii=False)


if __name__ == "__main__":
    main()
