"""Token-based chunking on sentence boundaries with overlap; giant sentences are cut by words."""

from __future__ import annotations

import hashlib
import re

from ..config import ChunkingConfig
from ..nlp.tokens import TokenCounter
from ..types import ANNOTATION, Document, Section, TextUnit
from .sentences import split_sentences

_PIECES = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff]|\S+")  # a CJK character or a word


def text_unit_id(document_id: str, chunk_index: int, text: str) -> str:
    """Stable id: same document, position and text give the same id across rebuilds."""
    h = hashlib.sha256(f"{document_id}\x00{chunk_index}\x00{text}".encode()).hexdigest()
    return h[:24]


class Chunker:
    def __init__(self, cfg: ChunkingConfig, counter: TokenCounter | None = None):
        self.size = cfg.size
        self.overlap = cfg.overlap
        self.counter = counter or TokenCounter()

    def _spans(self, text: str, lo: int = 0, hi: int | None = None) -> list[tuple[int, int, int]]:
        """Sentence spans of text[lo:hi] (offsets into `text`) with token counts; sentences above
        `size` are cut into word runs."""
        out: list[tuple[int, int, int]] = []
        hi = len(text) if hi is None else hi
        for start, end in ((s + lo, e + lo) for s, e in split_sentences(text[lo:hi])):
            n = self.counter.count(text[start:end])
            if n <= self.size:
                out.append((start, end, n))
                continue
            # One giant sentence: greedy runs of words/characters under the size.
            piece_start, piece_tokens, last_end = None, 0, start
            for m in _PIECES.finditer(text, start, end):
                t = self.counter.count(m.group())
                if piece_start is not None and piece_tokens + t > self.size:
                    out.append((piece_start, last_end, piece_tokens))
                    piece_start, piece_tokens = None, 0
                if piece_start is None:
                    piece_start = m.start()
                piece_tokens += t
                last_end = m.end()
            if piece_start is not None:
                out.append((piece_start, last_end, piece_tokens))
        return out

    def chunk(self, doc: Document) -> list[TextUnit]:
        """Units within each section (never across one), carrying its heading path and kind."""
        sections = doc.sections or [Section(0, len(doc.text))]
        units: list[TextUnit] = []
        for section in sections:
            self._chunk_span(doc, section, units)
        return units

    def _chunk_span(self, doc: Document, section: Section, units: list[TextUnit]) -> None:
        spans = self._spans(doc.text, section.start, section.end)
        i = 0
        while i < len(spans):
            j, tokens = i, 0
            while j < len(spans) and (j == i or tokens + spans[j][2] <= self.size):
                tokens += spans[j][2]
                j += 1
            start, end = spans[i][0], spans[j - 1][1]
            text = doc.text[start:end]
            idx = len(units)
            units.append(TextUnit(
                id=text_unit_id(doc.id, idx, text), document_id=doc.id, chunk_index=idx, text=text,
                start_char=start, end_char=end, n_tokens=self.counter.count(text), title=doc.title,
                source_path=doc.source_path, file_type=doc.file_type, date=doc.date,
                page=section.page if section.kind == ANNOTATION else doc.page_at(start),
                section=section.path, kind=section.kind, authors=list(doc.authors), year=doc.year,
                sentences=[(a - start, b - start) for a, b, _ in spans[i:j]],
            ))
            if j >= len(spans):
                break
            # Step back over trailing sentences that fit in the overlap, but only while the next
            # unit still reaches a new sentence (otherwise it would repeat a subset of this one).
            back, k, room = 0, j, min(self.overlap, self.size - spans[j][2])
            while k - 1 > i and back + spans[k - 1][2] <= room:
                back += spans[k - 1][2]
                k -= 1
            i = k
