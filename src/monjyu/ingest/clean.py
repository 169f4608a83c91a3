"""Text cleanup shared by all loaders."""

import re
import unicodedata

_SPACES = re.compile(r"[ \t\u00a0\u3000]+")
_BLANK_LINES = re.compile(r"\n\s*\n+")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def clean_text(text: str) -> str:
    """NFC-normalize, drop control characters, collapse runs of spaces and blank lines."""
    text = unicodedata.normalize("NFC", text).replace("\r\n", "\n").replace("\r", "\n")
    text = _CONTROL.sub("", text)
    lines = [_SPACES.sub(" ", line).strip() for line in text.split("\n")]
    text = "\n".join(lines)
    text = _BLANK_LINES.sub("\n\n", text)
    return text.strip()


_LINE_END_HYPHEN = re.compile(r"([^\W\d_](?:[\w-]*[^\W\d_])?)-\n([a-z]+)")
_HYPHENATED = re.compile(r"[^\W\d_]+(?:-[^\W\d_]+)+")


def mend_line_end_hyphens(text: str) -> str:
    """A word a hard-wrapped text broke at a line's end (a PDF converted to text: "archival autopsy
    tis-" / "sues") is joined again, "tissues", unless the text writes it with its hyphen elsewhere
    ("case-fatality"), or the first part has one already ("non-self-" / "supporting") or is a letter
    or an acronym ("W-" / "shaped"), as the PDF loader mends its lines."""
    written = {w.lower() for w in _HYPHENATED.findall(text)}

    def joined(m: re.Match) -> str:
        left, right = m.group(1), m.group(2)
        keep = "-" in left or left.isupper() or f"{left}-{right}".lower() in written  # "W-shaped", "HA-specific"
        return f"{left}{'-' if keep else ''}{right}"

    return _LINE_END_HYPHEN.sub(joined, text)
