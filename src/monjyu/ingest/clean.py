"""Text cleanup shared by all loaders."""

import re
import unicodedata
from collections.abc import Iterable

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
_VOCABULARY_WORD = re.compile(r"[\w\-]+")


def hyphen_vocabulary(texts: Iterable[str]) -> set[str]:
    """A document's words as `keeps_line_end_hyphen` reads them: lower-cased, hyphens kept."""
    return {w.lower() for text in texts for w in _VOCABULARY_WORD.findall(text)}


def keeps_line_end_hyphen(left: str, right: str, vocabulary: set[str]) -> bool:
    """Whether a word broken at a line's end keeps its hyphen when joined: where the first part has
    one already ("non-self-" / "supporting") or is a letter or an acronym ("W-" / "shaped", "CPU-" /
    "cache"), or the document writes the hyphenated form and not the joined one ("case-fatality");
    else "tis-" / "sues" is "tissues". `vocabulary`: the document's `hyphen_vocabulary`."""
    return "-" in left or left.isupper() or (f"{left}-{right}".lower() in vocabulary
                                             and (left + right).lower() not in vocabulary)


def mend_line_end_hyphens(text: str) -> str:
    """A plain text's words broken at its lines' ends (a PDF converted to text: "archival autopsy
    tis-" / "sues") joined again, as the PDF loader joins its lines (`keeps_line_end_hyphen`)."""
    vocabulary = hyphen_vocabulary([text])

    def joined(m: re.Match) -> str:
        left, right = m.group(1), m.group(2)
        return f"{left}{'-' if keeps_line_end_hyphen(left, right, vocabulary) else ''}{right}"

    return _LINE_END_HYPHEN.sub(joined, text)
