"""Document structure shared by every loader: blocks in reading order -> text, sections, pages.

Loaders (PDF layout, Markdown headings, HTML h1-h6, DOCX heading styles, plain text) reduce a file
to a list of `Block`s. `assemble` turns them into the stored, NFKC-normalised document text and
the spans the chunker respects: a unit never crosses a section, and each unit carries its
section path and kind ("text", "caption", "reference", "front", "figure" or "table").
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

from ..types import CAPTION, REFERENCE, TEXT, LineBox, Section

_REFERENCES = re.compile(
    r"^(?:\d+\.?\s+|[IVX]+\.\s+)?(references?|bibliography|literature cited|works cited|参考文献|引用文献|文献)\s*$",
    re.IGNORECASE)
_CAPTION = re.compile(r"^(?:figure|fig\.|table|algorithm|listing|図|表)\s*[0-9IVX]+[a-z]?\s*[.:|：]", re.IGNORECASE)
_SPACES = re.compile(r"[ \t\u00a0\u3000]+")


_SPACING_ACCENTS = {"`": "\u0300", "´": "\u0301", "¨": "\u0308", "ˇ": "\u030c", "˜": "\u0303", "ˆ": "\u0302",
                    "¯": "\u0304", "˘": "\u0306", "˙": "\u0307", "˚": "\u030a", "¸": "\u0327"}
_LATEX_ACCENT = re.compile(r"(?<=[A-Za-z])([`´¨ˇ˜ˆ¯˘˙˚¸])(?=[A-Za-zı])|(?:(?<=\s)|^)([\u0300-\u036f])(?=[A-Za-zı])")
_TRAILING_ACCENT = re.compile(r"(?<=[A-Za-z])([`´¨ˇ˜ˆ¯˘˙˚¸])(?=[\s\d,.;:)]|$)")
_ACCENT_MARK = re.compile(r"[`´¨ˇ˜ˆ¯˘˙˚¸\u0300-\u036f]")


def _mend_accents(text: str) -> str:
    """TeX draws an accent before its letter ("Adri`a", "K ̈oster", "Mart´ın"): put it after, as a
    combining mark, so NFKC composes "Adrià", "Köster", "Martín"; an accent ending a word belongs
    to the letter before it ("Kocon´" -> "Kocoń")."""
    if not _ACCENT_MARK.search(text) or not (_LATEX_ACCENT.search(text) or _TRAILING_ACCENT.search(text)):
        return text  # (the first scan, for what both patterns need, is the fast one)
    text = _TRAILING_ACCENT.sub(lambda m: _SPACING_ACCENTS[m.group(1)], text)
    text = _LATEX_ACCENT.sub(lambda m: "\x00" + (_SPACING_ACCENTS.get(m.group(1)) if m.group(1) else m.group(2)), text)
    text = re.sub(r"\s?\x00([\u0300-\u036f])([A-Za-zı])", r"\2\1", text)
    return text.replace("\x00", "").replace("ı\u0301", "i\u0301").replace("ı\u0300", "i\u0300")


def normalize(text: str) -> str:
    """NFKC (ligatures, full-width forms, compatibility characters), TeX accents mended, single
    spaces, no control characters."""
    text = unicodedata.normalize("NFKC", _mend_accents(text))
    if not text.isprintable():  # only categories C* and Z* are not: drop C* but tab and newline
        invisible = {ord(c): None for c in set(text) if c not in "\n\t" and unicodedata.category(c)[0] == "C"}
        text = text.translate(invisible)
    return _SPACES.sub(" ", text).strip()


_CJK = "\u3000-\u303f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff01-\uff60々"
_CJK_CHAR = re.compile(f"[{_CJK}]")


def line_separator(left: str, right: str) -> str:
    """What joins two lines (or OCR words) of one paragraph: nothing where either side is a
    Japanese or Chinese character (those scripts write no spaces, not even before "5" or "GPU" at
    a line's end, and a space would split a word for the tokenizer), a space otherwise."""
    return "" if _CJK_CHAR.match(left[-1:]) or _CJK_CHAR.match(right[:1]) else " "


def join_words(words: list[str]) -> str:
    out = ""
    for w in words:
        out += (line_separator(out, w) if out else "") + w
    return out


def is_references_heading(text: str) -> bool:
    return bool(_REFERENCES.match(text.strip()))


def is_caption(text: str) -> bool:
    return bool(_CAPTION.match(text.strip()))


@dataclass
class Block:
    """A heading (with its level, 1 = top) or a paragraph of one kind, in reading order. A heading
    with no text ends the sections at its level without opening one (a labelled abstract ends
    where the body begins, though the body has no heading of its own).

    `lines` optionally gives where each piece of the text sits on a page: (start, end) offsets in
    `text`, the page number and the box (x0, y0, x1, y1, PDF points, origin bottom-left).
    `run_in`: the bold label a PDF paragraph opens with ("Hardware Failures" + " We faced ..."); on a
    heading, that the heading is such a label, whose words open the paragraph after it: it opens a
    section there and adds no text of its own. `foot`: a PDF's footnote, or a notice at a page's
    foot, set after the paragraph it cut."""

    text: str
    kind: str = TEXT  # heading | text | caption | reference | front | figure | table
    level: int = 0
    label: str = ""  # a figure's or table's caption: its section path ends with it
    page: int | None = None
    lines: list[tuple[int, int, int, tuple[float, float, float, float]]] = field(default_factory=list)
    run_in: str = ""
    foot: bool = False


@dataclass
class Assembled:
    text: str
    sections: list[Section]
    page_starts: list[tuple[int, int]]
    line_boxes: list[LineBox]


def assemble(blocks: list[Block]) -> Assembled:
    """Join blocks with blank lines; headings open sections (a stack by level), a references
    heading turns the paragraphs under it into reference entries until the next heading of the
    same or a higher level, and figure/table captions become their own kind."""
    parts: list[str] = []
    sections: list[Section] = []
    page_starts: list[tuple[int, int]] = []
    boxes: list[LineBox] = []
    stack: list[tuple[int, str]] = []  # (level, heading)
    in_refs_level = 0  # level of the references heading we are under (0: not under one)
    offset = 0
    section_ended = False
    bodied: set[int] = set()  # the sections that hold more than their heading

    def open_span(kind: str, start: int, label: str = "") -> None:
        close_span(offset)
        path = " > ".join([h for _, h in stack] + ([label] if label else []))
        sections.append(Section(start=start, end=-1, path=path, kind=kind))

    def close_span(end: int) -> None:
        if sections and sections[-1].end == -1:
            sections[-1].end = end

    for block in blocks:
        text = block.text.strip()
        if not text:
            if block.kind == "heading":
                while stack and stack[-1][0] >= max(block.level, 1):
                    stack.pop()
                section_ended = True
            continue
        start = offset + (2 if parts else 0)
        if block.kind == "heading":
            level = max(block.level, 1)
            while stack and stack[-1][0] >= level:
                stack.pop()
            if in_refs_level and level <= in_refs_level:
                in_refs_level = 0
            stack.append((level, text))
            if is_references_heading(text):
                in_refs_level = level
            kind = REFERENCE if in_refs_level else TEXT
            if block.run_in:  # a PDF's run-in label: its section starts at the paragraph it opens
                open_span(kind, start)
                section_ended = False
                continue
        elif in_refs_level and block.kind in (TEXT, REFERENCE):
            kind = REFERENCE
        elif block.kind == TEXT and is_caption(text):
            kind = CAPTION
        else:
            kind = block.kind
        current = sections[-1] if sections else None
        if block.kind == "heading" or section_ended or current is None or current.kind != kind or \
                (block.label and not current.path.endswith(block.label)):
            open_span(kind, start, block.label)
            section_ended = False
        if block.page is not None and (not page_starts or page_starts[-1][1] != block.page):
            page_starts.append((start, block.page))
        for s, e, page, box in block.lines:
            if page_starts and page != page_starts[-1][1] and s >= 0:
                page_starts.append((start + s, page))
            boxes.append(LineBox(start + s, start + e, page, *box))
        parts.append(text)
        offset = start + len(text)
        if block.kind != "heading":
            bodied.add(len(sections) - 1)
    close_span(offset)
    # A caption between two paragraphs of one section splits it; that is fine: captions are units.
    return Assembled(text="\n\n".join(parts), sections=_headings_joined(sections, bodied),
                     page_starts=page_starts, line_boxes=boxes)


def _headings_joined(sections: list[Section], bodied: set[int]) -> list[Section]:
    """A heading with nothing under it but another heading ("2 Related Work", then "2.1 ..."; or
    "Appendix", then "A Error Patterns") opens the section after it, and one followed by a caption
    is left to the caption's path: a unit of a heading alone matches searches by its words and
    answers nothing. The sections as they are where none holds more than its heading."""
    if not bodied:
        return [s for s in sections if s.end > s.start]
    kept: list[Section] = []
    opened_at: int | None = None  # where the headings the next section opens with start
    for i, s in enumerate(sections):
        if s.end <= s.start:
            continue
        if i not in bodied:
            following = sections[i + 1] if i + 1 < len(sections) else None
            opened_at = (s.start if opened_at is None else opened_at) \
                if following is not None and following.kind == s.kind else None
            continue
        if opened_at is not None:
            s.start, opened_at = opened_at, None
        kept.append(s)
    return kept


def paragraphs_to_blocks(text: str, heading: re.Pattern[str] | None = None) -> list[Block]:
    """Plain text: paragraphs at blank lines; a short standalone line matching `heading`
    (numbered "3.1 Pre-training", or a known section name) is a heading."""
    blocks = []
    for para in re.split(r"\n\s*\n", text):
        para = para.strip()
        if not para:
            continue
        level = heading_level(para) if "\n" not in para else 0
        blocks.append(Block(para, "heading", level) if level else Block(para))
    return blocks


_NUMBERED = re.compile(r"^(\d{1,2}(?:\.\d{1,2}){0,3})\.?\s+(\S.*)$")
_LETTERED = re.compile(r"^([A-H](?:\.\d{1,2}){0,3})\.?\s+([A-Z].*)$")
_ROMAN = re.compile(r"^([IVX]{1,5})\.\s+(\S.*)$")
_JA_NUMBERED = re.compile(r"^(第?[0-9０-９一二三四五六七八九十]+[章節.．]?)\s*(\S.*)$")
_KNOWN = re.compile(
    r"^(abstract|introduction|background|related work|related works|preliminaries|method|methods|methodology|"
    r"approach|model|experiments?|experimental setup|evaluation|results|results and discussion|discussion|"
    r"analysis|limitations|conclusions?|conclusion and future work|future work|acknowledge?ments?|"
    r"references|bibliography|appendix|appendices|broader impact|ethics statement|supplementary material|"
    r"概要|要旨|はじめに|序論|関連研究|背景|手法|提案手法|実験|評価|結果|考察|議論|まとめ|結論|おわりに|謝辞|参考文献|付録)"
    r"\s*[:.]?$", re.IGNORECASE)


def heading_level(line: str, styled: bool = False) -> int:
    """The level a standalone line would have as a numbered or well-known heading; 0 if it does not
    look like one. Numbers give the level ("3.1" -> 2); known names are top level. Appendix
    letters without a dot ("A Proofs") count only in `styled` (bold or large) type: in plain
    text "A Plain Title" is a sentence."""
    line = line.strip()
    if not line or len(line) > 90 or len(line.split()) > 12:
        return 0
    if _KNOWN.match(line):
        return 1
    m = re.match(r"^appendix\s+([A-Z](?:\.\d{1,2})*)\b[.:]?", line, re.IGNORECASE)
    if m:
        return m.group(1).count(".") + 1
    for pattern in (_NUMBERED, _LETTERED):
        m = pattern.match(line)
        if m and _title_like(m.group(2)) and (pattern is _NUMBERED or styled or line[len(m.group(1))] == "."):
            return m.group(1).count(".") + 1
    m = _ROMAN.match(line)
    if m and _title_like(m.group(2)):
        return 1
    m = _JA_NUMBERED.match(line)
    if m and len(line) <= 30 and not line.endswith(("。", "．")) and re.search(r"[\u3040-\u30ff\u4e00-\u9fff]", m.group(2)):
        return 1
    return 0


def _title_like(rest: str) -> bool:
    """Heading text after a number: starts with a capital or a CJK character, no sentence end,
    not mostly digits or symbols (table rows, equations)."""
    rest = rest.strip()
    if not rest or rest[-1] in ".;,:" and not rest.endswith("etc."):
        return False
    first = rest.split()[0]
    if not (any(c.isupper() for c in first) or "\u3040" <= first[0] <= "\u9fff"):
        return False
    letters = sum(c.isalpha() for c in rest)
    return letters >= 0.6 * len(rest.replace(" ", ""))
