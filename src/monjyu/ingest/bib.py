"""A BibTeX or CSL-JSON file as a catalog: each entry's metadata for the file its `file` field
names, winning over what parsing that file finds (as a Zotero library's do).

The `file` field as the exporters write it:
- Better BibTeX: paths, `;` between them (`{/home/me/Zotero/storage/AB12CD34/Vaswani - 2017.pdf}`);
- Zotero's own BibTeX export: `description:path:mime type` (`{Full Text PDF:/home/me/....pdf:application/pdf}`);
- JabRef: `description:path:type` with paths relative to the .bib file's folder or to the
  library's file directory (`@Comment{jabref-meta: fileDirectory:papers;}`); `\\:` and `\\;`
  escape the separators in all three;
- CSL-JSON (an array of items): a `file` string in one of these forms, or a list of paths.

An entry's PDF (else its first file of a kind MONJYU reads; one that is on disk) is the file it
describes. Entries
that name no file are counted in the report's notes; an entry whose file is not on disk is a
failure that names the entry and the path.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import MonjyuError
from .catalog import Catalog, CatalogEntry, stamp_of

# BibTeX and CSL types in Zotero's names, so that `item_type=` and BibTeX output speak one
# vocabulary (a type not listed is kept as written).
BIBTEX_ITEM_TYPES = {"article": "journalArticle", "inproceedings": "conferencePaper", "conference": "conferencePaper",
                     "book": "book", "incollection": "bookSection", "inbook": "bookSection", "phdthesis": "thesis",
                     "mastersthesis": "thesis", "thesis": "thesis", "techreport": "report", "report": "report",
                     "misc": "document", "unpublished": "manuscript", "online": "webpage"}
CSL_ITEM_TYPES = {"article": "preprint", "article-journal": "journalArticle", "paper-conference": "conferencePaper",
                  "book": "book", "chapter": "bookSection", "thesis": "thesis", "report": "report", "webpage": "webpage",
                  "manuscript": "manuscript", "dataset": "dataset"}
_VENUE_FIELDS = ("journal", "journaltitle", "booktitle", "publisher", "school", "institution", "organization",
                 "howpublished")
_CSL_VENUE_FIELDS = ("container-title", "publisher", "event-title")
_UNESCAPED_SEMICOLON = re.compile(r"(?<!\\);")
_UNESCAPED_COLON = re.compile(r"(?<!\\):")
_YEAR = re.compile(r"\b(1[5-9]\d\d|20\d\d)\b")
_JABREF_DIRECTORY = re.compile(r"jabref-meta:\s*fileDirectory(?:-[^:]*)?\s*:([^;}]*)")


@dataclass
class BibReport:
    """What a bibliography gave: its catalog, the files to index, and what it could not."""

    catalog: Catalog
    files: list[Path]
    missing: list[tuple[str, str]]  # (entry, why its file cannot be read)
    without_file: list[str]  # entries (their keys) that name no file


def read_bibliography(path: Path, suffixes: list[str]) -> BibReport:
    """The entries of a .bib or CSL-JSON file that name a file MONJYU reads (`suffixes`)."""
    path = Path(path).expanduser().resolve()
    if not path.is_file():
        raise MonjyuError(f"no bibliography at {path}; give a BibTeX (.bib) or CSL-JSON (.json) file")
    if path.suffix.lower() == ".json":
        records = _csl_records(path)
    elif path.suffix.lower() in (".bib", ".bibtex"):
        records = _bibtex_records(path)
    else:
        raise MonjyuError(f"{path} is neither BibTeX (.bib) nor CSL-JSON (.json); export the library in one of them")
    catalog = Catalog(None, source=path)
    files, missing, without_file = [], [], []
    for key, files_field, entry in records:
        candidates = [f for f in files_field if f.suffix.lower() in suffixes]
        if not candidates:
            without_file.append(key)
            continue
        # Its PDF, else its first file MONJYU reads; of those, one that is there.
        candidates.sort(key=lambda f: (not f.is_file(), f.suffix.lower() != ".pdf"))
        pdf = candidates[0]
        if not pdf.is_file():
            missing.append((f"{key} in {path.name}", f"its file is missing ({pdf}); the entry is skipped"))
            continue
        entry.metadata["bib"] = str(path)
        entry.stamp = stamp_of([entry.title, entry.authors, entry.year, entry.metadata])
        catalog.entries[str(pdf.resolve())] = entry
        files.append(pdf)
    return BibReport(catalog, files, missing, without_file)


def file_paths(value: str, base: Path) -> list[Path]:
    """The paths of a `file` field in any of the exporters' forms, relative ones under `base`."""
    out = []
    for item in _UNESCAPED_SEMICOLON.split(value):
        parts = [p.replace("\\:", ":").replace("\\;", ";").replace("\\\\", "\\") for p in _UNESCAPED_COLON.split(item.strip())]
        if len(parts) >= 3:  # description:path:type; an unescaped drive letter splits the path in two
            name = ":".join(parts[1:-1])
        elif len(parts) == 2 and len(parts[0]) == 1:  # C:\papers\x.pdf
            name = ":".join(parts)
        else:
            name = parts[-1] if len(parts) == 2 else parts[0]
        if name.strip():
            found = Path(name.strip()).expanduser()
            out.append(found if found.is_absolute() else base / found)
    return out


def _bibtex_records(path: Path) -> list[tuple[str, list[Path], CatalogEntry]]:
    import bibtexparser
    from bibtexparser.middlewares import SeparateCoAuthors, SplitNameParts

    text = path.read_text(encoding="utf-8-sig", errors="replace")
    library = bibtexparser.parse_string(text, append_middleware=[SeparateCoAuthors(), SplitNameParts()])
    if library.failed_blocks and not library.entries:
        raise MonjyuError(f"{path} holds no BibTeX entry that parses ({len(library.failed_blocks)} failed blocks)")
    directory = _JABREF_DIRECTORY.search(text)
    base = path.parent / directory.group(1).strip() if directory else path.parent
    records = []
    for e in library.entries:
        fields = {f.key.lower(): f.value for f in e.fields}
        authors = [_latex(" ".join(p for p in (" ".join(n.first), " ".join(n.von), " ".join(n.last), " ".join(n.jr)) if p))
                   for n in fields.get("author", []) if hasattr(n, "last")]
        year = _YEAR.search(str(fields.get("year") or fields.get("date") or ""))
        keywords = re.split(r"\s*[,;]\s*", _latex(str(fields.get("keywords", ""))))
        metadata = {"doi": str(fields.get("doi", "")).strip(), "item_type": BIBTEX_ITEM_TYPES.get(e.entry_type.lower(), e.entry_type),
                    "venue": _latex(str(next((fields[f] for f in _VENUE_FIELDS if fields.get(f)), ""))),
                    "abstract": _latex(str(fields.get("abstract", ""))), "tags": [k for k in keywords if k],
                    "citation_key": e.key}
        entry = CatalogEntry("", "", _latex(str(fields.get("title", ""))), authors,
                             int(year.group(1)) if year else None, metadata)
        records.append((e.key, file_paths(str(fields.get("file", "")), base), entry))
    return records


def _csl_records(path: Path) -> list[tuple[str, list[Path], CatalogEntry]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise MonjyuError(f"{path} is not CSL-JSON: {exc}") from exc
    items = data.get("items", []) if isinstance(data, dict) else data
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        raise MonjyuError(f"{path} is not CSL-JSON: expected an array of items (objects with id, type, title, ...)")
    records = []
    for n, item in enumerate(items):
        key = str(item.get("id") or item.get("citation-key") or f"item {n + 1}")
        authors = [a.get("literal") or " ".join(p for p in (a.get("given"), a.get("non-dropping-particle"),
                                                             a.get("family")) if p)
                   for a in item.get("author", []) if isinstance(a, dict)]
        year = _csl_year(item.get("issued"))
        keywords = item.get("keyword", "")
        metadata: dict[str, Any] = {
            "doi": str(item.get("DOI", "")).strip(), "item_type": CSL_ITEM_TYPES.get(str(item.get("type", "")), item.get("type", "")),
            "venue": str(next((item[f] for f in _CSL_VENUE_FIELDS if item.get(f)), "")),
            "abstract": str(item.get("abstract", "")),
            "tags": [k for k in re.split(r"\s*[,;]\s*", keywords) if k] if isinstance(keywords, str) else list(keywords),
            "citation_key": str(item.get("citation-key") or item.get("id") or "")}
        files = item.get("file", "")
        paths = [p for f in (files if isinstance(files, list) else [files]) for p in file_paths(str(f), path.parent)]
        records.append((key, paths, CatalogEntry("", "", str(item.get("title", "")), [a for a in authors if a], year,
                                                 metadata)))
    return records


def _csl_year(issued: Any) -> int | None:
    if isinstance(issued, dict):
        parts = issued.get("date-parts") or [[]]
        if parts and parts[0] and str(parts[0][0]).isdigit():
            return int(parts[0][0])
        found = _YEAR.search(str(issued.get("raw") or issued.get("literal") or ""))
        return int(found.group(1)) if found else None
    return None


def _latex(value: str) -> str:
    """BibTeX's LaTeX (accents, braces that keep capitals) as plain text."""
    from pylatexenc.latex2text import LatexNodes2Text

    text = LatexNodes2Text().latex_to_text(value) if any(c in value for c in "\\{}$~") else value
    return " ".join(text.split())
