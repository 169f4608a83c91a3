"""The collection's citation graph: which reference entries are papers of the collection.

Every build links the reference entries of all documents (read at ingest, kept in the documents
table) to the documents themselves, by DOI, arXiv id or title, and writes `citations.json` into
the generation: edges citing -> cited with the in-text citations that point at the entry, and
the works that several papers cite but the collection lacks. Linking is recomputed from the
stored entries at every build, so adding a paper links it both ways and removing one unlinks it,
in every store backend (the generation directory travels whole).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ..ingest.references import name_key, surname
from ..store.mirror import atomic_write

CITATIONS_FILE = "citations.json"
_STOP = {"a", "an", "the", "of", "for", "and", "in", "on", "to", "with", "by", "via", "from", "at", "is", "are"}


@dataclass
class Paper:
    """What a document offers to be recognised by: its identifiers, title and first author."""

    id: str
    title: str
    year: int | None = None
    first_surname: str = ""
    doi: str = ""
    arxiv_id: str = ""
    title_tokens: frozenset[str] = field(default_factory=frozenset)


def _tokens(title: str) -> frozenset[str]:
    return frozenset(t for t in name_key(title).split() if t not in _STOP)


def _norm_id(value: str) -> str:
    return value.strip().lower().rstrip(".")


class CollectionIndex:
    """Finds the collection paper an entry names: the same DOI or arXiv id, else the same title
    (all of the entry title's words in the paper's title and most of the paper's in the entry's,
    or the paper's whole title inside the entry's text), with no first author or year that
    contradicts it."""

    def __init__(self, papers: list[Paper]):
        self.papers = papers
        self.by_doi = {_norm_id(p.doi): p for p in papers if p.doi}
        self.by_arxiv = {_norm_id(p.arxiv_id): p for p in papers if p.arxiv_id}
        self.by_token: dict[str, list[Paper]] = {}
        for p in papers:
            for t in p.title_tokens:
                self.by_token.setdefault(t, []).append(p)

    def match(self, entry: dict[str, Any]) -> tuple[Paper, str] | None:
        if entry.get("doi") and (p := self.by_doi.get(_norm_id(entry["doi"]))):
            return p, "doi"
        if entry.get("arxiv_id") and (p := self.by_arxiv.get(_norm_id(entry["arxiv_id"]))):
            return p, "arxiv"
        title = _tokens(entry.get("title", ""))
        text_key = f" {name_key(entry.get('text', ''))} "
        candidates: Counter[str] = Counter()
        by_id = {}
        for t in title | _tokens(entry.get("text", "")):
            hits = self.by_token.get(t, [])
            if len(hits) > 50:  # a word most titles share tells nothing
                continue
            for p in hits:
                candidates[p.id] += 1
                by_id[p.id] = p
        best = None
        for pid, _ in candidates.most_common(20):
            p = by_id[pid]
            if len(p.title_tokens) < 2:
                continue
            shared = len(title & p.title_tokens)
            same_title = bool(title) and shared >= 3 and shared >= 0.9 * len(title) and shared >= 0.5 * len(p.title_tokens)
            quoted = len(name_key(p.title).split()) >= 4 and f" {name_key(p.title)} " in text_key
            if not (same_title or quoted) or not self._consistent(entry, p):
                continue
            score = shared / max(len(title | p.title_tokens), 1) + quoted
            if best is None or score > best[0]:
                best = (score, p)
        return (best[1], "title") if best else None

    @staticmethod
    def _consistent(entry: dict[str, Any], paper: Paper) -> bool:
        """An arXiv preprint and its conference version differ by a year or two; a different first
        author is another work with the same title (or a mis-read byline: then the year decides)."""
        year = entry.get("year")
        if year and paper.year and abs(int(year) - paper.year) > 2:
            return False
        authors = entry.get("authors") or []
        if authors and paper.first_surname:
            if name_key(surname(authors[0])) != name_key(paper.first_surname) and not (year and paper.year):
                return False
        return True


def papers_from_documents(docs: pa.Table) -> list[Paper]:
    """The documents an entry can name: those with a title, a DOI or an arXiv id (found by Arrow
    first: most documents of a large collection of passages have none)."""
    metadata = pc.fill_null(docs["metadata"], "")
    nameable = pc.or_(pc.greater(pc.utf8_length(pc.fill_null(docs["title"], "")), 0),
                      pc.or_(pc.match_substring(metadata, '"doi"'), pc.match_substring(metadata, '"arxiv_id"')))
    rows = docs.select(["id", "title", "authors", "year", "metadata"]).filter(nameable).to_pylist()
    out = []
    for r in rows:
        meta = json.loads(r["metadata"] or "{}")
        authors = r["authors"] or []
        out.append(Paper(id=r["id"], title=r["title"] or "", year=r["year"],
                         first_surname=surname(authors[0]) if authors else "",
                         doi=str(meta.get("doi") or ""), arxiv_id=str(meta.get("arxiv_id") or ""),
                         title_tokens=_tokens(r["title"] or "")))
    return out


def build_citation_graph(docs: pa.Table) -> dict[str, Any]:
    """Edges (citing, cited, entry index, how matched, in-text citation spans) and the works cited
    by two or more papers that are not in the collection. `references` counts the entries of the
    documents that have any."""
    index = CollectionIndex(papers_from_documents(docs))
    edges: list[dict[str, Any]] = []
    outside: list[tuple[str, dict[str, Any]]] = []  # (citing doc, entry) of works not in the collection
    references: dict[str, int] = {}
    named: dict[str, Counter[str]] = {}  # cited paper -> the words citing sentences name it by
    citing = docs.select(["id", "text", "references"]).filter(  # entries are objects: a list that holds one
        pc.match_substring_regex(pc.fill_null(docs["references"], ""), r'"entries":\s*\[\s*\{'))
    for batch in citing.to_batches(256):
        for row in batch.to_pylist():
            data = json.loads(row["references"] or "{}")
            entries = data.get("entries", [])
            if not entries:
                continue
            references[row["id"]] = len(entries)
            marks: dict[int, list[list[int]]] = {}
            for mark in data.get("citations", []):
                for e in mark["entries"]:
                    marks.setdefault(e, []).append([mark["start"], mark["end"]])
            for entry in entries:
                found = index.match(entry)
                if found is None:
                    outside.append((row["id"], entry))
                    continue
                paper, how = found
                if paper.id == row["id"]:
                    continue
                edges.append({"citing": row["id"], "cited": paper.id, "entry": entry["index"], "how": how,
                              "marks": marks.get(entry["index"], [])})
                for start, _ in marks.get(entry["index"], []):
                    if word := _name_before(row["text"], start):
                        named.setdefault(paper.id, Counter())[word] += 1
    aliases = {doc: sorted(w for w, n in words.items() if n >= 2) for doc, words in named.items()}
    return {"references": references, "edges": edges, "missing": _shared_works(outside),
            "aliases": {doc: names for doc, names in aliases.items() if names}}


_NOT_A_NAME = {"in", "the", "we", "our", "and", "of", "as", "to", "see", "e.g", "i.e", "by", "from", "with", "al", "et",
               "work", "works", "method", "methods", "model", "models", "paper", "papers", "approach", "study"}


def _name_before(text: str, start: int) -> str:
    """The name a citing sentence gives the cited work: the word right before its citation, when
    it is written with a capital ("ResNet (He et al., 2016)", "the Transformer [1]")."""
    m = re.search(r"([A-Za-z][\w\-]*[A-Z][\w\-]*|[A-Z][\w\-]+)[\s~]*$", text[max(0, start - 40):start])
    if not m or m.group(1).lower() in _NOT_A_NAME or len(m.group(1)) < 2:
        return ""
    return m.group(1)


def _shared_works(outside: list[tuple[str, dict[str, Any]]], min_citing: int = 2) -> list[dict[str, Any]]:
    """Entries of different papers naming one work (a DOI, arXiv id or title in common), kept when
    at least `min_citing` papers cite it; most cited first."""
    parent = list(range(len(outside)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    first_with: dict[str, int] = {}
    for i, (_, e) in enumerate(outside):
        keys = [f"doi:{_norm_id(e['doi'])}" if e.get("doi") else "", f"arxiv:{_norm_id(e['arxiv_id'])}" if e.get("arxiv_id") else ""]
        title = " ".join(name_key(e.get("title", "")).split()[:12])
        if len(title.split()) >= 3:
            keys.append(f"title:{title}")
        for key in filter(None, keys):
            if key in first_with:
                parent[find(i)] = find(first_with[key])
            else:
                first_with[key] = i
    groups: dict[int, list[int]] = {}
    for i in range(len(outside)):
        groups.setdefault(find(i), []).append(i)
    works = []
    for members in groups.values():
        citing = sorted({outside[i][0] for i in members})
        if len(citing) < min_citing:
            continue
        best = max((outside[i][1] for i in members),
                   key=lambda e: (bool(e.get("title")), bool(e.get("authors")), bool(e.get("year")), len(e.get("text", ""))))
        works.append({"title": best.get("title", ""), "authors": best.get("authors", []), "year": best.get("year"),
                      "venue": best.get("venue", ""), "doi": best.get("doi", ""), "arxiv_id": best.get("arxiv_id", ""),
                      "text": best.get("text", ""), "cited_by": citing,
                      "entries": [{"document_id": outside[i][0], "index": outside[i][1]["index"]} for i in members]})
    works.sort(key=lambda w: (-len(w["cited_by"]), w["title"].lower()))
    return works


def write_citation_graph(gen_dir: Path, graph: dict[str, Any]) -> None:
    atomic_write(gen_dir / CITATIONS_FILE, json.dumps(graph, ensure_ascii=False).encode("utf-8"))


def read_citation_graph(gen_dir: Path) -> dict[str, Any]:
    path = gen_dir / CITATIONS_FILE
    if not path.exists():
        return {"references": {}, "edges": [], "missing": [], "aliases": {}}
    return json.loads(path.read_text(encoding="utf-8"))
