"""Text cleanup shared by all loaders."""

import re
import unicodedata

_HYPHEN_BREAK = re.compile(r"(\w)-\n(\w)")  # "exam-\nple" -> "example" (PDF line-end hyphenation)
_SPACES = re.compile(r"[ \t\u00a0\u3000]+")
_BLANK_LINES = re.compile(r"\n\s*\n+")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def clean_text(text: str, *, dehyphenate: bool = False) -> str:
    """NFC-normalize, drop control characters, collapse runs of spaces and blank lines."""
    text = unicodedata.normalize("NFC", text).replace("\r\n", "\n").replace("\r", "\n")
    text = _CONTROL.sub("", text)
    if dehyphenate:
        text = _HYPHEN_BREAK.sub(r"\1\2", text)
    lines = [_SPACES.sub(" ", line).strip() for line in text.split("\n")]
    text = "\n".join(lines)
    text = _BLANK_LINES.sub("\n\n", text)
    return text.strip()


def join_pdf_lines(text: str) -> str:
    """Within a PDF page, single newlines are layout, not structure: join them into spaces."""
    paragraphs = re.split(r"\n{2,}", text)
    return "\n\n".join(re.sub(r"\s*\n\s*", " ", p) for p in paragraphs)
