"""Bibliographies as a source of metadata: a Better BibTeX export, a JabRef library and a
CSL-JSON file name the files their entries describe; `monjyu index FOLDER --bib FILE` gives
those files the entries' metadata over what parsing finds, reports an entry whose file is
missing, and counts the entries that name no file. Real files through the real index."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from monjyu import Monjyu, MonjyuConfig, SearchFilters
from monjyu.errors import MonjyuError
from monjyu.ingest.bib import file_paths
from tests.conftest import REPO

SAMPLES = REPO / "samples"


@pytest.fixture()
def folder(tmp_path) -> Path:
    papers = tmp_path / "papers"
    papers.mkdir()
    for name in ("community-detection.pdf", "hybrid-retrieval.txt", "lazygraphrag.md", "reranking.docx"):
        shutil.copyfile(SAMPLES / name, papers / name)
    return papers


def better_bibtex(folder: Path, exports: Path) -> Path:
    """As Better BibTeX exports a collection: absolute paths, `;` between files, biblatex
    fields (date, journaltitle), LaTeX accents and protected capitals."""
    exports.mkdir()
    bib = exports / "library.bib"
    bib.write_text(f"""
@article{{traag2019leiden,
  title = {{From {{Louvain}} to {{Leiden}}: Guaranteeing Well-Connected Communities}},
  author = {{Traag, Vincent A. and Waltman, Ludo and van Eck, Nees Jan}},
  date = {{2019-03-26}},
  journaltitle = {{Scientific Reports}},
  doi = {{10.1038/s41598-019-41695-z}},
  keywords = {{community detection; graphs}},
  file = {{{folder / "community-detection.pdf"}}}
}}

@inproceedings{{mueller2021hybrid,
  title = {{Hybrid Retrieval for Scientific Literature}},
  author = {{M{{\\"u}}ller, Anna and Sato, Ken}},
  year = {{2021}},
  booktitle = {{Proceedings of the Workshop on Scholarly Search}},
  file = {{{folder / "notes.txt"}; {folder / "hybrid-retrieval.txt"}}}
}}

@book{{nofile2020,
  title = {{A Book Kept Only on Paper}},
  author = {{Nobody, Ann}},
  year = {{2020}}
}}
""", encoding="utf-8")
    return bib


def test_a_better_bibtex_export_gives_its_files_their_metadata(folder, tmp_path, cache_dir):
    bib = better_bibtex(folder, tmp_path / "exports")
    config = tmp_path / "monjyu.yaml"
    config.write_text(f"cache_dir: {cache_dir}\ngraph:\n  enabled: false\n", encoding="utf-8")
    run = subprocess.run([sys.executable, "-m", "monjyu.cli", "index", str(folder), "--bib", str(bib), "--index",
                          str(tmp_path / "idx"), "--config", str(config), "--json"], capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads(run.stdout)
    assert len(report["added"]) == 4 and not report["failures"]
    assert report["notes"] == ["1 entry of library.bib names no file MONJYU reads, not indexed: nofile2020"]
    m = Monjyu(tmp_path / "idx", MonjyuConfig(cache_dir=str(cache_dir)))
    papers = {Path(p["source_path"]).name: p for p in m.papers.list()["papers"]}
    leiden = papers["community-detection.pdf"]
    assert leiden["title"] == "From Louvain to Leiden: Guaranteeing Well-Connected Communities"
    assert leiden["authors"] == ["Vincent A. Traag", "Ludo Waltman", "Nees Jan van Eck"]
    assert (leiden["year"], leiden["doi"], leiden["venue"]) == (2019, "10.1038/s41598-019-41695-z", "Scientific Reports")
    assert (leiden["item_type"], leiden["citation_key"], leiden["tags"]) == (
        "journalArticle", "traag2019leiden", ["community detection", "graphs"])
    assert leiden["bib"] == str(bib) and "zotero" not in leiden
    hybrid = papers["hybrid-retrieval.txt"]  # the entry's second file: the first is not there
    assert hybrid["authors"] == ["Anna Müller", "Ken Sato"] and hybrid["item_type"] == "conferencePaper"
    assert papers["lazygraphrag.md"]["title"] == "LazyGraphRAG: deferring LLM work to query time"  # no entry: parsed
    assert m.papers.bibtex([leiden["id"]]).startswith("@article{traag2019leiden,")
    hits = m.search("communities", filters=SearchFilters(tags=["graphs"])).hits
    assert hits and {h.document_id for h in hits} == {leiden["id"]}
    assert {h.document_id for h in m.search("retrieval", filters=SearchFilters(item_types=["conferencePaper"])).hits} \
        == {hybrid["id"]}


def test_a_jabref_library_and_a_csl_json_file(folder, tmp_path, cache_dir):
    """JabRef: `description:path:type` with escaped colons, paths relative to the library's file
    directory. CSL-JSON: a `file` field, names as family/given or literal, dates as date-parts;
    an entry whose file is not on disk is reported by its key and path, the rest indexed."""
    jabref = folder / "jabref.bib"
    jabref.write_text("""% Encoding: UTF-8

@Article{Edge2024,
  author   = {Edge, Darren and Trinh, Ha},
  title    = {LazyGraphRAG: Deferring {LLM} Work to Query Time},
  journal  = {Microsoft Research Blog},
  year     = {2024},
  file     = {Draft\\: full text:lazygraphrag.md:Markdown},
  keywords = {graph RAG},
}

@Comment{jabref-meta: databaseType:bibtex;}
@Comment{jabref-meta: fileDirectory:.;}
""", encoding="utf-8")
    m = Monjyu(tmp_path / "idx", MonjyuConfig(cache_dir=str(cache_dir), graph={"enabled": False}))
    report = m.index([folder], bib=jabref)
    assert not report.failures and not report.notes
    papers = {Path(p["source_path"]).name: p for p in m.papers.list()["papers"]}
    assert papers["lazygraphrag.md"]["title"] == "LazyGraphRAG: Deferring LLM Work to Query Time"
    assert papers["lazygraphrag.md"]["authors"] == ["Darren Edge", "Ha Trinh"]
    assert papers["lazygraphrag.md"]["venue"] == "Microsoft Research Blog"

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.copyfile(SAMPLES / "reranking.docx", elsewhere / "reranking.docx")
    csl = tmp_path / "items.json"
    csl.write_text(json.dumps([
        {"id": "nogueira2019rerank", "type": "article", "title": "Passage Re-ranking with BERT",
         "author": [{"family": "Nogueira", "given": "Rodrigo"}, {"family": "Cho", "given": "Kyunghyun"}],
         "issued": {"date-parts": [[2019, 1, 13]]}, "DOI": "10.48550/arXiv.1901.04085", "keyword": "reranking, BERT",
         "file": str(elsewhere / "reranking.docx")},
        {"id": "gone2022", "type": "article-journal", "title": "A Paper Whose File Was Moved",
         "author": [{"literal": "The Gone Consortium"}], "issued": {"raw": "2022"},
         "file": str(elsewhere / "moved-away.pdf")},
    ]), encoding="utf-8")
    report = Monjyu(tmp_path / "idx2", MonjyuConfig(cache_dir=str(cache_dir), graph={"enabled": False})).index(bib=csl)
    assert [f[0] for f in report.failures] == ["gone2022 in items.json"]
    assert str(elsewhere / "moved-away.pdf") in report.failures[0][1]
    m2 = Monjyu(tmp_path / "idx2", MonjyuConfig(cache_dir=str(cache_dir)))
    (paper,) = m2.papers.list()["papers"]
    assert (paper["title"], paper["authors"], paper["year"]) == ("Passage Re-ranking with BERT",
                                                                 ["Rodrigo Nogueira", "Kyunghyun Cho"], 2019)
    assert (paper["item_type"], paper["tags"], paper["citation_key"]) == ("preprint", ["reranking", "BERT"],
                                                                          "nogueira2019rerank")


def test_a_csl_json_bibliography_kept_in_its_folder_is_not_read_as_a_paper(folder, tmp_path, cache_dir):
    """The folder walk reads .json files as records; the bibliography given with it describes the
    papers and is none of them (it had failed as a record without a text)."""
    csl = folder / "library.json"
    csl.write_text(json.dumps([{"id": "edge2024", "type": "post-weblog", "title": "LazyGraphRAG",
                                "author": [{"family": "Edge", "given": "Darren"}],
                                "file": "lazygraphrag.md"}]), encoding="utf-8")
    m = Monjyu(tmp_path / "idx", MonjyuConfig(cache_dir=str(cache_dir), graph={"enabled": False}))
    report = m.index([folder], bib=csl)
    assert not report.failures and not report.notes and report.documents == 4
    assert {p["title"] for p in m.papers.list()["papers"]} >= {"LazyGraphRAG"}


def test_file_fields_in_each_exporters_form(tmp_path):
    base = tmp_path
    assert file_paths("/home/me/Zotero/storage/AB12/x.pdf", base) == [Path("/home/me/Zotero/storage/AB12/x.pdf")]
    assert file_paths("Full Text PDF:/home/me/a.pdf:application/pdf;Snapshot:/home/me/a.html:text/html", base) == [
        Path("/home/me/a.pdf"), Path("/home/me/a.html")]
    assert file_paths(":papers/a\\;b.pdf:PDF", base) == [base / "papers/a;b.pdf"]
    assert file_paths("Notes\\: v2:notes.md:Markdown", base) == [base / "notes.md"]


@pytest.mark.parametrize("case", ["missing", "not a bibliography", "with zotero"])
def test_a_bibliography_that_cannot_be_used_is_refused_by_name(case, folder, tmp_path, cache_dir):
    m = Monjyu(tmp_path / "idx", MonjyuConfig(cache_dir=str(cache_dir), graph={"enabled": False}))
    bib = tmp_path / ("nothing.bib" if case == "missing" else "library.txt" if case == "not a bibliography" else "x.bib")
    if case != "missing":
        bib.write_text("@misc{x, title={X}}", encoding="utf-8")
    with pytest.raises(MonjyuError, match=str(bib) if case != "with zotero" else "not both"):
        m.index([folder], bib=bib, zotero=tmp_path if case == "with zotero" else None)
