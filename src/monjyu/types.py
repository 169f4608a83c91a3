"""Shared data model: documents, text units, search hits and results."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

# Unit kinds. Reference lists and front matter (authors, affiliations, notices) stay out of
# default searches: their names and venues match queries without answering them.
# Text set inside a figure (axis ticks, legends, labels) and table cells are their own kinds too,
# filed under their caption: they are found on request (kind=table), never quoted as prose.
TEXT, CAPTION, REFERENCE, FRONT, FIGURE, TABLE = "text", "caption", "reference", "front", "figure", "table"
ANNOTATION = "annotation"  # the user's own words on a paper: a highlight with its comment, a note
DEFAULT_KINDS = (TEXT, CAPTION, ANNOTATION)
KINDS = (TEXT, CAPTION, REFERENCE, FRONT, FIGURE, TABLE, ANNOTATION)


@dataclass
class Section:
    """A span of a document's text under one heading path, of one kind (text, caption,
    reference, front). Units never cross a section."""

    start: int
    end: int
    path: str = ""  # "3 Model Architecture > 3.1 Encoder and Decoder Stacks"
    kind: str = "text"
    page: int | None = None  # an annotation's own page (its text is not on the page the offsets say)

    @property
    def heading(self) -> str:
        return self.path.rsplit(" > ", 1)[-1] if self.path else ""


@dataclass
class LineBox:
    """Where a line of the stored text sits on its PDF page (points, origin bottom-left)."""

    start: int
    end: int
    page: int
    x0: float
    y0: float
    x1: float
    y1: float


@dataclass
class Document:
    """A loaded source document (a file, or one record of a JSON/JSONL file)."""

    id: str
    title: str
    text: str
    source_path: str
    file_type: str
    date: str = ""  # ISO date (from metadata, else file modification time)
    # (char offset where the page starts, page number), ascending; empty when pages are unknown.
    page_starts: list[tuple[int, int]] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)  # doi, arxiv_id, abstract, JSON record fields ...
    authors: list[str] = field(default_factory=list)
    year: int | None = None
    sections: list[Section] = field(default_factory=list)  # empty: the whole text is one section
    line_boxes: list[LineBox] = field(default_factory=list)
    # The reference list read into entries (ingest.references.Reference as dicts) and the in-text
    # citations pointing into it ({"start", "end", "entries": [entry index, ...]}).
    references: list[dict[str, Any]] = field(default_factory=list)
    citation_marks: list[dict[str, Any]] = field(default_factory=list)

    def page_at(self, offset: int) -> int | None:
        page = None
        for start, number in self.page_starts:
            if start > offset:
                break
            page = number
        return page


@dataclass
class TextUnit:
    """A chunk of a document: the unit that is embedded, indexed, retrieved and cited."""

    id: str
    document_id: str
    chunk_index: int
    text: str
    start_char: int
    end_char: int
    n_tokens: int
    title: str = ""
    source_path: str = ""
    file_type: str = ""
    date: str = ""
    page: int | None = None
    section: str = ""  # heading path, shown in citations and indexed with the text
    kind: str = "text"  # text | caption | reference | front | figure | table | annotation
    authors: list[str] = field(default_factory=list)
    year: int | None = None
    sentences: list[tuple[int, int]] = field(default_factory=list)  # sentence spans, offsets in `text`

    @property
    def embedding_text(self) -> str:
        """What is embedded and keyword-indexed: the title and section path give a chunk its context."""
        return "\n".join(p for p in (self.title, self.section, self.text) if p)


@dataclass
class SearchHit:
    text_unit_id: str
    document_id: str
    text: str
    score: float
    rank: int = 0
    chunk_index: int = 0
    document_title: str = ""
    source_path: str = ""
    page: int | None = None
    start_char: int = 0
    end_char: int = 0
    # Per-strategy scores (absent strategies stay None).
    vector_score: float | None = None
    keyword_score: float | None = None
    section: str = ""  # heading path of the unit
    kind: str = "text"  # text | caption | reference | front | figure | table | annotation
    authors: list[str] = field(default_factory=list)
    year: int | None = None
    # A passage joining adjacent units (search.passage_units): each unit's id, span and page, in
    # document order; empty for a single unit.
    parts: list[dict[str, Any]] = field(default_factory=list)
    zotero: dict[str, str] | None = None  # a Zotero library's keys for its document (key, library, attachment_key)
    # Searches with a graph walk (graph, hybrid, HybridRAG): the index level it came through, 0
    # keyword or vector search, 1 the noun-phrase walk, 3 the walk through a Level 3 entity it names
    # under another name than the passages it was reached from (Searcher.came_through).
    level: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Citation:
    """What an answer's [n] points at: a text unit, shown in context."""

    number: int
    text_unit_id: str
    document_id: str
    document_title: str = ""
    source_path: str = ""
    page: int | None = None
    snippet: str = ""  # the cited sentence (extractive) or the start of the unit
    start_char: int = 0  # of the snippet in the document
    end_char: int = 0
    section: str = ""  # heading path of the cited unit
    authors: list[str] = field(default_factory=list)
    year: int | None = None
    kind: str = TEXT  # of the cited unit; an annotation is cited by what it is ("Your highlight on p. 4")
    # From a Zotero library: zotero://open-pdf at the cited page (zotero://open for a snapshot) and
    # zotero://select for the item.
    zotero: dict[str, str] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """How a reader cites it: 'Devlin et al. 2019, "BERT: ...", §3.1 Pre-training, p. 4'."""
        parts = []
        if self.authors:
            surname = self.authors[0].split()[-1]
            who = surname if len(self.authors) == 1 else f"{surname} and {self.authors[1].split()[-1]}" \
                if len(self.authors) == 2 else f"{surname} et al."
            parts.append(f"{who} {self.year}" if self.year else who)
        elif self.year:
            parts.append(str(self.year))
        parts.append(f'"{self.document_title}"' if self.document_title else self.document_id)
        if self.kind == ANNOTATION:
            parts.append(self.section)
            return ", ".join(parts)
        if self.section:
            parts.append(f"§{self.section.rsplit(' > ', 1)[-1]}")
        if self.page is not None:
            parts.append(f"p. {self.page}")
        return ", ".join(parts)


@dataclass
class Answer:
    """An answer with its citations. `kind` says who wrote it: "llm", "extractive" (sentences
    picked from the sources, no LLM) or "insufficient" (not enough information to answer)."""

    text: str
    kind: str
    citations: list[Citation] = field(default_factory=list)
    language: str = "en"
    note: str = ""  # why an answer fell back or abstained
    notice: str = ""  # what its reader should know, shown with it (e.g. the quotes are in another language)
    # LLM answers, checked: each sentence with the sources it cites, its support (0-1) and what the
    # check did (supported, recited, cited, dropped, unchecked); engines/verify.py
    sentences: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class SearchResults:
    query: str
    mode: str
    hits: list[SearchHit]
    total_count: int  # candidates that passed filters and threshold, before pagination
    timings_ms: dict[str, float] = field(default_factory=dict)
    answer: Answer | None = None
    usage: dict[str, Any] = field(default_factory=dict)  # LLM calls and tokens spent on this result
    expanded_queries: list[str] = field(default_factory=list)  # the query and its rewrites, when expanded
    # Hybrid: what this query's fusion decided (evidence weights, whether the feedback round ran).
    fusion: dict[str, Any] = field(default_factory=dict)
    # the query's words searched as corrected (search.spelling): as written -> as searched
    spelling: dict[str, str] = field(default_factory=dict)

    @property
    def citations(self) -> list[Citation]:
        return self.answer.citations if self.answer else []

    def to_dict(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "mode": self.mode,
            "total_count": self.total_count,
            "answer": self.answer.to_dict() if self.answer else None,
            "usage": self.usage,
            "expanded_queries": self.expanded_queries,
            "fusion": self.fusion,
            "spelling": self.spelling,
            "timings_ms": self.timings_ms,
            "hits": [h.to_dict() for h in self.hits],
        }


@dataclass
class RelevantSentence:
    """A sentence a relevance test scored at or above the threshold (0-10 scale)."""

    text: str
    score: float
    text_unit_id: str
    document_id: str
    community_id: int | None
    start_char: int
    end_char: int


@dataclass
class Claim:
    """A statement that helps answer the query, with the sentences and text units behind it."""

    statement: str
    score: float
    text_unit_ids: list[str]
    sentences: list[str] = field(default_factory=list)


@dataclass
class LazySearchResult:
    """What lazy search found, what it spent, and the path it took through the communities."""

    query: str
    answer: Answer | None  # None when asked for passages only (answer=False)
    subqueries: list[str]
    expanded_query: str
    claims: list[Claim]
    relevant_sentences: list[RelevantSentence]
    communities_visited: list[dict[str, Any]]  # id, level, depth, title, units/sentences tested, relevant
    budget_used: int
    budget_total: int
    assessor: str  # who ran the relevance tests: "local" or "llm:<model>"
    stop_reason: str
    usage: dict[str, Any] = field(default_factory=dict)
    timings_ms: dict[str, float] = field(default_factory=dict)
    kept_text_unit_ids: list[str] = field(default_factory=list)  # units with relevant sentences, best first
    hits: list[SearchHit] = field(default_factory=list)  # one page of those units (score: best sentence, 0-10)
    total_count: int = 0  # units with relevant sentences, before paging
    mode: str = "lazy"
    # a global question answered by themes: its topic ("" = the whole collection) and how much
    # of the collection the themes cover (documents, communities of the level used)
    coverage: dict[str, Any] = field(default_factory=dict)
    themes: list[dict[str, Any]] = field(default_factory=list)  # label (phrases), community, cited sentences
    turn: int = 0  # in a conversation, which turn this answer is (0: none)
    # The levels the search used: [0] a Level 0 index, [0, 1] the communities, [0, 1, 2] it
    # deepened to entities an LLM extracted (level2: units sent and reused, entities, units
    # linked), [0, 1, 4] it answered from community reports
    levels_reached: list[int] = field(default_factory=list)
    level2: dict[str, Any] = field(default_factory=dict)
    # a global question with an LLM at level 4: the communities' reports read (written now or
    # kept), and what the reports path did (reports written, read, claims scored and kept)
    reports: list[dict[str, Any]] = field(default_factory=list)
    level4: dict[str, Any] = field(default_factory=dict)
    usage_by_level: dict[str, dict[str, Any]] = field(default_factory=dict)  # with an LLM: "1", "2" -> usage
    # the query's words searched as corrected (search.spelling): as written -> as searched
    spelling: dict[str, str] = field(default_factory=dict)

    @property
    def citations(self) -> list[Citation]:
        return self.answer.citations if self.answer else []

    @property
    def llm_calls(self) -> int:
        return int(self.usage.get("calls", 0))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class HybridItem:
    """One HybridRAG result: the unit, its score from every stage, its CRAG grade and highlights."""

    hit: SearchHit
    scores: dict[str, float | None]  # combined, keyword, semantic, graph, rerank, crag
    grade: str | None = None  # correct | ambiguous | incorrect (None: CRAG off)
    strips: list[str] = field(default_factory=list)  # the relevant sentences of an ambiguous result
    highlights: list[dict[str, Any]] = field(default_factory=list)  # {text, start, end} in the unit text

    def to_dict(self) -> dict[str, Any]:
        return {**self.hit.to_dict(), "scores": self.scores, "grade": self.grade, "strips": self.strips,
                "highlights": self.highlights}


@dataclass
class HybridSearchResult:
    query: str
    classification: dict[str, Any]  # type, confidence, entities, relation_hint, method
    weights: dict[str, float]
    items: list[HybridItem]
    total_count: int
    strategies: dict[str, dict[str, float]]  # per strategy: count, time_ms, top_score (and graph mode)
    reranker: str | None
    crag: dict[str, Any] | None  # grade counts, corrective rewrite, sufficiency
    answer: Answer | None = None
    usage: dict[str, Any] = field(default_factory=dict)
    timings_ms: dict[str, float] = field(default_factory=dict)
    best_scores: dict[str, float] = field(default_factory=dict)  # best combined/keyword/graph score: the 0-1 scale
    response: Any = None  # the page as schemas.SearchResult (set by Monjyu.hybrid_search)
    mode: str = "hybridrag"
    # community search (global questions): the communities ranked, best first (id, level, title,
    # score, text_unit_ids: the query's top units they hold)
    communities: list[dict[str, Any]] = field(default_factory=list)
    # relationship questions with an LLM: the passages sent to Level 2 and what Level 3 then linked
    level3: dict[str, Any] = field(default_factory=dict)
    # the query's words searched as corrected (search.spelling): as written -> as searched
    spelling: dict[str, str] = field(default_factory=dict)

    @property
    def hits(self) -> list[SearchHit]:
        return [i.hit for i in self.items]

    @property
    def citations(self) -> list[Citation]:
        return self.answer.citations if self.answer else []

    def to_dict(self) -> dict[str, Any]:
        """The public SearchResult (query, results, total_count, strategies...) when set, plus
        classification, weights, reranker, CRAG, answer, usage and timings."""
        out = {k: v for k, v in asdict(self).items() if k not in ("items", "answer", "response", "best_scores")}
        if self.response is not None:
            out.update(self.response.model_dump(mode="json"))
        else:
            out["items"] = [i.to_dict() for i in self.items]
        out["answer"] = self.answer.to_dict() if self.answer else None
        return out
