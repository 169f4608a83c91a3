"""Loaders per format. Each returns Documents or raises IngestError naming the file and the reason."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from charset_normalizer import from_bytes

from ..config import IngestConfig
from ..errors import IngestError
from ..types import Document
from .clean import clean_text, join_pdf_lines

FILE_TYPES = {
    ".txt": "txt", ".md": "md", ".markdown": "md", ".html": "html", ".htm": "html",
    ".pdf": "pdf", ".docx": "docx", ".json": "json", ".jsonl": "jsonl",
}


def iter_source_files(paths: Iterable[str | Path], cfg: IngestConfig) -> Iterator[Path]:
    """Files named directly are always yielded (so unsupported ones get reported); folders are
    walked for supported suffixes, skipping hidden entries such as the index directory itself."""
    suffixes = {s.lower() for s in cfg.suffixes}
    for p in paths:
        path = Path(p)
        if path.is_dir():
            for root, dirs, files in os.walk(path):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                for name in sorted(files):
                    if not name.startswith(".") and Path(name).suffix.lower() in suffixes:
                        yield Path(root) / name
        else:
            yield path


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


def _load_txt(name: str, data: bytes, doc_id: str, date: str, cfg: IngestConfig) -> list[Document]:
    text = clean_text(decode_text(name, data))
    return [_doc(doc_id, Path(name).stem, text, name, date)]


def _load_md(name: str, data: bytes, doc_id: str, date: str, cfg: IngestConfig) -> list[Document]:
    text = clean_text(decode_text(name, data))
    title = Path(name).stem
    for line in text.split("\n"):
        if line.startswith("# "):
            title = line[2:].strip()
            break
    return [_doc(doc_id, title, text, name, date)]


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
    text = clean_text(body.get_text("\n"))
    return [_doc(doc_id, title, text, name, date)]


def _load_pdf(name: str, data: bytes, doc_id: str, date: str, cfg: IngestConfig) -> list[Document]:
    import io

    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            try:
                reader.decrypt("")
            except Exception as exc:  # noqa: BLE001 - pypdf raises several types here
                raise IngestError(name, "PDF is encrypted with a password; decrypt it first") from exc
        parts: list[str] = []
        page_starts: list[tuple[int, int]] = []
        offset = 0
        for number, page in enumerate(reader.pages, start=1):
            page_text = clean_text(join_pdf_lines(clean_text(page.extract_text() or "", dehyphenate=True)))
            if not page_text:
                continue
            if parts:
                offset += 2  # the "\n\n" page separator
            page_starts.append((offset, number))
            parts.append(page_text)
            offset += len(page_text)
        meta = reader.metadata
        title = (meta.title if meta and meta.title else "") or Path(name).stem
    except IngestError:
        raise
    except (PdfReadError, ValueError, KeyError, TypeError, OSError) as exc:
        raise IngestError(name, f"corrupt or unreadable PDF ({type(exc).__name__}: {exc})") from exc
    return [_doc(doc_id, str(title).strip(), "\n\n".join(parts), name, date, page_starts=page_starts)]


def _load_docx(name: str, data: bytes, doc_id: str, date: str, cfg: IngestConfig) -> list[Document]:
    import io
    import zipfile

    import docx

    try:
        document = docx.Document(io.BytesIO(data))
    except (zipfile.BadZipFile, KeyError, ValueError) as exc:
        raise IngestError(name, f"corrupt or unreadable .docx ({type(exc).__name__}: {exc})") from exc
    paragraphs = [p.text for p in document.paragraphs]
    for table in document.tables:
        for row in table.rows:
            paragraphs.append(" | ".join(cell.text for cell in row.cells))
    title = document.core_properties.title or ""
    if not title:
        for p in document.paragraphs:
            if p.style is not None and p.style.name.lower().startswith(("title", "heading")) and p.text.strip():
                title = p.text.strip()
                break
    return [_doc(doc_id, title or Path(name).stem, clean_text("\n\n".join(paragraphs)), name, date)]


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
        docs.append(_doc(str(rid), str(title), clean_text(text), name, str(rec_date) if rec_date else date, metadata=meta))
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
