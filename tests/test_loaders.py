"""Every loader on real files, and bad input reported by name without stopping the batch."""

from __future__ import annotations

import json
from pathlib import Path

import docx
import pytest
from reportlab.pdfgen import canvas

from monjyu.config import IngestConfig
from monjyu.errors import IngestError
from monjyu.ingest import load_file

from .conftest import SAMPLES

CFG = IngestConfig()


def test_txt_and_markdown_titles():
    [txt] = load_file(SAMPLES / "hybrid-retrieval.txt", "t", CFG)
    assert txt.file_type == "txt" and "Reciprocal rank fusion" in txt.text
    [md] = load_file(SAMPLES / "lazygraphrag.md", "m", CFG)
    assert md.title == "LazyGraphRAG: deferring LLM work to query time"
    assert md.id == "m" and md.date  # file date is the modification date


def test_a_markdown_title_with_a_heading_under_it_is_front_matter(tmp_path):
    """"# Title" then "## Abstract": the title alone is front matter (as a PDF's title block), not
    a unit of body text; a title with a paragraph under it stays in the body with it."""
    for body, kinds in (("## Abstract\n\nQuorra reads books.\n", ["front", "text"]),
                        ("Quorra reads books.\n", ["text"])):
        path = tmp_path / "quorra.md"
        path.write_text("# Quorra: small models that read\n\n" + body)
        [doc] = load_file(path, "q", CFG)
        assert doc.title == "Quorra: small models that read"
        assert [s.kind for s in doc.sections] == kinds, body


def test_a_markdown_footnote_follows_the_paragraph_that_marks_it(tmp_path):
    """Footnotes written at a Markdown document's end ("[^2]: https://...", several one under
    another) are each a paragraph of their own after the first paragraph that marks them, as a PDF's
    follow the paragraph they cut; a note nothing marks stays where it was."""
    path = tmp_path / "orca.md"
    path.write_text("# Orca\n\nWe share Orca in our library FastTrain[^2]. It is fast[^speed].\n\nMore text.\n\n"
                    "## Notes\n\n[^2]: https://github.com/example/fasttrain\n[^speed]: On 400 devices.\n\n"
                    "[^x]: A note nothing marks.\n")
    [doc] = load_file(path, "orca", CFG)
    paragraphs = doc.text.split("\n\n")
    at = paragraphs.index("We share Orca in our library FastTrain[^2]. It is fast[^speed].")
    assert paragraphs[at + 1:at + 4] == ["[^2]: https://github.com/example/fasttrain", "[^speed]: On 400 devices.",
                                         "More text."], paragraphs
    assert paragraphs[-1] == "[^x]: A note nothing marks.", paragraphs


def test_a_heading_with_only_a_heading_or_a_caption_under_it_makes_no_unit(tmp_path):
    """"## 2 Related Work" straight followed by "### 2.1 ...", or "## Appendix" by "## A ...": the
    section after it opens with it; "## 3 Training" followed by a figure caption is left to the
    caption's path. A unit of a heading alone matches its words and answers nothing."""
    from monjyu.config import ChunkingConfig
    from monjyu.ingest import Chunker

    path = tmp_path / "quorra.md"
    path.write_text("# Quorra\n\nQuorra reads books.\n\n## 2 Related Work\n\n### 2.1 Readers\n\nReaders read.\n\n"
                    "## 3 Training\n\nFigure 1: Quorra's loss.\n\nQuorra saw each book twice.\n\n## Appendix\n\n"
                    "## A Books\n\nThe books are listed.\n\n## 4 Results\n")
    [doc] = load_file(path, "q", CFG)
    units = Chunker(ChunkingConfig()).chunk(doc)
    assert [(u.section, u.kind, u.text) for u in units] == [
        ("", "text", "Quorra\n\nQuorra reads books."),
        ("2 Related Work > 2.1 Readers", "text", "2 Related Work\n\n2.1 Readers\n\nReaders read."),
        ("3 Training", "caption", "Figure 1: Quorra's loss."),
        ("3 Training", "text", "Quorra saw each book twice."),
        ("A Books", "text", "Appendix\n\nA Books\n\nThe books are listed."),
    ]  # and "4 Results", with nothing under it, makes none either


def test_html_drops_scripts_navigation_and_keeps_title():
    [doc] = load_file(SAMPLES / "rag-evaluation.html", "h", CFG)
    assert doc.title == "Evaluating retrieval for RAG systems"
    assert "Recall@k" in doc.text
    for noise in ("console.log", "Home | Papers", "Copyright notice", "font-family"):
        assert noise not in doc.text


def test_pdf_pages_and_hyphenation():
    [doc] = load_file(SAMPLES / "community-detection.pdf", "p", CFG)
    assert doc.title == "Community detection for concept graphs"
    assert "summarise" in doc.text and "sum-" not in doc.text  # hyphen across lines joined
    assert [p for _, p in doc.page_starts] == [1, 2]
    second = doc.text.index("Page two")
    assert doc.page_at(second) == 2 and doc.page_at(0) == 1


def test_a_line_end_hyphen_after_an_acronym_is_the_word_s_own(tmp_path):
    """"CPU-" / "cache" is "CPU-cache", as "W-" / "shaped" is "W-shaped"; "sum-" / "marise" is one word."""
    f = tmp_path / "wrapped.pdf"
    c = canvas.Canvas(str(f))
    c.setFont("Helvetica", 11)
    for i, line in enumerate(["Each core keeps a small CPU-", "cache of recent lines, and the curve is W-",
                              "shaped. We sum-", "marise the results in the last section of the paper."]):
        c.drawString(72, 720 - 14 * i, line)
    c.showPage()
    c.save()
    [doc] = load_file(f, "w", CFG)
    assert "CPU-cache" in doc.text and "W-shaped" in doc.text and "summarise" in doc.text, doc.text


def test_docx_title_and_paragraphs():
    [doc] = load_file(SAMPLES / "reranking.docx", "d", CFG)
    assert doc.title == "Reranking retrieved passages"
    assert "cross-encoder" in doc.text and "Corrective RAG" in doc.text


def test_jsonl_records_and_configurable_fields(tmp_path):
    docs = load_file(SAMPLES / "abstracts.jsonl", "ignored", CFG)
    assert [d.id for d in docs] == ["abs-bm25", "abs-leiden", "abs-e5"]
    assert docs[1].title == "From Louvain to Leiden" and docs[1].date == "2019-03-26"
    f = tmp_path / "papers.json"
    f.write_text(json.dumps([{"key": "k1", "name": "A paper", "body": "Some body text."}]))
    cfg = IngestConfig(json_id_field="key", json_title_field="name", json_text_field="body")
    [doc] = load_file(f, "x", cfg)
    assert (doc.id, doc.title, doc.text) == ("k1", "A paper", "Some body text.")


def test_japanese_shift_jis_text_is_decoded(tmp_path):
    f = tmp_path / "sjis.txt"
    f.write_bytes("検索拡張生成は大規模言語モデルに文脈を与える手法です。".encode("shift_jis") * 3)
    [doc] = load_file(f, "s", CFG)
    assert "検索拡張生成" in doc.text


@pytest.mark.parametrize("name,content,reason", [
    ("empty.txt", b"", "empty"),
    ("blank.md", b"   \n\n  ", "no text"),
    ("binary.txt", bytes(range(256)) * 10, "binary"),
    ("garbage.txt", bytes([0x81, 0xfe, 0x9f, 0xa0, 0xff, 0x8d] * 50), "encoding"),
    ("broken-utf8.md", "Résumé of the naïve approach. ".encode() * 5 + b"\xff\xfe\xfa" + b" more", "invalid UTF-8"),
    ("corrupt.pdf", b"%PDF-1.4\n this is not really a pdf", "PDF"),
    ("corrupt.docx", b"PK\x03\x04 not a zip", ".docx"),
    ("bad.json", b"{\"_id\": 1, ", "invalid JSON"),
    ("notext.jsonl", b'{"_id": "a", "body": "x"}\n', "text"),
    ("image.png", b"\x89PNG\r\n", "unsupported"),
])
def test_bad_files_are_named_with_a_reason(tmp_path, name, content, reason):
    f = tmp_path / name
    f.write_bytes(content)
    with pytest.raises(IngestError) as info:
        load_file(f, "x", CFG)
    assert info.value.path == str(f)
    assert reason.lower() in info.value.reason.lower()


def test_huge_file_is_refused_by_size(tmp_path):
    f = tmp_path / "huge.txt"
    f.write_text("word " * 300_000)
    with pytest.raises(IngestError, match="max_file_mb"):
        load_file(f, "x", IngestConfig(max_file_mb=1))


def test_pdf_without_text_layer(tmp_path):
    f = tmp_path / "scan.pdf"
    c = canvas.Canvas(str(f))
    c.rect(50, 50, 100, 100)
    c.showPage()
    c.save()
    with pytest.raises(IngestError, match="no text"):
        load_file(f, "x", CFG)


def test_docx_tables_are_kept(tmp_path):
    d = docx.Document()
    d.add_paragraph("Results table follows.")
    t = d.add_table(rows=1, cols=2)
    t.rows[0].cells[0].text, t.rows[0].cells[1].text = "Recall@5", "0.81"
    d.save(tmp_path / "t.docx")
    [doc] = load_file(tmp_path / "t.docx", "t", CFG)
    assert "Recall@5 | 0.81" in doc.text


def test_unreadable_path(tmp_path):
    link = tmp_path / "gone.txt"
    link.symlink_to(tmp_path / "missing-target.txt")
    with pytest.raises(IngestError, match="not found"):
        load_file(Path(link), "x", CFG)
