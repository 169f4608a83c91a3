"""Checking an LLM's answer against the passages it was given, sentence by sentence.

A model cites the wrong passage, or writes from its own memory and cites one anyway. Each
sentence of the answer gets a support figure (0-1) for each numbered source: the local relevance
scorer's blend of meaning (the sentence's e5 vector against the source's best sentence) and
words (the IDF-weighted share of the sentence's terms the source holds), on its 0-10 scale / 10.
Then:
- cited, and a cited source supports it nearly as well as the best source does (within
  RECITE_MARGIN): kept, citing the sources that do ("supported");
- cited wrongly (no cited source supports it, or another supports it far better: the passage
  that says it, beside one that merely shares its subject), another source supports it:
  re-cited to the best one ("recited");
- uncited, a source supports it: that source cited ("cited");
- no source supports it: dropped from the answer and named in its note ("dropped").
An answer left with no sentence says that the passages do not cover the question
(kind "insufficient") instead of answering from the model's memory. Sentences of fewer than
MIN_CHECKED_TERMS terms ("In short:") are kept unchecked.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ..ingest.sentences import statement_spans
from .citations import CITATION_MARKER, cited_numbers
from .context import Source
from .relevance import LocalRelevanceScorer

MIN_CHECKED_TERMS = 3
RECITE_MARGIN = 0.25  # support a cited source may lack against the best source and still be cited
# A sentence ends at . ! ? 。！？ with the citation markers that follow it.
_SENTENCE = re.compile(r".+?(?:[.!?。！？]+(?:\s*[\[［][^\]］]*[\]］])*(?=\s|$)|$)", re.S)


@dataclass
class CheckedSentence:
    text: str  # without its markers
    cited: list[int]  # source numbers it cites after the check
    support: float | None  # the best support among them (None: too short to check)
    status: str  # supported | recited | cited | dropped | unchecked

    def to_dict(self) -> dict:
        return {"text": self.text, "citations": self.cited,
                "support": None if self.support is None else round(self.support, 3), "status": self.status}


@dataclass
class _Piece:
    line: int
    raw: str  # as the model wrote it, markers included
    bare: str  # without markers
    numbers: list[int]


def _pieces(text: str) -> list[_Piece]:
    """The answer's sentences, line by line, each with and without its [n] markers."""
    out = []
    for line_no, line in enumerate(text.splitlines()):
        for match in _SENTENCE.finditer(line.strip()):
            raw = match.group(0).strip()
            numbers = [n for m in CITATION_MARKER.finditer(raw) for n in cited_numbers(m)]
            bare = re.sub(r"\s+([.!?。！？,;:])", r"\1", re.sub(r"\s{2,}", " ", CITATION_MARKER.sub("", raw))).strip()
            if bare:
                out.append(_Piece(line_no, raw, bare, list(dict.fromkeys(numbers))))
    return out


def _recite(piece: _Piece, numbers: list[int]) -> str:
    """The sentence citing `numbers` where it cited before (else before its closing stop)."""
    markers = "".join(f"[{n}]" for n in numbers)
    first = CITATION_MARKER.search(piece.raw)
    if first is not None:
        head = CITATION_MARKER.sub("", piece.raw[:first.start()]).rstrip()
        tail = CITATION_MARKER.sub("", piece.raw[first.end():])
        return f"{head} {markers}{tail}".strip()
    stop = re.search(r"[.!?。！？]+$", piece.bare)
    return f"{piece.bare[:stop.start()]} {markers}{stop.group(0)}" if stop else f"{piece.bare} {markers}"


class AnswerVerifier:
    """`min_support`: the support (0-1) a source must give a sentence to be cited for it."""

    def __init__(self, scorer: LocalRelevanceScorer, min_support: float,
                 term_weights: Callable[[set[str]], dict[str, float]] | None = None):
        self.scorer = scorer
        self.min_support = min_support
        self.term_weights = term_weights

    def support(self, sentences: Sequence[str], sources: Sequence[Source]) -> np.ndarray:
        """support[i, j]: how well source j supports sentence i (0-1)."""
        analyzer = self.scorer.analyzer
        pieces = [[h.text[a:b] for a, b in statement_spans(h.text)] or [h.text] for h in (s.hit for s in sources)]
        flat = [p for group in pieces for p in group]
        vectors = self.scorer.embed(list(sentences) + flat)
        said, parts = vectors[:len(sentences)], vectors[len(sentences):]
        owner = np.repeat(np.arange(len(sources)), [len(g) for g in pieces])
        source_terms = [set(analyzer.terms(s.hit.text)) for s in sources]
        out = np.zeros((len(sentences), len(sources)), dtype=np.float32)
        for i, sentence in enumerate(sentences):
            terms = frozenset(analyzer.terms(sentence))
            weights = self.term_weights(set(terms)) if self.term_weights else None
            best_part = np.full(len(sources), -1.0, dtype=np.float32)
            np.maximum.at(best_part, owner, parts @ said[i])
            semantic = self.scorer.rescale(best_part)
            lexical = np.array([self.scorer.term_share(terms, t, weights) for t in source_terms], dtype=np.float32)
            out[i] = self.scorer.combine(semantic, lexical) / 10.0
        return out

    def check(self, text: str, sources: Sequence[Source]) -> tuple[str, list[CheckedSentence]]:
        """The answer rewritten with its citations checked, and what was done to each sentence."""
        pieces = _pieces(text)
        by_number = {s.number: i for i, s in enumerate(sources)}
        analyzer = self.scorer.analyzer
        checkable = [i for i, p in enumerate(pieces) if len(analyzer.terms(p.bare)) >= MIN_CHECKED_TERMS]
        matrix = self.support([pieces[i].bare for i in checkable], sources) if checkable and sources else None
        row = {i: r for r, i in enumerate(checkable)}
        checked: list[CheckedSentence] = []
        lines: dict[int, list[str]] = {}
        for i, piece in enumerate(pieces):
            cited = [n for n in piece.numbers if n in by_number]
            if i not in row or matrix is None:
                checked.append(CheckedSentence(piece.bare, cited, None, "unchecked"))
                lines.setdefault(piece.line, []).append(piece.raw)
                continue
            scores = matrix[row[i]]
            best = int(np.argmax(scores))
            bar = max(self.min_support, float(scores[best]) - RECITE_MARGIN)
            backing = [n for n in cited if scores[by_number[n]] >= bar]
            if backing:
                check = CheckedSentence(piece.bare, backing, float(max(scores[by_number[n]] for n in backing)),
                                        "supported")
            elif scores[best] >= self.min_support:
                check = CheckedSentence(piece.bare, [sources[best].number], float(scores[best]),
                                        "recited" if cited else "cited")
            else:
                check = CheckedSentence(piece.bare, [], float(scores[best]), "dropped")
            checked.append(check)
            if check.status != "dropped":
                same = check.cited == piece.numbers
                lines.setdefault(piece.line, []).append(piece.raw if same else _recite(piece, check.cited))
        return "\n".join(" ".join(parts) for _, parts in sorted(lines.items())), checked
