"""Numbered sources for an answer, assembled within a token budget."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..types import SearchHit


@dataclass
class Source:
    """A retrieved text unit as the answer sees it: `[number]` in the prompt and in citations."""

    number: int
    hit: SearchHit


def next_number(sources: Sequence[Source]) -> int:
    """The number a passage cited beside `sources` takes: the one after theirs."""
    return max((s.number for s in sources), default=0) + 1


def select_sources(hits: Sequence[SearchHit], budget_tokens: int, count_tokens: Callable[[str], int],
                   max_sources: int = 20) -> list[Source]:
    """Best hits first while they fit the budget; a unit too large to fit is skipped so that a
    smaller one after it can still be used."""
    sources: list[Source] = []
    used = 0
    for hit in hits:
        if len(sources) >= max_sources:
            break
        cost = count_tokens(hit.text) + 16  # + the header line
        if used + cost > budget_tokens:
            continue
        used += cost
        sources.append(Source(len(sources) + 1, hit))
    return sources


def format_sources(sources: Sequence[Source]) -> str:
    """The numbered passages as an LLM reads them, each a header line and its text with runs of
    spaces and of blank lines closed up (a partly relevant passage's strips stand apart in blanks as
    long as the text left out, which carry nothing to read)."""
    parts = []
    for s in sources:
        h = s.hit
        where = h.source_path + (f", p. {h.page}" if h.page else "")
        text = _BLANK_LINES.sub("\n\n", _LINE_END.sub("\n", _SPACES.sub(" ", h.text))).strip()
        parts.append(f"[{s.number}] {h.document_title} ({where})\n{text}")
    return "\n\n".join(parts)


_SPACES = re.compile(r"[ \t]+")
_LINE_END = re.compile(r" ?\n ?")
_BLANK_LINES = re.compile(r"\n{3,}")
