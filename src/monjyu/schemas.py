"""Public request/response types of search (spec CONV-03-05), shared by the API, CLI `--json` and MCP.

Field names are snake_case; the spec's camelCase names (what TypeScript clients send) are
accepted too, and `model_dump(by_alias=True)` writes them. Every model is frozen and rejects
unknown fields, so a typo in a request is an error instead of a silently ignored setting.
Rules cite the spec's Zod schema they come from.
"""

from __future__ import annotations

from datetime import date
from typing import Annotated, Any, Literal, get_args

from pydantic import (AliasChoices, AliasGenerator, BaseModel, ConfigDict, Field, StringConstraints, ValidationInfo,
                      field_validator, model_validator)
from pydantic.alias_generators import to_camel

QueryType = Literal["local", "global", "relationship", "hybrid"]
SearchStrategy = Literal["keyword", "semantic", "graph", "hybrid"]
SearchResultType = Literal["chunk", "community"]
CRAGGrade = Literal["correct", "ambiguous", "incorrect"]

Unit = Annotated[float, Field(ge=0.0, le=1.0)]  # scores, weights, confidences: 0-1
Count = Annotated[int, Field(ge=0)]
Millis = Annotated[float, Field(ge=0.0)]
# No length cap here: search.max_query_chars (default 100,000) is checked by the facade, one rule
# for the API, the CLI and MCP.
QueryText = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]
Limit = Annotated[int, Field(ge=1, le=100)]  # results per page
Offset = Annotated[int, Field(ge=0)]
Year = Annotated[int, Field(ge=1000, le=9999)]
Kind = Literal["text", "caption", "reference", "front", "figure", "table", "annotation"]  # types.KINDS
# What a noun phrase of Level 1 is typed: spaCy's entity labels, MISC (a proper noun without
# one) or CONCEPT (no named entity); Japanese proper nouns take the same labels.
EntityType = Literal["CONCEPT", "EVENT", "FAC", "GPE", "LANGUAGE", "LAW", "LOC", "MISC", "NORP", "ORG", "PERSON",
                     "PRODUCT", "WORK_OF_ART"]
ENTITY_TYPES = get_args(EntityType)

WEIGHT_TOLERANCE = 0.01  # weights must sum to 1 within this


class Schema(BaseModel):
    """Base: snake_case names, camelCase accepted on input, frozen, unknown fields refused."""

    model_config = ConfigDict(
        alias_generator=AliasGenerator(validation_alias=lambda name: AliasChoices(name, to_camel(name)),
                                       serialization_alias=to_camel),
        populate_by_name=True, extra="forbid", frozen=True)


# ---------------------------------------------------------------------------------- request
class DateRange(Schema):
    """Inclusive date range; either end may be open (dateRangeSchema: start <= end).
    CONV-07's `from`/`to` names are accepted as well."""

    start: date | None = Field(None, validation_alias=AliasChoices("start", "from"))
    end: date | None = Field(None, validation_alias=AliasChoices("end", "to"))

    @model_validator(mode="after")
    def _ordered(self) -> DateRange:
        if self.start and self.end and self.start > self.end:
            raise ValueError(f"date range start {self.start} is after end {self.end}; swap them")
        return self


class YearRange(Schema):
    """Inclusive publication years; either end may be open."""

    start: Year | None = None
    end: Year | None = None

    @model_validator(mode="after")
    def _ordered(self) -> YearRange:
        if self.start and self.end and self.start > self.end:
            raise ValueError(f"year range start {self.start} is after end {self.end}; swap them")
        return self


# How a filter's list values are written whatever case or dot they come with.
_SPELLINGS = {"file_types": lambda v: v.lower().lstrip("."), "entity_types": str.upper, "kinds": str.lower}


class SearchFilters(Schema):
    """Which units a search may return: the one filter type of the API, the CLI (`--filter
    key=value`), MCP and HTTP. Empty lists and unset ends mean no restriction; every value is
    compared as data, never spliced into a query. The spec's searchFiltersSchema form is read
    too: `file_ids` for `document_ids`, `date_range` and `year_range` {start, end} for the ends."""

    document_ids: list[str] = Field(default_factory=list)
    file_types: list[str] = Field(default_factory=list)  # "pdf", "md", ... (a leading dot and case ignored)
    path_glob: str = ""  # matched from the right: "papers/*.pdf" matches /any/where/papers/x.pdf
    date_from: date | None = None  # the document's date, inclusive
    date_to: date | None = None
    entity_types: list[EntityType] = Field(default_factory=list)  # units naming a phrase of these types (Level 1)
    min_relevance: Unit = 0.0  # drop results scoring below this share of the best result's score
    authors: list[str] = Field(default_factory=list)  # any author whose name contains one of these (case ignored)
    year_from: Year | None = None  # publication year (papers), inclusive
    year_to: Year | None = None
    kinds: list[Kind] = Field(default_factory=list)  # unit kinds; empty: text, caption and annotation
    cites: list[str] = Field(default_factory=list)  # only papers citing each of these documents (citation graph)
    cited_by: list[str] = Field(default_factory=list)  # only papers each of these documents cites
    # A reference manager's (Zotero's): its collections (with their subcollections), tags and item
    # types; any value of a list matches, ignoring case.
    collections: list[str] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    item_types: list[str] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _spec_form(cls, data: Any) -> Any:
        """The spec's names and ranges read into this type's; a null means unset, as Zod sends it."""
        if not isinstance(data, dict):
            return data
        data = {key: value for key, value in data.items() if value is not None}
        for name in ("file_ids", "fileIds"):
            if name in data:
                data.setdefault("document_ids", data.pop(name))
        for field, ends, model in (("date", ("date_from", "date_to"), DateRange),
                                   ("year", ("year_from", "year_to"), YearRange)):
            for name in (f"{field}_range", f"{field}Range"):
                if name in data:
                    span = model.model_validate(data.pop(name))
                    data.update({end: value for end, value in zip(ends, (span.start, span.end)) if value is not None})
        return data

    @field_validator(*_SPELLINGS, mode="before")
    @classmethod
    def _normalised(cls, values: Any, info: ValidationInfo) -> Any:
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            return values  # the field's own check names what is wrong
        return [_SPELLINGS[info.field_name](v) for v in values]

    @model_validator(mode="after")
    def _ordered(self) -> SearchFilters:
        for name, start, end in (("date", self.date_from, self.date_to), ("year", self.year_from, self.year_to)):
            if start and end and start > end:
                raise ValueError(f"filter {name} range is reversed: {start} > {end}; swap them")
        return self

    @property
    def active(self) -> bool:
        """Whether it restricts which units may be found (min_relevance only trims scores)."""
        return bool(self.document_ids or self.file_types or self.path_glob or self.date_from or self.date_to
                    or self.entity_types or self.authors or self.year_from or self.year_to or self.kinds
                    or self.cites or self.cited_by or self.library_active)

    @property
    def library_active(self) -> bool:
        """Whether it filters by a reference manager's collections, tags or item types."""
        return bool(self.collections or self.tags or self.item_types)


class SearchWeights(Schema):
    """Share of each strategy in fusion: each 0-1, summing to 1 +/- 0.01 (searchWeightsSchema)."""

    keyword: Unit
    semantic: Unit
    graph: Unit

    @model_validator(mode="after")
    def _sum_to_one(self) -> SearchWeights:
        total = self.keyword + self.semantic + self.graph
        if abs(total - 1.0) > WEIGHT_TOLERANCE:
            raise ValueError(f"weights must sum to 1.0 (+/- {WEIGHT_TOLERANCE}), got {total:.4f}; "
                             "scale them so they add up to 1")
        return self


class SearchOptions(Schema):
    """Paging and pipeline switches (searchOptionsSchema)."""

    limit: Limit = 20
    offset: Offset = 0
    include_metadata: bool = True
    include_highlights: bool = True
    rerank_enabled: bool = True
    crag_enabled: bool = False
    strategies: list[SearchStrategy] = Field(default_factory=lambda: ["hybrid"], min_length=1)
    weights: SearchWeights = Field(default_factory=lambda: SearchWeights(keyword=0.35, semantic=0.35, graph=0.3))


class SearchQuery(Schema):
    """A search request: text of at least 1 character after trimming, at most search.max_query_chars
    (searchQuerySchema caps it at 1,000; MONJYU takes pasted abstracts and sections)."""

    text: QueryText
    type: QueryType = "hybrid"
    embedding: list[float] | None = None  # precomputed query embedding
    filters: SearchFilters = Field(default_factory=SearchFilters)
    options: SearchOptions = Field(default_factory=SearchOptions)


# ---------------------------------------------------------------------------------- response
class CRAGScore(Schema):
    """Corrective-RAG grade of one result (cragScoreSchema)."""

    relevance: CRAGGrade
    confidence: Unit
    needs_web_search: bool = False
    refined_query: str | None = None


class RelevanceScore(Schema):
    """Score breakdown of one result, each 0-1; rerank and crag only when those stages ran."""

    combined: Unit
    keyword: Unit = 0.0
    semantic: Unit = 0.0
    graph: Unit = 0.0
    rerank: Unit | None = None
    crag: CRAGScore | None = None


class SearchResultContent(Schema):
    text: str
    summary: str | None = None
    context_before: str | None = None
    context_after: str | None = None


class HighlightOffset(Schema):
    """A match inside a fragment: 0 <= start < end."""

    start: Count
    end: Count

    @model_validator(mode="after")
    def _ordered(self) -> HighlightOffset:
        if self.end <= self.start:
            raise ValueError(f"highlight offset end ({self.end}) must be greater than start ({self.start})")
        return self


class Highlight(Schema):
    """Matched spans of a fragment: offsets ascending, not overlapping, inside the fragment."""

    field: str = "text"
    fragment: str
    offsets: list[HighlightOffset] = Field(default_factory=list)

    @model_validator(mode="after")
    def _inside_and_ordered(self) -> Highlight:
        previous_end = 0
        for o in self.offsets:
            if o.end > len(self.fragment):
                raise ValueError(f"highlight offset {o.start}-{o.end} is outside the fragment "
                                 f"({len(self.fragment)} characters)")
            if o.start < previous_end:
                raise ValueError(f"highlight offsets must be ascending and not overlap (offset {o.start}-{o.end} "
                                 f"starts before {previous_end})")
            previous_end = o.end
        return self


class SearchResultSources(Schema):
    """Where a result comes from: ids of the index (searchResultSourcesSchema). entity_ids are the
    Level 1 noun phrases (entities table ids) the passage names, most specific first;
    community_ids its community at each level of the hierarchy, coarsest first, and community_id
    the finest of them. The spec's relation_ids are left out: Level 1 relationships are
    co-occurrence edges, named by their two entities, not ids of their own."""

    chunk_id: str | None = None
    file_id: str | None = None
    entity_ids: list[str] = Field(default_factory=list)
    community_id: str | None = None
    community_ids: list[str] = Field(default_factory=list)
    # the index level the passage came through: 0 keyword or vector search, 1 the noun-phrase graph
    # walk, 3 the walk through a Level 3 entity (an addition to the spec's schema)
    level: int | None = None


class ResultMetadata(Schema):
    """The passage's document and place in it (options.include_metadata)."""

    title: str = ""
    source_path: str = ""
    page: int | None = None
    section: str = ""
    kind: str = "text"
    authors: list[str] = Field(default_factory=list)
    year: int | None = None
    chunk_index: Count = 0
    start_char: Count = 0
    end_char: Count = 0


class SearchResultItem(Schema):
    """One ranked result (searchResultItemSchema). `score` (0-1) orders the list: a passage's final
    score (after reranking) over the best one's; a community (type community, global questions)
    scores as the best of its passages on the page and comes just before it."""

    id: str
    type: SearchResultType = "chunk"
    score: Unit
    relevance: RelevanceScore
    content: SearchResultContent
    highlights: list[Highlight] = Field(default_factory=list)
    sources: SearchResultSources = Field(default_factory=SearchResultSources)
    metadata: ResultMetadata | None = None


class StrategyMetric(Schema):
    """How one strategy did: results, time in ms, best score (strategyMetricSchema)."""

    enabled: bool = True
    result_count: Count = 0
    processing_time: Millis = 0.0  # ms
    top_score: Unit = 0.0


class SearchStrategyMetrics(Schema):
    keyword: StrategyMetric = Field(default_factory=StrategyMetric)
    semantic: StrategyMetric = Field(default_factory=StrategyMetric)
    graph: StrategyMetric = Field(default_factory=StrategyMetric)


class SearchResult(Schema):
    """A response: the request, one page of items, the total before paging (searchResultSchema)."""

    query: SearchQuery
    results: list[SearchResultItem] = Field(default_factory=list)
    total_count: Count = 0
    processing_time: Millis = 0.0  # ms
    strategies: SearchStrategyMetrics = Field(default_factory=SearchStrategyMetrics)
