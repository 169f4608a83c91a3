"""A moved library is the same library: a folder indexed, moved and indexed again keeps its
documents (ids, vectors) with their new paths; two folders holding different files under the same
relative names are told apart, never refused."""

from __future__ import annotations

import shutil

from monjyu import Monjyu


def test_a_moved_folder_keeps_its_documents_at_the_new_path(tmp_path, samples_copy, make_config):
    m = Monjyu(tmp_path / "idx", make_config())
    first = m.index([samples_copy])
    assert not first.failures
    before = {p["id"]: p["source_path"] for p in m.papers.list()["papers"]}
    moved_to = tmp_path / "Documents" / "papers"
    moved_to.parent.mkdir()
    shutil.move(str(samples_copy), str(moved_to))  # mv ~/papers ~/Documents/papers
    report = m.index([moved_to])
    assert not report.failures and report.embedded == 0 and not report.added and not report.removed
    assert len(report.moved) == len(first.added)
    after = {p["id"]: p["source_path"] for p in m.papers.list()["papers"]}
    assert set(after) == set(before)
    assert all(path.startswith(str(moved_to)) for path in after.values())
    # Search and the PDF's pages work at the new path.
    result = m.search("How are communities of phrases detected?", top_k=3)
    assert result.hits and all(h.source_path.startswith(str(moved_to)) for h in result.hits)
    pdf = next(doc for doc, path in after.items() if path.endswith(".pdf"))
    assert m.documents.page_image(pdf, 1)[:4] == b"\x89PNG"
    again = m.index([moved_to])
    assert again.nothing_changed and not again.failures


def test_two_folders_with_the_same_relative_names_are_told_apart(tmp_path, make_config):
    for name, text in (("a", "Leiden refines Louvain's communities so that each is connected."),
                       ("b", "BM25 scores a passage by term frequency and inverse document frequency.")):
        folder = tmp_path / name / "papers"
        folder.mkdir(parents=True)
        (folder / "notes.md").write_text(f"# Notes {name}\n\n{text}\n", encoding="utf-8")
    m = Monjyu(tmp_path / "idx", make_config())
    report = m.index([tmp_path / "a" / "papers", tmp_path / "b" / "papers"])
    assert not report.failures and len(report.added) == 2
    ids = {p["id"]: p["source_path"] for p in m.papers.list()["papers"]}
    assert ids == {"papers/notes.md": str(tmp_path / "a" / "papers" / "notes.md"),
                   "b/papers/notes.md": str(tmp_path / "b" / "papers" / "notes.md")}
    assert any("b/papers/notes.md" in note and "papers/notes.md" in note for note in report.notes)
    # Runs again keep each file's id; a change to the second reloads it under its id.
    assert m.index([tmp_path / "a" / "papers", tmp_path / "b" / "papers"]).nothing_changed
    (tmp_path / "b" / "papers" / "notes.md").write_text("# Notes b\n\nBM25 and dense retrieval fused.\n", encoding="utf-8")
    changed = m.index([tmp_path / "b" / "papers"])
    assert not changed.failures and len(changed.changed) == 1
    assert set(p["id"] for p in m.papers.list()["papers"]) == {"papers/notes.md", "b/papers/notes.md"}
