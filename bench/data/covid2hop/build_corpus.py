"""Build corpus.jsonl for covid2hop from the 49 COVID-QA dev papers.

Rule: drop header lines before the abstract; split the rest at blank lines
(whitespace-only lines count as blank); merge any paragraph shorter than 30
words (whitespace tokens) into the next paragraph of the same paper (repeat
until >= 30 words); a short remainder at the end of a paper is merged into the
previous paragraph. _id = "<stem>#p<n>", n from 0.
"""
import argparse
import json
import os
import re
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))
MIN_WORDS = 30


def body_start(stem, lines):
    """Index of first body line (abstract) after the header lines."""
    for i, l in enumerate(lines):
        if l.startswith("Abstract:"):
            return i
    # two papers have no 'Abstract:' field
    if stem.startswith("010-"):   # JAMA web page: title, subtitle, URL, date, authors, citation/DOI, site navigation
        for i, l in enumerate(lines):
            if l.startswith("Transmissibility and severity"):
                return i
    if stem.startswith("090-"):   # OCR of EID PDF: title, author line, then the abstract
        for i, l in enumerate(lines):
            if l.startswith("The “Spanish"):
                return i
    raise SystemExit("no body start for " + stem)


def join_lines(block):
    out = ""
    for l in block:
        l = l.strip()
        if not out:
            out = l
        elif re.search(r"[a-z]-$", out) and re.match(r"[a-z]", l):
            out = out[:-1] + l          # OCR line-end hyphenation (only in 090)
        else:
            out = out + " " + l
    return re.sub(r"\s+", " ", out).strip()


def paragraphs(lines):
    paras, cur = [], []
    for l in lines:
        if l.strip() == "":
            if cur:
                paras.append(join_lines(cur)); cur = []
        else:
            cur.append(l)
    if cur:
        paras.append(join_lines(cur))
    # 'Abstract: nan' is a placeholder for a missing abstract, not content
    return [p for p in paras if p != "Abstract: nan"]


def merge_short(paras):
    out, buf = [], ""
    for p in paras:
        buf = (buf + " " + p).strip() if buf else p
        if len(buf.split()) >= MIN_WORDS:
            out.append(buf); buf = ""
    if buf:
        if out:
            out[-1] = out[-1] + " " + buf
        else:
            out.append(buf)
    return out


def main():
    parser = argparse.ArgumentParser(description="covid2hop's corpus from the covidqa-dev papers, as a BEIR folder")
    parser.add_argument("--docs", required=True, help="covidqa-dev/docs of the shared bench data")
    parser.add_argument("--out", required=True, help="the BEIR folder to write")
    args = parser.parse_args()
    DOCS, OUT = args.docs, os.path.join(args.out, "corpus.jsonl")
    os.makedirs(os.path.join(args.out, "qrels"), exist_ok=True)
    shutil.copy(os.path.join(HERE, "queries.jsonl"), args.out)
    shutil.copy(os.path.join(HERE, "qrels", "test.tsv"), os.path.join(args.out, "qrels"))
    recs = []
    for fn in sorted(os.listdir(DOCS)):
        if not fn.endswith(".txt"):
            continue
        stem = fn[:-4]
        lines = open(os.path.join(DOCS, fn), encoding="utf-8").read().split("\n")
        title = next(l.strip() for l in lines if l.strip())  # first (non-blank) line
        units = merge_short(paragraphs(lines[body_start(stem, lines):]))
        for n, t in enumerate(units):
            recs.append({"_id": f"{stem}#p{n}", "title": title, "text": t})
    with open(OUT, "w", encoding="utf-8") as f:
        for r in recs:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    print(len(recs), "records")

if __name__ == "__main__":
    main()
