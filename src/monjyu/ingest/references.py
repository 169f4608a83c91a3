"""A paper's reference list read into entries, and the in-text citations that point into it.

Works on the stored document text and its sections (any format: the PDF layout, Markdown, HTML,
DOCX and plain text loaders all mark the reference list as `reference` sections), so every
loader gets the same parse. An entry's fields come from the common bibliography styles:

- given names first, fields ended by periods (NeurIPS, ICML, CVPR): "A. Vaswani, N. Shazeer,
  and ... Attention is all you need. In NIPS, 2017."
- the year after the authors (ACL, APA): "Devlin, J., ... (2019). BERT: ... In NAACL."
- surnames first with initials (Nature, APA): "Silver, D. et al. Mastering the game ... (2016)."
- the title in quotes (IEEE): 'K. He, ..., and J. Sun, "Deep residual learning ...," in CVPR'.

In-text citations are numbered ("[3]", "[3-5]", "[3, 7]") or author-year ("(Devlin et al.,
2019; Liu et al., 2019a)", "Devlin et al. (2019)"); each is linked to the entries it names.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import asdict, dataclass, field

from ..types import REFERENCE, Section

DOI = re.compile(r"\b(10\.\d{4,9}/[^\s\"<>]+[^\s\"<>.,;)\]])")
ARXIV = re.compile(r"(?:arxiv[:.\s]*(?:org/(?:abs|pdf)/)?|abs/)\s?(\d{4}\.\d{4,5}|[a-z\-]+(?:\.[A-Z]{2})?/\d{7})(?:v\d+)?",
                   re.IGNORECASE)
_URL = re.compile(r"(?:https?://|www\.)\S+(?:\s(?=\S*/)\S+)*", re.IGNORECASE)
_YEAR = re.compile(r"(?<![\d.:/\-])((?:1[6-9]|20)\d{2})([a-z]?)(?![\d])")
_LABEL = re.compile(r"^\s*(?:\[(\d{1,4})\]|\((\d{1,3})\)|(\d{1,3})\.(?=\s)|\[([A-Za-z+]{1,8}\d{2}[a-z]?)\])\s*")
_QUOTED = re.compile(r"[\"“”](.{8,}?)[,.]?[\"“”]")
_BARE_YEAR = re.compile(r"^\(?((?:1[6-9]|20)\d{2})([a-z]?)\)?[.,]?$")
_INITIALS = re.compile(r"^(?:[A-Z]\.?-?){1,3}$|^[A-Z][a-z]?\.-?[A-Z][a-z]?$|^[A-Z]\.-[a-z]$")  # "J", "G.E", "M.-W", "W.-t"
_AFTER_TITLE = ("arxiv", "pages", "corr", "url", "http", "preprint", "proceedings", "in")  # what follows a title ending in "?"
_PARTICLES = {"van", "von", "der", "den", "de", "del", "della", "di", "da", "du", "la", "le", "dos", "das", "ter", "bin", "al"}
_SURNAME_FIRST = re.compile(r"^[A-Z][\w'’\-]+(?:\s(?:[a-z]{1,4}\s)?[A-Z][\w'’\-]+)?(?:\sJr\.?)?,\s(?:[A-Z][a-z]?\.\s?-?)+")


@dataclass
class Reference:
    """One entry of a reference list: where it sits in the document text and what it names."""

    index: int  # 1-based position in the list
    start: int
    end: int
    text: str
    label: str = ""  # "12" for "[12]", "DCLT19" for "[DCLT19]", "" when unlabelled
    authors: list[str] = field(default_factory=list)
    title: str = ""
    year: int | None = None
    year_suffix: str = ""  # the "a" of "2019a"
    venue: str = ""
    doi: str = ""
    arxiv_id: str = ""
    url: str = ""

    @property
    def first_surname(self) -> str:
        return surname(self.authors[0]) if self.authors else ""

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class CitationMark:
    """An in-text citation: its span in the document text and the entries (indices) it names."""

    start: int
    end: int
    entries: list[int]

    def to_dict(self) -> dict:
        return asdict(self)


def surname(name: str) -> str:
    """The family name of "Given Surname" ("Aäron van den Oord" -> "van den Oord")."""
    tokens = name.replace(",", " ").split()
    if not tokens:
        return ""
    k = len(tokens) - 1
    while k > 0 and tokens[k - 1].lower() in _PARTICLES:
        k -= 1
    if k > 0 and tokens[-1].rstrip(".") in ("Jr", "Sr", "II", "III"):
        return surname(" ".join(tokens[:-1]))
    return " ".join(tokens[k:])


def name_key(text: str) -> str:
    """Lower case without accents or punctuation: how surnames and titles are compared."""
    text = unicodedata.normalize("NFKD", text)
    text = "".join(c for c in text if not unicodedata.combining(c)).lower()
    return " ".join(re.findall(r"[a-z0-9]+", text))


# ----------------------------------------------------------------------------- the list
def reference_spans(text: str, sections: list[Section]) -> list[tuple[int, int]]:
    """Each entry's span: the paragraphs of the reference sections; a paragraph that holds several
    numbered lines (plain text, Markdown lists) is one entry per line."""
    spans = []
    for s in sections:
        if s.kind != REFERENCE:
            continue
        for m in re.finditer(r"[^\n]+(?:\n(?!\n)[^\n]*)*", text[s.start:s.end]):
            lines = [(s.start + m.start() + lm.start(), s.start + m.start() + lm.end())
                     for lm in re.finditer(r"[^\n]+", m.group(0))]
            labelled = [bool(_LABEL.match(text[a:b]) or re.match(r"^\s*[-*•]\s", text[a:b])) for a, b in lines]
            if len(lines) > 1 and sum(labelled) >= 2:
                for (a, b), starts in zip(lines, labelled):
                    if starts or not spans:
                        spans.append((a, b))
                    else:
                        spans[-1] = (spans[-1][0], b)
            else:
                spans.append((s.start + m.start(), s.start + m.end()))
    return spans


def parse_references(text: str, sections: list[Section]) -> list[Reference]:
    """The document's reference entries, in list order. An entry broken across columns or pages
    is joined again (its second part has no label in a numbered list, or starts in lower case
    or with a digit); paragraphs of a reference section that are no reference (a heading, a table
    or caption run into the list, an appendix after it) are left out."""
    spans = [(a, b) for a, b in reference_spans(text, sections) if not _is_heading_like(text[a:b])]
    numbered = sum(1 for a, b in spans if _LABEL.match(text[a:b])) >= 0.5 * len(spans)
    joined: list[tuple[int, int]] = []
    for a, b in spans:
        head = text[a:b].lstrip()
        if _not_a_citation(head):
            continue
        goes_on = not _LABEL.match(head) if numbered else not (head[:1].isupper() or head[:1] in "[(\"“")
        if joined and goes_on:
            joined[-1] = (joined[-1][0], b)
        else:
            joined.append((a, b))
    refs: list[Reference] = []
    for start, end in joined:
        raw = text[start:end]
        if not looks_like_reference(raw):
            continue
        ref = parse_entry(raw)
        ref.index, ref.start, ref.end = len(refs) + 1, start, end
        refs.append(ref)
    return refs


def _is_heading_like(raw: str) -> bool:
    return len(raw) < 40 and not _YEAR.search(raw)


def _not_a_citation(raw: str) -> bool:
    """A table row (mostly numbers) or a figure or table caption run into the list."""
    flat = " ".join(raw.split())
    if re.match(r"^(?:table|figure|fig\.)\s*\d", flat, re.IGNORECASE):
        return True
    letters = sum(map(str.isalpha, flat))
    return letters < 0.45 * len(flat.replace(" ", "")) or sum(map(str.isdigit, flat)) > letters


def looks_like_reference(raw: str) -> bool:
    """An entry names a work: some words, and a year, an identifier or a link."""
    flat = " ".join(raw.split())
    if len(flat) < 20 or _not_a_citation(flat):
        return False
    return bool(_YEAR.search(flat) or DOI.search(flat) or ARXIV.search(flat) or _URL.search(flat))


def parse_entry(raw: str) -> Reference:
    """Authors, title, year, venue and identifiers of one entry's text."""
    flat = re.sub(r"\s+", " ", raw).strip()
    ref = Reference(index=0, start=0, end=0, text=flat)
    m = _LABEL.match(flat)
    if m:
        ref.label = next(g for g in m.groups() if g)
        flat = flat[m.end():]
    if m := DOI.search(flat):
        ref.doi = m.group(1)
    if m := ARXIV.search(flat):
        ref.arxiv_id = m.group(1)
    if m := _URL.search(flat):
        ref.url = m.group(0).replace(" ", "")
    body = DOI.sub(" ", ARXIV.sub(" ", _URL.sub(" ", flat)))
    quoted = _QUOTED.search(body)
    if quoted and len(quoted.group(1).split()) >= 2:
        ref.authors = split_authors(body[:quoted.start()].strip(" ,.:"))
        ref.title = quoted.group(1).strip(" ,.")
        rest = body[quoted.end():]
    else:
        segments = _segments(body)
        first = segments[0] if segments else ""
        year_in_authors = re.search(r"[,\s]\(?((?:1[6-9]|20)\d{2})([a-z]?)\)?$", first)
        if year_in_authors and _author_like(first[:year_in_authors.start()]):  # "Smith, J. and Lee, K., 2019."
            ref.year, ref.year_suffix = int(year_in_authors.group(1)), year_in_authors.group(2)
            first = first[:year_in_authors.start()]
        if len(segments) > 1 and _author_like(first):
            ref.authors = split_authors(first)
            segments = segments[1:]
        if segments and (y := _BARE_YEAR.match(segments[0])):  # ACL / APA: the year after the authors
            ref.year, ref.year_suffix = int(y.group(1)), y.group(2)
            segments = segments[1:]
        ref.title = _bare_title(segments[0]) if segments else ""
        rest = " ".join(segments[1:])
    if ref.year is None:
        years = list(_YEAR.finditer(rest)) or list(_YEAR.finditer(body))
        if years:
            ref.year, ref.year_suffix = int(years[-1].group(1)), years[-1].group(2)
    ref.venue = _venue(rest)
    return ref


def _segments(body: str) -> list[str]:
    """The entry cut at sentence ends: a period followed by a space, or '?' / '!' followed by a
    capital; inside the author run (the first segment) not after an initial that a name goes on
    from ("Y. Bengio", "Aidan N. Gomez", "C. de Masson"; in a "Surname, I." list the name ends at
    its initials), and never inside "et al."."""
    surname_first = bool(_SURNAME_FIRST.match(body))
    out: list[str] = []
    start = 0
    for m in re.finditer(r"[.?!](?=\s+(\S+))", body):
        word = re.search(r"(\S+)$", body[start:m.start()])
        prev = word.group(1) if word else ""
        nxt = m.group(1)
        if m.group(0) != "." and not (nxt[:1].isupper() or nxt[:1].isdigit() or nxt.lower().startswith(_AFTER_TITLE)):
            continue  # "Explain yourself! leveraging ..."
        if m.group(0) == "." and not out and _INITIALS.match(prev.lstrip("(")):
            continues = nxt.startswith(("et", "and", "&")) or nxt.rstrip(",") in _PARTICLES or \
                _INITIALS.match(nxt.rstrip(".,")) or \
                (not surname_first and re.match(r"^[^\W\d_][\w'’\-]*[,.]?$", nxt) is not None and nxt[0].isupper())
            if continues and not nxt.startswith("("):
                continue
        if m.group(0) == "." and prev == "et":
            continue
        out.append(body[start:m.start() + (0 if m.group(0) == "." else 1)].strip())
        start = m.end()
    tail = body[start:].strip()
    if tail:
        out.append(tail)
    return [s for s in out if s]


def _author_like(segment: str) -> bool:
    """A run of names: capitalised words without digits, initials, 'and', '&', 'et al.', name
    particles, commas; or one name (an organisation: "OpenAI")."""
    words = segment.replace(",", " ").split()
    if not words or len(words) > 400:
        return False
    named = sum(1 for w in words if _name_word(w))
    return named >= 0.85 * len(words) and any(c.isupper() for c in segment)


def _name_word(word: str) -> bool:
    word = word.rstrip(".,")
    return (word[:1].isupper() and not any(c.isdigit() for c in word)) or word in ("and", "&", "et", "al") or \
        word.lower() in _PARTICLES


def split_authors(segment: str) -> list[str]:
    """Names of an author run, given names first: "Abid, A., Farooqi, M., and Zou, J." ->
    ["A. Abid", "M. Farooqi", "J. Zou"]; "et al." dropped."""
    segment = re.sub(r"\bet\s+al\.?", "", segment).strip(" ,.")
    segment = re.sub(r",?\s*(?:\band\b|&)\s+", ", ", segment)
    pieces = [p.strip() for p in segment.split(",") if p.strip()]
    names: list[str] = []
    k = 0
    while k < len(pieces):
        piece = pieces[k]
        nxt = pieces[k + 1] if k + 1 < len(pieces) else ""
        if nxt and all(_INITIALS.match(t.rstrip(".")) for t in nxt.split()) and not _INITIALS.match(piece.split()[-1].rstrip(".")):
            names.append(f"{nxt} {piece}")  # "Zou", "J." -> "J. Zou"
            k += 2
            continue
        if piece not in ("Jr", "Jr."):
            names.append(piece)
        k += 1
    return [n for n in names if any(c.isalpha() for c in n)]


def _bare_title(segment: str) -> str:
    """A title without what a style prints after it inside the same sentence: ", 2020",
    ", volume 1"."""
    segment = re.sub(r",\s*(?:(?:1[6-9]|20)\d{2}[a-z]?|vol(?:ume|\.)\s*\d+)\s*$", "", segment.strip(" ,."))
    return segment.strip(" ,.")


def _venue(rest: str) -> str:
    venue = re.sub(r"^\s*(?:in|In)[:\s]+", "", rest)
    venue = re.split(r",?\s*(?:pp\.|pages|vol\.|volume|\d+\(\d+\)|\(?(?:1[6-9]|20)\d{2})", venue)[0]
    return venue.strip(" ,.;:")[:200]


# ----------------------------------------------------------------------------- in-text citations
_NUMBERED_MARK = re.compile(r"\[(\s*\d{1,4}(?:\s*[-–—,;]\s*\d{1,4})*\s*)\]")
_PAREN = re.compile(r"\(([^()]{4,400}?(?:1[6-9]|20)\d{2}[a-z]?[^()]{0,200}?)\)")
_CAPITAL = "A-ZÀ-ÖØ-ÞĀ-ſ"  # with Latin Extended-A: "Łukasz", "Šarić" (some of it lower case; a name still starts there)
_NAMES = rf"[{_CAPITAL}][\w'’\-]+(?:\s(?:[a-z]{{1,4}}\s)?[{_CAPITAL}][\w'’\-]+)?"
_AUTHOR_YEAR = re.compile(rf"(?P<names>{_NAMES}(?:\s+et\s+al\.?|\s+(?:and|&)\s+{_NAMES})?)(?:'s)?,?\s+"
                          rf"(?P<years>(?:1[6-9]|20)\d{{2}}[a-z]?(?:\s*,\s*(?:(?:1[6-9]|20)\d{{2}})?[a-z](?![\w]))*)")
_NARRATIVE = re.compile(rf"(?P<names>{_NAMES}(?:\s+et\s+al\.?|\s+(?:and|&)\s+{_NAMES})?)(?:'s)?\s+"
                        rf"\((?P<years>(?:1[6-9]|20)\d{{2}}[a-z]?(?:\s*[,;]\s*(?:(?:1[6-9]|20)\d{{2}})?[a-z]?)*)\)")


def find_citations(text: str, sections: list[Section], refs: list[Reference]) -> list[CitationMark]:
    """Every in-text citation outside the reference list that names at least one entry."""
    if not refs:
        return []
    body = [(s.start, s.end) for s in sections if s.kind != REFERENCE] or [(0, len(text))]
    by_label = {r.label: r.index for r in refs if r.label}
    by_author: dict[tuple[str, int], list[Reference]] = {}
    for r in refs:
        if r.year and r.authors:
            by_author.setdefault((name_key(r.first_surname), r.year), []).append(r)
    marks: list[CitationMark] = []
    for lo, hi in body:
        chunk = text[lo:hi]
        if by_label:
            for m in _NUMBERED_MARK.finditer(chunk):
                entries = [by_label[str(n)] for n in _expand(m.group(1)) if str(n) in by_label]
                if entries:
                    marks.append(CitationMark(lo + m.start(), lo + m.end(), entries))
        if by_author:
            for m in _PAREN.finditer(chunk):
                entries = []
                for piece in re.split(r";", m.group(1)):
                    for a in _AUTHOR_YEAR.finditer(piece):
                        entries += _author_year_entries(a.group("names"), a.group("years"), by_author)
                if entries:
                    marks.append(CitationMark(lo + m.start(), lo + m.end(), list(dict.fromkeys(entries))))
            for m in _NARRATIVE.finditer(chunk):
                entries = _author_year_entries(m.group("names"), m.group("years"), by_author)
                if entries:
                    marks.append(CitationMark(lo + m.start(), lo + m.end(), entries))
    marks.sort(key=lambda c: c.start)
    out: list[CitationMark] = []
    for mark in marks:  # a narrative mark inside a parenthetical one ("(see Devlin et al. (2019))")
        if out and mark.start < out[-1].end:
            out[-1].entries = list(dict.fromkeys(out[-1].entries + mark.entries))
            out[-1].end = max(out[-1].end, mark.end)
            continue
        out.append(mark)
    return out


def _expand(numbers: str) -> list[int]:
    out: list[int] = []
    for part in re.split(r"\s*[,;]\s*", numbers.strip()):
        bounds = [int(x) for x in re.split(r"\s*[-–—]\s*", part) if x.strip().isdigit()]
        if len(bounds) == 2 and 0 <= bounds[1] - bounds[0] <= 50:
            out.extend(range(bounds[0], bounds[1] + 1))
        elif bounds:
            out.append(bounds[0])
    return out


def _author_year_entries(names: str, years: str, by_author: dict[tuple[str, int], list[Reference]]) -> list[int]:
    """Entries for "Devlin et al." + "2019a, b": first author's surname and year, the letter
    choosing among several; a second surname ("Smith and Jones") must match too when given."""
    first = re.split(r"\s+(?:et\s+al\.?|and|&)\s*", names)[0]
    second = re.split(r"\s+(?:and|&)\s+", names)[1] if re.search(r"\s(?:and|&)\s", names) else ""
    out = []
    year = None
    for token in re.split(r"\s*[,;]\s*", years):
        m = re.match(r"^((?:1[6-9]|20)\d{2})?([a-z]?)$", token.strip())
        if not m:
            continue
        year = int(m.group(1)) if m.group(1) else year
        if year is None:
            continue
        candidates = by_author.get((name_key(surname(first)), year)) or by_author.get((name_key(first), year), [])
        if second:
            candidates = [r for r in candidates if len(r.authors) > 1 and name_key(surname(r.authors[1])) == name_key(second)] \
                or candidates
        if m.group(2):
            lettered = [r for r in candidates if r.year_suffix == m.group(2)]
            candidates = lettered or ([candidates[ord(m.group(2)) - ord("a")]]
                                      if len(candidates) > ord(m.group(2)) - ord("a") else [])
        elif len(candidates) > 1:
            candidates = [r for r in candidates if not r.year_suffix][:1] or candidates[:1]
        out += [r.index for r in candidates[:1]]
    return out
