"""OCR for PDF pages without a text layer (opt-in: `ingest.ocr: true`), with Debian's tesseract.

Pages are rendered by PDFium at 300 dpi and read by the `tesseract` command (TSV output: each
line's words and box), so OCR'd lines keep their place on the page like extracted ones.
"""

from __future__ import annotations

import csv
import io
import shutil
import subprocess
import tempfile
from pathlib import Path

from ..errors import ConfigError, IngestError
from .structure import Block, join_words, line_separator, normalize

DPI = 300


def require_tesseract(languages: str) -> str:
    """The tesseract binary, or a clear error naming what to install."""
    exe = shutil.which("tesseract")
    if exe is None:
        raise ConfigError("ingest.ocr is true but the `tesseract` command is not installed; install it "
                          "(Debian/Ubuntu: apt-get install tesseract-ocr tesseract-ocr-eng tesseract-ocr-jpn) "
                          "or set ingest.ocr: false")
    listed = subprocess.run([exe, "--list-langs"], capture_output=True, text=True, timeout=60).stdout.split()
    missing = [lang for lang in languages.split("+") if lang not in listed]
    if missing:
        raise ConfigError(f"ingest.ocr_languages names {', '.join(missing)}, which tesseract does not have; "
                          f"install tesseract-ocr-{missing[0]} or change ingest.ocr_languages")
    return exe


def ocr_pages(name: str, data: bytes, pages: list[int], languages: str) -> list[Block]:
    """One block per OCR'd paragraph of the given (1-based) pages, with line boxes in PDF points."""
    import pypdfium2 as pdfium

    exe = require_tesseract(languages)
    pdf = pdfium.PdfDocument(data)
    blocks: list[Block] = []
    try:
        with tempfile.TemporaryDirectory(prefix="monjyu-ocr-") as tmp:
            for number in pages:
                page = pdf[number - 1]
                try:
                    height = page.get_size()[1]
                    image = Path(tmp) / f"p{number}.png"
                    page.render(scale=DPI / 72).to_pil().save(image)
                finally:
                    page.close()
                try:
                    tsv = subprocess.run([exe, str(image), "stdout", "-l", languages, "tsv"], capture_output=True,
                                         text=True, timeout=300, check=True).stdout
                except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
                    raise IngestError(name, f"tesseract failed on page {number}: {exc}") from exc
                blocks.extend(_tsv_blocks(tsv, number, height))
    finally:
        pdf.close()
    return blocks


def _tsv_blocks(tsv: str, page: int, page_height: float) -> list[Block]:
    """Tesseract TSV rows (level 5 = word) grouped into lines and paragraphs."""
    scale = 72 / DPI
    lines: dict[tuple[int, int, int], list[dict[str, str]]] = {}
    for row in csv.DictReader(io.StringIO(tsv), delimiter="\t", quoting=csv.QUOTE_NONE):
        if row.get("level") == "5" and (row.get("text") or "").strip() and float(row.get("conf") or -1) >= 0:
            lines.setdefault((int(row["block_num"]), int(row["par_num"]), int(row["line_num"])), []).append(row)
    paragraphs: dict[tuple[int, int], list[tuple[str, tuple[float, float, float, float]]]] = {}
    for (block, par, _), words in sorted(lines.items()):
        x0 = min(int(w["left"]) for w in words) * scale
        x1 = max(int(w["left"]) + int(w["width"]) for w in words) * scale
        top = min(int(w["top"]) for w in words) * scale
        bottom = max(int(w["top"]) + int(w["height"]) for w in words) * scale
        text = normalize(join_words([w["text"] for w in words]))
        paragraphs.setdefault((block, par), []).append((text, (x0, page_height - bottom, x1, page_height - top)))
    out = []
    for _, rows in sorted(paragraphs.items()):
        text, spans = "", []
        for line, box in rows:
            if text:
                text = text[:-1] if text.endswith("-") else text + line_separator(text, line)
            spans.append((len(text), len(text) + len(line), page, box))
            text += line
        out.append(Block(text, page=page, lines=spans))
    return out
