"""A question's misspelt words, corrected to words the index holds: "recombiant" -> "recombinant",
"didthe" -> "did the".

A word no indexed text writes finds nothing by keywords and is noise to the reader, and a typo is
the commonest such word in a question ("restrospective", "isilated"). Only a lower-case word of at
least `MIN_LETTERS` letters that is neither an English word (pyspellchecker's dictionary) nor a term
of the index is corrected: a capitalised word or one with digits or a hyphen may be a name or a
code, and a shorter word has too many real neighbours. Its correction is, in this order,
1. the English word one edit away (a letter dropped, added, changed or two swapped) that the most
   indexed texts hold;
2. the word split in a function word and a word the index holds, or two function words (a space
   left out: "ofwater", "didthe"; a compound the index lacks, "autoscaler", stays whole);
3. the word one edit away that the most indexed texts hold, English or not ("varion" -> "virion"
   where the dictionary lacks it).
Two candidates held by as many texts leave the word as written ("emphyema": "empyema" or
"emphysema"?), and so does a word with no candidate: a real word the index lacks stays what it is.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache

from rapidfuzz import process
from rapidfuzz.distance import OSA

from .analyzer import EN_STOPWORDS

MIN_LETTERS = 5
_WORD = re.compile(r"(?<![\w-])[a-z]+(?![\w-])")


@lru_cache(maxsize=1)
def _english():
    from spellchecker import SpellChecker

    return SpellChecker(language="en")


def corrected(text: str, indexed: Callable[[str], tuple[str, int]]) -> tuple[str, dict[str, str]]:
    """`text` with its misspelt words corrected, and each correction (as written -> as searched).
    `indexed(word)`: the word's index term and how many indexed texts hold it (0: none)."""
    english = _english()
    found: dict[str, str] = {}
    for word in dict.fromkeys(_WORD.findall(text)):
        if len(word) < MIN_LETTERS or word in english or indexed(word)[1]:
            continue
        fix = _correction(word, english, indexed)
        if fix is not None:
            found[word] = fix
    if not found:
        return text, {}
    fixed = _WORD.sub(lambda m: found.get(m.group(0), m.group(0)), text)
    return fixed, found


# A word of Latin letters alone, whole (not part of a hyphenated or numbered name such as "SARS-CoV-2"),
# in any case, in English or Japanese text ("DetectGPTはどのように…").
_LATIN = "A-Za-zÀ-ÖØ-öø-ɏ"  # with accented letters: "ergänzungsschulen" is one word
_NAME = re.compile(rf"(?<![{_LATIN}0-9_-])[{_LATIN}]+(?![{_LATIN}0-9_-])")


def unheard_names(text: str, indexed: Callable[[str], tuple[str, int]], near: Callable[[str], bool]) -> list[str]:
    """The words of `text` that name something no indexed text mentions ("DetectGPT",
    "lecanemab"), as written: at least `MIN_LETTERS` letters, not an English word, no index term,
    and no index term two edits or fewer from its own or from the word as written (`near`):
    "immunoglobin" or "Bacilius" may be a misspelling of a word the index holds, and "Schrodinger"
    is "Schrödinger" written without its accent; nor two edits or fewer from a function word, which
    the index does not hold as a term ("throguh"). `indexed` as in `corrected`."""
    english = _english()
    out = []
    for word in dict.fromkeys(_NAME.findall(text)):
        if len(word) < MIN_LETTERS or word.lower() in english:
            continue
        term, held = indexed(word)
        # its term and the word as written, each compared once (the same string for most words)
        if held or any(map(near, dict.fromkeys((term, word.lower())))) or _near_function_word(word.lower()):
            continue
        out.append(word)
    return out


def _near_function_word(word: str) -> bool:
    """Whether `word` may be a misspelt function word ("throguh", "whcih")."""
    return process.extractOne(word, EN_STOPWORDS, scorer=OSA.distance, score_cutoff=2) is not None


def _correction(word: str, english, indexed: Callable[[str], tuple[str, int]]) -> str | None:
    held = {e: indexed(e) for e in sorted(english.edit_distance_1(word))}
    held = {e: found for e, found in held.items() if found[1]}
    best = _most_held({e: found for e, found in held.items() if e in english})
    if best is not None:
        return best
    for i in range(1, len(word)):
        parts = word[:i], word[i:]
        if any(p in EN_STOPWORDS for p in parts) and all(p in EN_STOPWORDS or indexed(p)[1] for p in parts):
            return " ".join(parts)
    return _most_held(held)


def _most_held(held: dict[str, tuple[str, int]]) -> str | None:
    """The candidate whose index term the most texts hold (of several with that term, the first
    in alphabetical order); None when none is held or two terms tie."""
    count: dict[str, int] = dict(held.values())
    ranked = sorted(count, key=lambda term: -count[term])
    if not ranked or (len(ranked) > 1 and count[ranked[1]] == count[ranked[0]]):
        return None
    return next(e for e, (term, _) in held.items() if term == ranked[0])
