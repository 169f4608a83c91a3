"""What a user reads: figures of an answer's text, not of the passages behind it.

All of them are computed on the answer with its `[n]` markers removed, on lower-case alphanumeric
words (`qa.answer_words`):

- `holds`: the answer holds a gold span (whole, or any 8-word window of a longer one);
- `first`: its first sentence does;
- `precision` / `recall` / `f1`: the answer's content words (more than 2 letters, not English stop
  words, each counted once) against those of a reference answer;
- `words`: its length in words;
- `debris`: the share of its sentences that are under 4 words or have fewer than half of their
  words alphabetic (figure and table text, stray labels); Japanese sentences by letters
  (`ingest.sentences.is_debris`, the rule the offline reader quotes by).

Sentences end at `.`, `!` or `?` followed by white space, at `。！？` and at line breaks: a
decimal point ("2.5") does not end one, nor an abbreviation's stop (before a lower-case word, or
closing an initial, a title or a short abbreviation: "Ae. aegypti", "Richard W. Story", "no.
MN975262"; `ingest.sentences.STOP_THEN_SPACE`, by which the offline reader judges the pieces of a
quote too).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from spacy.lang.en.stop_words import STOP_WORDS

from ..ingest.sentences import STOP_THEN_SPACE, is_debris
from .qa import answer_words, holds_answer

_MARKER = re.compile(r"\s*\[\d+(?:\s*,\s*\d+)*\]")
_SENTENCE_END = re.compile(rf"{STOP_THEN_SPACE.pattern}|(?<=[。！？])|\n+")


def strip_markers(text: str) -> str:
    return _MARKER.sub("", text)


def answer_sentences(text: str) -> list[str]:
    """The sentences of an answer (markers removed), as the figures split them."""
    return [s.strip() for s in _SENTENCE_END.split(strip_markers(text)) if s and s.strip()]


def content_words(text: str) -> set[str]:
    return {w for w in answer_words(text) if len(w) > 2 and w not in STOP_WORDS}


@dataclass
class AnswerFigures:
    words: int
    debris: float  # share of sentences
    holds: bool | None = None  # None: no gold spans given
    first: bool | None = None
    precision: float | None = None  # None: no reference given
    recall: float | None = None
    f1: float | None = None


def answer_figures(text: str, answers: Iterable[str] = (), reference: str | None = None) -> AnswerFigures:
    """The figures of one answer against gold spans (`answers`) and/or a reference answer."""
    answers = list(answers)
    plain = strip_markers(text)
    sentences = answer_sentences(text)
    out = AnswerFigures(words=len(answer_words(plain)),
                        debris=sum(map(is_debris, sentences)) / len(sentences) if sentences else 0.0)
    if answers:
        out.holds = holds_answer(plain, answers)
        out.first = bool(sentences) and holds_answer(sentences[0], answers)
    if reference is not None:
        got, want = content_words(plain), content_words(reference)
        hit = len(got & want)
        out.precision = hit / len(got) if got else 0.0
        out.recall = hit / len(want) if want else 0.0
        total = out.precision + out.recall
        out.f1 = 2 * out.precision * out.recall / total if total else 0.0
    return out
