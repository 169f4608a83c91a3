"""Japanese papers as PDFs: the articles of tests/data/ja_paragraphs.json set with a Japanese font
(IPA Gothic, Debian's fonts-ipafont-gothic, which `make test` installs), title and byline on page
1, lines broken inside sentences as a typesetter breaks them; the PDF's metadata holds the title
and the authors. The same text is also written as plain text, to compare what search finds."""

from __future__ import annotations

import json
from pathlib import Path

ARTICLES = json.loads((Path(__file__).parent / "data" / "ja_paragraphs.json").read_text(encoding="utf-8"))
FONT_PATHS = [Path("/usr/share/fonts/opentype/ipafont-gothic/ipag.ttf"),
              Path("/usr/share/fonts/truetype/fonts-japanese-gothic.ttf")]


def font_path() -> Path | None:
    return next((p for p in FONT_PATHS if p.is_file()), None)


def make_pdf(article: dict, path: Path, chars_per_line: int = 36) -> Path:
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.ttfonts import TTFont
    from reportlab.pdfgen import canvas

    font = font_path()
    if font is None:
        raise FileNotFoundError("no Japanese font: install fonts-ipafont-gothic (`make test` does)")
    if "IPAGothic" not in pdfmetrics.getRegisteredFontNames():
        pdfmetrics.registerFont(TTFont("IPAGothic", str(font)))
    c = canvas.Canvas(str(path), pagesize=A4)
    c.setTitle(article["title"])
    c.setAuthor(", ".join(article["authors"]))
    width, height = A4
    y = height - 90
    c.setFont("IPAGothic", 20)
    c.drawCentredString(width / 2, y, article["title"])
    y -= 32
    c.setFont("IPAGothic", 11)
    c.drawCentredString(width / 2, y, ", ".join(article["authors"]))
    y -= 40
    c.setFont("IPAGothic", 10.5)
    for paragraph in article["text"].split("\n\n"):
        for k in range(0, len(paragraph), chars_per_line):
            if y < 60:
                c.showPage()
                c.setFont("IPAGothic", 10.5)
                y = height - 60
            indent = 10.5 if k == 0 else 0  # a paragraph's first line is indented one character
            c.drawString(72 + indent, y, paragraph[k:k + chars_per_line])
            y -= 16
        y -= 8
    c.save()
    return path


def write_collection(folder: Path, as_pdf: bool) -> list[tuple[str, str, str]]:
    """The 12 articles as PDFs or as plain text (title line, blank line, paragraphs) in `folder`;
    returns (question, answer, file name) for every question."""
    folder.mkdir(parents=True, exist_ok=True)
    questions = []
    for a in ARTICLES:
        name = f"{a['id']}.pdf" if as_pdf else f"{a['id']}.txt"
        if as_pdf:
            make_pdf(a, folder / name)
        else:
            (folder / name).write_text(f"{a['title']}\n\n{a['text']}\n", encoding="utf-8")
        questions += [(q["question"], q["answer"], name) for q in a["questions"]]
    return questions
