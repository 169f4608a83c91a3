"""[n] markers in an answer -> citations of text units; markers that point nowhere are removed."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..ingest.zotero import zotero_links
from ..types import Citation
from .context import Source

# [1]  [1, 3]  [1][2]  [1,2,3]  and full-width ［１］ / 、 as small local models write them
CITATION_MARKER = re.compile(r"[\[［]\s*([0-9０-９]+(?:\s*[,，、]\s*[0-9０-９]+)*)\s*[\]］]")
WIDE_DIGITS = str.maketrans("０１２３４５６７８９", "0123456789")
SNIPPET_CHARS = 240
_GONE = "\x00"


def cited_numbers(marker: re.Match) -> list[int]:
    """The source numbers of one CITATION_MARKER match ("[1, 3]" -> [1, 3]; full-width digits too)."""
    return [int(n.translate(WIDE_DIGITS)) for n in re.split(r"[,，、]", marker.group(1))]


def citation_for(source: Source, snippet: str = "", start: int | None = None, end: int | None = None) -> Citation:
    h = source.hit
    text = snippet or h.text[:SNIPPET_CHARS].strip()
    unit, page = h.text_unit_id, h.page
    at = h.start_char if start is None else start
    for part in h.parts:  # a joined passage: the unit (and page) the cited text starts in
        if part["start_char"] <= at < part["end_char"]:
            unit, page = part["text_unit_id"], part["page"]
            break
    return Citation(number=source.number, text_unit_id=unit, document_id=h.document_id,
                    document_title=h.document_title, source_path=h.source_path, page=page, snippet=text,
                    start_char=at,
                    end_char=(h.start_char + len(text)) if end is None else end, section=h.section,
                    authors=list(h.authors), year=h.year, kind=h.kind, zotero=zotero_links(h.zotero, page) if h.zotero else {})


def resolve_citations(text: str, sources: Sequence[Source]) -> tuple[str, list[Citation]]:
    """Keep markers whose numbers name a source (in order of first use), drop the others."""
    by_number = {s.number: s for s in sources}
    used: list[int] = []

    def keep(match: re.Match) -> str:
        numbers = cited_numbers(match)
        valid = [n for n in numbers if n in by_number]
        for n in valid:
            if n not in used:
                used.append(n)
        return "".join(f"[{n}]" for n in dict.fromkeys(valid)) or _GONE

    cleaned = re.sub(rf"[ \t]*{_GONE}", "", CITATION_MARKER.sub(keep, text)).strip()  # a dropped marker takes its space along
    return cleaned, [citation_for(by_number[n]) for n in used]
