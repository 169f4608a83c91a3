"""Sentence splitting for English and Japanese with character offsets (pysbd rules)."""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

import pysbd
from pysbd.utils import TextSpan

from ..nlp.lang import detect_language
from .structure import heading_level

_PARAGRAPH = re.compile(r"\n\s*\n")
_WRAPPED = re.compile(r"\n(?=[a-z(])")  # a hard line wrap inside a sentence: the next line goes on in lower case
# What no sentence starts with, so a stop before it ended an abbreviation pysbd does not know
# ("Eimeria spp., the faecal ..."): a comma, semicolon, colon or closing bracket, after a citation or
# not ("Saksena et al. [9] , 2) land-use diversity"); and in text that capitalises its sentences, a
# word in lower case letters alone, after a citation or not ("Ae. aegypti", "Raffel et al. [5]
# applied"; "mRNA", "p53" and "eIF2" may start one, and "a)" and "ii." enumerate)
_CITATION = r"(?:\[[\d,;\s–-]+\]\s*)?"
_GOES_ON = re.compile(_CITATION + r"[,;:)\]]")
_GOES_ON_IN_CASED_TEXT = re.compile(_CITATION + r"(?![ivx]+[.)]|[a-z][.)])[a-z]+\b(?![A-Z0-9])")
# A number with a stop, which pysbd takes for a list item's ("... confirmed on infection day" / "7. Viral
# RNA was detected ..."): after a piece ending on a letter or digit (no stop, colon or bracket) on the
# same line, it ends that piece; an item after a colon still starts a sentence.
_NUMBER_ENDING = re.compile(r"(\d{1,3}\.)\s+")
# An item of a list written inside a sentence ("... include (a) RT-PCR, (b) real-time RT-PCR and (c)
# RT-LAMP [104]."), which pysbd starts a sentence at: after a piece that ends no sentence (no stop,
# on the same line) it goes on. An item after a stop ("The results are shown. (a) The first panel
# ...") still starts one.
_INLINE_ITEM = re.compile(r"\(?(?:[a-z]|[ivx]{1,4}|\d{1,2})\)(?!\w)")
_ENDS_STATEMENT = re.compile(r"[.!?。．！？…][\"'”’)\]]*$")


class _Segmenter(pysbd.Segmenter):
    """pysbd's segmenter, finding each sentence back in the text with `str.find` where pysbd
    compiles a pattern of the sentence itself (`re.escape(sentence)` and trailing whitespace),
    which no cache can keep: the same spans, found as its `finditer` finds them."""

    def sentences_with_char_spans(self, sentences):
        text, spans, prior_end = self.original_text, [], 0
        for sent in sentences:
            if not sent:
                return super().sentences_with_char_spans(sentences)
            pos = 0
            while (start := text.find(sent, pos)) >= 0:
                end = start + len(sent)
                while end < len(text) and text[end].isspace():  # what `\s*` takes
                    end += 1
                if end > prior_end:
                    spans.append(TextSpan(text[start:end], start, end))
                    prior_end = end
                    break
                pos = end  # finditer goes on after the match: matches never overlap
        return spans


@lru_cache(maxsize=4)
def _segmenter(lang: str) -> pysbd.Segmenter:
    return _Segmenter(language=lang, clean=False, char_span=False)


def split_sentences(text: str, lang: str | None = None) -> list[tuple[int, int]]:
    """(start, end) character spans of the sentences of `text`, in order, whitespace trimmed.

    Paragraph breaks always end a sentence (headings and list items have no final stop); a line
    break followed by a lower-case letter does not (hard-wrapped text), nor a stop pysbd takes for
    one after an abbreviation it does not know (`_joined`: "Ae. aegypti", "spp., the", "(Fig. 2)").
    """
    text = _WRAPPED.sub(" ", text)  # same length: offsets stay valid for the original text
    spans: list[tuple[int, int]] = []
    pos = 0
    for para in _PARAGRAPH.split(text):
        start = text.find(para, pos) if para else pos
        if para.strip():
            spans += _joined(text, _paragraph_sentences(text, para, start, lang))
        pos = start + len(para)
    return spans


def _paragraph_sentences(text: str, para: str, start: int, lang: str | None) -> list[tuple[int, int]]:
    """pysbd's sentences of one paragraph (at `start` in `text`), as spans of `text`."""
    seg = _segmenter(lang or detect_language(para))
    spans: list[tuple[int, int]] = []
    cursor = start
    for sent in seg.segment(para):
        s = sent.strip()
        if not s:
            continue
        found = text.find(s, cursor)
        if found < 0:  # pysbd altered the text; fall back to the rest of the paragraph
            found = cursor
            s = text[cursor:start + len(para)].strip()
            if not s:
                break
        spans.append((found, found + len(s)))
        cursor = found + len(s)
    return spans


def _joined(text: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """A paragraph's sentences with each that goes on the one before joined to it: one that starts
    as no sentence does (`_GOES_ON`), an item of a list the one before did not end (`_INLINE_ITEM`),
    or one that closes a bracket the one before left open ("(Fig." "2) ."); and a number pysbd cut
    off the end of a sentence (`_NUMBER_ENDING`) given back to it."""
    cased = any(text[a].isupper() for a, _ in spans)
    out: list[tuple[int, int]] = []
    for a, b in spans:
        if (out and text[out[-1][1] - 1].isalnum() and "\n" not in text[out[-1][1]:a]
                and (number := _NUMBER_ENDING.match(text, a, b))):
            out[-1] = (out[-1][0], number.end(1))
            a = number.end()
        before = text[out[-1][0]:out[-1][1]] if out else ""
        if out and (_GOES_ON.match(text, a) or (cased and _GOES_ON_IN_CASED_TEXT.match(text, a))
                    or (_INLINE_ITEM.match(text, a) and not _ENDS_STATEMENT.search(before)
                        and "\n" not in text[out[-1][1]:a])
                    or (before.count("(") > before.count(")") and ")" in text[a:b].split("(")[0])):
            out[-1] = (out[-1][0], b)
        else:
            out.append((a, b))
    return out


MIN_STATEMENT_CHARS = 12


def statement_spans(text: str, spans: list[tuple[int, int]] | None = None) -> list[tuple[int, int]]:
    """The sentences of `text` (given `spans`, or split now) that state something: at least 12
    characters, not a heading (Markdown "#", or a paper's "3.1 Pre-training"). What answers quote
    and rerankers read."""
    return [(a, b) for a, b in (split_sentences(text) if spans is None else spans)
            if b - a >= MIN_STATEMENT_CHARS and text[a] != "#" and not heading_level(text[a:b])]


def is_title_line(text: str, a: int, b: int) -> bool:
    """A line standing alone without a sentence end: a title or an unnumbered heading (a document's
    title at the top of its first unit, "Page two: using communities"). Not something to quote."""
    line = text[a:b].strip()
    alone = (a == 0 or text[a - 1] == "\n") and (b >= len(text) or text[b] == "\n")
    return alone and len(line) <= 120 and "\n" not in line and not _ENDS_STATEMENT.search(line)


# A footnote's mark glued to the first word of its text, or of the sentence after the stop it was
# set behind ("2Note that ...", "1This finding also matches ...").
FOOTNOTE_MARK = re.compile(r"^\d{1,2}(?=[A-Z][a-z]+\b)")
# A Markdown footnote's mark ("FastTrain[^2]") and its definition ("[^2]: https://github.com/...").
MARKDOWN_MARK = re.compile(r"\[\^([^\]\s]+)\](?!:)")
MARKDOWN_NOTE = re.compile(r"^\[\^([^\]\s]+)\]:")
_ALNUM = re.compile(r"[^\W_]+")
# A number is one word however it is written: "0.9", "1,024", "10−9" (a PDF's minus sign).
_NUMBER = re.compile(r"\d+(?:[.,\u2212]\d+)*")
MIN_SENTENCE_WORDS = 4
# A stop that may end a sentence inside a quoted one: white space after it, but not a lower-case
# word (a stop there ends an abbreviation: "Ae. aegypti", "et al. found"), and not closing a one-
# letter abbreviation or initial ("(r. 1554-56)", "Christopher J. Probst", "U.S. Army", "J. A. Hobson
# identifies ..." as the text opens), a common two-letter lower-case one ("accession no. MN975262",
# "Guan et al. 12"), a title ("St. Louis", "Dr. Smith") or a month's before its day ("as of Feb. 10,
# 2020"); "... to do it. The" ends one. A decimal point never does.
STOP_THEN_SPACE = re.compile(r"(?<![\s(][A-Za-z]\.)(?<!^[A-Za-z]\.)(?<!\.[A-Z]\.)"
                             r"(?<![\s(](?:al|no|vs|ca|cf|sp|pp|eq|ed|nr|op|pt)\.)"
                             r"(?<![\s(](?:St|Dr|Mr|Ms|Jr|Sr|Mt)\.)(?<![\s(](?:Mrs|Rev|Gov|Sen)\.)"
                             r"(?<![\s(](?:Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Oct|Nov|Dec)\.(?=\s+\d))(?<![\s(]Sept\.(?=\s+\d))"
                             r"(?<=[.!?])\s+(?![a-z])")


def is_debris(sentence: str) -> bool:
    """Not a sentence to quote: under 4 words, or fewer than half of its words alphabetic, a number
    counted as one word (figure and table text: "0.888 0.946 WMT16-en"); a Japanese one, written
    without spaces, under 8 letters or with more digits than other letters. Words are NFKC
    lower-case alphanumeric runs, as answer figures count them (eval/answers.py)."""
    text = unicodedata.normalize("NFKC", sentence).lower()
    words = _ALNUM.findall(text)
    if detect_language(sentence) == "ja":
        letters = "".join(words)
        return len(letters) < 8 or sum(ch.isdigit() for ch in letters) * 2 > len(letters)
    if len(words) < MIN_SENTENCE_WORDS:
        return True
    # a number, decimals and all, is one word of the share ("with β1 = 0.9, β2 = 0.98 and ϵ = 10−9")
    words = _ALNUM.findall(_NUMBER.sub("0", text))
    return sum(w.isalpha() for w in words) * 2 < len(words)
