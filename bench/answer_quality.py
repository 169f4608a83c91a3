"""What the answer a user reads is worth, offline: covidqa-dev (gold spans) and the papers-pdf
free-form set (reference answers, bench/data/papers_pdf_qa.jsonl) and a BEIR set such as 2wiki
(gold passages: how often the answer cites one, multi-hop and single-hop questions apart), with
two references measured in the same run: "the first 60 words of the top retrieved passage", and (with --baseline REV) the
answers of an earlier commit, run from a `git worktree` over the same indexes.

    python bench/answer_quality.py --covidqa ../shared/bench-data/covidqa-dev --covidqa-index IDX \
        --papers ../shared/bench-data/papers-pdf --papers-index IDX2 \
        --beir ../shared/bench-data/2wiki --beir-index IDX3 --baseline 1e8d856
    python bench/answer_quality.py ... --half fit      # the covidqa papers a reader may be fitted on
    python bench/answer_quality.py --covidqa ... --covidqa-questions bench/data/covidqa_questions_ja.jsonl
        # 100 of its questions in Japanese (--covidqa-questions-field question_en: the same in English)
    python bench/answer_quality.py --papers ... --papers-index IDX2 --authors bench/data/papers_pdf_authors.jsonl
        # who wrote a paper and when: the byline's names and year (--by-author papers_pdf_by_author.jsonl:
        # which papers someone wrote; --authors bench/data/papers_pdf_originators.jsonl: who proposed a
        # method, the collection's papers' own and those they cite)
    python bench/answer_quality.py --covidqa ... --sample 200 --seed 13 --papers ... \
        --compare-config smollm2.yaml                   # an LLM writer beside the offline reader

Figures (monjyu.eval.answers): holds, first (covidqa; with top_holds, the share of questions
whose top passage holds the gold, and misread, the share of those whose answer does not: a miss the
reading's, not the retrieval's), precision / recall / f1 (papers),
cites_gold / cites_all_gold (BEIR: one / every gold passage cited; the reference row: the top
passage's document), words
(mean and 90th percentile), debris; for a yes/no or comparison question (--choice) whose two
sides are both in the top 5: answered, each side named, named or quoted (a proxy), and each fact
stated (judged: a fragment of a source sentence stating it, bench/data/yesno_comparison_facts.jsonl); and, from the citations, the share of quoted lines whose unit
is not body text (caption, reference, front matter) and the share of quoted lines in another
language than the question's although the collection has text in the question's language.

covidqa-dev is split by paper: `--half fit` takes the questions of every other paper in sorted
file-name order (starting with the first), `--half test` the others. Anything fitted on covidqa-dev
is fitted on `fit` and reported on `test`.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAPERS_QA = ROOT / "bench" / "data" / "papers_pdf_qa.jsonl"
CHOICE_FACTS = ROOT / "bench" / "data" / "yesno_comparison_facts.jsonl"
GLOBAL_QUESTIONS = ROOT / "bench" / "data" / "covidqa_global_questions.jsonl"
REFERENCE_WORDS = 60


def covidqa_questions(folder: Path, half: str, questions: Path | None = None, field: str = "question") -> list[dict]:
    """The half's questions of covidqa-dev (the halves are its papers', whatever `questions` holds):
    its own, or those of `questions` (covidqa_questions_ja.jsonl), asked as their `field` says."""
    rows = [json.loads(line) for line in open(folder / "questions.jsonl", encoding="utf-8") if line.strip()]
    docs = sorted({r["doc"] for r in rows})
    fit = set(docs[0::2])
    keep = {"fit": fit, "test": set(docs) - fit, "all": set(docs)}[half]
    if questions is not None:
        rows = [json.loads(line) for line in open(questions, encoding="utf-8") if line.strip()]
    return [{"id": str(r["id"]), "question": r[field], "answers": r["answers"], "doc": r["doc"]}
            for r in rows if r["doc"] in keep]


def beir_questions(folder: Path, multihop: bool, answers: Path | None = None) -> list[dict]:
    """A BEIR set's questions of one kind (metadata.multihop), each with its gold document ids, and
    with `answers` (bench/data/2wiki_answers.jsonl) its gold answer spans where the passages write
    them (not a yes/no question's, nor the name of one of the two things a comparison names, which
    every answer quotes)."""
    spans = {}
    if answers is not None:
        for r in papers_questions(answers):
            spans[str(r["id"])] = r["answers"] if r["kind"] == "span" else []
    gold: dict[str, set[str]] = {}
    with open(folder / "qrels" / "test.tsv", encoding="utf-8") as fh:
        for line in fh:
            parts = line.split("\t")
            if len(parts) >= 3 and parts[2].strip().isdigit() and int(parts[2]) > 0:
                gold.setdefault(parts[0], set()).add(parts[1])
    out = []
    for line in open(folder / "queries.jsonl", encoding="utf-8"):
        q = json.loads(line)
        if str(q["_id"]) in gold and bool(q.get("metadata", {}).get("multihop")) == multihop:
            out.append({"id": str(q["_id"]), "question": q["text"], "gold": sorted(gold[str(q["_id"])]),
                        "kind": "multi-hop" if multihop else "single-hop", "answers": spans.get(str(q["_id"]), [])})
    return out


def papers_questions(path: Path) -> list[dict]:
    return [json.loads(line) for line in open(path, encoding="utf-8") if line.strip()]


def collect(index: Path, docs: Path, questions: list[dict], mode: str, config: Path | None,
            build: bool = True) -> list[dict]:
    """Each question's answer, its citations (with the kind of the unit each cites) and the top
    passage, through the facade only, so an earlier commit can run it too (on the index this tree
    built: `build=False`)."""
    from monjyu import Monjyu, load_config

    m = Monjyu(index, load_config(config) if config else None)
    if build:
        m.index([docs])
    out = []
    for q in questions:
        started = time.perf_counter()
        r = m.ask(q["question"], mode=mode, top_k=10)  # any mode: HybridRAG gives items, the others hits
        seconds = time.perf_counter() - started
        hits = [item.hit for item in r.items] if hasattr(r, "items") else r.hits
        kinds = {}
        for h in hits:
            kinds[h.text_unit_id] = h.kind
            for part in h.parts:
                kinds[part["text_unit_id"]] = h.kind
        a = r.answer
        # a citation of a passage the search did not return counts as the kind of unit it cites
        # (an earlier commit's Citation, run with --baseline, may have no kind: "text")
        out.append({"id": q["id"], "seconds": seconds, "answer": a.text if a else "", "answer_kind": a.kind if a else "",
                    "note": a.note if a else "", "checks": getattr(a, "sentences", []) if a else [],
                    "citations": [{"number": c.number, "kind": kinds.get(c.text_unit_id) or getattr(c, "kind", "text"),
                                   "snippet": c.snippet, "doc": Path(c.source_path).name,
                                   "document_id": c.document_id} for c in (a.citations if a else [])],
                    "top5": [{"document_id": h.document_id, "text": h.text} for h in hits[:5]],
                    "top_passage": hits[0].text if hits else "",
                    "top_document_id": hits[0].document_id if hits else "",
                    "top_doc": Path(hits[0].source_path).name if hits else ""})
    return out


def figures(records: list[dict], questions: list[dict], use_reference_passage: bool,
            collection_langs: set[str]) -> dict[str, float]:
    import numpy as np

    from monjyu.eval.answers import answer_figures, answer_sentences
    from monjyu.eval.qa import holds_answer
    from monjyu.nlp.lang import detect_language

    by_id = {q["id"]: q for q in questions}
    rows, off_kind, off_lang, lines_total = [], 0, 0, 0
    cites_gold: list[float] = []
    both_found, both_answered, both_each, both_spoken, both_stated = 0, 0, 0, 0, 0  # choice questions whose two sides are in the top 5
    refused = 0
    top_holds = misread = 0  # gold-span questions whose top passage holds the gold; of those, answers without it
    authors_rows: list[tuple[bool, bool, bool | None, bool]] = []
    by_author_rows: list[tuple[float, bool, bool]] = []
    for rec in records:
        q = by_id[rec["id"]]
        refused += rec["answer_kind"] == "insufficient"
        sides = each_side_in_top5(q, rec)
        if sides is not None and not use_reference_passage:
            found, each = sides
            both_found += found
            both_answered += found and rec["answer_kind"] != "insufficient"
            both_each += found and each
            both_spoken += found and each_side_in_top5(q, rec, quoted=True)[1]
            both_stated += found and states_each_fact(q, rec)
        text = " ".join(rec["top_passage"].split()[:REFERENCE_WORDS]) if use_reference_passage else rec["answer"]
        # A question in a language the papers lack is answered by quotes in theirs: its reference
        # in that language (reference_en) is what the quotes are compared with.
        reference = q.get("reference_en") if q.get("language", "en") not in collection_langs else q.get("reference")
        rows.append(answer_figures(text, q.get("answers", ()), reference or q.get("reference")))
        if q.get("answers") and holds_answer(rec["top_passage"], q["answers"]):
            top_holds += 1
            misread += not rows[-1].holds
        if "gold" in q:  # BEIR: which gold documents the answer cites (the reference: the top passage's)
            cited_docs = {rec["top_document_id"]} if use_reference_passage else \
                {c["document_id"] for c in rec["citations"]}
            cites_gold.append(len(cited_docs & set(q["gold"])) / len(q["gold"]))
        if "authors" in q:  # bench/data/papers_pdf_authors.jsonl: the byline's names and year, the right paper
            named = [_names(a, text) for a in q["authors"]]
            first_cited = rec["citations"][0]["doc"] if rec["citations"] else ""
            # papers_pdf_originators.jsonl: a work the collection only cites is right cited by any paper citing it
            right = first_cited == q["doc"] if "doc" in q else first_cited in q.get("cited_by", ())
            authors_rows.append((named[0], all(named), str(q["year"]) in text if "year" in q else None, right))
        if "docs" in q and "author" in q:  # bench/data/papers_pdf_by_author.jsonl: the author's papers cited
            cited = {c["doc"] for c in rec["citations"]}
            by_author_rows.append((len(cited & set(q["docs"])) / len(q["docs"]), set(q["docs"]) <= cited,
                                   bool(cited) and cited <= set(q["docs"])))
        if use_reference_passage:
            continue
        kinds = {c["number"]: c["kind"] for c in rec["citations"]}
        q_lang = q.get("language") or detect_language(q["question"])
        for line in rec["answer"].splitlines():
            numbers = [int(n) for n in re.findall(r"\[(\d+)\]", line)]
            if not numbers or not answer_sentences(line):
                continue
            lines_total += 1
            off_kind += any(kinds.get(n, "text") != "text" for n in numbers)
            off_lang += q_lang in collection_langs and detect_language(line) != q_lang
    n = max(len(rows), 1)
    words = np.array([r.words for r in rows]) if rows else np.zeros(1)
    out: dict[str, float] = {"questions": len(rows)}
    spanned = [r for r in rows if r.holds is not None]  # questions with a gold span
    if spanned:
        if len(spanned) < len(rows):
            out["with_span"] = len(spanned)
        out["holds"] = sum(bool(r.holds) for r in spanned) / len(spanned)
        out["first"] = sum(bool(r.first) for r in spanned) / len(spanned)
        if not use_reference_passage:  # where a miss is the retrieval's, where the reading's
            out["top_holds"] = top_holds / len(spanned)
            out["misread"] = misread / max(top_holds, 1)
    if rows and rows[0].f1 is not None:
        for k in ("precision", "recall", "f1"):
            out[k] = float(np.mean([getattr(r, k) for r in rows]))
    if cites_gold:
        out["cites_gold"] = sum(x > 0 for x in cites_gold) / n  # at least one gold document cited
        out["cites_all_gold"] = sum(x == 1 for x in cites_gold) / n
    if authors_rows:
        out["first_author"] = sum(r[0] for r in authors_rows) / n
        out["authors"] = sum(r[1] for r in authors_rows) / n
        years = [r[2] for r in authors_rows if r[2] is not None]
        out["year"] = sum(years) / max(len(years), 1)
        out["right_paper"] = sum(r[3] for r in authors_rows) / n
    if by_author_rows:
        out["papers_found"] = sum(r[0] for r in by_author_rows) / n
        out["all_papers"] = sum(r[1] for r in by_author_rows) / n
        out["only_theirs"] = sum(r[2] for r in by_author_rows) / n
    if both_found:
        out["both_top5"] = both_found
        out["answered_both_top5"] = both_answered / both_found
        out["each_quoted_both_top5"] = both_each / both_found
        out["each_named_or_quoted_both_top5"] = both_spoken / both_found
        if any("facts" in q for q in questions):
            out["each_fact_stated_both_top5"] = both_stated / both_found
    if not use_reference_passage:
        out["insufficient"] = refused / n
    if not use_reference_passage and records and "seconds" in records[0]:
        out["p50_s"] = float(np.median([rec["seconds"] for rec in records]))
    out["words"] = float(words.mean())
    out["words_p90"] = float(np.percentile(words, 90))
    out["debris"] = float(np.mean([r.debris for r in rows])) if rows else 0.0
    if not use_reference_passage:
        out["non_body_lines"] = off_kind / max(lines_total, 1)
        out["other_language_lines"] = off_lang / max(lines_total, 1)
    return out


def _names(name: str, text: str) -> bool:
    """Whether `text` names `name` as whole Latin words ("Ba" is not in "based"; kana may touch it)."""
    return re.search(rf"(?<![a-z]){re.escape(_plain(name))}(?![a-z])", _plain(text)) is not None


def _plain(text: str) -> str:
    """Lower case, one space, no accents: a name as the PDF's text layer or the gold writes it."""
    import unicodedata

    return _squash("".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c)))


def _squash(text: str) -> str:
    return " ".join(text.split()).lower()


def each_side_in_top5(q: dict, rec: dict, quoted: bool = False) -> tuple[bool, bool] | None:
    """For a question about two things (a BEIR single-hop comparison with its two gold passages, or
    a yes/no or comparison question of bench/data/yesno_comparison_qa.jsonl with its two sides):
    are both in the top 5 passages, and does the answer speak to each (cites each gold passage; or
    names each side; with `quoted`, names it or quotes its evidence sentence)? None for other
    questions."""
    top = rec.get("top5", [])
    if "gold" in q and len(q["gold"]) == 2 and q.get("kind") == "single-hop":
        found = set(q["gold"]) <= {h["document_id"] for h in top}
        return found, set(q["gold"]) <= {c["document_id"] for c in rec["citations"]}
    if "sides" in q:
        texts = [_squash(h["text"]) for h in top]
        found = all(any(_squash(side["evidence"])[:80] in t for t in texts) for side in q["sides"])
        from monjyu.engines.quotes import clean_quote

        answer = _squash(rec["answer"])

        def spoken(side: dict) -> bool:  # its evidence counts with `quoted`: a name may be the file's label
            return _squash(side["name"]) in answer or (quoted and _squash(clean_quote(side["evidence"]))[:60] in answer)

        return found, all(map(spoken, q["sides"]))
    return None


def states_each_fact(q: dict, rec: dict) -> bool:
    """The answer holds, for each thing the question weighs, a fragment of a source sentence that
    states what the question asks of it (`facts`, bench/data/yesno_comparison_facts.jsonl)."""
    from monjyu.eval.answers import strip_markers

    answer = _plain(strip_markers(rec["answer"]))
    return all(any(_plain(s) in answer for s in fact["stated_by"]) for fact in q.get("facts", ()))


def run_baseline(revision: str, args: argparse.Namespace, jobs: list[dict]) -> dict[str, list[dict]]:
    """The same collection in a subprocess running `revision`'s code (bench/worktree.py)."""
    sys.path.insert(0, str(Path(__file__).parent))
    from worktree import checkout, environment

    out = {}
    kept = {job["name"]: args.baseline_dir / f"{revision}-{job['name'].replace(' ', '-')}.json"
            for job in jobs} if args.baseline_dir else {}
    todo = []
    for job in jobs:
        if job["name"] in kept and kept[job["name"]].is_file():
            out[job["name"]] = json.loads(kept[job["name"]].read_text(encoding="utf-8"))
        else:
            todo.append(job)
    if not todo:
        return out
    if args.baseline_dir:
        args.baseline_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, checkout(revision, Path(tmp) / "tree") as src:
        for job in todo:
            stem = job["name"].replace(" ", "-")
            dump = kept.get(job["name"], Path(tmp) / f"{stem}.json")
            qfile = Path(tmp) / f"{stem}.questions.json"
            qfile.write_text(json.dumps(job["questions"]), encoding="utf-8")
            cmd = [sys.executable, __file__, "--collect", str(qfile), "--collect-index", str(job["index"]),
                   "--collect-docs", str(job["docs"]), "--collect-out", str(dump), "--mode", args.mode]
            if args.config:
                cmd += ["--config", str(args.config)]
            subprocess.run(cmd, check=True, env=environment(src))
            out[job["name"]] = json.loads(dump.read_text(encoding="utf-8"))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--covidqa", type=Path, help="covidqa-dev folder (questions.jsonl, docs/)")
    ap.add_argument("--covidqa-index", type=Path)
    ap.add_argument("--covidqa-questions", type=Path, help="other questions over covidqa-dev's papers "
                    "(bench/data/covidqa_questions_ja.jsonl: Japanese translations), in place of its own")
    ap.add_argument("--covidqa-questions-field", default="question",
                    help="the field of --covidqa-questions asked (question_en: the same questions in English)")
    ap.add_argument("--papers", type=Path, help="papers-pdf folder")
    ap.add_argument("--papers-index", type=Path)
    ap.add_argument("--papers-qa", type=Path, default=PAPERS_QA)
    ap.add_argument("--beir", type=Path, help="a BEIR folder with metadata.multihop (2wiki): gold passages cited, "
                                              "multi-hop and single-hop questions apart")
    ap.add_argument("--beir-index", type=Path)
    ap.add_argument("--beir-answers", type=Path, help="gold answers of the BEIR set's questions "
                    "(bench/data/2wiki_answers.jsonl, for 2wiki and 2wiki-ja): holds / first where a passage writes it")
    ap.add_argument("--choice", type=Path, help="yes/no and comparison questions over covidqa-dev and papers-pdf "
                    "(bench/data/yesno_comparison_qa.jsonl): answered, and each side quoted, when both are in the top 5")
    ap.add_argument("--choice-facts", type=Path, default=CHOICE_FACTS, help="the facts each --choice answer "
                    "must state, by question id (a Japanese question's id ends -ja)")
    ap.add_argument("--offtopic", type=Path, help="questions covidqa-dev does not answer "
                    "(bench/data/covidqa_offtopic_questions.jsonl, with the global set's off-topic ones): 'insufficient' share")
    ap.add_argument("--authors", type=Path, help="who wrote a papers-pdf paper and when (bench/data/papers_pdf_authors.jsonl): "
                    "the byline's first author and names, the year, the right paper cited first")
    ap.add_argument("--by-author", type=Path, help="which papers-pdf papers someone wrote "
                    "(bench/data/papers_pdf_by_author.jsonl): the share of theirs cited, all cited, none of another's")
    ap.add_argument("--half", choices=["fit", "test", "all"], default="test")
    ap.add_argument("--mode", default="hybrid", help="the mode every question is asked in (any of `Monjyu.ask`: hybrid, hybridrag, lazy, ...)")
    ap.add_argument("--config", type=Path)
    ap.add_argument("--limit", type=int, default=0, help="first N questions of each set (a quick look)")
    ap.add_argument("--sample", type=int, default=0, help="a seeded random N questions of each set (--seed)")
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--compare-config", type=Path, action="append", default=[],
                    help="also answer with this config (e.g. an LLM writer) over the same indexes, in the same run")
    ap.add_argument("--baseline", help="an earlier commit whose answers are measured in the same run")
    ap.add_argument("--baseline-dir", type=Path, help="keep the baseline's answers here, one file per set, and "
                    "read them instead of answering again (the same commit, questions and indexes give the same answers)")
    ap.add_argument("--baseline-only", action="store_true", help="answer with the baseline only (filling --baseline-dir)")
    ap.add_argument("--records", type=Path, help="write every answer and its figures here (JSONL)")
    ap.add_argument("--json", action="store_true")
    # internal: one collection in a subprocess (the baseline's code)
    ap.add_argument("--collect", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--collect-index", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--collect-docs", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--collect-out", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.collect:
        questions = json.loads(args.collect.read_text(encoding="utf-8"))
        records = collect(args.collect_index, args.collect_docs, questions, args.mode, args.config, build=False)
        args.collect_out.write_text(json.dumps(records, ensure_ascii=False), encoding="utf-8")
        return

    jobs = []
    if args.covidqa:
        qs = covidqa_questions(args.covidqa, args.half, args.covidqa_questions, args.covidqa_questions_field)
        asked = "" if args.covidqa_questions is None else f" {args.covidqa_questions.stem} {args.covidqa_questions_field}"
        jobs.append({"name": f"covidqa-{args.half}{asked}", "questions": qs[:args.limit] if args.limit else qs,
                     "index": args.covidqa_index, "docs": args.covidqa / "docs", "langs": {"en"}})
    if args.papers:
        qs = papers_questions(args.papers_qa)
        jobs.append({"name": "papers-pdf", "questions": qs[:args.limit] if args.limit else qs,
                     "index": args.papers_index, "docs": args.papers, "langs": {"en"}})
    if args.beir:
        for multihop in (True, False):
            qs = beir_questions(args.beir, multihop, args.beir_answers)
            jobs.append({"name": f"{args.beir.name} {'multi' if multihop else 'single'}-hop",
                         "questions": qs[:args.limit] if args.limit else qs, "index": args.beir_index,
                         "docs": args.beir / "corpus.jsonl", "langs": {"en"}})
    if args.choice:  # each question over the index of its own set
        indexes = {"covidqa-dev": (args.covidqa_index, args.covidqa and args.covidqa / "docs"),
                   "papers-pdf": (args.papers_index, args.papers)}
        rows = papers_questions(args.choice)
        facts = {r["id"]: r["facts"] for r in papers_questions(args.choice_facts)} if args.choice_facts else {}
        for q in rows:
            if (own := facts.get(q["id"].removesuffix("-ja"))) is not None:
                q["facts"] = own
        for name, (index, docs) in indexes.items():
            qs = [q for q in rows if q["set"] == name]
            if qs and not (index and docs):
                ap.error(f"--choice has {name} questions: give that set and its index too")
            if qs:
                jobs.append({"name": f"choice {name}", "questions": qs, "index": index, "docs": docs, "langs": {"en"}})
    if args.authors:
        if not (args.papers and args.papers_index):
            ap.error("--authors asks over papers-pdf: give --papers and --papers-index too")
        qs = papers_questions(args.authors)
        jobs.append({"name": "papers-pdf authors", "questions": qs, "index": args.papers_index, "docs": args.papers,
                     "langs": {"en"}})
    if args.by_author:
        if not (args.papers and args.papers_index):
            ap.error("--by-author asks over papers-pdf: give --papers and --papers-index too")
        jobs.append({"name": "papers-pdf by author", "questions": papers_questions(args.by_author),
                     "index": args.papers_index, "docs": args.papers, "langs": {"en"}})
    if args.offtopic and not args.covidqa:
        ap.error("--offtopic asks over covidqa-dev: give --covidqa and --covidqa-index too")
    if args.offtopic:
        qs = papers_questions(args.offtopic) + [q for q in papers_questions(GLOBAL_QUESTIONS) if q["kind"] == "off-topic"]
        jobs.append({"name": "covidqa off-topic", "questions": qs, "index": args.covidqa_index,
                     "docs": args.covidqa / "docs", "langs": {"en"}})
    if not jobs:
        ap.error("give --covidqa, --papers and/or --beir")
    if args.sample:
        import random

        for job in jobs:
            picked = random.Random(args.seed).sample(job["questions"], min(args.sample, len(job["questions"])))
            job["questions"] = sorted(picked, key=lambda q: job["questions"].index(q))
    for job in jobs:
        if job["index"] is None:
            ap.error(f"{job['name']}: give its index directory")

    if args.baseline_only and not args.baseline:
        ap.error("--baseline-only needs --baseline")
    if args.baseline_only:
        run_baseline(args.baseline, args, jobs)
        return
    built = {job["name"]: collect(job["index"], job["docs"], job["questions"], args.mode, args.config)
             for job in jobs}  # indexes up to date before the baseline reads them
    baseline = run_baseline(args.baseline, args, jobs) if args.baseline else {}
    compared = {(cfg.stem, job["name"]): collect(job["index"], job["docs"], job["questions"], args.mode, cfg,
                                                 build=False)
                for cfg in args.compare_config for job in jobs}
    report = {}
    for job in jobs:
        records = built[job["name"]]
        rows = {"this tree": figures(records, job["questions"], False, job["langs"]),
                f"top passage, {REFERENCE_WORDS} words": figures(records, job["questions"], True, job["langs"])}
        if job["name"] in baseline:
            rows[f"baseline {args.baseline}"] = figures(baseline[job["name"]], job["questions"], False, job["langs"])
        for cfg in args.compare_config:
            rows[f"with {cfg.stem}"] = figures(compared[(cfg.stem, job["name"])], job["questions"], False,
                                               job["langs"])
        report[job["name"]] = rows
        if args.records:
            with open(args.records, "a", encoding="utf-8") as fh:
                for label, recs in [("this tree", records)] + [(f"with {c.stem}", compared[(c.stem, job["name"])])
                                                                for c in args.compare_config]:
                    for rec in recs:
                        fh.write(json.dumps({"set": job["name"], "run": label, **rec}, ensure_ascii=False) + "\n")
    if args.json:
        print(json.dumps(report, indent=1))
        return
    for name, rows in report.items():
        keys = list(next(iter(rows.values())))
        print(f"\n{name}")
        widths = [max(9, len(k) + 1) for k in keys]
        print(f"{'':30}" + "".join(f"{k:>{w}}" for k, w in zip(keys, widths)))
        for label, figs in rows.items():
            print(f"{label:30}" + "".join(f"{figs.get(k, float('nan')):>{w}.3f}" for k, w in zip(keys, widths)))


if __name__ == "__main__":
    main()
