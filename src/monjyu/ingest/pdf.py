"""PDF text fit for retrieval, read with PDFium (pypdfium2, Apache-2.0/BSD).

Why PDFium: on real arXiv papers it reads pages several times faster than pypdf (benchmarks
page), gives every character's box and font, and marks the hyphens it
finds at line ends. From characters we build lines (with boxes, font size, bold), then:
- rotated text (the arXiv stamp in the margin) is read for metadata and left out of the text;
- running headers and footers (a line repeated at the top or bottom of many pages, digits
  ignored), page numbers and line-number gutters are dropped;
- two-column pages whose content stream interleaves the columns are put back in column order;
- lines become paragraphs (vertical gaps, indents), headings (font size, bold, numbering),
  captions and reference entries (after a "References" heading);
- line-end hyphens are joined unless the document itself writes the word with a hyphen.
Page 1 gives the title (largest type above the abstract), the authors and the year.
"""

from __future__ import annotations

import ctypes
import re
import statistics
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from ..errors import IngestError, MonjyuError
from ..types import FIGURE, FRONT, REFERENCE, TABLE, TEXT
from .clean import hyphen_vocabulary, keeps_line_end_hyphen
from .references import DOI
from .sentences import FOOTNOTE_MARK
from .structure import Block, heading_level, is_caption, is_references_heading, line_separator, normalize

_SOFT_HYPHENS = {0x02, 0xFFFE, 0xAD}
_NO_SOFT_HYPHENS = dict.fromkeys(_SOFT_HYPHENS)  # str.translate: drop them
_BREAKS = _SOFT_HYPHENS | {0x0D, 0x0A}  # where a line may end
_SOFT_HYPHEN_CODES, _BREAK_CODES = sorted(_SOFT_HYPHENS), sorted(_BREAKS)  # for numpy's isin
# CM-Super's bold faces are SFBX, SFBI, SFBO and SFSX (sans), Computer Modern's cmbx, cmssbx and cmb.
_BOLD_NAME = re.compile(r"bold|black|heavy|semibold|demi|medi(?:um)?\b|-medi|cmbx|cmb10|cmssbx|sf(?:bx|bi|bo|sx)\d|\.b$|,bold",
                        re.IGNORECASE)
_PAGE_NUMBER = re.compile(r"^(?:page\s*)?[-–—(\[]?\s*(?:\d{1,4}|[ivxlc]{1,6})\s*[-–—)\]]?(?:\s*(?:of|/)\s*\d{1,4})?$",
                          re.IGNORECASE)
_ARXIV_STAMP = re.compile(r"arXiv:\s*(\d{4}\.\d{4,5}|[a-z\-]+(?:\.[A-Z]{2})?/\d{7})(v\d+)?", re.IGNORECASE)
_YEAR = re.compile(r"(?<!\d)(19[4-9]\d|20[0-4]\d)(?!\d)")
_VENUE = re.compile(r"conference|proceedings|journal|copyright|©|\(c\)|published|preprint|workshop|symposium|"
                    r"transactions|arxiv|iclr|neurips|nips|icml|acl|emnlp|naacl|cvpr|iccv|eccv|aaai|ijcai|sigir|"
                    r"kdd|www|vldb|sigmod|osdi|sosp|nsdi|usenix|vol\.|volume", re.IGNORECASE)
_AFFILIATION = re.compile(
    r"universit|institut|college|school|department|dept\.|faculty|laborator|\blab\b|labs\b|research|center|centre|"
    r"inc\.|corp|ltd|llc|gmbh|google|deepmind|openai|microsoft|facebook|\bmeta\b|amazon|apple|nvidia|ibm|baidu|"
    r"alibaba|tencent|brain|academy|hospital|foundation|email|e-mail|\bai\b|@|http|www\.|\bcorresponding|"
    r"equal contribution|\bwork done\b|\bstreet\b|\bavenue\b|\busa\b|\buk\b|\bchina\b|\bjapan\b|\bcanada\b|"
    r"大学|研究所|研究科|研究室|研究院|学部|学科|株式会社|センター|機構|学会|法人|病院", re.IGNORECASE)


@dataclass
class Line:
    page: int
    text: str
    x0: float
    y0: float
    x1: float
    y1: float
    size: float
    bold: bool
    rotated: bool = False
    hyphen: bool = False  # ended in a line-break hyphen
    base: float = 0.0  # baseline of the first character (y, points)
    bold_lead: str = ""  # the bold text a line in body type opens with ("Hardware Failures" + " We faced ...")

    @property
    def height(self) -> float:
        return max(self.y1 - self.y0, 1.0)


@dataclass
class PdfPaper:
    """What the PDF layout gives the loader: blocks for `assemble`, and page-1 metadata."""

    blocks: list[Block]
    title: str = ""
    authors: list[str] = field(default_factory=list)
    year: int | None = None
    arxiv_id: str = ""
    doi: str = ""
    abstract: str = ""
    pages: int = 0
    empty_pages: list[int] = field(default_factory=list)  # pages with no text layer
    metadata_title: str = ""
    metadata_year: int | None = None
    metadata_authors: list[str] = field(default_factory=list)  # the PDF's Author field, split into names


# ----------------------------------------------------------------------------- characters -> lines
def _font(raw, textpage, index: int, buf, flags) -> tuple[float, bool]:
    """Size (as printed: the font size times the text matrix's scale, which some producers use
    instead of the size) and boldness of one character. `buf` and `flags`: the page's buffers
    for the font's name and flags."""
    n = raw.FPDFText_GetFontInfo(textpage, index, buf, len(buf), ctypes.byref(flags))
    weight = raw.FPDFText_GetFontWeight(textpage, index)
    bold = _bold_name(buf.value if n else b"") or (weight is not None and weight >= 600) or bool(flags.value & (1 << 18))
    size = float(raw.FPDFText_GetFontSize(textpage, index))
    if size < 2:  # set at size 1 and scaled by the text matrix
        matrix = raw.FS_MATRIX()
        if raw.FPDFText_GetMatrix(textpage, index, ctypes.byref(matrix)):
            size *= abs(matrix.a * matrix.d - matrix.b * matrix.c) ** 0.5 or 1.0
    return size, bold


@lru_cache(maxsize=4096)
def _bold_name(name: bytes) -> bool:
    """Whether a font's name says it is bold (a page has a few fonts, read for every line)."""
    return bool(_BOLD_NAME.search(name.decode("latin-1", "replace")))


def _char(code: int) -> str:
    """The character of a code point, a space for a code that is none."""
    return chr(code) if code < 0x110000 and not 0xD800 <= code < 0xE000 else " "


def _char_codes(raw, textpage, n: int) -> tuple[list[int], str]:
    """Each character's code point, as FPDFText_GetUnicode gives it, and the page's characters as
    a string, one per code point. One FPDFText_GetText call (UTF-16) reads them all where each is
    one code unit; those it writes as U+FFFE (GetUnicode's 0 and 2, or U+FFFE itself) are asked
    again one by one, and a page with characters beyond the BMP is read one at a time."""
    buf = (ctypes.c_ushort * (n + 1))()
    if n and raw.FPDFText_GetText(textpage, 0, n, buf) == n + 1:
        try:
            text = bytes(buf)[:2 * n].decode("utf-16-le")
        except UnicodeDecodeError:  # a lone surrogate
            text = ""
        if len(text) == n:  # no surrogate pairs: one code unit per character
            codes, chars = list(map(ord, text)), list(text)
            i = text.find("\ufffe")
            while i >= 0:
                codes[i] = raw.FPDFText_GetUnicode(textpage, i)
                chars[i] = _char(codes[i])
                i = text.find("\ufffe", i + 1)
            return codes, "".join(chars)
    codes = [raw.FPDFText_GetUnicode(textpage, i) for i in range(n)]
    return codes, "".join(map(_char, codes))


def page_lines(page, number: int, split_at: tuple[float | None, ...] = (None,)) -> list[list[Line]]:
    """The page's lines, once for each entry of `split_at`, from one read of its characters: None,
    as PDFium breaks them; a number (page 1: author grids), also cut where the characters leave a
    horizontal gap wider than that many font sizes. Each line has its box and the font of three
    sampled characters (first, middle, last: a line is bold only if all three are). Pieces PDFium
    gives as lines of their own on one baseline (some producers break after every word) are
    joined again."""
    import pypdfium2.raw as raw

    textpage = page.get_textpage()
    try:
        h = textpage.raw
        n = raw.FPDFText_CountChars(h)
        codes, chars = _char_codes(raw, h, n)
        left, right, bottom, top = (ctypes.c_double() for _ in range(4))
        refs = tuple(map(ctypes.byref, (left, right, bottom, top)))  # made once: a box is read per line and more
        buf = ctypes.create_string_buffer(128)

        def box(i: int) -> tuple[float, float, float, float]:
            raw.FPDFText_GetCharBox(h, i, *refs)
            return left.value, bottom.value, right.value, top.value

        def wraps_after(i: int) -> bool:
            """A soft hyphen ends a row without a line break of its own: the next character is on
            another row, lower (the next line) or higher (a float's title at the column's top, set
            where the sentence breaks off: "... the amplification or con-" + "Figure 7: ...")."""
            if codes[i] not in _SOFT_HYPHENS or not 0 < i < n - 1:
                return False
            before, after = box(i - 1), box(i + 1)
            if after[3] < before[1]:
                return True
            # higher by more than a line, between two letters (a math font may print a glyph as 0x02),
            # in the same column (left of where the row ends) or in another with a capital letter: a
            # word's second half at the next column's top is in lower case
            return chars[i - 1].isalpha() and chars[i + 1].isalpha() and \
                after[1] > before[3] + 2 * (before[3] - before[1]) and (after[0] < before[2] or chars[i + 1].isupper())

        array = np.array(codes, dtype=np.int64)
        breaks = np.flatnonzero(np.isin(array, _BREAK_CODES)).tolist()
        ends = [i for i in breaks if codes[i] in (0x0D, 0x0A) or wraps_after(i)] + [n]
        printed = np.flatnonzero((array > 0x20) & ~np.isin(array, _SOFT_HYPHEN_CODES))
        return [_join_fragments(_lines(raw, h, number, codes, chars, ends, printed, box, buf, gap), gap or 1.5)
                for gap in split_at]
    finally:
        textpage.close()


def _lines(raw, h, number: int, codes: list[int], chars: str, ends: list[int], printed: np.ndarray, box, buf,
           gap: float | None) -> list[Line]:
    """The lines of a page's characters ending at `ends` (breaks and wrapping soft hyphens),
    each cut at gaps wider than `gap` font sizes when it is given. `printed`: the indices of the
    characters that print (not spaces, controls or soft hyphens), in order."""
    n = len(codes)
    left, bottom, flags = ctypes.c_double(), ctypes.c_double(), ctypes.c_int()
    lines: list[Line] = []
    start = 0
    first = 0  # the line's first printed character in `printed` (a line end never prints)
    for i, last in zip(ends, np.searchsorted(printed, ends).tolist()):
        pieces = [printed[first:last].tolist()]
        first = last
        if gap is not None and pieces[0]:
            pieces = _split_at_gaps(pieces[0], box, _font(raw, h, pieces[0][0], buf, flags)[0], gap)
        for k, idx in enumerate(pieces):
            if not idx:
                continue
            lo, hi = (idx[0], idx[-1] + 1) if len(pieces) > 1 else (start, i)
            text = chars[lo:hi].translate(_NO_SOFT_HYPHENS)
            hyphen = k == len(pieces) - 1 and any(codes[j] in _SOFT_HYPHENS for j in range(idx[-1] + 1, min(i + 1, n)))
            fonts = [_font(raw, h, j, buf, flags) for j in (idx[0], idx[len(idx) // 2], idx[-1])]
            (ax0, ay0, ax1, ay1), (bx0, by0, bx1, by1) = box(idx[0]), box(idx[-1])
            rotated = abs(raw.FPDFText_GetCharAngle(h, idx[len(idx) // 2])) > 0.1
            raw.FPDFText_GetCharOrigin(h, idx[0], ctypes.byref(left), ctypes.byref(bottom))
            size = sorted(f[0] for f in fonts)[1]  # the median of the three
            lead = ""
            if fonts[0][1] and not fonts[-1][1]:  # opens in bold, ends in body type: where does the bold end?
                plain = next((j for j in idx if not _font(raw, h, j, buf, flags)[1]), lo)
                lead = chars[lo:plain].translate(_NO_SOFT_HYPHENS)
            lines.append(Line(number, text, min(ax0, bx0), min(ay0, by0), max(ax1, bx1), max(ay1, by1),
                              size, all(f[1] for f in fonts), rotated, hyphen, bottom.value, lead))
        start = i + 1
    return lines


def _join_fragments(lines: list[Line], gap: float) -> list[Line]:
    """Consecutive pieces on one baseline, less than `gap` font sizes apart, become one line; a
    size the producer left degenerate (under 2 points: type 3 fonts scaled by their glyphs) is
    read from the line's height instead."""
    out: list[Line] = []
    for ln in lines:
        if ln.size < 2:
            ln.size = round((ln.y1 - ln.y0) / 0.75, 1)
        prev = out[-1] if out else None
        if prev is not None and not prev.rotated and not ln.rotated and abs(prev.base - ln.base) < 0.3 * max(prev.size, 1) \
                and -0.5 * prev.size < ln.x0 - prev.x1 < gap * max(prev.size, ln.size, 1) and not prev.hyphen:
            out[-1] = Line(prev.page, prev.text + line_separator(prev.text, ln.text) + ln.text, prev.x0, min(prev.y0, ln.y0), ln.x1, max(prev.y1, ln.y1),
                           max(prev.size, ln.size), prev.bold and ln.bold, False, ln.hyphen, prev.base,
                           prev.bold_lead or (prev.text if prev.bold and not ln.bold else ""))
            continue
        out.append(ln)
    return out


def _split_at_gaps(idx: list[int], box, size: float, gap: float = 1.5) -> list[list[int]]:
    """Cut a run of character indices where the next character starts more than `gap` font sizes
    to the right of the previous one's end (names set apart in an author line)."""
    out = [[idx[0]]]
    prev_right = box(idx[0])[2]
    for j in idx[1:]:
        x0, _, x1, _ = box(j)
        if x0 - prev_right > gap * max(size, 1.0):
            out.append([])
        out[-1].append(j)
        prev_right = x1
    return out


# ----------------------------------------------------------------------------- page cleanup
def _signature(text: str) -> str:
    return re.sub(r"\d+", "#", re.sub(r"\s+", " ", text.lower())).strip()


def drop_running_lines(pages: list[list[Line]], heights: list[float]) -> None:
    """Remove running headers/footers (same text, digits ignored, in the top or bottom 9% of at
    least 3 pages and a quarter of them) and bare page numbers near the page edges."""
    def edge(line: Line, h: float) -> bool:
        return line.y0 > 0.91 * h or line.y1 < 0.09 * h

    counts: Counter[str] = Counter()
    for lines, h in zip(pages, heights):
        counts.update({_signature(ln.text) for ln in lines if edge(ln, h)})
    repeated = {s for s, c in counts.items() if c >= 3 and c >= 0.25 * len(pages)}
    for k, (lines, h) in enumerate(zip(pages, heights)):
        pages[k] = [ln for ln in lines if not (edge(ln, h) and (_signature(ln.text) in repeated
                                                                 or _PAGE_NUMBER.match(ln.text.strip())))]


_LEADING_NUMBER = re.compile(r"^\s*(\d{1,4})(?:\s+|$)")


def drop_line_numbers(lines: list[Line]) -> list[Line]:
    """Review copies number their lines in a margin gutter. When at least 10 lines of a page
    start with (or are) an integer and those integers mostly run consecutively, strip them."""
    numbered = [(i, int(m.group(1))) for i, ln in enumerate(lines) if (m := _LEADING_NUMBER.match(ln.text))]
    if len(numbered) < 10:
        return lines
    values = sorted(v for _, v in numbered)
    steps = sum(1 for a, b in zip(values, values[1:]) if 1 <= b - a <= 2)
    if steps < 0.6 * (len(values) - 1):
        return lines
    out = []
    numbered_rows = {i for i, _ in numbered}
    for i, ln in enumerate(lines):
        if i in numbered_rows:
            rest = _LEADING_NUMBER.sub("", ln.text, count=1)
            if not rest.strip():
                continue
            ln = Line(ln.page, rest, ln.x0, ln.y0, ln.x1, ln.y1, ln.size, ln.bold, ln.rotated, ln.hyphen, ln.base,
                      ln.bold_lead if rest.startswith(ln.bold_lead) else "")
        out.append(ln)
    return out


def column_order(lines: list[Line], width: float) -> list[Line]:
    """Keep the content-stream order unless it jumps between the two columns of a page more than
    column order would; then read band by band (bands split by full-width lines), left column
    top to bottom, then right."""
    mid = width / 2
    side = ["L" if ln.x1 <= mid + 0.03 * width else "R" if ln.x0 >= mid - 0.03 * width else "S" for ln in lines]
    if side.count("L") < 5 or side.count("R") < 5:
        return lines
    seq = [s for s in side]
    jumps = sum(1 for a, b in zip(seq, seq[1:]) if a != b)
    spans = sum(1 for a, b in zip(seq, seq[1:]) if b == "S" and a != "S")
    if jumps <= 2 * spans + 4:
        return lines
    # Bands: full-width lines sorted top-down split the page into horizontal bands.
    order = sorted(range(len(lines)), key=lambda i: -lines[i].y1)
    out: list[Line] = []
    band: list[int] = []

    def flush() -> None:
        out.extend(lines[i] for i in sorted((i for i in band if side[i] == "L"), key=lambda i: -lines[i].y1))
        out.extend(lines[i] for i in sorted((i for i in band if side[i] == "R"), key=lambda i: -lines[i].y1))
        band.clear()

    for i in order:
        if side[i] == "S":
            flush()
            out.append(lines[i])
        else:
            band.append(i)
    flush()
    return out


# ----------------------------------------------------------------------------- lines -> blocks
def _body_size(pages: list[list[Line]]) -> float:
    sizes: Counter[float] = Counter()
    for lines in pages:
        for ln in lines:
            sizes[round(ln.size * 2) / 2] += len(ln.text)
    return sizes.most_common(1)[0][0] if sizes else 10.0


def _is_heading_line(ln: Line, body: float) -> int:
    """Heading level of a standalone line, from its numbering or name and its type."""
    text = ln.text.strip()
    styled = ln.bold or ln.size >= body + 0.9 or text.isupper()
    level = heading_level(text, styled)
    if level and styled and re.search(r"[A-Za-z]{3}|[\u3040-\u9fff]", text) and not re.search(r"[×=∑±≤≥→←+<>]", text):
        return level
    return 0


_NUMBER = re.compile(r"^(?:appendix\s+)?((?:\d{1,2}|[A-H])(?:\.\d{1,2}){0,3})\.?\s", re.IGNORECASE)


class HeadingNumbers:
    """Numbered headings must continue the sequence seen so far (1, 2, 2.1, 2.2, 3 ... then
    A, A.1, B): a bold "4 C $ C A B" inside a figure, or a table-of-contents line, does not."""

    def __init__(self) -> None:
        self.current: list[int] = []
        self.letters = False

    @staticmethod
    def _parse(text: str) -> tuple[bool, list[int]] | None:
        m = _NUMBER.match(text.strip())
        if not m:
            return None
        parts = m.group(1).split(".")
        letter = parts[0].isalpha()
        first = ord(parts[0].upper()) - ord("A") + 1 if letter else int(parts[0])
        return letter, [first] + [int(p) for p in parts[1:]]

    def accept(self, text: str) -> bool:
        parsed = self._parse(text)
        if parsed is None:
            return True  # unnumbered: judged by name elsewhere
        letter, nums = parsed
        if re.search(r"(\s\d{2,4}|\.\s?\.\s?\.\s*\d+)$", text.strip()) and len(nums) <= 2:
            return False  # "B Compute Usage 65": a table-of-contents line with its page number
        if letter != self.letters:  # numbering switches to appendix letters (or back) only at A / 1
            ok = nums[0] == 1
        else:
            cur = self.current
            depth = len(nums)
            if depth == 1:
                ok = not cur or cur[0] < nums[0] <= cur[0] + 2
            else:
                parent = nums[:-1]
                ok = (cur[:depth - 1] == parent and (len(cur) < depth or nums[-1] > cur[depth - 1])
                      and nums[-1] <= (cur[depth - 1] if len(cur) >= depth else 0) + 2) or \
                     (parent[0] in (cur[0] + 1 if cur else 1,) and all(n == 1 for n in nums[1:]))
        if ok:
            self.letters, self.current = letter, nums
        return ok


# A caption's own opening ("Table 1:", "Figure 2 |"): running text that names a table does not
# put a colon after its number.
_CAPTION_OPENING = re.compile(r"^(?:figure|fig\.|table|図|表)\s*[0-9IVX]+[a-z]?\s*[:|：]", re.IGNORECASE)


def _paragraph_break(para: list[Line], cur: Line, line_pitch: float = 0.0) -> bool:
    """Whether `cur` starts a new paragraph after the lines `para` (same column so far): a change
    of type, a blank line or a jump up, or a short last line followed by an indent or after a
    sentence end. Edges are the paragraph's own, so narrower blocks (an abstract) hold together.
    A blank line is a baseline gap well above the document's own line pitch (`line_pitch`, so a
    double-spaced manuscript is not one paragraph per line). Tiny lines (sub- and superscripts of
    formulas) and a word's second half never break a paragraph."""
    if len(cur.text.strip()) <= 4 or para[-1].hyphen and cur.text[:1].islower():  # a word split by a hyphen goes on
        return False
    if _CAPTION_OPENING.match(cur.text.strip()):  # "Table 1: ..." set where a sentence broke off
        return True
    prev = next((x for x in reversed(para) if len(x.text.strip()) > 4), para[-1])
    if cur.page != prev.page:
        return prev.text.rstrip()[-1:] in ".!?:。" and not cur.text[:1].islower()
    if abs(cur.size - prev.size) > 1.0 or cur.bold != prev.bold and len(cur.text) < 60:
        return True
    pitch = prev.base - cur.base  # baseline to baseline: about 1.2 font sizes within a paragraph
    blank = max(1.45 * max(prev.size, cur.size), 1.2 * line_pitch)
    if pitch > blank or pitch < -prev.size:  # a blank line, or a jump up (next column)
        return True
    context = [x for x in para[-4:] if len(x.text.strip()) > 4] + [cur]
    left = min(x.x0 for x in context)
    right = max(x.x1 for x in context)
    ends = prev.text.rstrip()[-1:] in ".!?:。"
    short = prev.x1 < right - 2.5 * prev.size
    indented = cur.x0 > left + 0.8 * cur.size and prev.x0 <= left + 1
    return (short and (indented or ends)) or (indented and ends and len(para) > 1)


def _join(lines: list[Line], vocabulary: set[str]) -> tuple[str, list[tuple[int, int, int, tuple]]]:
    """Join a paragraph's lines (NFKC-normalised), mending line-end hyphenation: 'exam-' + 'ple'
    becomes 'example' unless the hyphen is the word's (`keeps_line_end_hyphen`)."""
    text = ""
    spans = []
    for k, ln in enumerate(lines):
        piece = normalize(ln.text)
        if not piece:
            continue
        if text:
            prev_hyphen = lines[k - 1].hyphen or (text.endswith("-") and not text.endswith(" -"))
            if prev_hyphen and piece[:1].isalpha() and piece[:1].islower():
                text = _mend_hyphen(text, piece, vocabulary)
            elif lines[k - 1].hyphen:
                text += "-"  # PDFium marked a hyphen but the next line is not a word's continuation
            elif abs(lines[k - 1].size - ln.size) > 0.5:  # a title and the byline under it: two lines
                text += " "
            else:
                text += line_separator(text, piece)
        spans.append((len(text), len(text) + len(piece), ln.page, (round(ln.x0, 1), round(ln.y0, 1),
                                                                   round(ln.x1, 1), round(ln.y1, 1))))
        text += piece
    return text, spans


def _mend_hyphen(text: str, piece: str, vocabulary: set[str]) -> str:
    """`text`, which ends in a hyphen at a line's end, before `piece`: 'exam-' + 'ple' becomes
    'example' unless the hyphen is the word's (`keeps_line_end_hyphen`)."""
    text = text.rstrip("-")
    left = re.search(r"([\w\-]+)$", text)
    right = re.match(r"[\w]+", piece)
    keep = keeps_line_end_hyphen(left.group(1) if left else "", right.group(0) if right else "", vocabulary)
    return text + ("-" if keep else "")


def _reference_entries(lines: list[Line]) -> list[list[Line]]:
    """Split a reference list into entries: numbered ("[12]", "12.", "(12)"), else hanging indents
    (an entry's first line at its column's left edge, the rest indented), else lines that end a
    sentence followed by a capitalised one."""
    if not lines:
        return []
    numbered = re.compile(r"^\s*(?:\[\d{1,4}\]|\d{1,4}\.\s|\(\d{1,4}\))")
    edges: dict[int, list[float]] = {}
    for ln in lines:
        edges.setdefault(ln.page, []).append(ln.x0)

    def column_edge(ln: Line) -> float:  # the leftmost line start within 40 pt: the column's edge
        return min(x for x in edges[ln.page] if abs(x - ln.x0) < 40)

    if sum(1 for ln in lines if numbered.match(ln.text)) >= max(3, 0.1 * len(lines)):
        starts = [bool(numbered.match(ln.text)) for ln in lines]
    else:
        flush = [ln.x0 <= column_edge(ln) + 1.5 for ln in lines]
        if all(flush):
            starts = [k == 0 or (lines[k - 1].text.rstrip().endswith(".") and ln.text[:1].isupper())
                      for k, ln in enumerate(lines)]
        else:
            starts = [k == 0 or (flush[k] and (not flush[k - 1] or lines[k - 1].text.rstrip().endswith(".")))
                      for k in range(len(lines))]
    entries: list[list[Line]] = []
    for ln, start in zip(lines, starts):
        if start or not entries:
            entries.append([ln])
        else:
            entries[-1].append(ln)
    return entries


# ----------------------------------------------------------------------------- page 1 metadata
def _front_matter(lines: list[Line], body: float, page_height: float,
                  byline: list[Line] | None = None) -> tuple[str, list[str], int]:
    """Title (largest type in the top two thirds of page 1, its consecutive lines) and authors
    (the names among the lines between the title and the abstract; `byline` gives those lines
    cut at narrower gaps, where names sit apart on one line). Returns the title, the authors and
    how many leading lines of the page are front matter."""
    if not lines:
        return "", [], 0
    end = len(lines)
    for i, ln in enumerate(lines):
        text = ln.text.strip()
        if re.match(r"^(abstract|a b s t r a c t|summary|概要|要旨|keywords)\b", text, re.IGNORECASE) or \
                (heading_level(text) and re.match(r"^(1\.?|I\.)\s", text)):
            end = i
            break
    candidates = [i for i in range(end) if lines[i].y1 > page_height / 3 and _title_like(lines[i].text)
                  and not re.search(r"@|https?:|www\.", lines[i].text)
                  and not _ARXIV_STAMP.search(lines[i].text)]
    if not candidates:
        return "", [], min(end, len(lines))
    top_size = max(lines[i].size for i in candidates)
    if top_size < body + 1.0 and end == len(lines):
        return "", [], 0
    first = next(i for i in candidates if lines[i].size >= top_size - 0.5)
    last = first  # a title goes on over lines of large type (a subtitle may be a little smaller)
    while last + 1 < end and lines[last + 1].size >= max(body + 2.0, 0.75 * top_size) and \
            lines[last].y0 - lines[last + 1].y1 < 1.5 * lines[last + 1].size:
        last += 1
    byline_end = end
    if end == len(lines):  # no abstract or introduction marker: front matter ends at the first body line
        text_width = max(ln.x1 for ln in lines) - min(ln.x0 for ln in lines)
        byline_end = next((i for i in range(last + 1, len(lines)) if abs(lines[i].size - body) < 1 and
                           (len(lines[i].text) > 80 or lines[i].x1 - lines[i].x0 > 0.6 * text_width)), len(lines))
        end = byline_end if byline_end < len(lines) else last + 1
    title = " ".join(normalize(lines[i].text) for i in range(first, last + 1))
    title = re.sub(r"\s*[∗*†‡§¶]+\s*$", "", title).strip()
    below_title = min(lines[i].y0 for i in range(first, last + 1))
    above_end = lines[byline_end].y1 if byline_end < len(lines) else -1.0  # a cover page: names to its foot
    region = [ln for ln in (byline if byline is not None else lines[last + 1:end])
              if ln.y1 <= below_title + 1 and ln.y0 >= above_end - 1 and not ln.rotated]
    return title, _authors(region), end


_NOT_A_NAME = re.compile(
    r"\b(?:abstract|version|edition|thesis|monograph|dissertation|program|programme|graduate|technical|report|draft|"
    r"preprint|submitted|journal|press|proceedings|copyright|reprinted|corrections|vol|pp|section|computing|"
    r"january|february|march|april|may|june|july|august|september|october|november|december|"
    r"technolog\w*|systems|group|team|division|office|project|keywords|introduction)\b|lab\b", re.IGNORECASE)
# Between names: punctuation, "and", wide gaps, marks, affiliation numbers glued to a name
# ("Shoeybi12") or standing apart ("Shoeybi 1 2 Mostofa"), and what parentheses hold ("(UC Berkeley)").
_SEPARATORS = re.compile(r",|;|、|，|\band\b|&|·|\u2022|\s{2,}|[∗*†‡§¶⋆✝♠♣♥♦#]+|(?<=[^\W\d_])\d+(?:,\d+)*|"
                         r"(?<!\S)\d{1,2}(?:[\s,]+\d{1,2})*(?=\s+[^\W\d_]{2}|\s*$)|\([^)]*\)")
_MAIL_DOMAIN = re.compile(r"@([\w.-]+)")


def _title_like(text: str) -> bool:
    """Enough letters to be a title: three, or two Japanese or Chinese characters ("梅雨")."""
    letters = sum(c.isalpha() for c in text)
    return letters >= 3 or (letters >= 2 and re.search(r"[\u3040-\u30ff\u4e00-\u9fff]", text) is not None)


def _authors(lines: list[Line]) -> list[str]:
    """Every name of the byline in reading order (rows top down, left to right). A line naming an
    institution, an address, a date, an e-mail or a link is no name, and neither is a line set
    right under one in its column (the rest of an address: "Mountain View") or set smaller right
    under a name (its affiliation: "SUNY Stony Brook")."""
    rows: list[list[Line]] = []
    for ln in sorted(lines, key=lambda ln: -ln.base):
        if rows and rows[-1][0].base - ln.base < 0.5 * max(ln.size, rows[-1][0].size):
            rows[-1].append(ln)
        else:
            rows.append([ln])
    names: list[str] = []
    kinds: list[tuple[Line, str]] = []  # lines judged so far: "name" or "other"

    def right_under(ln: Line) -> tuple[Line, str] | None:
        above = [(p, k) for p, k in kinds if p.y0 > ln.y1 - 1 and p.y0 - ln.y1 < 1.2 * max(p.size, ln.size)
                 and min(p.x1, ln.x1) - max(p.x0, ln.x0) > 0]
        return min(above, key=lambda pk: pk[0].y0 - ln.y1) if above else None

    ordered = [ln for row in rows for ln in sorted(row, key=lambda ln: ln.x0)]
    pieces_of = [_byline_pieces(normalize(ln.text)) for ln in ordered]
    # An affiliation, not a name: a piece set twice ("UC Berkeley" under two names), or one that
    # spells an e-mail domain of the byline ("Hugging Face", "@huggingface.co").
    seen = Counter(p.lower() for ln, pieces in zip(ordered, pieces_of) if not _names_no_one(normalize(ln.text))
                   for p in pieces)
    domains = {label for ln in ordered for domain in _MAIL_DOMAIN.findall(ln.text)
               for label in domain.lower().split(".") if len(label) > 3}
    for ln, pieces in zip(ordered, pieces_of):
        text = normalize(ln.text)
        under = right_under(ln)
        other = _names_no_one(text) or \
            (under is not None and under[1] == "other" and abs(under[0].size - ln.size) < 0.5) or \
            (under is not None and under[1] == "name" and ln.size < under[0].size - 0.7)
        kinds.append((ln, "other" if other else "name"))
        if other:
            continue
        japanese = bool(pieces) and all(map(_is_japanese_name, pieces))  # a line of names only, or no names
        for piece in pieces:
            if seen[piece.lower()] > 1 or re.sub(r"\W", "", piece.lower()) in domains:
                continue
            if (_is_name(piece) or japanese) and piece not in names:
                names.append(piece)
    return names


def _names_no_one(text: str) -> bool:
    """A byline line that is an institution, an address, a date or an e-mail (what parentheses
    hold aside: "Dan Hendrycks (UC Berkeley)")."""
    text = re.sub(r"\([^)]*\)", " ", text)
    return bool(_AFFILIATION.search(text) or re.search(r"\d{3,}|@", text))


def _byline_pieces(text: str) -> list[str]:
    """A byline line cut into the names it may hold, marks and affiliation numbers gone."""
    pieces = [re.sub(r"^[\d\s,.]+|[\d\s,]+$|[´`¨ˇ˜ˆ¯˘˙˚¸]|\s[\u0300-\u036f]", "", piece or "").strip()
              for piece in _SEPARATORS.split(re.sub(r"^\s*by\s+", "", text, flags=re.IGNORECASE))]
    return [p for p in pieces if p]


def _is_japanese_name(piece: str) -> bool:
    """A Japanese (or Chinese) name as bylines print it: two to six kanji or kana, the family and
    given names often a space apart ("山田 太郎")."""
    return bool(re.fullmatch(r"[\u3040-\u30ff\u4e00-\u9fff々]{1,4}(?:[ \u3000][\u3040-\u30ff\u4e00-\u9fff々]{1,4})?", piece)) \
        and 2 <= len(piece.replace(" ", "").replace("\u3000", "")) <= 6


def _is_name(piece: str) -> bool:
    """Two to five words, each capitalised (any script's capitals), an initial or a particle; no
    digits, no institution or document word."""
    tokens = piece.split()
    if not 2 <= len(tokens) <= 5 or _NOT_A_NAME.search(piece) or _AFFILIATION.search(piece):
        return False
    capitals = 0
    for t in tokens:
        if re.fullmatch(r"[A-Z]\.?(?:-[A-Z]\.?)?", t):
            capitals += 1
        elif t[0].isupper() and re.fullmatch(r"[^\W\d_][\w'’\-]*\.?", t) and not (t.isupper() and len(t) > 12):
            capitals += 1
        elif t.lower() not in ("van", "von", "der", "den", "de", "del", "della", "di", "da", "du", "la", "le", "bin",
                               "dos", "das", "y", "ter"):
            return False
    return capitals >= 2


def _year(arxiv_id: str, page1: list[Line]) -> int | None:
    if re.match(r"^\d{4}\.", arxiv_id):
        return 2000 + int(arxiv_id[:2])
    if "/" in arxiv_id:
        yy = int(arxiv_id.split("/")[1][:2])
        return (1900 if yy > 90 else 2000) + yy
    for ln in page1:
        if _VENUE.search(ln.text):
            m = _YEAR.search(ln.text)
            if m:
                return int(m.group(1))
    return None


# ----------------------------------------------------------------------------- the whole file
def read_pdf(name: str, data: bytes) -> PdfPaper:
    import pypdfium2 as pdfium

    try:
        pdf = pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        reason = str(exc)
        if "password" in reason.lower():
            raise IngestError(name, "PDF is encrypted with a password; decrypt it first") from exc
        raise IngestError(name, f"corrupt or unreadable PDF ({reason})") from exc
    try:
        meta = pdf.get_metadata_dict(skip_empty=True)
        pages: list[list[Line]] = []
        byline: list[Line] | None = None
        widths, heights = [], []
        empty = []
        for number in range(1, len(pdf) + 1):
            page = pdf[number - 1]
            try:
                w, h = page.get_size()
                if number == 1:  # names one space-and-a-bit apart: cut finer for the byline
                    lines, byline = page_lines(page, number, (1.5, 0.8))
                else:
                    [lines] = page_lines(page, number)
            finally:
                page.close()
            if not any(ln.text.strip() for ln in lines):
                empty.append(number)
            pages.append(lines)
            widths.append(w)
            heights.append(h)
    finally:
        pdf.close()
    paper = PdfPaper(blocks=[], pages=len(pages), empty_pages=empty,
                     metadata_title=str(meta.get("Title", "")).strip())
    paper.metadata_authors = [n for n in (normalize(a) for a in re.split(r";|,|\band\b|&|、", str(meta.get("Author", ""))))
                              if n and (_is_name(n) or _is_japanese_name(n))]
    m = re.match(r"D:(\d{4})", str(meta.get("CreationDate", "")))
    paper.metadata_year = int(m.group(1)) if m else None
    stamp = " ".join(ln.text for lines in pages[:1] for ln in lines if ln.rotated)
    if m_ax := _ARXIV_STAMP.search(stamp) or (_ARXIV_STAMP.search(" ".join(ln.text for ln in pages[0])) if pages else None):
        paper.arxiv_id = m_ax.group(1)
    pages = [[ln for ln in lines if not ln.rotated] for lines in pages]
    drop_running_lines(pages, heights)
    pages = [column_order(drop_line_numbers(lines), w) for lines, w in zip(pages, widths)]
    page1_text = " ".join(ln.text for ln in pages[0]) if pages else ""
    if m_doi := DOI.search(page1_text) or DOI.search(str(meta.get("Subject", ""))):
        paper.doi = m_doi.group(1)
    body = _body_size(pages)
    front_end = 0
    if pages:
        paper.title, paper.authors, front_end = _front_matter(pages[0], body, heights[0], byline)
    paper.year = _year(paper.arxiv_id, pages[0] if pages else [])
    paper.blocks = _blocks(pages, body, front_end)
    for i, b in enumerate(paper.blocks):
        if b.kind == "heading" and not b.run_in and re.match(r"^(abstract|summary|概要|要旨)\b", b.text, re.IGNORECASE):
            paper.abstract = next((x.text for x in paper.blocks[i + 1:i + 3] if x.kind == TEXT), "")
            break
        if b.kind == TEXT and re.match(r"^abstract\b[\s.:—-]*", b.text, re.IGNORECASE):
            paper.abstract = re.sub(r"^abstract\b[\s.:—-]*", "", b.text, flags=re.IGNORECASE)
            break
    return paper


def _line_pitch(pages: list[list[Line]], body: float) -> float:
    """The usual baseline-to-baseline distance of consecutive body-text lines (0 when unknown):
    about 1.2 body sizes single-spaced, 2.4 double-spaced."""
    gaps = [a.base - b.base for lines in pages for a, b in zip(lines, lines[1:])
            if abs(a.size - body) < 0.5 and abs(b.size - body) < 0.5 and 0 < a.base - b.base < 4 * body]
    return float(statistics.median(gaps)) if len(gaps) >= 5 else 0.0


def _blocks(pages: list[list[Line]], body: float, front_end: int) -> list[Block]:
    vocabulary = hyphen_vocabulary(normalize(ln.text) for lines in pages for ln in lines)
    line_pitch = _line_pitch(pages, body)
    blocks: list[Block] = []
    para: list[Line] = []
    numbers = HeadingNumbers()
    in_refs = False
    ref_lines: list[Line] = []
    run_in: list[str] = []  # the bold label the paragraph being read opens with, if any

    def flush(kind: str = TEXT) -> None:
        if para:
            text, spans = _join(para, vocabulary)
            if kind == TEXT and is_figure_text(text, para):
                kind = FIGURE  # a table's or a figure's: filed under its caption below
            blocks.append(Block(text, kind, page=para[0].page, lines=spans, run_in="".join(run_in)))
            para.clear()
        run_in.clear()

    def flush_refs() -> None:
        for entry in _reference_entries(ref_lines):
            text, spans = _join(entry, vocabulary)
            blocks.append(Block(text, REFERENCE, page=entry[0].page, lines=spans))
        ref_lines.clear()

    for k, lines in enumerate(pages):
        if not lines:
            continue
        skip = 0
        for i, ln in enumerate(lines):
            if skip:
                skip -= 1
                continue
            if k == 0 and i < front_end:
                para.append(ln)
                if i == front_end - 1:
                    flush(FRONT)
                continue
            if not in_refs and (end := _foot_end(lines, i, body)):
                # a paragraph they cut is joined to its rest at the next column or page below
                flush()
                blocks.extend(_footnotes(lines[i:end], vocabulary, line_pitch))
                skip = end - i - 1
                continue
            level = _is_heading_line(ln, body) if len(ln.text.strip()) <= 90 else 0
            if level and numbers.accept(normalize(ln.text)):
                flush()
                if in_refs and not is_references_heading(ln.text):
                    flush_refs()
                    in_refs = False
                parts = [ln]  # a long heading wraps onto a line of the same type that is no heading itself
                while i + len(parts) < len(lines):
                    nxt = lines[i + len(parts)]
                    if abs(nxt.size - ln.size) > 0.3 or nxt.bold != ln.bold or len(nxt.text) > 60 or \
                            parts[-1].y0 - nxt.y1 > ln.size or _is_heading_line(nxt, body) or not ln.bold and ln.size < body + 0.9:
                        break
                    parts.append(nxt)
                skip = len(parts) - 1
                heading, spans = _join(parts, vocabulary)
                blocks.append(Block(heading, "heading", level, page=ln.page, lines=spans))
                in_refs = in_refs or is_references_heading(heading)
                continue
            if in_refs:
                ref_lines.append(ln)
                continue
            if para and _paragraph_break(para, ln, line_pitch):
                flush()
            if (label := _run_in_heading(ln, para)):
                flush()
                run_in.append(label)
            para.append(ln)
    flush()
    flush_refs()
    # split after the paragraphs cut by floats and column turns are joined again, which reads the
    # whole paragraph ("Identity vs. Projection Shortcuts. We have shown that" + "parameter-free, ..."),
    # and after figure and table text is filed (a bold label in a figure's box is no heading)
    return _split_run_in_headings(_file_figures(_rejoin_cut_paragraphs(blocks, vocabulary)))


# A footnote opens with its mark: a symbol before a word ("∗Equal contribution", "∗. contributed
# equally"; not a formula's "x∗ i"), or a number set against its first word ("2This hypothesis ...",
# "1https://github.com/..."); a mark may stand on a line of its own above its note.
_FOOTNOTE_OPENING = re.compile(r"^(?:[∗*†‡§¶][\s.]*(?=[^\W\d_]{2})|\d{1,2}(?=[^\W\d_]{2}|https?:)|(?:[∗*†‡§¶]|\d{1,2})$)")
_FOOTNOTE_MARK_ALONE = re.compile(r"^(?:[∗*†‡§¶]|\d{1,2})\.?$")  # a mark set on a line of its own, above its note


def _foot_end(lines: list[Line], i: int, body: float) -> int:
    """Where the footnotes that `lines[i]` opens end (0: it opens none): a line in smaller type than
    the body, opening with a footnote's mark, from which every line to the foot of its column (the
    page's end, or a jump up to the next column) is small type: the footnotes and any notice under
    them ("31st Conference on Neural Information Processing Systems ...")."""
    first = lines[i]
    if first.size > body - 0.5 or not _FOOTNOTE_OPENING.match(first.text.strip()) or is_caption(first.text):
        return 0
    end = i
    while end < len(lines) and lines[end].page == first.page and lines[end].y0 <= first.y1:
        if lines[end].size > body - 0.5:
            if _PAGE_NUMBER.match(lines[end].text.strip()):
                break  # the page's number under them, where no running footer took it away
            return 0  # body type below it: not the foot of the column
        end += 1
    words = re.findall(r"[^\W\d_]{2,}", " ".join(ln.text for ln in lines[i:end]))
    return end if len(words) >= 2 else 0  # not a formula's last line ("2mv")


def _footnotes(lines: list[Line], vocabulary: set[str], line_pitch: float) -> list[Block]:
    """The footnotes (and notices) of a page's or column's foot, a block each: a line opening with a
    mark, or after a paragraph break, opens the next."""
    groups: list[list[Line]] = []
    for ln in lines:
        mark_alone = bool(groups) and len(groups[-1]) == 1 and _FOOTNOTE_MARK_ALONE.match(groups[-1][0].text.strip())
        if not groups or not mark_alone and (_FOOTNOTE_OPENING.match(ln.text.strip())
                                             or _paragraph_break(groups[-1], ln, line_pitch)):
            groups.append([])
        groups[-1].append(ln)
    out = []
    for group in groups:
        text, spans = _join(group, vocabulary)
        out.append(Block(text, TEXT, page=group[0].page, lines=spans, foot=True))
    return out


# A run-in heading ("**Hardware Failures** We faced ...", LaTeX's \paragraph) is below every numbered one
# (structure.heading_level gives "1.2.3.4" level 4): it holds its paragraph, and the ones after it,
# until the next heading.
RUN_IN_LEVEL = 5
_SUBSECTION_NUMBER = re.compile(r"^\d{1,2}(?:\.\d{1,2}){1,3}\.?\s")  # "4.3. Hybrid security": level 2
_RUN_IN_STOP = re.compile(r"\s*[.:：—–]\s*")  # a label's stop, where the bold type left it out
# A label that ends on a word that leads into more ("Communication Volume with" + a formula in body
# type) is bold text cut short, not a heading.
_OPEN_ENDED = re.compile(r"\b(?:a|an|the|of|with|and|or|to|in|for|on|by|from|at|as|via|is|are|that|which|where)$",
                         re.IGNORECASE)
# Bold labels that open a statement, a step or an algorithm's lines, not a part of the text.
_NOT_RUN_IN = re.compile(r"^(?:theorem|lemma|proposition|corollary|claim|conjecture|definition|proof|remark|example|"
                         r"assumption|algorithm|require|ensure|input|output|step)\b", re.IGNORECASE)


def _run_in_heading(ln: Line, para: list[Line]) -> str:
    """The bold label `ln` opens a paragraph with, or "": at a paragraph's start (or after a
    sentence's end, not in a caption), a bold label in body-type text that reads as a label,
    followed by text that reads as a sentence."""
    lead = ln.bold_lead
    if not lead or not ln.text.startswith(lead) or is_caption(normalize(ln.text)) or para and (
            para[-1].text.rstrip()[-1:] not in ".!?:。" or is_caption(normalize(para[0].text))):
        return ""
    label, rest = lead.strip(), ln.text[len(lead):]
    stop = label[-1:] in ".:"
    if m := _RUN_IN_STOP.match(rest):  # the label's stop set in body type: "Selection: Each ..."
        rest, stop = rest[m.end():], True
    label, rest = label.rstrip(".:").strip(), rest.lstrip()
    return lead if _reads_as_label(label) and _reads_as_text(rest, stop) else ""


def _reads_as_label(label: str) -> bool:
    """Up to ten words that open with a capital letter or a number: not a theorem's or an
    algorithm's label, a formula's symbols, a variable ("The map f") or a word that leads into
    more ("Communication Volume with")."""
    words = label.split()
    return (1 <= len(words) <= 10 and len(label) <= 80 and (label[0].isupper() or label[0].isdigit())
            and label[-1] not in ",;-(" and bool(re.search(r"[A-Za-z]{3}|[\u3040-\u9fff]{2}", label))
            and not _NOT_RUN_IN.match(label) and not _OPEN_ENDED.search(label)
            and label.count("(") == label.count(")")
            and not any(c in "[]{}|" or unicodedata.category(c) == "Sm" for c in label)
            and not (len(words) >= 3 and re.search(r"\s[^\W\d_]$", label)))


def _reads_as_text(rest: str, stop: bool) -> bool:
    """What follows a label goes on as a sentence: a capital letter, or after the label's stop a
    letter, a digit, a bracket or a quote, and a word. A bold word that begins a sentence goes on
    in lower case ("**BERT** is ..."); a formula in symbols (": R", ":= max", ". ✷")."""
    if not re.search(r"[^\W\d_]{2}", rest):
        return False
    first = rest[0]
    return first.isupper() or "\u3040" <= first <= "\u9fff" or stop and (first.isalnum() or first in "(“\"")


def _split_run_in_headings(blocks: list[Block]) -> list[Block]:
    """Before each paragraph that opens with a run-in heading (`Block.run_in`), that heading: it
    opens a section, and its words stay where the author set them, at the paragraph's start
    ("Squared ReLU: The most effective modification ..." reads as one sentence)."""
    out: list[Block] = []
    for b in blocks:
        label = normalize(b.run_in)
        if b.kind == TEXT and label and b.text.startswith(label):
            heading = label.rstrip(".:：—– ")
            level = heading_level(heading) if _SUBSECTION_NUMBER.match(heading) else RUN_IN_LEVEL
            out.append(Block(heading, "heading", level, page=b.page, run_in=heading))
        out.append(b)
    return out


def _rejoin_cut_paragraphs(blocks: list[Block], vocabulary: set[str]) -> list[Block]:
    """A paragraph cut mid-sentence, joined again: by a float set where the sentence broke off (a
    caption with its figure or table text, at the top of the next page or column), or by the turn
    to the next column or page itself. The second part opens with a word in lower case on the same
    page or the next, both read as prose where they meet, and the floats follow the whole paragraph.
    A formula between a sentence and its "where ..." has no caption and no turn: it stays where it is."""
    out: list[Block] = []
    for b in blocks:
        if b.kind == TEXT and not b.foot and _continues_a_sentence(b.text):
            j = len(out) - 1
            while j >= 0 and _set_apart(out[j]):
                j -= 1
            between = out[j + 1:]
            a = out[j] if j >= 0 else None
            if a is not None and a.kind == TEXT and _breaks_off(a.text) and (b.page or 0) - (a.page or 0) <= 1 and \
                    (any(is_caption(x.text) for x in between) or _turns_to(a, b)):
                out[j] = _joined(a, b, vocabulary)
                continue
        out.append(b)
    return out


def _set_apart(block: Block) -> bool:
    """A float's part: a caption, figure or table text, or a line of it that reads as no prose (a
    table's header row) or is too short for a paragraph and no sentence (an axis's title); or a
    footnote, set at a page's foot between a sentence that goes on at the next page and its rest."""
    words = block.text.split()
    short_label = len(words) < 8 and not block.text.rstrip().endswith((".", "!", "?"))
    return block.kind == FIGURE or block.kind == TEXT and (block.foot or
        is_caption(block.text) or not _prose(words) or short_label or bool(FOOTNOTE_MARK.match(block.text)))


def _prose(tokens: list[str]) -> bool:
    """Words, some of them function words ("the", "of", "we" ...): not a table's cells or a formula."""
    words = [t.strip(".,;:()[]\"'").lower() for t in tokens]
    return len(words) >= 4 and sum(w.isalpha() for w in words) >= 0.6 * len(words) and \
        sum(w in _FUNCTION_WORDS for w in words) >= 0.15 * len(words)


def _continues_a_sentence(text: str) -> bool:
    """Opens with a word in lower case ("tokens in the sequence. To this end ..."), or a number and
    one ("34-layer net with ..."), reads as prose and is no label (8 words or a sentence's end)."""
    words = text.split()
    return bool(re.match(r"(?:\d[\w.-]*\s+)?[a-z][a-z-]+\b", text)) and _prose(words[:12]) and \
        (len(words) >= 8 or text.rstrip().endswith((".", "!", "?")))


def _breaks_off(text: str) -> bool:
    """A paragraph (8 words or more: not a label of a figure; not a footnote, whose mark is glued to
    its first word: "2Note that ...") that ends inside a sentence: a word, a number or a comma last
    (not a colon before a formula), a word in what follows its last full stop (not a figure's tick
    after it), and prose there."""
    tail = text.rstrip()
    if len(tail.split()) < 8 or FOOTNOTE_MARK.match(tail) or is_caption(tail):
        return False
    last_sentence = re.split(r"[.!?]\s", tail)[-1]
    return (tail[-1].isalnum() or tail[-1] in ",-") and bool(re.search(r"[^\W\d_]{2}", last_sentence)) and \
        _prose(tail.split()[-12:])


def _turns_to(a: Block, b: Block) -> bool:
    """`b` goes on at the next page or column: its first line on a later page than `a`'s last, or
    its foot above that line's (a line's box may reach far up; a subscript's foot sits low)."""
    if not a.lines or not b.lines:
        return False
    (_, _, page_a, box_a), (_, _, page_b, box_b) = a.lines[-1], b.lines[0]
    return page_b > page_a or page_b == page_a and box_b[1] > box_a[1]


def _joined(a: Block, b: Block, vocabulary: set[str]) -> Block:
    """`a` with `b` after it, as `_join` joins two lines: a word hyphenated at the break mended
    unless the hyphen is the word's; `b`'s line boxes after `a`'s."""
    text = a.text.rstrip()
    if text.endswith("-") and not text.endswith(" -"):  # a word hyphenated at the break
        text, sep = _mend_hyphen(text, b.text, vocabulary), ""
    elif _split_word(text, b.text, vocabulary):
        sep = ""
    else:
        sep = line_separator(text, b.text)
    shift = len(text) + len(sep)
    lines = [(min(s, len(text)), min(e, len(text)), p, box) for s, e, p, box in a.lines] + \
        [(s + shift, e + shift, p, box) for s, e, p, box in b.lines]
    return Block(text + sep + b.text, a.kind, a.level, a.label, a.page, lines, a.run_in)


def _split_word(text: str, after: str, vocabulary: set[str]) -> bool:
    """`text` breaks off in a word that `after` finishes, its hyphen not printed (a soft hyphen where
    the line turned to a float's title): "... the amplification or con" + "trast stretching ...",
    the two parts, of three letters or more, a word the document writes whole."""
    left, right = re.search(r"[^\W\d_]{3,}$", text), re.match(r"[^\W\d_]{3,}", after)
    return bool(left and right) and (left.group(0) + right.group(0)).lower() in vocabulary


_FUNCTION_WORDS = frozenset(
    "an the of and or in on at to for with by from as is are was were be been that this these those it its we our "
    "they their which who than then not no can will may also but if into over under between each per such when while "
    "has have had do does via".split())
_WORD_RUN = re.compile(r"[^\W\d_]{3}")


def _numberish(token: str) -> bool:
    """A number as tables and plots print them: digits, maybe with a unit or label ("17.3K",
    "8b", "64-d", "0.2e-4", "(R50x1)", "S5"), and no word in it."""
    return any(map(str.isdigit, token)) and not _WORD_RUN.search(token)
_CJK_TEXT = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]")


def is_figure_text(text: str, lines: list[Line]) -> bool:
    """Text set inside a figure or a table rather than prose: almost no function words ("the",
    "of", "we" ...), and mostly numbers, or short scattered lines (ticks, legends, cells).
    Japanese and Chinese text is left as it is (no function-word list for it here)."""
    tokens = text.split()
    if not tokens or is_caption(text) or _CJK_TEXT.search(text):
        return False
    words = [t.strip(".,;:()[]\"'") for t in tokens]
    function = sum(w.lower() in _FUNCTION_WORDS and not (w.isupper() and len(w) > 1) for w in words) / len(tokens)
    if function >= 0.25:  # prose (most text): no need to count its numbers
        return False
    numeric = sum(map(_numberish, tokens)) / len(tokens)
    if numeric >= 0.5:  # a row of numbers with its label ("Number of Shots 0% 20% ...")
        return True
    if function >= 0.1:
        return False
    short_lines = len(lines) >= 2 and statistics.mean(len(ln.text) for ln in lines) < 40
    return numeric >= 0.3 or (short_lines and len(tokens) >= 4)


def _file_figures(blocks: list[Block]) -> list[Block]:
    """Figure and table text filed under its caption (the nearest caption of its page) as a
    `figure` or `table` block; without one, a block of numbers is a table. An unnumbered
    "heading" right before such text is one of its labels ("Model" in a diagram)."""
    captions = [(i, b) for i, b in enumerate(blocks) if b.kind == TEXT and is_caption(b.text)]
    for i in range(1, len(blocks) - 1):  # a header row between rows of a table ("Model PPL F1 ...")
        b = blocks[i]
        if b.kind == TEXT and blocks[i - 1].kind == FIGURE and blocks[i + 1].kind == FIGURE and \
                len(b.text.split()) < 15 and not is_caption(b.text) and \
                not any(w.lower() in _FUNCTION_WORDS for w in b.text.split()):
            b.kind = FIGURE
    out: list[Block] = []
    for i, b in enumerate(blocks):
        if b.kind == "heading" and not re.match(r"^\S*\d", b.text) and i + 1 < len(blocks) and \
                blocks[i + 1].kind == FIGURE and blocks[i + 1].page == b.page:
            b = Block(b.text, FIGURE, page=b.page, lines=b.lines)
        if b.kind == FIGURE:
            near = min((c for c in captions if c[1].page == b.page), key=lambda c: abs(c[0] - i), default=None)
            label = normalize(near[1].text)[:120] if near else ""
            is_table = label.lower().startswith(("table", "表")) if near else \
                sum(map(_numberish, b.text.split())) >= 0.5 * max(len(b.text.split()), 1)
            b = Block(b.text, TABLE if is_table else FIGURE, page=b.page, lines=b.lines, label=label)
        out.append(b)
    return out


def render_page(path, page: int, boxes: list, scale: float = 1.5) -> bytes:
    """PNG of page `page` (1-based, as units cite it) with `boxes` ([x0, y0, x1, y1] in PDF points,
    origin bottom-left: the stored line boxes) marked: a citation shown where it sits."""
    import io

    import pypdfium2 as pdfium
    from PIL import Image, ImageDraw

    if not 0.25 <= scale <= 4:
        raise MonjyuError(f"page scale {scale} is outside 0.25-4")
    pdf = pdfium.PdfDocument(str(path))
    try:
        if not 1 <= page <= len(pdf):
            raise MonjyuError(f"{path} has {len(pdf)} pages; page {page} does not exist")
        pdf_page = pdf[page - 1]
        left, _, _, top = pdf_page.get_bbox()
        image = pdf_page.render(scale=scale).to_pil().convert("RGBA")
    finally:
        pdf.close()
    overlay = Image.new("RGBA", image.size, (0, 0, 0, 0))
    draw = ImageDraw.Draw(overlay)
    for x0, y0, x1, y1 in boxes:
        draw.rectangle([(x0 - left) * scale - 2, (top - y1) * scale - 2, (x1 - left) * scale + 2, (top - y0) * scale + 2],
                       fill=(255, 210, 0, 80), outline=(220, 140, 0, 255), width=2)
    out = io.BytesIO()
    Image.alpha_composite(image, overlay).convert("RGB").save(out, "PNG")
    return out.getvalue()
