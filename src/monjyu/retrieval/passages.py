"""Search results as passages: a unit and an adjacent unit of the same section, both ranked, are
one passage.

Units of a paper overlap (chunking.overlap) and neighbours often continue one another, so a top 5
of units is often three passages of text. Measured on covidqa-dev (README, "Measured"): in 608 of
841 questions hybrid's top 5 held two adjacent units. Joined, each result shows a stretch of the
paper once, and the places freed go to the next passages of the ranking.
"""

from __future__ import annotations

from dataclasses import replace

from ..types import SearchHit


def _adjacent(a: SearchHit, b: SearchHit) -> bool:
    """Next to each other in one section: the chunker cuts a section into consecutive units, so
    between them there is at most whitespace (or they overlap)."""
    return (a.document_id == b.document_id and a.section == b.section and a.kind == b.kind
            and abs(a.chunk_index - b.chunk_index) == 1)


def join_adjacent(hits: list[SearchHit], passages: int, max_units: int) -> list[SearchHit]:
    """The first `passages` passages of `hits` (best first): each hit joins the passage of a
    better-ranked adjacent unit while that passage holds fewer than `max_units` units, else
    starts its own. A passage keeps its best unit's id, score and strategy scores; its text is
    its units' text in document order, each overlap once (offsets into the document hold
    throughout), and `parts` lists the units."""
    groups: list[list[SearchHit]] = []
    for hit in hits:
        home = next((g for g in groups if len(g) < max_units and any(_adjacent(u, hit) for u in g)), None)
        if home is not None:
            home.append(hit)
        elif len(groups) < passages:
            groups.append([hit])
        else:
            break
    return [_passage(group, rank) for rank, group in enumerate(groups, start=1)]


def _passage(group: list[SearchHit], rank: int) -> SearchHit:
    best = group[0]
    if len(group) == 1:
        return replace(best, rank=rank)
    units = sorted(group, key=lambda u: u.start_char)
    text, end = units[0].text, units[0].end_char
    for unit in units[1:]:  # the overlap once; the whitespace between as spaces, so offsets still hold
        text += " " * max(0, unit.start_char - end) + unit.text[max(0, end - unit.start_char):]
        end = max(end, unit.end_char)
    parts = [{"text_unit_id": u.text_unit_id, "start_char": u.start_char, "end_char": u.end_char, "page": u.page}
             for u in units]
    return replace(best, rank=rank, text=text, start_char=units[0].start_char, end_char=end,
                   chunk_index=units[0].chunk_index, page=units[0].page, parts=parts)
