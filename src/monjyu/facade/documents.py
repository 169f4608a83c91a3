"""Documents and their pages: listing, one document with a cited unit in context, PDF page images."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..errors import MonjyuError
from ..store import LanceStore
from ..store.lancedb_store import DOCUMENTS
from .workspace import Workspace

DOCUMENT_FIELDS = ["id", "title", "source_path", "file_type", "date"]


class Documents:
    """What the web app's document view and the MCP document tools read (`m.documents`)."""

    def __init__(self, workspace: Workspace):
        self.workspace = workspace
        self._doc_rows: tuple[str, dict[str, int]] | None = None

    def rows(self) -> tuple[LanceStore, dict[str, int]]:
        """The current generation's documents table and each document's row in it."""
        context = self.workspace.current()
        store = LanceStore(context.generation_dir / "lancedb")
        generation = context.manifest.generation
        if self._doc_rows is None or self._doc_rows[0] != generation:
            ids = store.documents(["id"])["id"].to_pylist()
            self._doc_rows = (generation, {d: i for i, d in enumerate(ids)})
        return store, self._doc_rows[1]

    def list(self, limit: int = 50, offset: int = 0) -> dict[str, Any]:
        """One page of the indexed documents (id order), with the total.

        Args:
            limit: documents per page.
            offset: documents to skip.
        """
        if limit < 1 or offset < 0:
            raise MonjyuError("limit must be >= 1 and offset >= 0")
        store, rows = self.rows()
        ids = sorted(rows)[offset:offset + limit]
        table = store.take(DOCUMENTS, [rows[d] for d in ids],
                           DOCUMENT_FIELDS + ["text_unit_ids", "authors", "year", "structure"]).to_pylist()
        by_id = {r["id"]: r for r in table}
        docs = [{**{k: by_id[d][k] for k in DOCUMENT_FIELDS}, "authors": by_id[d]["authors"] or [],
                 "year": by_id[d]["year"], "pages": len(json.loads(by_id[d]["structure"] or "{}").get("page_starts", [])) or None,
                 "text_units": len(by_id[d]["text_unit_ids"])} for d in ids]
        return {"total": len(rows), "offset": offset, "limit": limit, "documents": docs}

    def get(self, document_id: str, text_unit_id: str | None = None, context_units: int = 1,
                     max_chars: int = 20000) -> dict[str, Any]:
        """A document's metadata, sections, text units and text.

        Args:
            document_id: the document's id (search hits and `list` give it).
            text_unit_id: one of its units: the result's `context` holds it with its neighbours,
                where it sits on its PDF pages (a citation shown in context).
            context_units: units either side of `text_unit_id`.
            max_chars: the text is cut here (`truncated` says so).
        """
        store, rows = self.rows()
        if document_id not in rows:
            raise MonjyuError(f"no document with id {document_id!r} in the index; list them with list_documents")
        [doc] = store.take(DOCUMENTS, [rows[document_id]],
                           DOCUMENT_FIELDS + ["text", "metadata", "text_unit_ids", "authors", "year", "structure"]).to_pylist()
        searcher = self.workspace.current().searcher
        units = [searcher.hit(searcher.row_of(u), 0.0, 0, None, None) for u in doc["text_unit_ids"]]
        units.sort(key=lambda h: h.chunk_index)
        out = {k: doc[k] for k in DOCUMENT_FIELDS}
        out["metadata"] = json.loads(doc["metadata"] or "{}")
        out["authors"], out["year"] = doc["authors"] or [], doc["year"]
        structure = json.loads(doc["structure"] or "{}")
        out["sections"] = structure.get("sections", [])
        out["length"] = len(doc["text"])
        out["text"] = doc["text"][:max_chars]
        out["truncated"] = len(doc["text"]) > max_chars
        out["text_units"] = [{"id": h.text_unit_id, "chunk_index": h.chunk_index, "start_char": h.start_char,
                              "end_char": h.end_char, "page": h.page, "section": h.section, "kind": h.kind}
                             for h in units]
        if text_unit_id is not None:
            position = next((i for i, h in enumerate(units) if h.text_unit_id == text_unit_id), None)
            if position is None:
                raise MonjyuError(f"text unit {text_unit_id!r} is not part of document {document_id!r}")
            window = units[max(0, position - context_units):position + context_units + 1]
            out["context"] = {"text_unit_id": text_unit_id, "start_char": window[0].start_char,
                              "end_char": window[-1].end_char, "page": units[position].page,
                              "text": doc["text"][window[0].start_char:window[-1].end_char],
                              "unit_text": units[position].text, "section": units[position].section,
                              # where the unit's lines sit on their PDF pages: [page, x0, y0, x1, y1] in points
                              "boxes": [b[2:] for b in structure.get("line_boxes", [])
                                        if b[0] < units[position].end_char and b[1] > units[position].start_char]}
        return out

    def page_image(self, document_id: str, page: int, start_char: int = 0, end_char: int = 0,
                   scale: float = 1.5) -> bytes:
        """PNG of a page of an indexed PDF with the lines of a cited passage marked. The file is the one
        the manifest recorded for the document (never a path from the caller), unchanged since.

        Args:
            document_id: the document's id.
            page: the page number (1-based, as search hits give it).
            start_char: start of the document text to mark.
            end_char: end of the document text to mark (0: nothing marked).
            scale: pixels per PDF point (0.25-4).
        """
        from ..ingest.pdf import render_page

        source, record = next(((Path(path), rec) for path, rec in self.workspace.manifest().sources.items()
                               if document_id in rec.documents), (None, None))
        if source is None:
            raise MonjyuError(f"no document with id {document_id!r} in the index; list them with list_documents")
        if source.suffix.lower() != ".pdf":
            raise MonjyuError(f"document {document_id!r} is not a PDF ({source.name}): it has no pages to show")
        if not source.is_file() or source.stat().st_size != record.size:
            raise MonjyuError(f"{source} is missing or changed since it was indexed; run `monjyu index` again")
        store, rows = self.rows()
        [doc] = store.take(DOCUMENTS, [rows[document_id]], ["structure"]).to_pylist()
        boxes = [b[3:] for b in json.loads(doc["structure"] or "{}").get("line_boxes", [])
                 if b[2] == page and b[0] < end_char and b[1] > start_char]
        return render_page(source, page, boxes, scale)

