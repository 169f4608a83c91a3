"""Papers as papers: metadata, reference lists, the collection's citation graph, the sentences
other papers write about a paper, works cited but missing, and BibTeX."""

from __future__ import annotations

import json
import re
from typing import Any

from ..errors import MonjyuError
from ..types import Answer, Citation, SearchHit, SearchResults
from ..index.citations import read_citation_graph
from ..ingest.references import name_key, surname
from ..ingest.sentences import split_sentences
from ..ingest.catalog import from_catalog
from ..ingest.zotero import zotero_links
from ..store.lancedb_store import DOCUMENTS
from .documents import Documents
from .workspace import Workspace

# A question about what the collection's other papers write about one of its papers: "what do
# other papers say about ResNet?", "how is PaLM cited?", "ResNetを引用している論文は何と述べているか".
ASKS_WHAT_OTHERS_SAY = re.compile(
    r"\b(?:other|others|later|citing|subsequent|follow-up)\b[^?]{0,60}\b(?:papers?|works?|authors?|studies|articles|say|said|"
    r"write|wrote)\b|\b(?:which|what|who)\b[^?]{0,50}\bcit(?:e|es|ed|ing)\b|\bhow\b[^?]{0,60}\b(?:cited|received)\b|"
    r"(?:他の|ほかの|別の)(?:論文|研究)|引用(?:して|する|した)", re.IGNORECASE)
QUOTED_CONTEXTS = 8  # citing sentences an answer quotes, spread over the citing papers


def library_fields(meta: dict[str, Any]) -> dict[str, Any]:
    """What a reference manager knows of a paper, where it came from one (a Zotero library or a
    bibliography): venue, item type, tags, collections, citation key, and the links that open it
    in Zotero or the bibliography it came from."""
    if not from_catalog(meta):
        return {}
    zotero = meta.get("zotero")
    return {"venue": meta.get("venue", ""), "item_type": meta.get("item_type", ""), "tags": meta.get("tags", []),
            "collections": meta.get("collections", []), "citation_key": meta.get("citation_key", ""),
            **({"zotero": {**zotero, **zotero_links(zotero)}} if zotero else {"bib": meta["bib"]})}


class Papers:
    """Reads the documents table's reference entries and the generation's citation graph
    (`m.papers`)."""

    def __init__(self, workspace: Workspace, documents: Documents):
        self.workspace = workspace
        self.documents = documents
        # (generation, citations.json, what each paper cites, what cites each paper)
        self._citations_cache: tuple[str, dict[str, Any], dict[str, set[str]], dict[str, set[str]]] | None = None

    def _citation_graph(self) -> dict[str, Any]:
        context = self.workspace.current()
        generation = context.manifest.generation
        if self._citations_cache is None or self._citations_cache[0] != generation:
            graph = read_citation_graph(context.generation_dir)
            cites: dict[str, set[str]] = {}
            cited_by: dict[str, set[str]] = {}
            for e in graph["edges"]:
                cites.setdefault(e["citing"], set()).add(e["cited"])
                cited_by.setdefault(e["cited"], set()).add(e["citing"])
            self._citations_cache = (generation, graph, cites, cited_by)
        return self._citations_cache[1]

    def _cites(self, document_id: str) -> set[str]:
        self._citation_graph()
        return self._citations_cache[2].get(document_id, set())

    def _cited_by(self, document_id: str) -> set[str]:
        self._citation_graph()
        return self._citations_cache[3].get(document_id, set())

    def _paper_rows(self, ids: list[str], columns: list[str]) -> list[dict[str, Any]]:
        store, rows = self.documents.rows()
        missing = [d for d in ids if d not in rows]
        if missing:
            raise MonjyuError(f"no document with id {missing[0]!r} in the index; list them with `monjyu papers`")
        have = set(store.column_names(DOCUMENTS))  # an earlier MONJYU's generation may lack some
        table = store.take(DOCUMENTS, [rows[d] for d in ids], list(dict.fromkeys(["id"] + [c for c in columns if c in have]))).to_pylist()
        by_id = {r["id"]: r for r in table}  # take returns table order, not the order asked for
        return [{c: by_id[d].get(c) for c in columns} for d in ids]

    def _summary(self, row: dict[str, Any], graph: dict[str, Any]) -> dict[str, Any]:
        meta = json.loads(row.get("metadata") or "{}")
        doc = row["id"]
        return {"id": doc, "title": row["title"], "authors": row["authors"] or [], "year": row["year"],
                "source_path": row.get("source_path", ""), "pages": meta.get("pages"),
                "doi": meta.get("doi", ""), "arxiv_id": meta.get("arxiv_id", ""),
                "references": graph["references"].get(doc, 0),
                "cites": sorted(self._cites(doc)), "cited_by": sorted(self._cited_by(doc)),
                **library_fields(meta)}

    def list(self, cites: str | None = None, cited_by: str | None = None, limit: int = 100,
               offset: int = 0) -> dict[str, Any]:
        """The collection's papers (id order) with title, authors, year, pages, how many references
        each lists and which papers of the collection it cites and is cited by.

        Args:
            cites: only the papers that cite this document.
            cited_by: only the papers this document cites.
            limit: papers per page.
            offset: papers to skip.
        """
        if limit < 1 or offset < 0:
            raise MonjyuError("limit must be >= 1 and offset >= 0")
        graph = self._citation_graph()
        _, rows = self.documents.rows()
        ids = sorted(rows)
        for name, doc in (("cites", cites), ("cited_by", cited_by)):
            if doc is not None and doc not in rows:
                raise MonjyuError(f"{name}: no document with id {doc!r} in the index; list them with `monjyu papers`")
        if cites is not None:
            ids = [d for d in ids if d in self._cited_by(cites)]
        if cited_by is not None:
            ids = [d for d in ids if d in self._cites(cited_by)]
        page = ids[offset:offset + limit]
        rows_ = self._paper_rows(page, ["id", "title", "source_path", "authors", "year", "metadata"])
        return {"total": len(ids), "offset": offset, "limit": limit,
                "papers": [self._summary(r, graph) for r in rows_]}

    def get(self, document_id: str) -> dict[str, Any]:
        """One paper: its metadata, its reference entries (each linked to the collection's paper
        it names, if any) and the papers of the collection that cite it, with their citing
        sentences.

        Args:
            document_id: the document's id (`list` and search hits give it).
        """
        graph = self._citation_graph()
        [row] = self._paper_rows([document_id], ["id", "title", "source_path", "authors", "year", "metadata",
                                                 "references"])
        out = self._summary(row, graph)
        linked = {e["entry"]: e["cited"] for e in graph["edges"] if e["citing"] == document_id}
        entries = json.loads(row.get("references") or "{}").get("entries", [])
        out["reference_list"] = [{k: e.get(k) for k in ("index", "label", "authors", "title", "year", "venue", "doi",
                                                        "arxiv_id", "url", "text")} | {"document_id": linked.get(e["index"])}
                                 for e in entries]
        out["cited_by_contexts"] = self.citation_contexts(document_id)
        return out

    def citation_contexts(self, document_id: str) -> list[dict[str, Any]]:
        """What other papers of the collection write about this one: every sentence that cites
        it, with the citing paper, the unit and the page it sits on.

        Args:
            document_id: the cited document's id.
        """
        graph = self._citation_graph()
        self._paper_rows([document_id], ["id"])  # refuses an unknown id
        edges = [e for e in graph["edges"] if e["cited"] == document_id]
        if not edges:
            return []
        citing = sorted({e["citing"] for e in edges})
        docs = {r["id"]: r for r in self._paper_rows(citing, ["id", "title", "text", "text_unit_ids"])}
        searcher = self.workspace.current().searcher
        out = []
        for e in edges:
            doc = docs[e["citing"]]
            units = [searcher.hit(searcher.row_of(u), 0.0, 0, None, None) for u in doc["text_unit_ids"]]
            for start, end in e["marks"]:
                a, b = _sentence_around(doc["text"], start, end)
                unit = next((u for u in units if u.start_char <= start < u.end_char), None)
                out.append({"document_id": e["citing"], "title": doc["title"], "sentence": doc["text"][a:b],
                            "start_char": a, "end_char": b, "text_unit_id": unit.text_unit_id if unit else None,
                            "page": unit.page if unit else None, "section": unit.section if unit else "",
                            "entry": e["entry"]})
        return out

    def asked_about(self, query: str) -> str | None:
        """The collection paper a question asks other papers' view of ("what do other papers say
        about ResNet?"): named by its title, what comes before its title's colon ("PaLM"), or a
        name its citing sentences give it ("ResNet (He et al., 2016)"); None for other questions.

        Args:
            query: the question.
        """
        if not ASKS_WHAT_OTHERS_SAY.search(query):
            return None
        graph = self._citation_graph()
        cited = set(self._citations_cache[3])
        if not cited:
            return None
        asked = f" {name_key(query)} "
        best: tuple[int, str] | None = None
        for row in self._paper_rows(sorted(cited), ["id", "title"]):
            title = row["title"] or ""
            names = set(graph.get("aliases", {}).get(row["id"], []))
            if ":" in title:  # "PaLM: Scaling ...", "An Image is Worth 16x16 Words: Transformers ..."
                names.add(title.split(":")[0])
            if len(name_key(title).split()) >= 3:
                names.add(title)
            for name in names:
                key = name_key(name)
                if key and f" {key} " in asked and (best is None or len(key) > best[0]):
                    best = (len(key), row["id"])
        return best[1] if best else None

    def cited_answer(self, query: str, mode: str, language: str) -> SearchResults | None:
        """Baseline RAG's answer to "what do other papers say about X?" (`asked_about`): the
        sentences citing X; None for any other question, or when none cites it."""
        document_id = self.asked_about(query)
        return self.answer_citing(query, document_id, mode, language) if document_id else None

    def answer_citing(self, query: str, document_id: str, mode: str, language: str) -> SearchResults | None:
        """What other papers say about a paper, as a search result: the units holding the citing
        sentences as hits, and an extractive answer quoting those sentences (a few per citing
        paper, in turn), each cited to its unit. None when no sentence cites it.

        Args:
            query: the question (kept in the result).
            document_id: the paper asked about (`asked_about` finds it).
            mode: the search mode the result reports.
            language: the answer's language ("en", "ja").
        """
        contexts = self.citation_contexts(document_id)
        if not contexts:
            return None
        [row] = self._paper_rows([document_id], ["id", "title"])
        by_paper: dict[str, list[dict[str, Any]]] = {}
        for c in contexts:
            if c["text_unit_id"] and all(c["sentence"] != o["sentence"] for o in by_paper.get(c["document_id"], [])):
                by_paper.setdefault(c["document_id"], []).append(c)
        chosen: list[dict[str, Any]] = []
        while len(chosen) < QUOTED_CONTEXTS and any(by_paper.values()):
            for doc in sorted(by_paper):
                if by_paper[doc] and len(chosen) < QUOTED_CONTEXTS:
                    chosen.append(by_paper[doc].pop(0))
        searcher = self.workspace.current().searcher
        hits: list[SearchHit] = []
        numbers: dict[str, int] = {}
        for c in chosen:
            if c["text_unit_id"] not in numbers:
                hit = searcher.hit(searcher.row_of(c["text_unit_id"]), 1.0, len(hits) + 1, None, None)
                hits.append(hit)
                numbers[c["text_unit_id"]] = len(hits)
        lines, citations = [], []
        for c in chosen:
            n = numbers[c["text_unit_id"]]
            lines.append(f"{' '.join(c['sentence'].split())} [{n}]")
            h = hits[n - 1]
            citations.append(Citation(number=n, text_unit_id=h.text_unit_id, document_id=h.document_id,
                                      document_title=h.document_title, source_path=h.source_path, page=c["page"],
                                      snippet=c["sentence"], start_char=c["start_char"], end_char=c["end_char"],
                                      section=h.section, authors=h.authors, year=h.year))
        title = row["title"] or document_id
        answer = Answer(text="\n".join(lines), kind="extractive", citations=citations, language=language,
                        note=f"extractive: the sentences of other papers of the collection that cite \"{title}\"")
        return SearchResults(query=query, mode=mode, hits=hits, total_count=len(hits), answer=answer)

    def missing_works(self, min_citing: int = 2, limit: int = 50) -> list[dict[str, Any]]:
        """Works that at least `min_citing` papers of the collection cite but the collection does
        not hold, most cited first.

        Args:
            min_citing: the fewest citing papers (2 or more).
            limit: works returned.
        """
        if min_citing < 2 or limit < 1:
            raise MonjyuError("min_citing must be >= 2 and limit >= 1")
        works = [w for w in self._citation_graph()["missing"] if len(w["cited_by"]) >= min_citing]
        return [{**w, "count": len(w["cited_by"])} for w in works[:limit]]

    def bibtex(self, document_ids: list[str] | None = None, works: list[dict[str, Any]] | None = None) -> str:
        """BibTeX for papers of the collection (their own metadata) and for works named by
        reference entries (`missing_works` or a paper's `reference_list`).

        Args:
            document_ids: papers of the collection.
            works: reference entries or missing works (title, authors, year, venue, doi, arxiv_id).
        """
        records = []
        if document_ids:
            for row in self._paper_rows(list(dict.fromkeys(document_ids)), ["id", "title", "authors", "year", "metadata"]):
                meta = json.loads(row["metadata"] or "{}")
                library = library_fields(meta)  # a reference manager's fields, where it has them
                records.append({"title": row["title"], "authors": row["authors"] or [], "year": row["year"],
                                "doi": meta.get("doi", ""), "arxiv_id": meta.get("arxiv_id", ""),
                                "venue": library.get("venue", ""), "citation_key": library.get("citation_key", ""),
                                "item_type": library.get("item_type", "")})
        records += works or []
        return to_bibtex(records)


def _sentence_around(text: str, start: int, end: int) -> tuple[int, int]:
    """The sentence of `text` holding the span, split within its paragraph."""
    lo = text.rfind("\n\n", 0, start)
    lo = 0 if lo < 0 else lo + 2
    hi = text.find("\n\n", end)
    hi = len(text) if hi < 0 else hi
    for a, b in split_sentences(text[lo:hi]):
        if lo + a <= start < lo + b:
            return lo + a, max(lo + b, end)
    return lo, hi


# Zotero item types as BibTeX entry types (the rest by their venue, as for parsed papers).
_BIBTEX_TYPES = {"journalArticle": "article", "conferencePaper": "inproceedings", "book": "book",
                 "bookSection": "incollection", "thesis": "phdthesis", "report": "techreport", "preprint": "misc",
                 "document": "misc", "manuscript": "unpublished", "webpage": "online"}


def to_bibtex(records: list[dict[str, Any]]) -> str:
    """BibTeX entries (bibtexparser writes and escapes them): the reference manager's item type
    where known (journal article, conference paper, book, ...), else @article with a journal or
    @inproceedings for a venue, @misc otherwise; keys the reference manager's citation key, else
    surname + year + first title word, made unique."""
    import bibtexparser
    from bibtexparser.library import Library
    from bibtexparser.middlewares import LatexEncodingMiddleware
    from bibtexparser.model import Entry, Field

    library = Library()
    used: set[str] = set()
    for r in records:
        authors = r.get("authors") or []
        first_word = next((w for w in name_key(r.get("title", "")).split() if len(w) > 3), "untitled")
        base = r.get("citation_key") or \
            f"{name_key(surname(authors[0])).replace(' ', '') if authors else 'anon'}{r.get('year') or ''}{first_word}"
        key, n = base, 1
        while key in used:
            n += 1
            key = f"{base}{chr(ord('a') + n - 2)}"
        used.add(key)
        venue = r.get("venue", "")
        kind = _BIBTEX_TYPES.get(r.get("item_type", "")) or (
            "inproceedings" if re.search(r"proceedings|conference|workshop|symposium|\b[A-Z]{3,}\b", venue) else
            "article" if venue and not re.search(r"arxiv|preprint|corr", venue, re.IGNORECASE) else "misc")
        fields = [Field("title", r.get("title", "")), Field("author", " and ".join(authors))]
        if r.get("year"):
            fields.append(Field("year", str(r["year"])))
        if venue and kind in ("article", "inproceedings", "incollection"):
            fields.append(Field("journal" if kind == "article" else "booktitle", venue))
        elif venue and kind in ("book", "techreport", "phdthesis"):
            fields.append(Field({"book": "publisher", "techreport": "institution", "phdthesis": "school"}[kind], venue))
        if r.get("doi"):
            fields.append(Field("doi", r["doi"]))
        if r.get("arxiv_id"):
            fields += [Field("eprint", r["arxiv_id"]), Field("archiveprefix", "arXiv")]
        library.add(Entry(kind, key, [f for f in fields if f.value]))
    return bibtexparser.write_string(library, prepend_middleware=[LatexEncodingMiddleware()])
