"""Japanese PDFs read as Japanese: titles (two characters too) and bylines, lines joined without a
space, and search over them as good as over the same text indexed as plain text."""

from __future__ import annotations

import re
import unicodedata

import pytest

from monjyu import Monjyu, MonjyuConfig
from monjyu.ingest.loaders import load_file
from tests.japanese_pdfs import ARTICLES, font_path, make_pdf, write_collection

JA_PAIR = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff] [\u3040-\u30ff\u4e00-\u9fff]")


@pytest.fixture(scope="module")
def japanese_font():
    if font_path() is None:
        pytest.fail("no Japanese font: `make test` installs fonts-ipafont-gothic")


def test_titles_bylines_and_text_of_japanese_pdfs(tmp_path, japanese_font):
    for a in ARTICLES:
        [doc] = load_file(make_pdf(a, tmp_path / f"{a['id']}.pdf"), a["id"], MonjyuConfig().ingest)
        assert doc.title == a["title"], a["id"]
        assert doc.authors == a["authors"], a["id"]
        body = "\n\n".join(unicodedata.normalize("NFKC", p) for p in a["text"].split("\n\n"))
        assert body in doc.text, a["id"]  # every line join inside a paragraph without a space
        assert not JA_PAIR.search(doc.text.replace(", ".join(a["authors"]), "")), a["id"]


def _doc_ranks(m: Monjyu, questions: list[tuple[str, str, str]]) -> list[int | None]:
    ranks = []
    for question, _, name in questions:
        hits = m.search(question, "hybrid", top_k=5, answer=False).hits
        ranks.append(next((i for i, h in enumerate(hits) if h.document_id.endswith(name)), None))
    return ranks


def test_search_over_japanese_pdfs_equals_the_same_text_as_plain_text(tmp_path, cache_dir, japanese_font):
    figures = {}
    for kind in ("pdf", "txt"):
        questions = write_collection(tmp_path / kind, as_pdf=kind == "pdf")
        m = Monjyu(tmp_path / f"idx-{kind}", MonjyuConfig(cache_dir=str(cache_dir)))
        assert not m.index([tmp_path / kind]).failures
        ranks = _doc_ranks(m, questions)
        figures[kind] = (sum(r == 0 for r in ranks) / len(ranks), sum(r is not None for r in ranks) / len(ranks))
    assert abs(figures["pdf"][0] - figures["txt"][0]) <= 0.01 and abs(figures["pdf"][1] - figures["txt"][1]) <= 0.01, \
        figures
    assert figures["pdf"][1] >= 0.9, figures


def test_ocr_of_a_scanned_japanese_page_joins_its_lines_without_spaces(tmp_path, japanese_font):
    """A Japanese page as pixels only (rendered from the typeset PDF), read by tesseract's jpn model."""
    import shutil

    import pypdfium2 as pdfium

    from monjyu.config import IngestConfig

    if not shutil.which("tesseract"):
        pytest.fail("tesseract is not installed: `make test` installs tesseract-ocr-jpn")
    pdf = pdfium.PdfDocument(str(make_pdf(ARTICLES[0], tmp_path / "typeset.pdf")))
    image = pdf[0].render(scale=300 / 72).to_pil().convert("L")
    pdf.close()
    scanned = tmp_path / "scanned.pdf"
    image.save(scanned, "PDF", resolution=300)
    [doc] = load_file(scanned, "scanned", IngestConfig(ocr=True, ocr_languages="jpn"))
    body = doc.text.split("\n\n", 2)[-1]  # after the title and the byline
    assert len(body) > 300 and "梅雨" in body
    assert not JA_PAIR.search(body), JA_PAIR.findall(body)[:5]
