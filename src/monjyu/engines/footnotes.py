"""A quoted sentence's footnote that gives a web address, quoted with it.

Papers put where their code, models and data are in footnotes: "... our open source library
called DeepSpeed²" with "² https://github.com/microsoft/deepspeed" at the page's foot. The PDF
reader keeps each footnote as a paragraph of its own after the paragraph it cut (ingest/pdf.py),
so the note follows its mark in the document, within a page's text. An answer that quotes the
marked sentence shows the note beside it; without it, "Where is the code?" is answered by a
sentence that only says the code is open.
"""

from __future__ import annotations

import re

from ..ingest.sentences import MARKDOWN_MARK

# A footnote's mark as the PDF's text gives it: one or two digits right after a word of three letters
# or more ("library called Deep-Speed2 .", "a chat interface4 leverages") or after a sentence's stop
# ("... to help with reproducibility.1"), and no more digits or letters after it ("ResNet50x",
# "v2.5" are no marks; "T5" and "L2" are names, their word too short).
_MARK = re.compile(r"(?:(?<=[^\W\d_]{3})|(?<=[^\W\d_][.!?]))(\d{1,2})(?![^\W_]|[.,]\d)")
# How far after the sentence its footnote is looked for (characters): about a page's text, as the
# note may follow the paragraph its page's foot cut, a page after its mark (FlashAttention's: 4,158).
REACH = 6000
# A footnote longer than this (words) is not quoted beside the sentence.
MOST_WORDS = 40
_ADDRESS = re.compile(r"https?://")
LABEL = {"en": "footnote", "ja": "脚注"}


def marks(sentence: str) -> list[str]:
    """The footnote marks a sentence carries, in order: a PDF's numbers, then Markdown's labels
    ("FastTrain[^2]", its note a paragraph opening "[^2]:", which the loader sets after the paragraph
    that marks it)."""
    return [m.group(1) for m in _MARK.finditer(sentence)] + MARKDOWN_MARK.findall(sentence)


def footnote_with_address(mark: str, following: str) -> str | None:
    """The first paragraph of `following` (the text after the marked sentence) that opens with
    `mark` and gives a web address, in at most MOST_WORDS words, without its mark; None if none. A
    number with a stop or bracket after it numbers a list or a reference entry ("1. Benezit F et
    al. ... https://doi.org/..."), not a footnote."""
    mark = re.escape(mark)
    pattern = rf"(?:^|\n\s*\n)\s*(?:{mark}(?![\d.)\]])[ \t]?|\[\^{mark}\]:\s*)(?P<note>[^\n]+)"
    for m in re.finditer(pattern, following[:REACH]):
        note = m.group("note").strip()
        if _ADDRESS.search(note) and len(note.split()) <= MOST_WORDS:
            return note
    return None


def footnotes_of(sentences: list[str], following: str) -> list[tuple[str, str]]:
    """(mark, note) for each mark of `sentences` whose footnote in `following` gives a web address."""
    out = []
    for mark in dict.fromkeys(m for s in sentences for m in marks(s)):
        note = footnote_with_address(mark, following)
        if note is not None:
            out.append((mark, note))
    return out
