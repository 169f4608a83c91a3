"""A Zotero library as a source: its items' files, with the metadata the library already holds.

Zotero keeps everything in one SQLite file, `zotero.sqlite`, in its data directory, and holds
it locked while it runs. The library is read without ever writing to it: the database file (and
the journal or write-ahead log beside it, where present) is copied byte for byte to a temporary
directory, the copy is checked with `PRAGMA quick_check` and read; a copy taken while Zotero was
writing fails the check and is taken again. The original's bytes and modification time never
change.

What is read: every regular item (not a note, an attachment or an annotation) of the user's and
its group libraries, skipping the trash and feeds, with its first PDF attachment: a stored file
(`storage:NAME` in `storage/<attachment key>/`) or a linked file (an absolute path; one relative
to Zotero's linked-attachment base directory, `attachments:...`, only when that directory is
given: Zotero keeps it in its profile's prefs.js, which is not read). An item whose PDF is
missing is reported, not fatal. An item without a PDF is read from its first other attachment
that MONJYU reads and that is there (a web page's snapshot, a Word, Markdown or text file), else
from its abstract; the items with neither (a bare reference, a link, an EPUB, a file not
downloaded, and no abstract) are named in a note, not indexed. Its metadata come from the
library: title, creators in order, year, DOI (the field, or a `DOI:` line in Extra), venue, item
type, abstract, tags, collections (with their path), the Zotero keys and, where present, the
citation key (Zotero's field, a `Citation Key:` line in Extra, or Better BibTeX's
`better-bibtex.sqlite`). The user's own words on it, unless turned off (`ingest.annotations`):
the annotations on that PDF (Zotero 6 and later: highlights and underlines with their comments,
notes, comments on images and drawings), in page order, and the item's notes, as `UserNote`s
cited by what they are ("Your yellow highlight on p. 4").

Schemas: Zotero 5, 6 and 7: a `userdata` version up to MAX_USERDATA whose tables have Zotero 5's
layout (`_ZOTERO5_COLUMNS`); an older or newer database is refused with its version named.
"""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import MonjyuError
from .catalog import Catalog, CatalogEntry, UserNote, stamp_of

# What this reader needs that Zotero 5 brought (Zotero 4's userdata, e.g. 77, lacks them): the
# libraries' types (user, group, feed), the attachments' content types and the creators' names
# in one table. The newest userdata schema accepted: Zotero 7's are in the 120s.
_ZOTERO5_COLUMNS = (("libraries", "type"), ("itemAttachments", "contentType"), ("itemAttachments", "parentItemID"),
                    ("creators", "lastName"), ("items", "version"))
MAX_USERDATA = 139
COPY_ATTEMPTS = 5
_SKIPPED_TYPES = ("note", "attachment", "annotation")
PDF = "application/pdf"
# The kinds of file an item without a PDF may be read from: those that hold one document (a JSON
# file holds records of their own), where the index reads them (ingest.suffixes).
_ONE_DOCUMENT = (".html", ".htm", ".docx", ".md", ".markdown", ".txt")
_VENUE_FIELDS = ("publicationTitle", "proceedingsTitle", "bookTitle", "conferenceName", "repository",
                 "university", "institution", "publisher", "websiteTitle", "blogTitle")
_EXTRA_DOI = re.compile(r"^\s*DOI:\s*(10\.\S+)\s*$", re.IGNORECASE | re.MULTILINE)
_EXTRA_CITATION_KEY = re.compile(r"^\s*Citation Key:\s*(\S+)\s*$", re.IGNORECASE | re.MULTILINE)
_YEAR = re.compile(r"\b(1[5-9]\d\d|20\d\d)\b")
# Zotero's annotation types (itemAnnotations.type) as a citation names them; images and drawings
# carry only a comment.
_ANNOTATION_NAMES = {1: "highlight", 2: "note", 3: "comment", 4: "comment", 5: "underline", 6: "note"}
_MARKED_TEXT = (1, 5)  # highlights and underlines: the text they mark, then the comment
# The block elements of a note's HTML and of an abstract's markup (HTML, or the JATS XML of abstracts
# Crossref gives: "<jats:title>Abstract</jats:title><jats:p>...</jats:p>"), each a line of its text.
_BLOCKS = frozenset({"p", "div", "br", "h1", "h2", "h3", "h4", "h5", "h6", "li", "pre", "blockquote", "tr", "hr",
                     "title", "sec", "list-item"})
# The colours of Zotero's annotation palette.
_COLOURS = {"#ffd400": "yellow", "#ff6666": "red", "#5fb236": "green", "#2ea8e5": "blue", "#a28ae5": "purple",
            "#e56eee": "magenta", "#f19837": "orange", "#aaaaaa": "grey"}


@dataclass
class LibraryItem:
    """One item of a Zotero library, as indexed: its file and the metadata that win over parsing."""

    key: str  # the item's key
    library: str  # "" for the user's library, "groups/<group id>" for a group's
    attachment_key: str  # the attachment's own key (what zotero://open-pdf or zotero://open opens); "": none
    file: Path | None  # its PDF, else a file of another kind (`_ONE_DOCUMENT`); None: read from its abstract
    title: str
    creators: list[str]
    year: int | None
    metadata: dict[str, Any] = field(default_factory=dict)  # doi, venue, item_type, tags, ...
    notes: list[UserNote] = field(default_factory=list)  # its PDF's annotations, then its notes

    @property
    def document_id(self) -> str:
        """Stable across runs and moves of the data directory: the library and the item key."""
        return f"{CATALOG_PREFIX}{self.library + '/' if self.library else ''}{self.key}"

    @property
    def stamp(self) -> str:
        """What the index compares between runs: a changed field, tag, collection, annotation or note
        reloads the item (an item with neither keeps the stamp it had before they were read)."""
        record = {"title": self.title, "creators": self.creators, "year": self.year, **self.metadata,
                  **({"notes": [[n.heading, n.text, n.page] for n in self.notes]} if self.notes else {})}
        return stamp_of(record)


@dataclass
class Library:
    """What a Zotero data directory holds for the index."""

    data_dir: Path
    userdata_version: int
    items: list[LibraryItem]
    missing: list[tuple[str, str]]  # (item, why its PDF cannot be read)
    without_file: list[str] = field(default_factory=list)  # items with no file it reads nor abstract, by name


CATALOG_PREFIX = "zotero/"
# Where, in the index directory, the files of the items read from their abstract are kept.
ABSTRACTS_FOLDER = "zotero-abstracts"


def library_catalog(library: Library) -> Catalog:
    """The library's files as the index's catalog: ids from item keys, the library's metadata
    (after `write_abstracts`, which gives the items read from their abstract their file)."""
    return Catalog(CATALOG_PREFIX, {str(item.file.resolve()): CatalogEntry(
        item.document_id, item.stamp, item.title, item.creators, item.year, item.metadata, item.notes)
        for item in library.items})


def write_abstracts(library: Library, folder: Path) -> list[LibraryItem]:
    """The items read from their abstract, each given a Markdown file of its title and abstract in
    `folder` (the index keeps it: the build reads files), rewritten only when it changed, so that
    an unchanged abstract is an unchanged file; the files of items no longer there are removed."""
    from_abstract = [item for item in library.items if item.file is None]
    wanted = {}
    for item in from_abstract:
        name = item.document_id.removeprefix(CATALOG_PREFIX).replace("/", "-") + ".md"
        wanted[name] = f"# {item.title or item.key}\n\n{_plain_text(item.metadata['abstract'])}\n"
        item.file = folder / name
    if wanted:
        folder.mkdir(parents=True, exist_ok=True)
    for name, text in wanted.items():
        path = folder / name
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
    if folder.is_dir():
        for stale in folder.glob("*.md"):
            if stale.name not in wanted:
                stale.unlink()
    return from_abstract


def zotero_links(zotero: dict[str, str], page: int | None = None) -> dict[str, str]:
    """zotero://select for the item; zotero://open-pdf for its PDF attachment (at a 1-based page),
    or zotero://open for an attachment of another kind (Zotero 7's link, which opens a snapshot in
    its reader; earlier versions have none); nothing more for an item read from its abstract.
    `zotero`: the keys a document from a library carries (key, library, attachment_key,
    attachment_type; an index built before attachment_type has PDFs only)."""
    library = zotero["library"] or "library"
    links = {"select": f"zotero://select/{library}/items/{zotero['key']}"}
    if zotero["attachment_key"]:  # none for an item read from its abstract
        attachment = f"{library}/items/{zotero['attachment_key']}"
        if zotero.get("attachment_type", PDF) == PDF:
            links["open_pdf"] = f"zotero://open-pdf/{attachment}" + (f"?page={page}" if page else "")
        else:
            links["open"] = f"zotero://open/{attachment}"
    return links


def default_data_dir() -> Path:
    """Zotero's default data directory: ~/Zotero on every platform since Zotero 5."""
    return Path.home() / "Zotero"


def read_library(data_dir: Path, linked_base: Path | None = None, annotations: bool = True,
                 suffixes: tuple[str, ...] = _ONE_DOCUMENT) -> Library:
    """The library in `data_dir`, read from a checked byte copy of its database; `annotations`:
    with each item's annotations and notes; `suffixes`: the kinds of file the index reads (an item
    without a PDF is read from one of those)."""
    data_dir = Path(data_dir).expanduser().resolve()
    database = data_dir / "zotero.sqlite"
    if not data_dir.is_dir():
        raise MonjyuError(f"no Zotero data directory at {data_dir}; give the folder that holds zotero.sqlite "
                          "(Zotero: Settings > Advanced > Files and Folders > Data Directory Location)")
    if not database.is_file():
        raise MonjyuError(f"{data_dir} holds no zotero.sqlite; give Zotero's data directory "
                          "(Settings > Advanced > Files and Folders > Data Directory Location)")
    with tempfile.TemporaryDirectory(prefix="monjyu-zotero-") as tmp:
        db = _checked_copy(database, Path(tmp))
        try:
            version = _userdata_version(db, database)
            items, missing, without_file = _items(db, data_dir, linked_base, annotations,
                                                  tuple(s for s in suffixes if s in _ONE_DOCUMENT))
            _add_better_bibtex_keys(data_dir, Path(tmp), items)
        finally:
            db.close()
    return Library(data_dir, version, items, missing, without_file)


def _checked_copy(database: Path, tmp: Path) -> sqlite3.Connection:
    """A connection to a byte copy of the database (with its journal or write-ahead log) that
    passes `PRAGMA quick_check`; a copy taken mid-write is taken again."""
    problem = ""
    for attempt in range(COPY_ATTEMPTS):
        copy = tmp / f"copy{attempt}" / "zotero.sqlite"
        copy.parent.mkdir()
        for suffix in ("", "-wal", "-journal"):
            source = database.with_name(database.name + suffix)
            if source.exists():
                shutil.copyfile(source, copy.with_name(copy.name + suffix))
        db = sqlite3.connect(copy)
        try:
            result = db.execute("PRAGMA quick_check").fetchone()[0]
            if result == "ok":
                return db
            problem = result
        except sqlite3.DatabaseError as exc:
            problem = str(exc)
        db.close()
        time.sleep(0.2 * (attempt + 1))
    raise MonjyuError(f"{database} could not be read: {COPY_ATTEMPTS} copies failed SQLite's check ({problem}); "
                      "if Zotero is busy (syncing, importing), try again when it is idle")


def _userdata_version(db: sqlite3.Connection, database: Path) -> int:
    try:
        row = db.execute("SELECT version FROM version WHERE schema = 'userdata'").fetchone()
    except sqlite3.DatabaseError:
        row = None
    if row is None:
        raise MonjyuError(f"{database} is not a Zotero database (no userdata schema version)")
    version = int(row[0])
    if version > MAX_USERDATA:
        raise MonjyuError(f"{database} has Zotero userdata schema {version}, newer than this MONJYU knows; it reads "
                          f"Zotero 5, 6 and 7 libraries (userdata up to {MAX_USERDATA}): update MONJYU")
    missing = [f"{table}.{column}" for table, column in _ZOTERO5_COLUMNS
               if column not in {r[1] for r in db.execute(f"PRAGMA table_info({table})")}]
    if missing:
        raise MonjyuError(f"{database} has Zotero userdata schema {version}, older than Zotero 5 (it lacks "
                          f"{', '.join(missing)}); open it once in Zotero 7 to upgrade it")
    return version


def _items(db: sqlite3.Connection, data_dir: Path, linked_base: Path | None, annotations: bool,
           readable: tuple[str, ...]) -> tuple[list[LibraryItem], list[tuple[str, str]], list[str]]:
    trashed = {r[0] for r in db.execute("SELECT itemID FROM deletedItems")}
    libraries = {lib: ("" if kind == "user" else None) for lib, kind in db.execute("SELECT libraryID, type FROM libraries")
                 if kind in ("user", "group")}
    for group, lib in db.execute("SELECT groupID, libraryID FROM groups"):
        if lib in libraries:
            libraries[lib] = f"groups/{group}"
    rows = db.execute("SELECT i.itemID, i.key, i.libraryID, t.typeName FROM items i "
                      "JOIN itemTypes t ON t.itemTypeID = i.itemTypeID ORDER BY i.itemID").fetchall()
    regular = [(item_id, key, lib, kind) for item_id, key, lib, kind in rows
               if kind not in _SKIPPED_TYPES and item_id not in trashed and libraries.get(lib) is not None]
    fields = _fields(db)
    creators = _creators(db)
    tags = _grouped(db, "SELECT it.itemID, t.name FROM itemTags it JOIN tags t ON t.tagID = it.tagID "
                        "ORDER BY it.itemID, t.name")
    collections = _collection_paths(db)
    in_collections = _grouped(db, "SELECT itemID, collectionID FROM collectionItems ORDER BY itemID, collectionID")
    attachments = _file_attachments(db, trashed)
    marked = _annotations(db, trashed) if annotations else {}
    notes = _notes(db, trashed) if annotations else {}
    items, missing, without_file = [], [], []
    for item_id, key, lib, kind in regular:
        values = fields.get(item_id, {})
        title = values.get("title", "").strip()
        name = f"{title or key} (Zotero item {key})"
        files = attachments.get(item_id, [])
        pdf = next((a for a in files if a.content_type == PDF), None)
        if pdf is not None:
            attachment, file = pdf, pdf.file(data_dir, linked_base)
            if file is None or not file.is_file():
                missing.append((name, f"its PDF is missing ({file or attachment.path}); the item is skipped"))
                continue
        else:  # the first other file the index reads that is there, else its abstract
            attachment, file = next(((a, f) for a in files if Path(a.path).suffix.lower() in readable
                                     and (f := a.file(data_dir, linked_base)) is not None and f.is_file()),
                                    (None, None))
            if attachment is None and not _plain_text(values.get("abstractNote", "")):
                without_file.append(title or key)  # a bare reference, a link, an EPUB, a file not downloaded
                continue
        attachment_key = attachment.key if attachment else ""  # "": read from its abstract
        extra = values.get("extra", "")
        doi = values.get("DOI", "") or next(iter(_EXTRA_DOI.findall(extra)), "")
        year = _YEAR.search(values.get("date", ""))
        metadata = {
            "doi": doi.strip(), "venue": next((values[f] for f in _VENUE_FIELDS if values.get(f)), ""),
            "item_type": kind, "abstract": values.get("abstractNote", ""),
            "tags": tags.get(item_id, []),
            "collections": sorted(collections[c] for c in in_collections.get(item_id, []) if c in collections),
            "citation_key": values.get("citationKey", "") or next(iter(_EXTRA_CITATION_KEY.findall(extra)), ""),
            "zotero": {"key": key, "library": libraries[lib], "attachment_key": attachment_key,
                       "attachment_type": attachment.content_type if attachment else ""},
        }
        marks = marked.get(attachment.item_id, []) if attachment else []
        items.append(LibraryItem(key, libraries[lib], attachment_key, file, title, creators.get(item_id, []),
                                 int(year.group(1)) if year else None, metadata, marks + notes.get(item_id, [])))
    return items, missing, without_file


def _fields(db: sqlite3.Connection) -> dict[int, dict[str, str]]:
    table = "fieldsCombined" if _has_table(db, "fieldsCombined") else "fields"
    out: dict[int, dict[str, str]] = {}
    for item_id, name, value in db.execute(
            f"SELECT d.itemID, f.fieldName, v.value FROM itemData d JOIN {table} f ON f.fieldID = d.fieldID "
            "JOIN itemDataValues v ON v.valueID = d.valueID"):
        out.setdefault(item_id, {})[name] = str(value)
    return out


def _creators(db: sqlite3.Connection) -> dict[int, list[str]]:
    """Each item's creators in their order: "First Last", or the one-field name (fieldMode 1)."""
    out: dict[int, list[str]] = {}
    for item_id, first, last, mode in db.execute(
            "SELECT ic.itemID, c.firstName, c.lastName, c.fieldMode FROM itemCreators ic "
            "JOIN creators c ON c.creatorID = ic.creatorID ORDER BY ic.itemID, ic.orderIndex"):
        name = (last or "") if mode == 1 else " ".join(p for p in (first, last) if p)
        if name.strip():
            out.setdefault(item_id, []).append(name.strip())
    return out


def _grouped(db: sqlite3.Connection, sql: str) -> dict[int, list]:
    out: dict[int, list] = {}
    for item_id, value in db.execute(sql):
        out.setdefault(item_id, []).append(value)
    return out


def _collection_paths(db: sqlite3.Connection) -> dict[int, str]:
    """Each collection's path from its library's root ("Thesis/Chapter 2")."""
    rows = {cid: (name, parent) for cid, name, parent in
            db.execute("SELECT collectionID, collectionName, parentCollectionID FROM collections")}

    def path(cid: int, seen: frozenset = frozenset()) -> str:
        name, parent = rows[cid]
        if parent in rows and parent not in seen:
            return f"{path(parent, seen | {cid})}/{name}"
        return name

    return {cid: path(cid) for cid in rows}


@dataclass(frozen=True)
class Attachment:
    """A file attached to an item (stored or linked; not a link to a web page)."""

    item_id: int
    key: str
    link_mode: int
    path: str  # as Zotero writes it: "storage:NAME", "attachments:...", or an absolute path
    content_type: str

    def file(self, data_dir: Path, linked_base: Path | None) -> Path | None:
        return _attachment_path(data_dir, self.key, self.link_mode, self.path, linked_base)


def _file_attachments(db: sqlite3.Connection, trashed: set[int]) -> dict[int, list[Attachment]]:
    """Each parent item's file attachments (not trashed; stored or linked), in the order they
    were added."""
    out: dict[int, list[Attachment]] = {}
    for item_id, parent, key, mode, path, content_type in db.execute(
            "SELECT a.itemID, a.parentItemID, i.key, a.linkMode, a.path, a.contentType FROM itemAttachments a "
            "JOIN items i ON i.itemID = a.itemID WHERE a.parentItemID IS NOT NULL AND a.linkMode IN (0, 1, 2) "
            "ORDER BY a.itemID"):
        if item_id not in trashed and path:
            out.setdefault(parent, []).append(Attachment(item_id, key, mode, path, content_type or ""))
    return out


def _annotations(db: sqlite3.Connection, trashed: set[int]) -> dict[int, list[UserNote]]:
    """Each attachment's annotations (none before Zotero 6) in reading order (Zotero's sortIndex:
    page, then place on it): the marked text and the comment, named with the colour and page
    label Zotero shows; the page is the 1-based index in the PDF."""
    if not _has_table(db, "itemAnnotations"):
        return {}
    out: dict[int, list[UserNote]] = {}
    for item_id, parent, kind, text, comment, colour, label, position in db.execute(
            "SELECT itemID, parentItemID, type, text, comment, color, pageLabel, position FROM itemAnnotations "
            "ORDER BY parentItemID, sortIndex, itemID"):
        words = "\n\n".join(p.strip() for p in ((text if kind in _MARKED_TEXT else ""), comment) if p and p.strip())
        if item_id in trashed or not words:
            continue
        try:
            page = int(json.loads(position)["pageIndex"]) + 1
        except (ValueError, KeyError, TypeError):
            page = None
        name = " ".join(p for p in (_COLOURS.get((colour or "").lower(), "") if kind in _MARKED_TEXT else "",
                                    _ANNOTATION_NAMES.get(kind, "annotation")) if p)
        where = f" on p. {label or page}" if (label or page) else ""
        out.setdefault(parent, []).append(UserNote(f"Your {name}{where}", words, page))
    return out


def _notes(db: sqlite3.Connection, trashed: set[int]) -> dict[int, list[UserNote]]:
    """Each item's child notes as plain text, a line a paragraph."""
    out: dict[int, list[UserNote]] = {}
    for item_id, parent, html in db.execute(
            "SELECT itemID, parentItemID, note FROM itemNotes WHERE parentItemID IS NOT NULL ORDER BY itemID"):
        text = _plain_text(html or "")
        if item_id not in trashed and text:
            out.setdefault(parent, []).append(UserNote("Your note", text))
    return out


def _plain_text(markup: str) -> str:
    """Zotero keeps a note as HTML, and an abstract as the source gave it (plain, HTML or JATS
    XML): its blocks (paragraphs, headings, list items, ...) become lines; inline markup (bold,
    links, citations) and the source's own line breaks do not."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(markup, "html.parser")
    for tag in soup.find_all(lambda tag: tag.name.rsplit(":", 1)[-1] in _BLOCKS):  # "jats:p" is a "p"
        tag.insert_before("\x00")
        tag.insert_after("\x00")
    lines = (" ".join(part.split()) for part in soup.get_text("").split("\x00"))
    return "\n".join(line for line in lines if line)


def _attachment_path(data_dir: Path, key: str, link_mode: int, path: str, linked_base: Path | None) -> Path | None:
    """Where an attachment's file is: stored files in storage/<key>/, linked files where they
    were linked (relative ones under the linked-attachment base directory, when given)."""
    if path.startswith("storage:"):
        return data_dir / "storage" / key / path[len("storage:"):]
    if path.startswith("attachments:"):
        return linked_base / path[len("attachments:"):] if linked_base else None
    return Path(path) if link_mode == 2 else None


def _has_table(db: sqlite3.Connection, name: str) -> bool:
    return db.execute("SELECT 1 FROM sqlite_master WHERE type IN ('table', 'view') AND name = ?", (name,)).fetchone() is not None


def _add_better_bibtex_keys(data_dir: Path, tmp: Path, items: list[LibraryItem]) -> None:
    """Citation keys from Better BibTeX's database beside the library (a copy read), for items
    with none of their own."""
    source = data_dir / "better-bibtex.sqlite"
    if not source.is_file() or not items:
        return
    copy = tmp / "better-bibtex.sqlite"
    shutil.copyfile(source, copy)
    db = sqlite3.connect(copy)
    try:
        columns = {r[1] for r in db.execute("PRAGMA table_info(citationkey)")}
        if not {"itemKey", "citationKey"} <= columns:
            return
        keys = dict(db.execute("SELECT itemKey, citationKey FROM citationkey"))
    except sqlite3.DatabaseError:
        return
    finally:
        db.close()
    for item in items:
        if not item.metadata["citation_key"] and item.key in keys:
            item.metadata["citation_key"] = keys[item.key]
