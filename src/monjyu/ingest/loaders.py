"""Loaders per format. Each returns Documents or raises IngestError naming the file and the reason."""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from charset_normalizer import from_bytes

from ..config import IngestConfig
from ..errors import IngestError
from ..types import FRONT, TEXT, Document
from .clean import clean_text, mend_line_end_hyphens
from .references import DOI, find_citations, parse_references
from .sentences import MARKDOWN_MARK, MARKDOWN_NOTE
from .structure import Block, assemble, normalize, paragraphs_to_blocks

FILE_TYPES = {
    ".txt": "txt", ".md": "md", ".markdown": "md", ".html": "html", ".htm": "html",
    ".pdf": "pdf", ".docx": "docx", ".json": "json", ".jsonl": "jsonl",
}

# What document generators write as "author" when nobody set one: not a person.
PLACEHOLDER_AUTHORS = {"python-docx", "author", "user", "administrator", "windows user", "microsoft office user",
                       "unknown", "anonymous"}


def iter_source_files(paths: Iterable[str | Path], cfg: IngestConfig, unread: Counter[str] | None = None,
                      skip_dir: Callable[[Path], bool] | None = None,
                      skip_files: Collection[Path] = ()) -> Iterator[Path]:
    """Files named directly are always yielded (so unsupported ones get reported); folders are
    walked for supported suffixes, skipping hidden entries (the default index, .monjyu), the
    folders `skip_dir` names (an index kept inside the folder it indexes) and `skip_files`
    (resolved paths: the bibliography that describes the folder): they are not papers. `unread`
    counts the other files of the folders by suffix, for a note: an EPUB dropped into a folder of
    papers is left out, but not without a word."""
    suffixes = {s.lower() for s in cfg.suffixes}
    skipped_names = {f.name for f in skip_files}  # a file is resolved only where its name is one of theirs
    for p in paths:
        path = Path(p)
        if not path.is_dir():
            yield path
            continue
        for root, dirs, files in os.walk(path):
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") and not (skip_dir and skip_dir(Path(root) / d)))
            for name in sorted(files):
                file = Path(root) / name
                if name.startswith(".") or (name in skipped_names and file.resolve() in skip_files):
                    continue
                if file.suffix.lower() in suffixes:
                    yield file
                elif unread is not None:
                    unread[file.suffix.lower() or "no suffix"] += 1


def unread_note(unread: Counter[str], cfg: IngestConfig) -> str:
    """What a build says of the files `iter_source_files` left out of the folders it walked."""
    count = sum(unread.values())
    kinds = ", ".join(f"{suffix} ({n})" for suffix, n in sorted(unread.items(), key=lambda kv: (-kv[1], kv[0])))
    return (f"{count} {'file' if count == 1 else 'files'} in the folders given {'is' if count == 1 else 'are'} "
            f"of a type this index does not read, left out: {kinds}; it reads "
            f"{', '.join(sorted(s.lower() for s in cfg.suffixes))} (ingest.suffixes)")


def load_file(path: Path, doc_id: str, cfg: IngestConfig) -> list[Document]:
    """Load one file. `doc_id` names single-document files; JSON records carry their own ids."""
    name = str(path)
    if not path.exists():
        raise IngestError(name, "file not found")
    suffix = path.suffix.lower()
    file_type = FILE_TYPES.get(suffix)
    if file_type is None:
        raise IngestError(name, f"unsupported file type '{suffix or '(none)'}'; supported: {', '.join(sorted(FILE_TYPES))}")
    size = path.stat().st_size
    if size > cfg.max_file_mb * 1024 * 1024:
        raise IngestError(name, f"file is {size / 1e6:.0f} MB, above ingest.max_file_mb={cfg.max_file_mb:g}; raise the limit or split the file")
    if size == 0:
        raise IngestError(name, "file is empty")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise IngestError(name, f"cannot read file: {exc.strerror or exc}") from exc
    date = datetime.fromtimestamp(path.stat().st_mtime, tz=timezone.utc).date().isoformat()
    loader = _LOADERS[file_type]
    docs = loader(name, data, doc_id, date, cfg)
    docs = [d for d in docs if d.text.strip()]
    if not docs:
        raise IngestError(name, "no text could be extracted (empty, or a scanned PDF without a text layer)")
    for d in docs:
        d.file_type = file_type
        refs = parse_references(d.text, d.sections)
        d.references = [r.to_dict() for r in refs]
        d.citation_marks = [m.to_dict() for m in find_citations(d.text, d.sections, refs)]
    return docs


def decode_text(name: str, data: bytes) -> str:
    """UTF-8 (with or without BOM), UTF-16 with BOM, or a legacy encoding (Shift-JIS, cp1252 ...)
    that charset-normalizer recognises as coherent text. Anything else is refused, not guessed."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16")
    if b"\x00" in data[:8192]:
        raise IngestError(name, "looks like a binary file (NUL bytes); not a text document")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        partial = data.decode("utf-8", errors="replace")
        bad = partial.count("\ufffd")
        if sum(1 for c in partial if ord(c) > 127) - bad >= 5 * bad:  # UTF-8 with a few broken bytes
            raise IngestError(name, f"invalid UTF-8 at byte {exc.start} in an otherwise UTF-8 file; "
                                    "repair or re-save the file as UTF-8") from exc
    guess = from_bytes(data).best()
    if guess is None or guess.chaos > 0.2 or guess.coherence < 0.05:
        raise IngestError(name, "not valid UTF-8 and the encoding could not be determined; convert the file to UTF-8")
    return str(guess)


def _doc(doc_id: str, title: str, text: str, name: str, date: str, **kw: Any) -> Document:
    return Document(id=doc_id, title=title, text=text, source_path=name, file_type="", date=date, **kw)


def _structured(doc_id: str, title: str, blocks: list[Block], name: str, date: str, **kw: Any) -> Document:
    """A document whose text, sections, pages and line boxes come from its blocks. A leading
    heading that is the title stays plain text: the title is indexed with every unit already. Where
    another heading follows it ("# Title", "## Abstract"), the title alone is front matter, as a
    PDF's title block is: no passage to quote, and not the paper's first passage (its abstract is)."""
    if blocks and blocks[0].kind == "heading" and blocks[0].text == title:
        kind = FRONT if len(blocks) > 1 and blocks[1].kind == "heading" else TEXT
        blocks = [Block(blocks[0].text, kind, page=blocks[0].page, lines=blocks[0].lines)] + blocks[1:]
    built = assemble(blocks)
    return _doc(doc_id, title, built.text, name, date, sections=built.sections, page_starts=built.page_starts,
                line_boxes=built.line_boxes, **kw)


def _text_blocks(text: str) -> list[Block]:
    return [Block(normalize_block(b.text), b.kind, b.level) for b in paragraphs_to_blocks(text)]


def normalize_block(text: str) -> str:
    """NFKC per line, keeping the line breaks of a paragraph."""
    return "\n".join(normalize(line) for line in text.split("\n"))


_ISO_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")
_ABSTRACT_LABEL = re.compile(r"^(abstract|summary|概要|要旨)\s*[:：.]\s*", re.IGNORECASE)
_BODY_LABEL = re.compile(r"^(text|body|main text|full text|本文)\s*[:：]\s*", re.IGNORECASE)  # CORD-19 exports: "Text: ..."


# The labels of a header's author and date lines (CORD-19 exports: "Authors: Chan, Jasper Fuk-Woo; Kok,
# Kin-Hang", "Date: 2020-01-28"): the value is read without them.
_HEADER_LABEL = re.compile(r"^(authors?|author\(s\)|date|published|著者|日付)\s*[:：]\s*", re.IGNORECASE)
_AUTHORS_LABELS = frozenset({"author", "authors", "author(s)", "著者"})


def _paper_header(blocks: list[Block]) -> tuple[str, list[str], str, str, int]:
    """Plain-text papers often start with a header: a title line, then lines of authors
    ("Surname, Given; ..."), a date, a DOI, a URL. Returns title, authors, date, DOI and how many
    leading blocks the header spans (0 when the text does not start like that)."""
    if len(blocks) < 2 or blocks[0].kind == "heading" or "\n" in blocks[0].text or len(blocks[0].text) > 300:
        return "", [], "", "", 0
    title, authors, date, doi = blocks[0].text, [], "", ""
    used = 1
    for block in blocks[1:6]:
        lines = block.text.split("\n")
        if block.kind == "heading" or _ABSTRACT_LABEL.match(block.text) or not all(map(_header_line, lines)):
            break
        for line in lines:
            line, label = line.strip(), ""
            if labelled := _HEADER_LABEL.match(line):
                line, label = line[labelled.end():], labelled.group(1).lower()
            if m := DOI.search(line):
                doi = doi or m.group(1)
            elif _ISO_DATE.match(line):
                date = date or line
            elif (";" in line or label in _AUTHORS_LABELS) and not authors and len(line) < 2000:
                authors = [_given_surname(a) for a in line.split(";") if a.strip()]
        used += 1
    return title, [a for a in authors if a], date, doi, used


def _header_line(line: str) -> bool:
    """A line of a paper's header: a URL, DOI, date, author list or "Key: value" note, or a short
    line that is no sentence."""
    line = line.strip()
    return bool(re.match(r"^(https?://|www\.|doi:|10\.\d{4})", line, re.IGNORECASE) or _ISO_DATE.match(line)
                or (";" in line and len(line) < 2000) or re.match(r"^[A-Z][\w ]{1,20}:\s*\S", line) and len(line) < 200
                or (len(line) < 80 and not line.endswith(".")))


def _given_surname(name: str) -> str:
    """"Devlin, Jacob" -> "Jacob Devlin"."""
    surname, _, given = name.strip().partition(",")
    return f"{given.strip()} {surname.strip()}".strip()


def _load_txt(name: str, data: bytes, doc_id: str, date: str, cfg: IngestConfig) -> list[Document]:
    blocks = _text_blocks(mend_line_end_hyphens(clean_text(decode_text(name, data))))
    title, authors, header_date, doi, used = _paper_header(blocks)
    if used > 1 and (authors or header_date or doi):  # title and metadata lines are front matter
        blocks = [Block(b.text, FRONT) for b in blocks[:used]] + blocks[used:]
    for i, b in enumerate(blocks):
        if b.kind == "text" and _ABSTRACT_LABEL.match(b.text):
            # The labelled paragraph is the abstract; the body after it is not (an empty heading
            # ends the section), and a body label ("Text: ...") is no part of the text.
            rest = blocks[i + 1:]
            if rest and rest[0].kind == "text":
                rest[0] = Block(_BODY_LABEL.sub("", rest[0].text), rest[0].kind, rest[0].level)
            blocks[i:] = [Block("Abstract", "heading", 1), Block(_ABSTRACT_LABEL.sub("", b.text)),
                          Block("", "heading", 1), *rest]
            break
    metadata = {"doi": doi} if doi else {}
    year = int(header_date[:4]) if header_date else None
    return [_structured(doc_id, title or Path(name).stem, blocks, name, header_date or date, authors=authors,
                        year=year, metadata=metadata)]


def _markdown_blocks(text: str) -> list[Block]:
    """ATX headings (# .. ######) outside code fences; everything else in paragraphs."""
    blocks: list[Block] = []
    para: list[str] = []
    fence = False

    def flush() -> None:
        if para:
            blocks.extend(_text_blocks("\n".join(para)))
            para.clear()

    for line in text.split("\n"):
        if line.lstrip().startswith(("```", "~~~")):
            fence = not fence
        m = None if fence else re.match(r"^(#{1,6})\s+(.+?)\s*#*\s*$", line)
        if m:
            flush()
            blocks.append(Block(normalize(m.group(2)), "heading", len(m.group(1))))
        else:
            para.append(line)
    flush()
    return blocks


def _notes_after_their_marks(blocks: list[Block]) -> list[Block]:
    """Each Markdown footnote a paragraph of its own, right after the first paragraph that marks it,
    as a PDF's footnotes follow the paragraph they cut: a note written at the document's end is read
    with its sentence. A note no paragraph marks stays where it is."""
    split: list[Block] = []
    for b in blocks:  # definitions written one under another, with no blank line between them
        lines = b.text.split("\n")
        starts = [k for k, x in enumerate(lines) if MARKDOWN_NOTE.match(x)] if b.kind != "heading" else []
        if starts and starts[0] == 0:
            ends = starts[1:] + [len(lines)]
            split.extend(Block("\n".join(lines[i:j]), b.kind, b.level) for i, j in zip(starts, ends))
        else:
            split.append(b)
    notes: dict[str, Block] = {}
    for b in split:
        if b.kind != "heading" and (m := MARKDOWN_NOTE.match(b.text)):
            notes.setdefault(m.group(1), b)
    marked = {label for b in split for label in MARKDOWN_MARK.findall(b.text)}
    moved = {id(notes[label]) for label in marked if label in notes}
    out: list[Block] = []
    placed: set[int] = set()
    for b in split:
        if id(b) in moved:
            continue  # set after the paragraph that marks it
        out.append(b)
        for label in dict.fromkeys(MARKDOWN_MARK.findall(b.text)):
            if label in notes and id(notes[label]) not in placed:
                placed.add(id(notes[label]))
                out.append(notes[label])
    return out


def _load_md(name: str, data: bytes, doc_id: str, date: str, cfg: IngestConfig) -> list[Document]:
    blocks = _notes_after_their_marks(_markdown_blocks(clean_text(decode_text(name, data))))
    title = next((b.text for b in blocks if b.kind == "heading" and b.level == 1), Path(name).stem)
    return [_structured(doc_id, title, blocks, name, date)]


def _load_html(name: str, data: bytes, doc_id: str, date: str, cfg: IngestConfig) -> list[Document]:
    from bs4 import BeautifulSoup

    if b"\x00" in data[:8192]:
        raise IngestError(name, "looks like a binary file (NUL bytes); not an HTML document")
    soup = BeautifulSoup(data, "html.parser")
    for tag in soup(["script", "style", "noscript", "nav", "header", "footer", "template"]):
        tag.decompose()
    title = soup.title.get_text(" ", strip=True) if soup.title else ""
    h1 = soup.find("h1")
    title = title or (h1.get_text(" ", strip=True) if h1 else "") or Path(name).stem
    body = soup.body or soup
    for level in range(1, 7):  # headings become paragraphs of their own, marked with their level
        for h in body.find_all(f"h{level}"):
            h.replace_with(f"\n\n{_HEADING_MARK}{level}{_HEADING_MARK}{h.get_text(' ', strip=True)}\n\n")
    blocks = []
    for para in re.split(r"\n\s*\n", clean_text(body.get_text("\n"))):
        m = re.match(rf"^{_HEADING_MARK}(\d){_HEADING_MARK}(.*)$", para.strip(), re.DOTALL)
        blocks.extend([Block(normalize(m.group(2)), "heading", int(m.group(1)))] if m else _text_blocks(para))
    return [_structured(doc_id, normalize(title), blocks, name, date)]


_HEADING_MARK = "\ue000"  # private-use character: survives clean_text, never in real HTML text


def _load_pdf(name: str, data: bytes, doc_id: str, date: str, cfg: IngestConfig) -> list[Document]:
    from .pdf import read_pdf

    paper = read_pdf(name, data)
    blocks = paper.blocks
    if paper.empty_pages and cfg.ocr:
        from .ocr import ocr_pages

        blocks = blocks + ocr_pages(name, data, paper.empty_pages, cfg.ocr_languages)
        blocks.sort(key=lambda b: b.page or 0)
    elif paper.empty_pages and not any(b.text.strip() for b in blocks):
        raise IngestError(name, f"no text layer on any of its {paper.pages} pages (a scanned PDF?); "
                                "set ingest.ocr: true to read it with tesseract")
    metadata: dict[str, Any] = {"pages": paper.pages}
    for key in ("doi", "arxiv_id", "abstract"):
        if getattr(paper, key):
            metadata[key] = getattr(paper, key)
    if paper.empty_pages:
        metadata["pages_without_text"] = paper.empty_pages
        metadata["ocr"] = bool(cfg.ocr)
    title = paper.title or (paper.metadata_title if _useful_title(paper.metadata_title) else "") or Path(name).stem
    return [_structured(doc_id, title, blocks, name, date, authors=paper.authors or paper.metadata_authors,
                        year=paper.year or paper.metadata_year, metadata=metadata)]


def _useful_title(title: str) -> bool:
    """PDF metadata titles are often a file name or a tool's placeholder."""
    t = title.strip()
    words = len(t.split()) >= 2 or len(re.findall(r"[\u3040-\u30ff\u4e00-\u9fff]", t)) >= 2  # "梅雨" is a title
    return words and not re.search(r"\.(dvi|pdf|docx?|tex|ps)$|^microsoft word|^untitled", t, re.IGNORECASE)


def _load_docx(name: str, data: bytes, doc_id: str, date: str, cfg: IngestConfig) -> list[Document]:
    import io
    import zipfile

    import docx

    try:
        document = docx.Document(io.BytesIO(data))
    except (zipfile.BadZipFile, KeyError, ValueError) as exc:
        raise IngestError(name, f"corrupt or unreadable .docx ({type(exc).__name__}: {exc})") from exc
    blocks: list[Block] = []
    title = document.core_properties.title or ""
    for p in document.paragraphs:
        style = (p.style.name if p.style is not None else "").lower()
        text = normalize(p.text)
        if not text:
            continue
        if style == "title":
            title = title or text
            blocks.append(Block(text, "heading", 1))
        elif m := re.match(r"heading\s*(\d)", style):
            title = title or text
            blocks.append(Block(text, "heading", int(m.group(1))))
        else:
            blocks.append(Block(text, "caption" if style == "caption" else "text"))
    for table in document.tables:
        for row in table.rows:
            blocks.append(Block(normalize(" | ".join(cell.text for cell in row.cells))))
    return [_structured(doc_id, title or Path(name).stem, blocks, name, date,
                        authors=[a.strip() for a in re.split(r"[;,]", document.core_properties.author or "")
                                 if a.strip() and a.strip().lower() not in PLACEHOLDER_AUTHORS])]


def _records_to_docs(name: str, records: list[Any], date: str, cfg: IngestConfig) -> list[Document]:
    docs = []
    for i, rec in enumerate(records):
        if not isinstance(rec, dict):
            raise IngestError(name, f"record {i} is not a JSON object")
        text = rec.get(cfg.json_text_field)
        if not isinstance(text, str):
            raise IngestError(name, f"record {i} has no string field '{cfg.json_text_field}' (set ingest.json_text_field)")
        rid = rec.get(cfg.json_id_field, rec.get("id"))
        if rid is None:
            raise IngestError(name, f"record {i} has no id field '{cfg.json_id_field}' (set ingest.json_id_field)")
        title = rec.get(cfg.json_title_field) or ""
        rec_date = rec.get(cfg.json_date_field)
        meta = {k: v for k, v in rec.items() if k not in {cfg.json_text_field, cfg.json_title_field, cfg.json_id_field}}
        authors = rec.get("authors") or []
        authors = [str(a) for a in authors] if isinstance(authors, list) else [a.strip() for a in str(authors).split(";")]
        year = rec.get("year") or (str(rec_date)[:4] if rec_date else None)  # a record's date is its publication date
        year = int(year) if isinstance(year, int) or (isinstance(year, str) and year.isdigit()) else None
        docs.append(_doc(str(rid), normalize(str(title)), normalize_block(clean_text(text)), name,
                         str(rec_date) if rec_date else date, metadata=meta, authors=authors, year=year))
    return docs


def _load_json(name: str, data: bytes, doc_id: str, date: str, cfg: IngestConfig) -> list[Document]:
    try:
        obj = json.loads(decode_text(name, data))
    except json.JSONDecodeError as exc:
        raise IngestError(name, f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from exc
    records = obj if isinstance(obj, list) else [obj]
    if isinstance(obj, dict) and cfg.json_id_field not in obj and "id" not in obj:
        obj = {**obj, cfg.json_id_field: doc_id}
        records = [obj]
    return _records_to_docs(name, records, date, cfg)


def _load_jsonl(name: str, data: bytes, doc_id: str, date: str, cfg: IngestConfig) -> list[Document]:
    records = []
    for lineno, line in enumerate(decode_text(name, data).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise IngestError(name, f"invalid JSON on line {lineno}: {exc.msg}") from exc
    return _records_to_docs(name, records, date, cfg)


_LOADERS = {
    "txt": _load_txt, "md": _load_md, "html": _load_html, "pdf": _load_pdf,
    "docx": _load_docx, "json": _load_json, "jsonl": _load_jsonl,
}
