"""Research papers for real: PDF layout (two columns, running headers, page numbers, line-number
gutters, hyphenation), paper structure and metadata in every format, odd PDFs, and the unit kinds
and filters that come from them, through the real index."""

from __future__ import annotations

import io
import json
import re
import shutil
import unicodedata
from pathlib import Path

import docx
import pytest
from reportlab.lib.pagesizes import letter
from reportlab.pdfgen import canvas

from monjyu import Monjyu
from monjyu.config import IngestConfig
from monjyu.embed import EmbeddingCache
from monjyu.ingest.sentences import statement_spans
from monjyu.errors import ConfigError, IngestError
from monjyu.ingest import Chunker, load_file
from monjyu.config import ChunkingConfig
from monjyu.retrieval.filters import parse_filters

from .conftest import BENCH_DATA, REPO

CFG = IngestConfig()
PAPERS_PDF = BENCH_DATA / "papers-pdf"
GOLD = json.loads((REPO / "tests" / "data" / "papers_pdf_gold.json").read_text(encoding="utf-8"))
LIGATURES = re.compile("[\ufb00-\ufb06]")

BODY = ("Retrieval augmented generation grounds a language model in passages found at query time. "
        "We study how the structure of scientific papers, their sections, captions and reference "
        "lists, changes what a retriever should index. Dense and sparse retrievers disagree on long "
        "documents, and a fused ranking recovers what either alone would miss. ")


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", unicodedata.normalize("NFKC", text).lower()).strip()


def _wrap(c: canvas.Canvas, text: str, x: float, y: float, width: float, size: float = 10) -> float:
    """Greedy line wrapping with a hyphen break in 'retrieval' when it falls at a line end."""
    words, line = text.split(), ""
    for word in words:
        trial = f"{line} {word}".strip()
        if c.stringWidth(trial, "Helvetica", size) > width:
            if word.startswith("retriev") and c.stringWidth(f"{line} retr-", "Helvetica", size) <= width:
                c.drawString(x, y, f"{line} retr-")
                line, y = word[4:], y - size * 1.25
                continue
            c.drawString(x, y, line)
            line, y = word, y - size * 1.25
        else:
            line = trial
    c.drawString(x, y, line)
    return y - size * 1.25


def make_paper_pdf(path: Path, *, two_columns: bool = True, line_numbers: bool = False) -> Path:
    """A three-page paper: title, authors, abstract, numbered sections in two columns, a running
    header and page numbers on every page, a figure caption and a numbered reference list."""
    c = canvas.Canvas(str(path), pagesize=letter)
    c.setTitle("paper_final_v3.dvi")
    width, height = letter
    for page in range(1, 4):
        c.setFont("Helvetica", 8)
        c.drawString(72, height - 30, "Proceedings of the Workshop on Test Papers 2024")
        c.drawCentredString(width / 2, 30, str(page))
        if line_numbers:
            for k in range(40):
                c.drawString(30, height - 120 - k * 14, f"{(page - 1) * 40 + k + 1:03d}")
        top = height - 80
        if page == 1:
            c.setFont("Helvetica-Bold", 18)
            c.drawCentredString(width / 2, top, "Structured Retrieval over Scientific Papers")
            c.setFont("Helvetica", 11)
            c.drawCentredString(width / 2, top - 28, "Ada Lovelace, Alan Turing and Grace Hopper")
            c.drawCentredString(width / 2, top - 42, "University of Testing")
            c.setFont("Helvetica-Bold", 11)
            c.drawCentredString(width / 2, top - 70, "Abstract")
            c.setFont("Helvetica", 10)
            top = _wrap(c, "We show that indexing a paper by its sections improves retrieval of answers.",
                        100, top - 86, width - 200) - 20
        col_width = (width - 72 * 2 - 24) / 2 if two_columns else width - 144
        columns = [72, 72 + col_width + 24] if two_columns else [72]
        for ci, x in enumerate(columns):
            y = top
            c.setFont("Helvetica-Bold", 11)
            number = (page - 1) * len(columns) + ci + 1
            if page == 3 and ci == len(columns) - 1:
                c.drawString(x, y, "References")
                c.setFont("Helvetica", 9)
                y -= 18
                for r in range(1, 6):
                    y = _wrap(c, f"[{r}] Author{r} Surname{r}. A referenced work on topic number {r}. "
                                 f"In Proceedings of a Venue, pages {r}0-{r}9, 20{10 + r}.", x, y, col_width, 9) - 4
                continue
            c.drawString(x, y, f"{number} Section Number {number}")
            c.setFont("Helvetica", 10)
            y = _wrap(c, BODY * 2 + f"Section {number} ends with the marker phrase zebra{number}.", x, y - 18, col_width)
            if page == 2 and ci == 0:
                _wrap(c, "Figure 1: Retrieval quality of the fused ranking on long papers.", x, y - 10, col_width, 9)
        c.showPage()
    c.save()
    return path


# ----------------------------------------------------------------------------- layout on built PDFs
def test_a_double_spaced_manuscript_keeps_its_paragraphs(tmp_path):
    """Lines 2.4 font sizes apart (double spacing) are one paragraph until the indent of the
    next one; a blank-line rule on font size alone made every line a paragraph."""
    path = tmp_path / "manuscript.pdf"
    c = canvas.Canvas(str(path), pagesize=letter)
    width, height = letter
    c.setFont("Helvetica-Bold", 14)
    c.drawString(72, height - 72, "A Manuscript Under Review")
    y = height - 110
    for k, (first, last) in enumerate((("alphastart", "alphaend"), ("betastart", "betaend"))):
        words = f"{first} {BODY} {last}.".split()
        c.setFont("Helvetica", 10)
        line, x = "", 72 + 24  # each paragraph's first line is indented
        for word in words:
            if c.stringWidth(f"{line} {word}".strip(), "Helvetica", 10) > width - 144 - (x - 72):
                c.drawString(x, y, line)
                line, x, y = word, 72, y - 24
            else:
                line = f"{line} {word}".strip()
        c.drawString(x, y, line)
        y -= 24
    c.showPage()
    c.save()
    [doc] = load_file(path, "manuscript", CFG)
    paragraphs = [p for p in doc.text.split("\n\n") if "start" in p or "end" in p]
    assert len(paragraphs) == 2, paragraphs
    assert paragraphs[0].startswith("alphastart") and paragraphs[0].rstrip(".").endswith("alphaend")
    assert paragraphs[1].startswith("betastart") and paragraphs[1].rstrip(".").endswith("betaend")


def _front_page(path: Path, title: str, byline: list[tuple[float, str]], footnote: str = "") -> Path:
    """Page 1 of a paper: a title, byline rows (x or None for centred, text), an abstract."""
    c = canvas.Canvas(str(path), pagesize=letter)
    width, height = letter
    c.setFont("Helvetica-Bold", 16)
    c.drawCentredString(width / 2, height - 80, title)
    c.setFont("Helvetica", 11)
    for k, (row, cells) in enumerate(byline):
        for x, text in cells:
            (c.drawCentredString(width / 2, height - 110 - 14 * row, text) if x is None
             else c.drawString(x, height - 110 - 14 * row, text))
    c.setFont("Helvetica-Bold", 11)
    c.drawCentredString(width / 2, height - 200, "Abstract")
    c.setFont("Helvetica", 10)
    _wrap(c, BODY * 2, 100, height - 218, width - 200)
    if footnote:
        c.setFont("Helvetica", 8)
        c.drawString(72, 60, footnote)
    c.showPage()
    c.save()
    return path


def test_bylines_keep_their_first_author_and_take_no_affiliation_for_one(tmp_path):
    """Layouts seen on arXiv papers: affiliation numbers after each name on two lines (Megatron-LM:
    its first author was lost), an affiliation line under the names that an e-mail domain spells
    (DistilBERT: "Hugging Face" was taken for an author), a grid of names over their affiliations
    (MMLU: "UC Berkeley"), and affiliations in parentheses on the name line."""
    megatron = _front_page(tmp_path / "megatron.pdf", "Megatron-LM: Training Multi-Billion Parameter Language Models", [
        (0, [(None, "Mohammad Shoeybi 1 2 Mostofa Patwary 1 2 Raul Puri 1 2 Patrick LeGresley 2 Jared Casper 2")]),
        (1, [(None, "Bryan Catanzaro 2")])],
        "1 Equal contribution 2 NVIDIA. Correspondence to: Mohammad Shoeybi <mshoeybi@nvidia.com>.")
    distil = _front_page(tmp_path / "distil.pdf", "DistilBERT, a distilled version of BERT", [
        (0, [(None, "Victor Sanh, Lysandre Debut, Julien Chaumond, Thomas Wolf")]), (1, [(None, "Hugging Face")]),
        (2, [(None, "{victor,lysandre,julien,thomas}@huggingface.co")])])
    grid = _front_page(tmp_path / "grid.pdf", "Measuring Massive Multitask Language Understanding", [
        (0, [(90, "Dan Hendrycks"), (210, "Collin Burns"), (330, "Steven Basart"), (450, "Andy Zou")]),
        (1, [(90, "UC Berkeley"), (210, "Columbia University"), (330, "UChicago"), (450, "UC Berkeley")]),
        (3, [(130, "Mantas Mazeika"), (390, "Jacob Steinhardt")]), (4, [(130, "UIUC"), (390, "UC Berkeley")])])
    parenthesised = _front_page(tmp_path / "parens.pdf", "Measuring Massive Multitask Language Understanding", [
        (0, [(None, "Dan Hendrycks (UC Berkeley), Collin Burns (Columbia University), Steven Basart (UChicago)")])])
    [doc] = load_file(megatron, "megatron", CFG)
    assert doc.authors == ["Mohammad Shoeybi", "Mostofa Patwary", "Raul Puri", "Patrick LeGresley", "Jared Casper",
                           "Bryan Catanzaro"]
    [doc] = load_file(distil, "distil", CFG)
    assert doc.authors == ["Victor Sanh", "Lysandre Debut", "Julien Chaumond", "Thomas Wolf"]
    [doc] = load_file(grid, "grid", CFG)
    assert doc.authors == ["Dan Hendrycks", "Collin Burns", "Steven Basart", "Andy Zou", "Mantas Mazeika",
                           "Jacob Steinhardt"]
    [doc] = load_file(parenthesised, "parens", CFG)
    assert doc.authors == ["Dan Hendrycks", "Collin Burns", "Steven Basart"]


def test_pdf_paper_layout_title_authors_sections_references(tmp_path):
    [doc] = load_file(make_paper_pdf(tmp_path / "paper.pdf"), "paper", CFG)
    assert doc.title == "Structured Retrieval over Scientific Papers"  # page 1, not the junk metadata title
    assert doc.authors == ["Ada Lovelace", "Alan Turing", "Grace Hopper"]
    assert "Proceedings of the Workshop" not in doc.text  # running header gone
    assert not re.search(r"(^|\n)\d(\n|$)", doc.text)  # page numbers gone
    assert "retr-" not in doc.text and "retrieval" in doc.text  # hyphenation joined
    paths = [s.path for s in doc.sections if s.kind == "text"]
    assert any(p.endswith("1 Section Number 1") for p in paths) and any(p.endswith("4 Section Number 4") for p in paths)
    # reading order: section 1 (left column) ends before section 2 (right column) starts
    assert doc.text.index("zebra1") < doc.text.index("2 Section Number 2") < doc.text.index("zebra2")
    kinds = {s.kind for s in doc.sections}
    assert {"text", "caption", "reference", "front"} <= kinds
    units = Chunker(ChunkingConfig()).chunk(doc)
    refs = [u for u in units if u.kind == "reference"]
    assert refs and refs[0].text.startswith("References\n\n[1] Author1 Surname1")
    assert all("Surname" not in u.text for u in units if u.kind == "text")  # no reference text in body units
    for u in units:  # a unit never crosses a section, and its offsets index the stored text
        assert doc.text[u.start_char:u.end_char] == u.text
        assert any(s.start <= u.start_char and u.end_char <= s.end for s in doc.sections)
    assert all(u.page in (1, 2, 3) for u in units)
    zebra3 = next(u for u in units if "zebra3" in u.text)
    assert zebra3.page == 2 and zebra3.section.endswith("3 Section Number 3")
    boxes = [b for b in doc.line_boxes if "zebra3" in doc.text[b.start:b.end]]
    assert boxes and boxes[0].page == 2 and 0 < boxes[0].x0 < boxes[0].x1 <= letter[0]


def test_line_number_gutter_is_removed(tmp_path):
    [doc] = load_file(make_paper_pdf(tmp_path / "review.pdf", line_numbers=True), "review", CFG)
    assert not re.search(r"\b0\d\d\b", doc.text), re.findall(r".{20}\b0\d\d\b.{20}", doc.text)[:3]
    assert "zebra1" in doc.text and doc.title == "Structured Retrieval over Scientific Papers"


# ----------------------------------------------------------------------------- odd PDFs
def _image_only_pdf(path: Path) -> Path:
    """A 'scanned' page: the words are pixels in an image, with no text layer."""
    from PIL import Image, ImageDraw, ImageFont

    image = Image.new("L", (1700, 700), 255)
    font = ImageFont.truetype("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", 60) \
        if Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf").exists() else ImageFont.load_default(60)
    ImageDraw.Draw(image).text((80, 200), "Scanned pages need optical\ncharacter recognition today", fill=0, font=font)
    c = canvas.Canvas(str(path), pagesize=letter)
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    buf.seek(0)
    from reportlab.lib.utils import ImageReader
    c.drawImage(ImageReader(buf), 36, 400, width=540, height=222)
    c.showPage()
    c.save()
    return path


def test_odd_pdfs_are_refused_by_name_with_a_reason(tmp_path):
    good = make_paper_pdf(tmp_path / "good.pdf")
    data = good.read_bytes()
    (tmp_path / "empty.pdf").write_bytes(b"")
    (tmp_path / "truncated.pdf").write_bytes(data[: len(data) // 3])
    (tmp_path / "garbage.pdf").write_bytes(b"%PDF-1.4\n" + bytes(range(256)) * 20)
    encrypted = tmp_path / "encrypted.pdf"
    from reportlab.lib import pdfencrypt
    c = canvas.Canvas(str(encrypted), encrypt=pdfencrypt.StandardEncryption("secret", canPrint=0))
    c.drawString(72, 700, "A secret paper")
    c.showPage()
    c.save()
    scanned = _image_only_pdf(tmp_path / "scanned.pdf")
    reasons = {}
    for name in ("empty.pdf", "truncated.pdf", "garbage.pdf", "encrypted.pdf", "scanned.pdf"):
        with pytest.raises(IngestError) as info:
            load_file(tmp_path / name, name, CFG)
        assert info.value.path.endswith(name)
        reasons[name] = info.value.reason
    assert "empty" in reasons["empty.pdf"]
    assert "password" in reasons["encrypted.pdf"]
    assert "ingest.ocr" in reasons["scanned.pdf"]
    assert scanned.exists()


def test_broken_font_map_loads_or_is_refused_cleanly(tmp_path):
    """A font whose encoding maps codes to unknown glyph names (and an xref that no longer fits)."""
    good = make_paper_pdf(tmp_path / "good.pdf", two_columns=False).read_bytes()
    broken = good.replace(b"/Encoding /WinAnsiEncoding", b"/Encoding << /Differences [ 32 /g1 /g2 /g3 /g4 ] >>")
    assert broken != good
    (tmp_path / "fonts.pdf").write_bytes(broken)
    try:
        [doc] = load_file(tmp_path / "fonts.pdf", "fonts", CFG)
        assert doc.text
    except IngestError as exc:
        assert exc.reason


@pytest.mark.skipif(shutil.which("tesseract") is None, reason="tesseract is installed by `make test`")
def test_ocr_reads_a_scanned_page_when_opted_in(tmp_path):
    scanned = _image_only_pdf(tmp_path / "scanned.pdf")
    [doc] = load_file(scanned, "scanned", IngestConfig(ocr=True, ocr_languages="eng"))
    assert "optical" in doc.text.lower() and "recognition" in doc.text.lower()
    assert doc.metadata["pages_without_text"] == [1] and doc.metadata["ocr"] is True
    assert doc.line_boxes and doc.line_boxes[0].page == 1


def test_ocr_without_tesseract_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no tesseract on this PATH
    with pytest.raises(ConfigError, match="tesseract"):
        load_file(_image_only_pdf(tmp_path / "scanned.pdf"), "s", IngestConfig(ocr=True))


def test_footnotes_are_set_after_the_sentence_they_cut(tmp_path):
    """A footnote at a page's foot ("∗Equal contribution ...", in small type) and a notice under it
    ("31st Conference on ...") are paragraphs of their own, after the body sentence they cut,
    which goes on whole at the top of the next page."""
    path = tmp_path / "footnote.pdf"
    c = canvas.Canvas(str(path), pagesize=letter)
    width, height = letter
    other = ["Attention lets a model relate any two positions of a sequence in one step, which",
             "recurrent models reach only through every position between them in turn."]
    pages = (other * 3 + ["Recurrent neural networks and gated recurrent networks in particular have been firmly",
                          "established as the state of the art approaches in sequence modeling and"],
             ["transduction problems such as language modeling and machine translation.",
              "Numerous efforts have since pushed the boundaries of recurrent models."] + other)
    for page, lines in enumerate(pages):
        c.setFont("Helvetica", 10)
        y = height - 72
        for k, line in enumerate(lines):
            c.drawString(72, y, line)
            y -= 20 if k % 2 else 12  # a paragraph of two lines, a blank line
        if page == 0:
            c.setFont("Helvetica", 8)
            c.drawString(72, 130, "∗Equal contribution. Listing order is random. Jakob proposed replacing RNNs and")
            c.drawString(72, 120, "started the effort to evaluate this idea.")
            c.drawString(72, 90, "31st Conference on Neural Information Processing Systems (NIPS 2017), Long Beach, USA.")
        c.showPage()
    c.save()
    [doc] = load_file(path, "footnote", CFG)
    paragraphs = doc.text.split("\n\n")
    assert "in sequence modeling and transduction problems such as language modeling" in doc.text, paragraphs
    assert "∗Equal contribution. Listing order is random. Jakob proposed replacing RNNs and started the effort to " \
           "evaluate this idea." in paragraphs, paragraphs
    assert "31st Conference on Neural Information Processing Systems (NIPS 2017), Long Beach, USA." in paragraphs


def test_a_bold_run_in_heading_opens_a_section_of_its_own(tmp_path):
    """A paragraph that opens with a bold label in body-type text ("**Scalability** We observe
    ...", "**Residual Network.** Based on ...") opens a section headed by it, its words kept where
    they are; a bold word that begins a sentence ("**BERT** is ...", "**Derived Relations** (also
    known as ...) are ..."), a caption's or a theorem's bold label and a formula head no section."""
    path = tmp_path / "run-in.pdf"
    c = canvas.Canvas(str(path), pagesize=letter)
    width, height = letter
    c.setFont("Helvetica-Bold", 12)
    c.drawString(72, height - 72, "3 Experiments")
    y = height - 100
    for bold, rest in (("Scalability", "We observe super linear speedup between 64 and 400 GPUs."),
                       ("Residual Network.", "Based on the plain network, we insert shortcut connections."),
                       ("BERT", "is a model that reads both directions of a sentence at once."),
                       ("Figure 1.", "Throughput of the two systems against the number of GPUs."),
                       ("Theorem 2.", "Let N be the sequence length and d the head dimension."),
                       ("Derived Relations", "(also known as views) are defined by other relations."),
                       ("The map f", ": R x R")):
        c.setFont("Helvetica-Bold", 10)
        c.drawString(72, y, bold)
        x = 72 + c.stringWidth(bold + " ", "Helvetica-Bold", 10)
        c.setFont("Helvetica", 10)
        c.drawString(x, y, rest)
        c.drawString(72, y - 12, "The measured figures follow in the table below, one row for each setting.")
        y -= 40
    c.showPage()
    c.save()
    [doc] = load_file(path, "run-in", CFG)
    paths = {s.path for s in doc.sections}
    assert {p.rsplit(" > ", 1)[-1] for p in paths} >= {"Scalability", "Residual Network"}, paths
    assert not any(p.endswith(("BERT", "Figure 1", "Theorem 2", "Derived Relations", "The map f")) for p in paths), paths
    # the label's words stay where the author set them, opening the section's text
    opening: dict[str, str] = {}
    for s in doc.sections:
        opening.setdefault(s.path.rsplit(" > ", 1)[-1], doc.text[s.start:s.end])
    assert opening["Scalability"].startswith("Scalability We observe super linear speedup"), opening
    assert opening["Residual Network"].startswith("Residual Network. Based on the plain network"), opening
    assert "BERT is a model" in doc.text
    caption = next(s for s in doc.sections if doc.text[s.start:s.end].startswith("Figure 1."))
    assert caption.kind == "caption"


# ----------------------------------------------------------------------------- real arXiv papers
@pytest.fixture(scope="module")
def real_papers():
    if not PAPERS_PDF.is_dir():
        pytest.skip(f"{PAPERS_PDF} not present (bench data)")
    return {g["file"]: load_file(PAPERS_PDF / g["file"], g["file"], CFG)[0] for g in GOLD}


def test_real_papers_titles_authors_years_against_gold(real_papers):
    for g in GOLD:
        doc = real_papers[g["file"]]
        assert _norm(doc.title) == _norm(g["title"]), g["file"]
        assert doc.authors and _norm(doc.authors[0]) == _norm(g["first_author"]), g["file"]
        assert doc.year == g["year"], g["file"]


def test_real_papers_text_is_clean_and_structured(real_papers):
    found = total = 0
    for g in GOLD:
        doc = real_papers[g["file"]]
        assert not LIGATURES.search(doc.text), g["file"]
        units = Chunker(ChunkingConfig()).chunk(doc)
        refs = [u for u in units if u.kind == "reference"]
        first_ref = re.sub(r"^\[\d+\]\s*", "", refs[0].text.split("\n\n", 1)[-1])
        assert _norm(first_ref).startswith(_norm(g["first_reference_start"])), g["file"]
        body = " ".join(_norm(u.text) for u in units if u.kind in ("text", "caption"))
        assert _norm(g["first_reference"])[:80] not in body, g["file"]
        headings = {_norm(s.path.rsplit(" > ", 1)[-1]) for s in doc.sections}
        gold = [_norm(h) for h in g["sections"]]
        found += sum(h in headings for h in gold)
        total += len(gold)
    assert found / total >= 0.85, f"{found}/{total} gold section headings detected"


def test_a_sentence_cut_by_a_float_or_a_column_turn_is_read_whole(real_papers):
    """A table set at the top of the next page ("Table 1: ..."), a figure beside a column, a
    footnote at a page's foot, or the turn to the next column cut these sentences in two (read from
    the PDFs); each is one sentence of one text unit again."""
    whole = [
        ("1706.03762.pdf", "we must inject some information about the relative or absolute position of the tokens in "
                           "the sequence."),
        ("resnet.pdf", "We have shown that parameter-free, identity shortcuts help with training."),
        ("resnet.pdf", "We replace each 2-layer block in the 34-layer net with this 3-layer bottleneck block"),
        ("vit.pdf", "Figure 3 also shows the performance region spanned by BiT models of different sizes."),
        ("ponder_net.pdf", "These results are important as they show that our method is particularly robust"),
        ("2205.01068.pdf", "must work together to develop clear guidelines around responsible AI"),
    ]
    for name, sentence in whole:
        units = Chunker(ChunkingConfig()).chunk(real_papers[name])
        assert any(_norm(sentence) in _norm(u.text) for u in units if u.kind == "text"), name


def test_a_word_hyphenated_where_a_float_title_follows_is_read_whole_and_the_title_apart(tmp_path):
    """A column ends in a hyphenated word and the page's next characters are a float's title higher
    up, with no line break between them ("... the amplification or con-" then "Figure 7: ..."): the
    title is not glued to the word ("conFigure 7"), it is a caption of its own, and the word is
    whole where the sentence goes on ("contrast stretching", the document's own word)."""
    path = tmp_path / "float.pdf"
    c = canvas.Canvas(str(path), pagesize=letter)
    width, height = letter
    c.setFont("Helvetica", 10)
    left = ["A second normalization may be done to keep the contrast of the input image.",
            "The algorithm reduces the overall image contrast as a function of the filter",
            "length. This can be helped by amplifying the input or by contrast stretching",
            "the output image as a function of the length. Clearly as the length goes to",
            "infinity the amplification or con-"]
    for k, line in enumerate(left):
        c.drawString(72, height - 100 - 12.5 * k, line)
    c.drawString(320, height - 100, "Figure 7: Phase shifted ripple functions (top) and a window function (bottom).")
    for k, line in enumerate(["trast stretching must go to infinity as well. The images in all the figures",
                              "are contrast stretched before they are shown."]):
        c.drawString(320, height - 300 - 12.5 * k, line)
    c.showPage()
    c.save()
    [doc] = load_file(path, "float", CFG)
    assert "conFigure" not in doc.text
    assert "the amplification or contrast stretching must go to infinity as well." in doc.text
    assert any(sec.kind == "caption" and doc.text[sec.start:sec.end].startswith("Figure 7: Phase shifted")
               for sec in doc.sections)


REFS_GOLD = json.loads((REPO / "tests" / "data" / "papers_refs_gold.json").read_text(encoding="utf-8"))


def test_real_reference_lists_entries_and_the_citation_graph_against_gold(real_papers):
    """Gold read from the PDFs (tests/data/papers_refs_gold.json); bench/papers_refs.py prints the
    same figures with every miss."""
    from monjyu.index.citations import build_citation_graph
    from monjyu.ingest.references import name_key, surname
    from monjyu.store.lancedb_store import documents_to_table

    right = sampled = 0
    for g in REFS_GOLD:
        refs = real_papers[g["file"]].references
        assert abs(len(refs) - g["reference_count"]) <= 0.05 * g["reference_count"], g["file"]
        for ge in g["sampled_entries"]:
            ours = refs[ge["index"] - 1] if ge["index"] <= len(refs) else {}
            sampled += 1
            right += (name_key(ours.get("title", "")) == name_key(ge["title"]) and ours.get("year") == ge["year"]
                      and (not ge["first_author_surname"] or
                           name_key(ge["first_author_surname"]).endswith(name_key(surname(ours["authors"][0])))))
    assert right / sampled >= 0.9, f"{right}/{sampled} sampled entries right"
    docs = [real_papers[g["file"]] for g in REFS_GOLD]
    for d in docs:
        d.id = Path(d.source_path).name
    edges = {(e["citing"], e["cited"]) for e in build_citation_graph(documents_to_table(docs, {}))["edges"]}
    truth = {(g["file"], c["file"]) for g in REFS_GOLD for c in g["cites_in_collection"]}
    assert len(edges & truth) >= 0.9 * len(truth) and len(edges & truth) >= 0.95 * len(edges), (edges ^ truth)


# ----------------------------------------------------------------------------- other formats
def test_markdown_html_docx_sections(tmp_path):
    md = tmp_path / "paper.md"
    md.write_text("# A Markdown Paper\n\nIntro text here.\n\n## 2 Method\n\nWe do things.\n\n```\n# not a heading\n```\n\n"
                  "## 関連研究\n\n先行研究を述べる。\n\n## References\n\n[1] Someone. A cited work. 2020.\n", encoding="utf-8")
    [doc] = load_file(md, "md", CFG)
    by_path = {s.path: s.kind for s in doc.sections}
    assert by_path.get("2 Method") == "text" and by_path.get("関連研究") == "text"
    assert by_path.get("References") == "reference"
    assert "# not a heading" in doc.text and "not a heading" not in by_path

    html = tmp_path / "paper.html"
    html.write_text("<html><head><title>An HTML Paper</title></head><body><h1>An HTML Paper</h1><p>Opening.</p>"
                    "<h2>3.1 Pre-training</h2><p>We pre-train.</p><h2>Bibliography</h2><p>[1] A. Person. Work.</p>"
                    "</body></html>", encoding="utf-8")
    [doc] = load_file(html, "html", CFG)
    assert {s.path: s.kind for s in doc.sections}.get("3.1 Pre-training") == "text"
    assert any(s.kind == "reference" for s in doc.sections)

    d = docx.Document()
    d.add_heading("A Word Paper", level=0)
    d.add_paragraph("Opening paragraph.")
    d.add_heading("Experiments", level=1)
    d.add_paragraph("We ran experiments.")
    d.add_heading("Setup", level=2)
    d.add_paragraph("The setup.")
    d.save(tmp_path / "paper.docx")
    [doc] = load_file(tmp_path / "paper.docx", "docx", CFG)
    assert doc.title == "A Word Paper"
    assert "Experiments > Setup" in {s.path for s in doc.sections}


def test_plain_text_paper_header(tmp_path):
    txt = tmp_path / "paper.txt"
    txt.write_text("A Plain Text Paper About Viruses\n\nhttps://example.org/paper\n\nCurie, Marie; Pasteur, Louis\n"
                   "2019-05-01\nDOI:10.1000/xyz.123\nLicense:cc-by\n\nAbstract: Viruses spread.\n\nText: Body here.\n",
                   encoding="utf-8")
    [doc] = load_file(txt, "txt", CFG)
    assert doc.title == "A Plain Text Paper About Viruses"
    assert doc.authors == ["Marie Curie", "Louis Pasteur"] and doc.year == 2019
    assert doc.metadata["doi"] == "10.1000/xyz.123" and doc.date == "2019-05-01"
    # The labelled header of a CORD-19 export: the labels are no part of the names or the date.
    txt.write_text("Another Paper\n\nhttps://example.org/b\n\nAuthors: Chan, Jasper Fuk-Woo; Kok, Kin-Hang\n"
                   "Date: 2020-01-28\nDOI: 10.1080/222.2020\n\nAbstract: Viruses spread.\n", encoding="utf-8")
    [labelled] = load_file(txt, "txt", CFG)
    assert labelled.authors == ["Jasper Fuk-Woo Chan", "Kin-Hang Kok"] and labelled.year == 2020
    assert labelled.date == "2020-01-28"
    body = [(s.path, doc.text[s.start:s.end]) for s in doc.sections if s.kind == "text"]
    # The labelled abstract is its own section; the body after it is not abstract, and its
    # export label ("Text:") is no part of the text.
    assert body == [("Abstract", "Abstract\n\nViruses spread."), ("", "Body here.")]


# ----------------------------------------------------------------------------- through the index
def test_kinds_and_metadata_filters_through_the_index(tmp_path, make_config):
    folder = tmp_path / "papers"
    folder.mkdir()
    make_paper_pdf(folder / "paper.pdf")
    (folder / "other.txt").write_text("Another Paper On Zebras\n\nSmith, John\n2001-01-01\n\nZebras graze.\n", encoding="utf-8")
    m = Monjyu(tmp_path / "idx", make_config())
    report = m.index([folder])
    assert not report.failures
    default = m.search("Author1 Surname1 referenced work venue", mode="keyword", top_k=20, answer=False)
    assert all(h.kind in ("text", "caption") for h in default.hits)
    refs = m.search("Author1 Surname1 referenced work venue", mode="keyword", top_k=5, answer=False,
                    filters=parse_filters(["kind=reference"]))
    assert refs.hits and all(h.kind == "reference" for h in refs.hits)
    # the build embeds the sentences default searches read, not the reference list's
    cache = EmbeddingCache(Path(make_config().cache_dir) / "embeddings.sqlite")
    embedder_id = m.workspace.manifest().embedder_id
    def cached(hit) -> bool:
        first = hit.text[slice(*statement_spans(hit.text)[0])]
        return bool(cache.get_many([EmbeddingCache.key(embedder_id, "passage", first)]))
    body = m.search("marker phrase zebras", mode="keyword", top_k=1, answer=False).hits
    assert cached(body[0]) and not cached(refs.hits[0])
    for mode in ("vector", "keyword", "hybrid", "graph"):
        hits = m.search("marker phrase zebras", mode=mode, top_k=10, answer=False, filters=parse_filters(["author=lovelace"])).hits
        assert hits and all("Ada Lovelace" in h.authors for h in hits), mode
        hits = m.search("marker phrase zebras", mode=mode, top_k=10, answer=False, filters=parse_filters(["year=1990-2005"])).hits
        assert hits and all(h.year == 2001 for h in hits), mode
    cited = m.search("Which marker phrase ends section 3?", top_k=3)
    assert cited.citations and cited.citations[0].label.startswith("Lovelace et al.")
    section_hit = next(h for h in cited.hits if "zebra3" in h.text)
    assert section_hit.section.endswith("3 Section Number 3") and section_hit.page == 2


def test_bad_year_and_kind_filters_are_refused():
    with pytest.raises(ConfigError, match="year"):
        parse_filters(["year=nineteen"])
    with pytest.raises(ConfigError, match="kind"):
        parse_filters(["kind=footnote"])


def test_evidence_rerank_puts_the_stating_passage_first(tmp_path, make_config):
    """Among passages sharing a topic, the one whose sentence states the answer comes first."""
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "zorbia.md").write_text(
        "# Zorbia\n\n## Geography\n\nZorbia has rivers, hills and a long coast. The capital region has many "
        "harbours and the capital district is busy. Capital investment in Zorbia grew.\n\n"
        "## Cities\n\nThe capital of Zorbia is Quellport, a harbour city founded in 1602.\n\n"
        "## Economy\n\nZorbia exports fish. Its capital markets are small.\n", encoding="utf-8")
    m = Monjyu(tmp_path / "idx", make_config(chunking={"size": 40, "overlap": 0}))
    m.index([folder])
    result = m.search("What is the capital of Zorbia?", mode="hybrid", top_k=3, answer=False)
    assert "Quellport" in result.hits[0].text and result.hits[0].section.endswith("Cities")
    assert "rerank_ms" in result.timings_ms
    assert [h.score for h in result.hits] == sorted((h.score for h in result.hits), reverse=True)


def test_get_document_gives_metadata_sections_and_the_unit_boxes(tmp_path, make_config):
    folder = tmp_path / "papers"
    folder.mkdir()
    make_paper_pdf(folder / "paper.pdf")
    m = Monjyu(tmp_path / "idx", make_config())
    m.index([folder])
    hit = m.search("Which marker phrase ends section 3?", mode="keyword", top_k=1, answer=False).hits[0]
    doc = m.documents.get(hit.document_id, text_unit_id=hit.text_unit_id)
    assert doc["authors"] == ["Ada Lovelace", "Alan Turing", "Grace Hopper"] and doc["title"].startswith("Structured")
    assert any(s["path"].endswith("3 Section Number 3") for s in doc["sections"])
    context = doc["context"]
    assert context["section"].endswith("3 Section Number 3") and context["page"] == 2
    assert context["boxes"] and all(b[0] == 2 and b[1] < b[3] and b[2] < b[4] for b in context["boxes"])


def test_bold_run_in_headings_of_real_papers_are_headings(real_papers):
    """The run-in headings read by eye on pages 4 and 6 of each paper
    (bench/data/papers_pdf_run_in_headings.jsonl) open sections on their pages; the theorem and
    algorithm labels there do not."""
    pages = [json.loads(line) for line in (REPO / "bench/data/papers_pdf_run_in_headings.jsonl").read_text(
        encoding="utf-8").splitlines()]
    for g in pages:
        doc = real_papers[g["file"]]
        on_page = {_norm(s.path.rsplit(" > ", 1)[-1]) for s in doc.sections
                   if s.path and doc.page_at(s.start) == g["page"]}
        for heading in g["run_in_headings"]:
            assert _norm(heading) in on_page, (g["file"], g["page"], heading)
        for label in g["other_labels"]:
            if label["kind"] in ("theorem label", "algorithm box") and label["text"] != "Hyperparam":
                assert _norm(label["text"]) not in on_page, (g["file"], g["page"], label)


def test_a_passage_under_a_run_in_heading_is_cited_by_it(cited_papers: Monjyu):
    """ResNet's "**Deeper Bottleneck Architectures.** Next we describe ..." and "**50-layer ResNet:**
    We replace ..." through the real index: the passages' section paths end with their labels."""
    result = cited_papers.search("How is the deeper bottleneck architecture of ResNet built?", top_k=5)
    sections = {h.section.rsplit(" > ", 1)[-1] for h in result.hits}
    assert {"Deeper Bottleneck Architectures", "50-layer ResNet"} & sections, sections
    assert result.answer is not None and "We replace each 2-layer block" in result.answer.text


def test_a_quote_opening_with_its_heading_sets_it_apart():
    """A run-in label printed without a stop ("**Scalability** We observe ...") is quoted set apart
    as its bold type set it; a sentence that only begins with the heading's word is not."""
    from monjyu.engines.quotes import with_heading_set_apart

    section = "5 Experiments > Scalability"
    assert with_heading_set_apart("Scalability We observe super linear speedup.", section) == \
        "Scalability: We observe super linear speedup."
    assert with_heading_set_apart("Scalability is what the system lacks.", section) == "Scalability is what the system lacks."
    assert with_heading_set_apart("We observe it.", section) == "We observe it."


def test_a_footnote_that_gives_the_code_s_address_is_quoted_with_its_marked_sentence(tmp_path, make_config):
    """A PDF page whose body sentence carries a raised footnote mark ("... library called FastTrain²")
    and whose foot holds the note, in small type ("² https://github.com/example/fasttrain"): the
    reader sets the note after the paragraph it cut, and the offline answer that quotes the marked
    sentence shows the note beside it."""
    folder = tmp_path / "papers"
    folder.mkdir()
    c = canvas.Canvas(str(folder / "orca.pdf"), pagesize=letter)
    width, height = letter
    body = ["Orca partitions the optimizer states of a model across the devices that train it, so that",
            "models ten times larger fit in the memory of the same cluster. We share Orca as a part of",
            "our open source training library called FastTrain",
            "",
            "Memory is the main limit on the size of the models that a cluster of devices can train.",
            "Data parallelism keeps a copy of every optimizer state on each of the devices, and model",
            "parallelism splits each layer across them, which needs fast links between the devices."]
    c.setFont("Helvetica", 10)
    y = height - 72
    for line in body:
        c.drawString(72, y, line)
        if line.endswith("FastTrain"):
            end = 72 + c.stringWidth(line, "Helvetica", 10)
            c.setFont("Helvetica", 7)
            c.drawString(end, y + 4, "2")
            c.setFont("Helvetica", 10)
            c.drawString(end + c.stringWidth("2", "Helvetica", 7), y, ".")
        y -= 12
    c.setFont("Helvetica", 8)
    c.drawString(72, 100, "2 https://github.com/example/fasttrain")
    c.showPage()
    c.save()
    m = Monjyu(tmp_path / "idx", make_config())
    assert not m.index([folder]).failures
    lines = m.search("Is there an open-source implementation of Orca?", top_k=5).answer.text.splitlines()
    assert "library called FastTrain2" in lines[0], lines
    assert "(footnote 2: https://github.com/example/fasttrain) [1]" in lines[0], lines
