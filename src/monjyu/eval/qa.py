"""QA-over-papers evaluation: does retrieval bring back the passage that holds a question's answer?

The dataset is a questions JSONL file (`id`, `question`, `answers` = answer spans copied from the
paper, `doc` = gold file name), as in bench-data/covidqa-dev. Scoring follows that folder's README,
so engine figures and the plain-RAG reference are comparable:

- `ans@k`: one of the top-k passages holds an answer (the whole answer, or any 8-word window of a
  longer one, compared on lower-case alphanumeric words). The passage need not come from the gold
  paper: the answer text is what a reader needs.
- `doc@k`: one of the top-k passages comes from the gold paper (compared by file name only).
"""

from __future__ import annotations

import json
import re
import time
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from ..errors import MonjyuError

WINDOW = 8  # answers longer than this many words count when any 8-word window of them appears

_WORD = re.compile(r"[^\W_]+")  # Unicode letters and digits (\w without the underscore)

SearchFn = Callable[[str, str, int], list[tuple[str, str]]]
CiteFn = Callable[[str, str], "list[str] | None"]


@dataclass
class QAQuestion:
    id: str
    question: str
    answers: list[str]
    doc: str  # gold file name
    metadata: dict = field(default_factory=dict)  # the record's other fields (type, language, ...)


@dataclass
class QADataset:
    path: Path
    questions: list[QAQuestion] = field(default_factory=list)

    @property
    def docs_dir(self) -> Path:
        """The papers folder next to the questions file (covidqa-dev layout: docs/*.txt)."""
        return self.path.parent / "docs"

    @classmethod
    def load(cls, path: str | Path) -> "QADataset":
        """Read a questions JSONL file, or `questions.jsonl` inside a folder. A bad record raises
        MonjyuError naming the file and line, rather than scoring a silently shortened set."""
        path = Path(path)
        if path.is_dir():
            path = path / "questions.jsonl"
        if not path.is_file():
            raise MonjyuError(f"{path}: questions file not found (expected JSONL records with "
                              "id, question, answers, doc)")
        questions = []
        with open(path, encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                if line.strip():
                    questions.append(_parse_record(line, path, n))
        if not questions:
            raise MonjyuError(f"{path}: no questions in the file")
        return cls(path=path, questions=questions)


def _parse_record(line: str, path: Path, n: int) -> QAQuestion:
    where = f"{path}, line {n}"
    try:
        rec = json.loads(line)
    except json.JSONDecodeError as e:
        raise MonjyuError(f"{where}: not valid JSON ({e.msg})") from None
    if not isinstance(rec, dict):
        raise MonjyuError(f"{where}: expected a JSON object with id, question, answers, doc")
    missing = [k for k in ("id", "question", "answers", "doc") if k not in rec]
    if missing:
        raise MonjyuError(f"{where}: missing {', '.join(missing)}")
    if not isinstance(rec["id"], (str, int)) or isinstance(rec["id"], bool):
        raise MonjyuError(f"{where}: id must be a string or an integer")
    if not isinstance(rec["question"], str) or not rec["question"].strip():
        raise MonjyuError(f"{where}: question must be a non-empty string")
    answers = rec["answers"]
    if (not isinstance(answers, list) or not answers
            or not all(isinstance(a, str) and answer_words(a) for a in answers)):
        raise MonjyuError(f"{where}: answers must be a non-empty list of strings with words in them")
    if not isinstance(rec["doc"], str) or not rec["doc"].strip():
        raise MonjyuError(f"{where}: doc must name the gold file")
    meta = rec.get("metadata") if isinstance(rec.get("metadata"), dict) else {}
    others = {k: v for k, v in rec.items() if k not in ("id", "question", "answers", "doc", "metadata")}
    return QAQuestion(id=str(rec["id"]), question=rec["question"], answers=list(answers), doc=rec["doc"],
                      metadata={**others, **meta})


def answer_words(text: str) -> list[str]:
    """Lower-case alphanumeric words after NFKC (so ligatures, full-width digits and the like
    compare equal to their plain forms); punctuation and case never decide a match."""
    return _WORD.findall(unicodedata.normalize("NFKC", text).lower())


@lru_cache(maxsize=8192)
def _joined_words(text: str) -> str:
    """" w1 w2 ... wn ": a contiguous word sequence is then a plain substring search bounded by
    spaces, so "cat" never matches inside "concatenate". Cached: passages recur across questions."""
    return f" {' '.join(answer_words(text))} "


@lru_cache(maxsize=8192)
def _answer_needles(answer: str) -> tuple[str, ...]:
    """The answer's word sequence, or for answers longer than WINDOW words every WINDOW-word window
    (a longer answer is held when any of its windows is)."""
    words = answer_words(answer)
    if not words:
        return ()
    if len(words) <= WINDOW:
        return (f" {' '.join(words)} ",)
    return tuple(dict.fromkeys(f" {' '.join(words[i:i + WINDOW])} " for i in range(len(words) - WINDOW + 1)))


def holds_answer(passage_text: str, answers: Iterable[str]) -> bool:
    """True when the passage holds any of the answers (whole, or any 8-word window of a longer one)."""
    hay = _joined_words(passage_text)
    return any(needle in hay for a in answers for needle in _answer_needles(a))


def _same_doc(a: str, b: str) -> bool:
    """Gold docs are file names; engines may return ids like "docs/foo.txt" or full paths."""
    return Path(a.replace("\\", "/")).name == Path(b.replace("\\", "/")).name


def evaluate_qa(dataset: QADataset, search: SearchFn, modes: Sequence[str], ks: Sequence[int] = (1, 5, 10),
                progress: Callable[[int], None] | None = None,
                cite: CiteFn | None = None, by: str | None = None,
                per_query: list[dict] | None = None,
                decision: Callable[[str, str], dict] | None = None) -> dict[str, dict]:
    """Score each mode over all questions.

    `search(question, mode, k)` returns up to k `(doc file name or id, passage text)` pairs, best
    first, the passage being the text the engine would hand to a reader. Metrics per mode:
    doc@k and ans@k for each k, `questions`, `latency_ms_p50` (of the search calls) and
    `mean_unit_words` (mean whitespace word count of every passage returned, i.e. ranks up to
    max(ks), 10 by default; checks the rule that units average at most 250 words, since a longer
    unit would win ans@k just by holding more text).

    `cite(question, mode)`, when given, returns the passage texts an answer cited (None: no
    answer); `answer_cites_answer` is then the share of questions whose answer cites a passage
    holding the gold answer, measuring the answer step and not only retrieval.

    With `by`, doc@k and ans@k also per value of that question field (results[mode]["by"]);
    `per_query`, when given, receives one record per question with the first rank of the gold
    document and of a passage holding the answer, per mode, and with `decision(question, mode)`
    (called right after that search) what the engine decided for it.
    """
    from .metrics import check_field, field_value

    if by:
        check_field([q.metadata for q in dataset.questions], by, str(dataset.path))
    ks = sorted(set(ks))
    depth = ks[-1]
    results: dict[str, dict] = {}
    firsts: dict[str, list[tuple[int | None, int | None]]] = {}
    decided: dict[tuple[int, str], dict] = {}
    for mode in modes:
        cited_ok = 0
        latencies: list[float] = []
        unit_words: list[int] = []
        ranks: list[tuple[int | None, int | None]] = []
        for n, q in enumerate(dataset.questions):
            t0 = time.perf_counter()
            hits = list(search(q.question, mode, depth))[:depth]
            latencies.append((time.perf_counter() - t0) * 1000)
            if decision is not None:
                decided[n, mode] = decision(q.question, mode)
            unit_words.extend(len(text.split()) for _, text in hits)
            # first rank (1-based) at which the gold doc / an answer shows up
            first_doc = next((r for r, (d, _) in enumerate(hits, 1) if _same_doc(d, q.doc)), None)
            first_ans = next((r for r, (_, t) in enumerate(hits, 1) if holds_answer(t, q.answers)), None)
            ranks.append((first_doc, first_ans))
            if cite is not None:
                cited = cite(q.question, mode) or []
                cited_ok += any(holds_answer(t, q.answers) for t in cited)
            if progress:
                progress(1)
        m = _rank_figures(ranks, ks)
        if cite is not None:
            m["answer_cites_answer"] = cited_ok / max(len(dataset.questions), 1)
        m["questions"] = len(dataset.questions)
        latencies.sort()
        m["latency_ms_p50"] = latencies[len(latencies) // 2] if latencies else 0.0
        m["mean_unit_words"] = sum(unit_words) / len(unit_words) if unit_words else 0.0
        if by:
            groups: dict[str, list[int]] = {}
            for n, q in enumerate(dataset.questions):
                groups.setdefault(field_value(q.metadata, by), []).append(n)
            m["by"] = {value: {**_rank_figures([ranks[n] for n in rows], ks), "questions": len(rows)}
                       for value, rows in sorted(groups.items())}
        results[mode] = m
        firsts[mode] = ranks
    if per_query is not None:
        for n, q in enumerate(dataset.questions):
            record = {"id": q.id, "question": q.question, "doc": q.doc,
                      "modes": {mode: {"doc_rank": firsts[mode][n][0], "answer_rank": firsts[mode][n][1],
                                       **({"decision": decided[n, mode]} if decided.get((n, mode)) else {})}
                                for mode in modes}}
            if by:
                record[by] = field_value(q.metadata, by)
            per_query.append(record)
    return results


def _rank_figures(ranks: list[tuple[int | None, int | None]], ks: Sequence[int]) -> dict[str, float]:
    """doc@k and ans@k from each question's first rank of the gold document and of an answer."""
    n = max(len(ranks), 1)
    out = {f"doc@{k}": sum(d is not None and d <= k for d, _ in ranks) / n for k in ks}
    out.update({f"ans@{k}": sum(a is not None and a <= k for _, a in ranks) / n for k in ks})
    return out
