"""Abbreviations a text defines ("Venezuelan equine encephalitis virus (VEEV)"), and a sentence
read with the question's form of a name.

Papers define a name once and write its abbreviation after; questions use either form. A reader
that matches words, and the trained cross-encoder most of all, misses "VEEV is ... transmitted by
mosquitoes" for "How is Venezuelan equine encephalitis virus transmitted?" (log-odds -3.4; 4.9 with
the sentence spelled out). The definitions are found as Schwartz and Hearst (2003) find them: a
short form in parentheses after the words it abbreviates.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_FUNCTION_WORDS = {"of", "and", "the", "for", "in", "on", "to", "at", "by", "with", "de", "la", "du", "des", "von", "van"}
# "(VEEV)", "(MERS-CoV;", "(RNA-Seq,": a one-token short form with a capital after its first character
_DEFINED = re.compile(r"\(\s*([^\W_][\w-]*[A-Z][\w-]*)\s*[,;)]")


def abbreviates(short: str, long: str) -> bool:
    """`short` abbreviates the whole of `long` (two or more words): a single token with two or
    more capitals ("VEEV", "MERS-CoV") whose letters and digits occur in `long` in order, the first
    at its start, and that holds the initial of every word of `long` (but of, and, the ...) in
    order: "VEEV" for "Venezuelan equine encephalitis virus", not "EV" (the initials of Schwartz and
    Hearst's abbreviation rule, made to cover the whole name)."""
    if " " in short or sum(c.isupper() for c in short) < 2 or len(long.split()) < 2:
        return False
    letters = [c for c in short.lower() if c.isalnum()]
    low = long.lower()
    initials = [w[0] for w in re.findall(r"[^\W_]+", low) if w not in _FUNCTION_WORDS]
    if len(initials) < 2 or not letters or low[0] != letters[0]:
        return False
    return _in_order(letters, low) and _in_order(initials, letters)


def _in_order(needles: list[str], haystack) -> bool:
    """Whether `needles` occur in `haystack` in order (a subsequence)."""
    rest = iter(haystack)
    return all(c in rest for c in needles)


def defined_abbreviations(texts: Iterable[str]) -> dict[str, str]:
    """Short form -> long form, for each "long form (SF)" in `texts` (the first definition of a
    short form counts). Of the words before the parenthesis, the longest run of no more words than
    the short form has letters that it abbreviates: "Eastern equine encephalitis virus (EEEV)", not
    "equine encephalitis virus"."""
    out: dict[str, str] = {}
    for text in texts:
        for m in _DEFINED.finditer(text):
            short = m.group(1)
            if short in out:
                continue
            words = text[:m.start()].split()
            letters = sum(c.isalnum() for c in short)
            fits = [long for k in range(2, min(letters, len(words)) + 1)
                    if abbreviates(short, long := " ".join(words[-k:]).strip(",;:\"'“"))]
            if fits:
                out[short] = fits[-1]
    return out


def _token(text: str, short: str) -> re.Match | None:
    """`short` in `text` as a word of its own ("VEEV", not the "VEEV" of "VEEV-TC83"); next to kana
    or kanji too, as a Japanese question writes it ("VEEVはどのように...")."""
    return re.search(rf"(?<![A-Za-z0-9-]){re.escape(short)}(?![A-Za-z0-9-])", text)


def question_forms(question: str, abbreviations: dict[str, str]) -> dict[str, tuple[str, bool]]:
    """The abbreviations of which the question writes one form and not the other: short form ->
    (long form, whether the question writes the long one). What `spelled_out` reads, worked out
    once per question."""
    q_low = question.lower()
    forms = {}
    for short, long in abbreviations.items():
        writes_long, writes_short = long.lower() in q_low, bool(_token(question, short))
        if writes_long != writes_short:
            forms[short] = (long, writes_long)
    return forms


def spelled_out(sentence: str, forms: dict[str, tuple[str, bool]]) -> str:
    """`sentence` with each name of `forms` (`question_forms`) that it writes only in the form the
    question does not written in both, the first time it occurs: "Venezuelan equine encephalitis
    virus (VEEV) is transmitted by mosquitoes" for a question that writes the long form, where the
    sentence wrote "VEEV"; and the same the other way round."""
    for short, (long, writes_long) in forms.items():
        s_low, l_low = sentence.lower(), long.lower()
        if writes_long and l_low not in s_low:
            if m := _token(sentence, short):
                sentence = f"{sentence[:m.start()]}{long} ({short}){sentence[m.end():]}"
        elif not writes_long and l_low in s_low and not _token(sentence, short):
            end = s_low.index(l_low) + len(long)
            sentence = f"{sentence[:end]} ({short}){sentence[end:]}"
    return sentence
