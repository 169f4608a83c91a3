"""A Zotero library as a source, on a real Zotero 6 data directory (zotero-dev, 17 items with
PDFs): every item indexed with the library's metadata, the database never written, a locked
database read, and items trashed or added between runs picked up. Expected values come from the
SQLite file through this test's own queries, not the product's code."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from monjyu import Monjyu, MonjyuConfig
from monjyu.errors import MonjyuError
from monjyu.api import ALL_MODES
from monjyu.ingest.zotero import read_library
from monjyu import SearchFilters
from monjyu.retrieval.filters import library_documents, parse_filters
from tests.conftest import BENCH_DATA
from tests.test_options import cited_paths, passages

ZOTERO_DEV = BENCH_DATA / "zotero-dev"
pytestmark = pytest.mark.skipif(not ZOTERO_DEV.is_dir(), reason="zotero-dev is not beside the checkout")


def expected_items(database: Path) -> dict[str, dict]:
    """Each regular, untrashed item with a PDF attachment, read with plain SQL: title, first
    creator, year, DOI (field or Extra), tags and collection names."""
    db = sqlite3.connect(f"file:{database}?immutable=1", uri=True)

    def field(item_id: int, name: str) -> str:
        row = db.execute("SELECT v.value FROM itemData d JOIN fields f ON f.fieldID = d.fieldID "
                         "JOIN itemDataValues v ON v.valueID = d.valueID WHERE d.itemID = ? AND f.fieldName = ?",
                         (item_id, name)).fetchone()
        return row[0] if row else ""

    out = {}
    for item_id, key in db.execute(
            "SELECT i.itemID, i.key FROM items i JOIN itemTypes t ON t.itemTypeID = i.itemTypeID "
            "WHERE t.typeName NOT IN ('attachment', 'note', 'annotation') "
            "AND i.itemID NOT IN (SELECT itemID FROM deletedItems) AND EXISTS (SELECT 1 FROM itemAttachments a "
            "WHERE a.parentItemID = i.itemID AND a.contentType = 'application/pdf')"):
        first = db.execute("SELECT c.firstName, c.lastName FROM itemCreators ic JOIN creators c "
                           "ON c.creatorID = ic.creatorID WHERE ic.itemID = ? ORDER BY ic.orderIndex LIMIT 1",
                           (item_id,)).fetchone()
        extra_doi = [line.split(":", 1)[1].strip() for line in field(item_id, "extra").splitlines()
                     if line.lower().startswith("doi:")]
        out[f"zotero/{key}"] = {
            "title": field(item_id, "title"), "first_creator": " ".join(p for p in first if p) if first else None,
            "year": int(field(item_id, "date")[:4]) if field(item_id, "date")[:4].isdigit() else None,
            "doi": field(item_id, "DOI") or (extra_doi[0] if extra_doi else ""),
            "tags": sorted(r[0] for r in db.execute("SELECT t.name FROM itemTags it JOIN tags t ON t.tagID = it.tagID "
                                                    "WHERE it.itemID = ?", (item_id,))),
            "collections": sorted(r[0] for r in db.execute(
                "SELECT c.collectionName FROM collectionItems ci JOIN collections c ON c.collectionID = ci.collectionID "
                "WHERE ci.itemID = ?", (item_id,))),
            "item_type": db.execute("SELECT t.typeName FROM items i JOIN itemTypes t ON t.itemTypeID = i.itemTypeID "
                                    "WHERE i.itemID = ?", (item_id,)).fetchone()[0]}
    db.close()
    return out


def fingerprint(path: Path) -> tuple[str, int]:
    return hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns


@pytest.fixture(scope="module")
def library(tmp_path_factory, cache_dir):
    """zotero-dev indexed once through the CLI (Levels 0 and 1: every mode runs on it), and a
    copy of it that tests change; the original database's bytes and modification time recorded
    before and after."""
    root = tmp_path_factory.mktemp("zotero")
    before = fingerprint(ZOTERO_DEV / "zotero.sqlite")
    data_dir = root / "Zotero"
    shutil.copytree(ZOTERO_DEV, data_dir)
    for path in [data_dir, *data_dir.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    config = root / "monjyu.yaml"
    config.write_text(f"cache_dir: {cache_dir}\n", encoding="utf-8")
    index = root / "idx"
    run = subprocess.run([sys.executable, "-m", "monjyu.cli", "index", "--zotero", str(ZOTERO_DEV), "--index",
                          str(index), "--config", str(config), "--json"],
                         capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr
    return {"data_dir": data_dir, "index": index, "config": config, "report": json.loads(run.stdout),
            "before": before, "after": fingerprint(ZOTERO_DEV / "zotero.sqlite")}


def papers(library) -> dict[str, dict]:
    run = subprocess.run([sys.executable, "-m", "monjyu.cli", "papers", "--index", str(library["index"]), "--json",
                          "--config", str(library["config"])], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    return {p["id"]: p for p in json.loads(run.stdout)["papers"]}


def test_every_item_with_a_pdf_is_indexed_with_the_library_metadata(library):
    expected = expected_items(ZOTERO_DEV / "zotero.sqlite")
    assert len(expected) == 17 and library["report"]["failures"] == []
    got = papers(library)
    assert set(expected) == {d for d, p in got.items() if p["zotero"]["attachment_type"] == "application/pdf"}
    for doc_id, want in expected.items():
        paper = got[doc_id]
        assert paper["title"] == want["title"] and paper["authors"][0] == want["first_creator"], doc_id
        assert (paper["year"], paper["doi"]) == (want["year"], want["doi"]), doc_id
        assert sorted(paper["tags"]) == want["tags"] and sorted(paper["collections"]) == want["collections"], doc_id
        key = doc_id.split("/")[-1]
        assert paper["zotero"]["key"] == key and paper["zotero"]["select"] == f"zotero://select/library/items/{key}"
        attachment = paper["zotero"]["attachment_key"]
        assert f"/storage/{attachment}/" in paper["source_path"]
        assert paper["zotero"]["open_pdf"] == f"zotero://open-pdf/library/items/{attachment}"


def test_the_database_is_never_written(library):
    assert library["before"] == library["after"]


def test_a_database_locked_by_a_writer_is_read_from_a_checked_copy(library, tmp_path):
    """Zotero holds its database in a write transaction while it runs: a byte copy is read."""
    data_dir = tmp_path / "Zotero"
    data_dir.mkdir()
    shutil.copyfile(library["data_dir"] / "zotero.sqlite", data_dir / "zotero.sqlite")
    shutil.copytree(library["data_dir"] / "storage", data_dir / "storage")
    writer = sqlite3.connect(data_dir / "zotero.sqlite", isolation_level=None)
    writer.execute("BEGIN EXCLUSIVE")
    writer.execute("UPDATE itemDataValues SET value = 'uncommitted' WHERE valueID = "
                   "(SELECT valueID FROM itemData d JOIN fields f ON f.fieldID = d.fieldID WHERE f.fieldName = 'title' LIMIT 1)")
    try:
        with pytest.raises(sqlite3.OperationalError):  # what reading it in place meets
            sqlite3.connect(data_dir / "zotero.sqlite", timeout=0.1).execute("SELECT count(*) FROM items").fetchone()
        read = read_library(data_dir)
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    assert len(read.items) == 17 + 5 and all(item.title != "uncommitted" for item in read.items)  # PDFs, abstracts


def trash_one_and_add_one(data_dir: Path) -> tuple[str, str]:
    """As Zotero writes them: an item moved to the trash (a deletedItems row), and a new
    preprint with a stored PDF attachment (items, itemData, itemAttachments, the file in
    storage/<attachment key>/)."""
    db = sqlite3.connect(data_dir / "zotero.sqlite")
    trashed_id, trashed_key = db.execute(
        "SELECT i.itemID, i.key FROM items i JOIN itemTypes t ON t.itemTypeID = i.itemTypeID "
        "WHERE t.typeName = 'book' ORDER BY i.itemID LIMIT 1").fetchone()
    db.execute("INSERT INTO deletedItems (itemID) VALUES (?)", (trashed_id,))

    def add_item(type_name: str, key: str) -> int:
        type_id = db.execute("SELECT itemTypeID FROM itemTypes WHERE typeName = ?", (type_name,)).fetchone()[0]
        cur = db.execute("INSERT INTO items (itemTypeID, libraryID, key, version) VALUES (?, 1, ?, 0)", (type_id, key))
        return cur.lastrowid

    def set_field(item_id: int, name: str, value: str) -> None:
        field_id = db.execute("SELECT fieldID FROM fields WHERE fieldName = ?", (name,)).fetchone()[0]
        row = db.execute("SELECT valueID FROM itemDataValues WHERE value = ?", (value,)).fetchone()
        value_id = row[0] if row else db.execute("INSERT INTO itemDataValues (value) VALUES (?)", (value,)).lastrowid
        db.execute("INSERT INTO itemData (itemID, fieldID, valueID) VALUES (?, ?, ?)", (item_id, field_id, value_id))

    parent = add_item("preprint", "NEWITEM1")
    set_field(parent, "title", "Graph Retrieval Added Between Runs")
    set_field(parent, "date", "2024-03-00 March 2024")
    set_field(parent, "extra", "DOI: 10.1234/added.2024\nCitation Key: added2024graph")
    attachment = add_item("attachment", "NEWATT01")
    db.execute("INSERT INTO itemAttachments (itemID, parentItemID, linkMode, contentType, path) "
               "VALUES (?, ?, 0, 'application/pdf', 'storage:added.pdf')", (attachment, parent))
    db.commit()
    db.close()
    (data_dir / "storage" / "NEWATT01").mkdir()
    shutil.copyfile(BENCH_DATA / "papers-pdf" / "1706.03762.pdf", data_dir / "storage" / "NEWATT01" / "added.pdf")
    return f"zotero/{trashed_key}", "zotero/NEWITEM1"


def test_a_second_run_removes_the_trashed_item_and_adds_the_new_one(library, tmp_path, cache_dir):
    data_dir = tmp_path / "Zotero"
    shutil.copytree(library["data_dir"], data_dir)
    m = Monjyu(tmp_path / "idx", MonjyuConfig(cache_dir=str(cache_dir), graph={"enabled": False}))
    assert len(m.index(zotero=data_dir).added) == 17 + 5  # PDFs, abstracts
    assert m.index(zotero=data_dir).nothing_changed  # the same library again: nothing to do
    trashed, added = trash_one_and_add_one(data_dir)
    report = m.index(zotero=data_dir)
    assert len(report.removed) == 1 and len(report.added) == 1 and not report.changed and not report.failures
    ids = {p["id"]: p for p in m.papers.list()["papers"]}
    assert trashed not in ids and ids[added]["title"] == "Graph Retrieval Added Between Runs"
    assert (ids[added]["year"], ids[added]["doi"], ids[added]["item_type"]) == (2024, "10.1234/added.2024", "preprint")
    assert ids[added]["authors"]  # the library has no creators for it: the PDF's byline is kept
    # BibTeX keyed by the library's citation key, typed by its item type.
    assert ids[added]["citation_key"] == "added2024graph" and m.papers.bibtex([added]).startswith("@misc{added2024graph,")
    book = next(doc for doc, p in ids.items() if p["item_type"] == "book")
    entry = m.papers.bibtex([book])
    assert entry.startswith("@book{") and f"publisher = {{{ids[book]['venue']}}}" in entry
    # The data directory moved: the same library, its documents at their new paths, nothing embedded.
    moved_to = tmp_path / "Documents" / "Zotero"
    moved_to.parent.mkdir()
    shutil.move(str(data_dir), str(moved_to))
    report = m.index(zotero=moved_to)
    assert len(report.moved) == 17 and report.embedded == 0 and not (report.added or report.removed or report.failures)
    assert report.unchanged == 5  # read from their abstracts, which the index keeps
    assert all(p["source_path"].startswith(str(moved_to)) for p in m.papers.list()["papers"] if p["zotero"]["attachment_key"])


ISS_PAPER = "9PWIL7JY"  # "Almost ISS property for feedback connected systems"; its PDF attachment: BHZP9XFD
HIGHLIGHT = ("A continuous function β : [0, ∞) × [0, ∞) → [0, ∞) is of class KL, when β(·, t) is of class K "
             "for each fixed t ≥ 0, and β(r, t) decreases to 0 as t → ∞ for each fixed r ≥ 0.")
COMMENT = "Class KL functions bound how fast the state of an ISS system forgets its initial condition."


def annotate(data_dir: Path) -> None:
    """As Zotero 6 writes them: a yellow highlight with a comment on the third page of a paper's
    PDF (printed page label 47; an annotation item whose parent is the PDF attachment), and a
    child note of the paper (HTML)."""
    db = sqlite3.connect(data_dir / "zotero.sqlite")
    attachment = db.execute("SELECT a.itemID FROM itemAttachments a JOIN items i ON i.itemID = a.itemID "
                            "WHERE i.key = 'BHZP9XFD'").fetchone()[0]
    parent = db.execute("SELECT itemID FROM items WHERE key = ?", (ISS_PAPER,)).fetchone()[0]

    def add_item(type_name: str, key: str) -> int:
        type_id = db.execute("SELECT itemTypeID FROM itemTypes WHERE typeName = ?", (type_name,)).fetchone()[0]
        return db.execute("INSERT INTO items (itemTypeID, libraryID, key, version) VALUES (?, 1, ?, 0)",
                          (type_id, key)).lastrowid

    highlight = add_item("annotation", "ANNOT001")
    position = json.dumps({"pageIndex": 2, "rects": [[71.2, 420.5, 523.9, 446.1]]})
    db.execute("INSERT INTO itemAnnotations (itemID, parentItemID, type, authorName, text, comment, color, pageLabel, "
               "sortIndex, position, isExternal) VALUES (?, ?, 1, '', ?, ?, '#ffd400', '47', '00002|001234|00345', ?, 0)",
               (highlight, attachment, HIGHLIGHT, COMMENT, position))
    note = add_item("note", "NOTE0001")
    db.execute("INSERT INTO itemNotes (itemID, parentItemID, note, title) VALUES (?, ?, ?, ?)",
               (note, parent, '<div data-schema-version="8"><p>Reading group: present the <b>small-gain</b> '
                               'theorem of this paper on Tuesday.</p></div>', "Reading group"))
    db.commit()
    db.close()


def test_highlights_and_notes_are_searchable_and_cited_as_the_users_own(library, tmp_path, cache_dir):
    """An annotation added between two runs reloads its paper only; a question is answered from
    the highlight's comment, cited as the user's highlight at its page label, with zotero://
    opening the PDF at its page; the item's note is a unit too; `ingest.annotations: false`
    takes them out again."""
    data_dir = tmp_path / "Zotero"
    shutil.copytree(library["data_dir"], data_dir)
    m = Monjyu(tmp_path / "idx", MonjyuConfig(cache_dir=str(cache_dir), graph={"enabled": False}))
    m.index(zotero=data_dir)
    annotate(data_dir)
    report = m.index(zotero=data_dir)
    assert len(report.changed) == 1 and "/storage/BHZP9XFD/" in report.changed[0]
    assert not (report.added or report.removed or report.failures) and report.embedded <= 3
    result = m.search("What does a class KL function bound in an ISS system?", top_k=5)
    cited = [c for c in result.answer.citations if c.kind == "annotation"]
    assert cited and COMMENT in result.answer.text, result.answer.text
    assert cited[0].section == "Your yellow highlight on p. 47" and cited[0].page == 3
    assert cited[0].label.endswith("Your yellow highlight on p. 47")
    assert cited[0].zotero["open_pdf"] == "zotero://open-pdf/library/items/BHZP9XFD?page=3"
    notes = m.search("When is the small-gain theorem presented to the reading group?",
                     filters=SearchFilters(kinds=["annotation"])).hits
    assert {(h.section, h.page) for h in notes} == {("Your note", None), ("Your yellow highlight on p. 47", 3)}
    assert any("present the small-gain theorem of this paper on Tuesday" in h.text for h in notes)
    m.config.ingest.annotations = False  # a changed ingest setting reloads every file; nothing is embedded
    report = m.index(zotero=data_dir)
    assert report.embedded == 0 and not m.search("class KL", filters=SearchFilters(kinds=["annotation"])).hits


def test_a_missing_pdf_is_reported_and_the_rest_indexed(library, tmp_path, cache_dir):
    data_dir = tmp_path / "Zotero"
    shutil.copytree(library["data_dir"], data_dir)
    victim = next((data_dir / "storage").glob("*/*.pdf"))
    victim.unlink()
    m = Monjyu(tmp_path / "idx", MonjyuConfig(cache_dir=str(cache_dir), graph={"enabled": False}))
    report = m.index(zotero=data_dir)
    assert len(report.failures) == 1 and "PDF is missing" in report.failures[0][1]
    assert str(victim) in report.failures[0][1]
    assert report.documents == len(read_library(data_dir).items) >= 15


def without_pdf(database: Path) -> tuple[list[str], list[str]]:
    """The keys of the regular, untrashed items without a PDF attachment (zotero-dev has no other
    file on disk): those with an abstract and those with none, by plain SQL."""
    db = sqlite3.connect(f"file:{database}?immutable=1", uri=True)
    rows = db.execute(
        "SELECT i.key, (SELECT v.value FROM itemData d JOIN fields f ON f.fieldID = d.fieldID JOIN itemDataValues v "
        "ON v.valueID = d.valueID WHERE d.itemID = i.itemID AND f.fieldName = 'abstractNote') FROM items i "
        "JOIN itemTypes t ON t.itemTypeID = i.itemTypeID WHERE t.typeName NOT IN ('attachment', 'note', 'annotation') "
        "AND i.itemID NOT IN (SELECT itemID FROM deletedItems) AND NOT EXISTS (SELECT 1 FROM itemAttachments a "
        "WHERE a.parentItemID = i.itemID AND a.contentType = 'application/pdf')").fetchall()
    db.close()
    return [key for key, abstract in rows if abstract], [key for key, abstract in rows if not abstract]


def test_an_item_without_a_pdf_is_read_from_its_snapshot_else_its_abstract(library, tmp_path, cache_dir):
    """zotero-dev's preprint "A combination of small-gain and density propagation inequalities ..."
    has no PDF, and a web page snapshot whose file the data directory lacks: it is indexed from its
    abstract (as four software items are, from theirs), answers from it and cites the item
    (zotero://select: no file to open); the items with neither a file nor an abstract are named. With
    the snapshot in storage (the arXiv page, written here from the item's abstract), it is read from
    the snapshot, which its citations open in Zotero 7 (zotero://open)."""
    with_abstract, bare = without_pdf(ZOTERO_DEV / "zotero.sqlite")
    assert (len(with_abstract), len(bare)) == (5, 16)
    notes = library["report"]["notes"]
    assert any(n.startswith("5 items of the Zotero library without a file MONJYU reads are indexed from their "
                            "abstract") for n in notes)
    assert any(n.startswith("16 items of the Zotero library have no file MONJYU reads") and "Towards WaterLab" in n
               for n in notes)
    db = sqlite3.connect(library["data_dir"] / "zotero.sqlite")
    item_id, item_key, attachment_key, path = db.execute(
        "SELECT p.itemID, p.key, i.key, a.path FROM itemAttachments a JOIN items i ON i.itemID = a.itemID "
        "JOIN items p ON p.itemID = a.parentItemID WHERE a.contentType = 'text/html'").fetchone()
    title, abstract = (db.execute("SELECT v.value FROM itemData d JOIN fields f ON f.fieldID = d.fieldID "
                                  "JOIN itemDataValues v ON v.valueID = d.valueID WHERE d.itemID = ? AND f.fieldName = ?",
                                  (item_id, name)).fetchone()[0] for name in ("title", "abstractNote"))
    db.close()
    doc_id, question = f"zotero/{item_key}", ("Which inequalities are combined to prove almost input-to-state "
                                              "stability of the network?")
    paper = papers(library)[doc_id]
    assert item_key in with_abstract and paper["title"] == title
    assert paper["zotero"]["select"] == f"zotero://select/library/items/{item_key}"
    assert "open" not in paper["zotero"] and "open_pdf" not in paper["zotero"]
    result = Monjyu(library["index"], MonjyuConfig(cache_dir=str(cache_dir))).search(question, top_k=3)
    cited = [c for c in result.answer.citations if c.document_id == doc_id]
    assert cited and "density propagation" in result.answer.text
    assert cited[0].zotero == {"select": f"zotero://select/library/items/{item_key}"}

    data_dir = tmp_path / "Zotero"
    shutil.copytree(library["data_dir"], data_dir)
    snapshot = data_dir / "storage" / attachment_key / path.removeprefix("storage:")
    snapshot.parent.mkdir()
    snapshot.write_text(f"<html><head><title>[1508.06018] {title}</title></head><body>"
                        "<header>Skip to main content. We gratefully acknowledge support from the Simons Foundation."
                        f"</header><nav>arXiv &gt; math &gt; arXiv:1508.06018</nav><h1>{title}</h1>"
                        f"<blockquote>Abstract: {abstract}</blockquote><footer>About Help Contact</footer></body></html>",
                        encoding="utf-8")
    m = Monjyu(tmp_path / "idx", MonjyuConfig(cache_dir=str(cache_dir), graph={"enabled": False}))
    report = m.index(zotero=data_dir)
    assert report.failures == [] and report.documents == 17 + 5
    assert any(n.startswith("4 items of the Zotero library without a file") for n in report.notes)
    paper = next(p for p in m.papers.list()["papers"] if p["id"] == doc_id)
    assert paper["title"] == title and paper["source_path"] == str(snapshot)
    assert paper["zotero"]["open"] == f"zotero://open/library/items/{attachment_key}" and "open_pdf" not in paper["zotero"]
    result = m.search(question, top_k=3)
    cited = [c for c in result.answer.citations if c.document_id == doc_id]
    assert cited and "density propagation" in result.answer.text
    assert "Simons Foundation" not in result.answer.text
    assert cited[0].zotero == {"select": f"zotero://select/library/items/{item_key}",
                               "open": f"zotero://open/library/items/{attachment_key}"}


def test_an_abstract_in_jats_xml_reads_as_lines_of_words():
    """Zotero keeps the abstract Crossref gives an item added by its DOI as JATS XML: its title and
    paragraphs are lines of the abstract read (not "AbstractIn this paper ..."), its inline markup
    is not."""
    from monjyu.ingest.zotero import _plain_text

    jats = ("<jats:title>Abstract</jats:title><jats:p>In this paper, the problem of stability analysis of a "
            "<jats:italic>large-scale</jats:italic> interconnection of nonlinear systems is considered.</jats:p>"
            "<jats:p>A combination of the small-gain and density propagation inequalities is employed.</jats:p>")
    assert _plain_text(jats) == ("Abstract\nIn this paper, the problem of stability analysis of a large-scale "
                                 "interconnection of nonlinear systems is considered.\nA combination of the "
                                 "small-gain and density propagation inequalities is employed.")


def test_zotero_with_no_directory_reads_the_default_one(tmp_path):
    """`monjyu index --zotero` alone or before another option reads ~/Zotero (here a home with
    none: the error names it)."""
    from monjyu.cli import with_default_zotero

    assert with_default_zotero(["index", "--zotero"])[-1].endswith("Zotero")
    assert with_default_zotero(["index", "--zotero", "--index", "x"])[2].endswith("Zotero")
    assert with_default_zotero(["index", "--zotero", "lib"]) == ["index", "--zotero", "lib"]
    home = tmp_path / "home"
    home.mkdir()
    run = subprocess.run([sys.executable, "-m", "monjyu.cli", "index", "--zotero", "--index", str(tmp_path / "idx")],
                         capture_output=True, text=True, timeout=300, env={**os.environ, "HOME": str(home)})
    assert run.returncode == 2 and f"no Zotero data directory at {home / 'Zotero'}" in " ".join(run.stderr.split())


@pytest.mark.parametrize("case", ["no directory", "no database", "not zotero", "older", "newer"])
def test_what_is_not_a_readable_zotero_library_is_refused_by_name(tmp_path, case):
    data_dir = tmp_path / "Zotero"
    if case != "no directory":
        data_dir.mkdir()
    if case in ("not zotero", "older", "newer"):
        db = sqlite3.connect(data_dir / "zotero.sqlite")
        if case == "not zotero":
            db.execute("CREATE TABLE notes (text TEXT)")
        else:
            db.execute("CREATE TABLE version (schema TEXT PRIMARY KEY, version INT NOT NULL)")
            db.execute("INSERT INTO version VALUES ('userdata', ?)", (77 if case == "older" else 200,))
            db.execute("CREATE TABLE libraries (libraryID INTEGER PRIMARY KEY, libraryType TEXT NOT NULL)")
        db.commit()
        db.close()
    with pytest.raises(MonjyuError) as err:
        read_library(data_dir)
    message = str(err.value)
    assert str(data_dir) in message
    assert {"no directory": "no Zotero data directory", "no database": "holds no zotero.sqlite",
            "not zotero": "not a Zotero database", "older": "userdata schema 77, older than Zotero 5",
            "newer": "userdata schema 200, newer"}[case] in message


def test_group_items_linked_files_and_feeds(library, tmp_path):
    """A group library's item (with a linked PDF, outside the data directory) is read with its
    group in its id and links; a feed's item and a trashed attachment are not."""
    from monjyu.facade.papers import library_fields

    data_dir = tmp_path / "Zotero"
    data_dir.mkdir()
    shutil.copyfile(library["data_dir"] / "zotero.sqlite", data_dir / "zotero.sqlite")
    shutil.copytree(library["data_dir"] / "storage", data_dir / "storage")
    linked = tmp_path / "elsewhere" / "linked.pdf"
    linked.parent.mkdir()
    shutil.copyfile(BENCH_DATA / "papers-pdf" / "1706.03762.pdf", linked)
    db = sqlite3.connect(data_dir / "zotero.sqlite")
    for library_id, kind in ((2, "group"), (3, "feed")):
        db.execute("INSERT INTO libraries (libraryID, type, editable, filesEditable, version, storageVersion, lastSync, "
                   "archived) VALUES (?, ?, 1, 1, 0, 0, 0, 0)", (library_id, kind))
    db.execute("INSERT INTO groups (groupID, libraryID, name, description, version) VALUES (4711, 2, 'Lab', '', 0)")
    type_id = dict(db.execute("SELECT typeName, itemTypeID FROM itemTypes"))
    title_field = db.execute("SELECT fieldID FROM fields WHERE fieldName = 'title'").fetchone()[0]
    value = db.execute("INSERT INTO itemDataValues (value) VALUES ('Attention in the group library')").lastrowid
    for library_id, key, att_key in ((2, "GROUPIT1", "GROUPAT1"), (3, "FEEDIT01", "FEEDAT01")):
        parent = db.execute("INSERT INTO items (itemTypeID, libraryID, key) VALUES (?, ?, ?)",
                            (type_id["journalArticle"], library_id, key)).lastrowid
        db.execute("INSERT INTO itemData (itemID, fieldID, valueID) VALUES (?, ?, ?)", (parent, title_field, value))
        attachment = db.execute("INSERT INTO items (itemTypeID, libraryID, key) VALUES (?, ?, ?)",
                                (type_id["attachment"], library_id, att_key)).lastrowid
        db.execute("INSERT INTO itemAttachments (itemID, parentItemID, linkMode, contentType, path) "
                   "VALUES (?, ?, 2, 'application/pdf', ?)", (attachment, parent, str(linked)))
    db.commit()
    db.close()
    read = read_library(data_dir)
    group = [item for item in read.items if item.key == "GROUPIT1"]
    assert len(group) == 1 and not any(item.key == "FEEDIT01" for item in read.items) and len(read.items) == 18 + 5
    item = group[0]
    assert item.document_id == "zotero/groups/4711/GROUPIT1" and item.file == linked
    links = library_fields(item.metadata)["zotero"]
    assert links["select"] == "zotero://select/groups/4711/items/GROUPIT1"
    assert links["open_pdf"] == "zotero://open-pdf/groups/4711/items/GROUPAT1"


LIBRARY_FILTERS = [("tag=boosting", lambda e: "boosting" in e["tags"]),
                   ("collection=machinelearning", lambda e: "MachineLearning" in e["collections"]),
                   ("item-type=conferencePaper", lambda e: e["item_type"] == "conferencePaper")]


def allowed_paths(library, test) -> set[str]:
    """The PDFs of the items a filter keeps, from the library's own SQL and papers' paths."""
    expected = expected_items(ZOTERO_DEV / "zotero.sqlite")
    paths = {doc: p["source_path"] for doc, p in papers(library).items()}
    return {paths[doc] for doc, e in expected.items() if test(e)}


@pytest.mark.parametrize("mode", ALL_MODES)
def test_collection_tag_and_item_type_filters_in_every_mode(library, cache_dir, mode):
    """Through the API and the CLI: every passage and citation comes from a kept item."""
    m = Monjyu(library["index"], MonjyuConfig(cache_dir=str(cache_dir)))
    for expression, test in LIBRARY_FILTERS:
        allowed = allowed_paths(library, test)
        assert allowed
        api = m.ask("statistical learning and feedback control", mode, filters=parse_filters([expression]),
                    top_k=5).to_dict()
        run = subprocess.run([sys.executable, "-m", "monjyu.cli", "search", "statistical learning and feedback control",
                              "--index", str(library["index"]), "--config", str(library["config"]), "--mode", mode,
                              "--filter", expression, "--top-k", "5", "--json"], capture_output=True, text=True,
                             timeout=300)
        assert run.returncode == 0, run.stderr
        for result in (api, json.loads(run.stdout)):
            found = {p["path"] for p in passages(result)} | set(cited_paths(result))
            assert found and found <= allowed, (mode, expression, found - allowed)


def test_library_filters_through_mcp_and_the_web_app(library, cache_dir):
    from anyio.from_thread import start_blocking_portal
    from mcp import Client, StdioServerParameters
    from starlette.testclient import TestClient

    from monjyu.web import create_app

    allowed = allowed_paths(library, LIBRARY_FILTERS[1][1])
    params = StdioServerParameters(command=sys.executable, env={"MONJYU_CACHE_DIR": str(cache_dir)},
                                   args=["-m", "monjyu.cli", "serve", "--index", str(library["index"])])
    with start_blocking_portal() as portal, portal.wrap_async_context_manager(Client(params)) as client:
        reply = portal.call(client.call_tool, "search", {"query": "statistical learning", "mode": "hybrid",
                                                         "filters": {"collections": ["MachineLearning"],
                                                                     "item_types": ["book"]}})
        result = json.loads(reply.content[0].text)
    assert {p["path"] for p in passages(result)} <= allowed and passages(result)
    web = TestClient(create_app(Monjyu(library["index"], MonjyuConfig(cache_dir=str(cache_dir))),
                                allowed_hosts=["testserver"]))
    info = web.get("/api/info").json()
    assert {"collection", "tag", "item-type", "cites", "cited-by"} <= set(info["filters"])
    body = {"query": "statistical learning", "mode": "hybrid", "filters": {"tag": "boosting"}}
    lines = [json.loads(line) for line in web.post("/api/search", json=body).text.splitlines() if line.strip()]
    result = next(line["result"] for line in lines if "result" in line)
    assert {p["path"] for p in passages(result)} <= allowed_paths(library, LIBRARY_FILTERS[0][1]) and passages(result)


def test_a_collection_filter_takes_its_subcollections():
    library = {"a": {"collections": ["Thesis"]}, "b": {"collections": ["Thesis/Chapter 2"]},
               "c": {"collections": ["Thesis 2"]}, "d": {"collections": ["Other/Thesis"]}, "e": {}}
    assert library_documents(parse_filters(["collection=thesis"]), library) == {"a", "b"}
    assert library_documents(parse_filters(["collection=Thesis/Chapter 2"]), library) == {"b"}
    both = parse_filters(["collection=Thesis", "tag=x"])
    assert library_documents(both, {"a": {"collections": ["Thesis"], "tags": ["X"]}, "b": {"collections": ["Thesis"]}}) == {"a"}


def test_citation_keys_from_extra_and_better_bibtex(library, tmp_path):
    data_dir = tmp_path / "Zotero"
    data_dir.mkdir()
    shutil.copyfile(library["data_dir"] / "zotero.sqlite", data_dir / "zotero.sqlite")
    shutil.copytree(library["data_dir"] / "storage", data_dir / "storage")
    db = sqlite3.connect(data_dir / "zotero.sqlite")
    first, second = [k for (k,) in db.execute(
        "SELECT i.key FROM items i JOIN itemTypes t ON t.itemTypeID = i.itemTypeID WHERE t.typeName = 'journalArticle' "
        "ORDER BY i.itemID LIMIT 2")]
    item_id = db.execute("SELECT itemID FROM items WHERE key = ?", (first,)).fetchone()[0]
    extra = db.execute("SELECT fieldID FROM fields WHERE fieldName = 'extra'").fetchone()[0]
    value = db.execute("INSERT INTO itemDataValues (value) VALUES ('tex.note: x\nCitation Key: feketa2017almost')").lastrowid
    db.execute("DELETE FROM itemData WHERE itemID = ? AND fieldID = ?", (item_id, extra))
    db.execute("INSERT INTO itemData (itemID, fieldID, valueID) VALUES (?, ?, ?)", (item_id, extra, value))
    db.commit()
    db.close()
    bbt = sqlite3.connect(data_dir / "better-bibtex.sqlite")
    bbt.execute("CREATE TABLE citationkey (itemID INTEGER, itemKey TEXT, libraryID INTEGER, citationKey TEXT, pinned INT)")
    bbt.executemany("INSERT INTO citationkey VALUES (0, ?, 1, ?, 0)", [(first, "ignored2017"), (second, "shiromoto2019")])
    bbt.commit()
    bbt.close()
    keys = {item.key: item.metadata["citation_key"] for item in read_library(data_dir).items}
    assert keys[first] == "feketa2017almost" and keys[second] == "shiromoto2019"  # Zotero's own key first


@pytest.mark.parametrize("columns", [80, 60, 140])
def test_papers_fit_the_terminal_one_line_a_paper_with_ids_whole(library, sample_index, columns):
    """`monjyu papers` in a narrow terminal: one line a paper, no line wider than the terminal,
    every id whole (what --cites and doc= take); titles and authors cut."""
    import os

    for index, ids in ((library["index"], set(papers(library))),
                       (sample_index.index_dir, {p["id"] for p in sample_index.papers.list()["papers"]})):
        run = subprocess.run([sys.executable, "-m", "monjyu.cli", "papers", "--index", str(index)], capture_output=True,
                             text=True, timeout=300, env={**os.environ, "COLUMNS": str(columns)})
        assert run.returncode == 0, run.stderr
        lines = run.stdout.splitlines()
        assert all(len(line) <= columns for line in lines), max(lines, key=len)
        rows = [line for line in lines if line.split(" ", 1)[0] in ids]
        assert len(rows) == len(ids) and {row.split(" ", 1)[0] for row in rows} == ids


def test_passages_print_as_flowing_text():
    from monjyu.cli.search import _flowing

    wrapped = "the graphs of γ21 and\nγ12 have several\ncommon points.\n\nIf the small-gain condition\nholds, then"
    assert _flowing(wrapped) == ("the graphs of γ21 and γ12 have several common points.\n   "
                                 "If the small-gain condition holds, then")
    assert _flowing("x " * 300).endswith("…") and len(_flowing("x " * 300)) == 401


def test_citations_open_the_cited_page_in_zotero(library, cache_dir):
    """Each citation of a library's paper carries zotero://open-pdf at the cited page (the PDF
    attachment's key) and zotero://select for the item: in the API, the CLI's JSON and the web app."""
    from starlette.testclient import TestClient

    from monjyu.web import create_app

    keys = {doc: p["zotero"] for doc, p in papers(library).items()}
    question = "What is the almost ISS property of feedback connected systems?"
    m = Monjyu(library["index"], MonjyuConfig(cache_dir=str(cache_dir)))
    api = m.search(question, top_k=3).to_dict()
    run = subprocess.run([sys.executable, "-m", "monjyu.cli", "search", question, "--index", str(library["index"]),
                          "--config", str(library["config"]), "--top-k", "3", "--json"], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr
    web = TestClient(create_app(m, allowed_hosts=["testserver"]))
    lines = [json.loads(line) for line in web.post("/api/search", json={"query": question, "mode": "hybrid"}).text.splitlines()]
    for result in (api, json.loads(run.stdout), next(line["result"] for line in lines if "result" in line)):
        citations = result["answer"]["citations"]
        assert citations
        for c in citations:
            key = keys[c["document_id"]]
            assert c["page"] and c["zotero"]["open_pdf"] == (
                f"zotero://open-pdf/library/items/{key['attachment_key']}?page={c['page']}")
            assert c["zotero"]["select"] == f"zotero://select/library/items/{key['key']}"


def test_who_wrote_an_item_and_which_items_a_creator_wrote_are_read_from_the_library(library):
    """The byline answers read the library's creators: "Who wrote “TITLE”?" names the item's first
    creator and cites the item; "Which papers did CREATOR write?" cites every item they are a creator
    of, among the items indexed from a PDF or an abstract (from the SQLite file through plain SQL)."""
    from monjyu import load_config

    expected = expected_items(ZOTERO_DEV / "zotero.sqlite")
    indexed = set(expected) | {f"zotero/{key}" for key in without_pdf(ZOTERO_DEV / "zotero.sqlite")[0]}
    m = Monjyu(library["index"], load_config(library["config"]))
    for doc_id, want in sorted(expected.items())[:3]:
        answer = m.search(f"Who wrote “{want['title']}”?", top_k=5).answer
        assert want["first_creator"] in answer.text and answer.citations[0].document_id == doc_id, answer.text
    db = sqlite3.connect(f"file:{ZOTERO_DEV / 'zotero.sqlite'}?immutable=1", uri=True)
    creators: dict[str, set[str]] = {}
    for key, first, last in db.execute("SELECT i.key, c.firstName, c.lastName FROM items i JOIN itemCreators ic "
                                       "ON ic.itemID = i.itemID JOIN creators c ON c.creatorID = ic.creatorID"):
        if f"zotero/{key}" in indexed and first and last:
            creators.setdefault(f"{first} {last}", set()).add(f"zotero/{key}")
    db.close()
    name, items = max(sorted(creators.items()), key=lambda kv: len(kv[1]))  # the creator of the most items
    answer = m.search(f"Which papers did {name} write?", top_k=5).answer
    assert answer.text.startswith(f"{name} is an author of {len(items)} of the indexed papers")
    assert {c.document_id for c in answer.citations} == items
