"""How a noun phrase of the graph (lower case, head noun lemmatised, hyphens closed up) is
written in the texts: "specie" as "species", "mer" as "MERS", "mers-cov" as "MERS-CoV"."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache


def written_form(phrase: str, texts: Sequence[str]) -> str | None:
    """How the texts write a graph phrase (lower case, head noun lemmatised, hyphens closed up):
    its most frequent spelling there, the head in any regular plural ("specie" -> "species",
    "mer" -> "MERS", "analysis" -> "analyses"); None when no text writes it."""
    found = spellings(phrase, texts)
    return found.most_common(1)[0][0] if found else None


def spellings(phrase: str, texts: Sequence[str]) -> Counter:
    """How often the texts write a graph phrase each way (see written_form)."""
    pattern = _spelling_pattern(phrase)
    return Counter(" ".join(m.group(0).split()) for t in texts for m in pattern.finditer(t))


@lru_cache(maxsize=4096)
def _spelling_pattern(phrase: str) -> re.Pattern:
    *body, head = phrase.split(" ")
    heads = {head, head + "s", head + "es", head + "'s"}
    if head.endswith("y"):
        heads.add(head[:-1] + "ies")
    for singular, plural in (("is", "es"), ("um", "a"), ("on", "a"), ("us", "i")):
        if head.endswith(singular):
            heads.add(head[:-len(singular)] + plural)

    def piece(word: str) -> str:
        return r"\s*-\s*".join(re.escape(part) for part in word.split("-"))

    head_pattern = "(?:" + "|".join(piece(h) for h in sorted(heads, key=len, reverse=True)) + ")"
    pattern = r"\s+".join([*(piece(w) for w in body), head_pattern])
    if re.match(r"\w", phrase[0]) and phrase[0].isascii():
        pattern = r"(?<!\w)" + pattern
    if phrase[-1].isascii():
        pattern += r"(?![\w-])"
    return re.compile(pattern, re.IGNORECASE)
