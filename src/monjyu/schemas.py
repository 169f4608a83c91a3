"""Public request/response types of search (spec CONV-03-05), shared by the API, CLI `--json` and MCP.

Field names are snake_case; the spec's camelCase names (what TypeScript clients send) are
accepted too, and `model_dump(by_alias=True)` writes them. Every model is frozen and rejects
unknown fields, so a typo in a request is an error instead of a silently ignored setting.
Rules cite the spec's Zod schema they come from.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from datetime import date
from typing import Annotated, Literal

from pydantic import (AliasChoices, AliasGenerator, BaseModel, ConfigDict, Field, StringConstraints,
                      model_validator)
from pydantic.alias_generators import to_camel

QueryType = Literal["local", "global", "relationship", "hybrid"]
SearchStrategy = Literal["keyword", "semantic", "graph", "hybrid"]
SearchResultType = Literal["chunk", "entity", "community"]
CRAGGrade = Literal["correct", "ambiguous", "incorrect"]

Unit = Annotated[float, Field(ge=0.0, le=1.0)]  # scores, weights, confidences: 0-1
Count = Annotated[int, Field(ge=0)]
Millis = Annotated[float, Field(ge=0.0)]
# No length cap here: search.max_query_chars (default 100,000) is checked by the facade, one rule
# for the API, the CLI and MCP.
QueryText = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]
Limit = Annotated[int, Field(ge=1, le=100)]  # results per page
Offset = Annotated[int, Field(ge=0)]

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

    start: int | None = Field(None, ge=1000, le=9999)
    end: int | None = Field(None, ge=1000, le=9999)

    @model_validator(mode="after")
    def _ordered(self) -> YearRange:
        if self.start and self.end and self.start > self.end:
            raise ValueError(f"year range start {self.start} is after end {self.end}; swap them")
        return self


class SearchFilters(Schema):
    """Which results may be returned (searchFiltersSchema). None means no restriction."""

    file_ids: list[str] | None = None
    file_types: list[str] | None = None  # "pdf", "md", ... (CONV-07's fileTypes)
    entity_types: list[str] | None = None
    date_range: DateRange | None = None
    min_relevance: Unit = 0.3
    authors: list[str] | None = None  # any author whose name contains one of these
    year_range: YearRange | None = None  # publication year (papers)
    kinds: list[Literal["text", "caption", "reference", "front"]] | None = None  # default: text and caption


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
    """Where a result comes from: ids of the index (searchResultSourcesSchema)."""

    chunk_id: str | None = None
    file_id: str | None = None
    entity_ids: list[str] = Field(default_factory=list)
    community_id: str | None = None
    relation_ids: list[str] = Field(default_factory=list)


class SearchResultItem(Schema):
    """One ranked result; `score` is the fused score, 0-1 (searchResultItemSchema)."""

    id: str
    type: SearchResultType = "chunk"
    score: Unit
    relevance: RelevanceScore
    content: SearchResultContent
    highlights: list[Highlight] = Field(default_factory=list)
    sources: SearchResultSources = Field(default_factory=SearchResultSources)


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


# ---------------------------------------------------------------------------------- pipeline settings
class RRFConfig(Schema):
    """Reciprocal rank fusion: k in 1-1000 (60 by default); normalise by the weights present."""

    k: int = Field(60, ge=1, le=1000)
    normalize_scores: bool = True


class RerankConfig(Schema):
    enabled: bool = True
    model: str = "cross-encoder/ms-marco-MiniLM-L-6-v2"
    top_k: int = Field(50, ge=1, le=100)
    batch_size: int = Field(16, ge=1, le=32)


class QueryClassification(Schema):
    """Stage 1 output: the query's type, how sure, the entities named, the weights to use."""

    original_query: str
    type: QueryType
    confidence: Unit
    extracted_entities: list[str] = Field(default_factory=list)
    suggested_weights: SearchWeights
    expanded_queries: list[str] = Field(default_factory=list)


# ---------------------------------------------------------------------------------- utilities
DEFAULT_WEIGHTS: dict[str, tuple[float, float, float]] = {  # keyword, semantic, graph
    "local": (0.35, 0.35, 0.30),
    "global": (0.2, 0.3, 0.5),
    "relationship": (0.2, 0.2, 0.6),
    "hybrid": (0.33, 0.34, 0.33),
}


def default_weights(query_type: QueryType) -> SearchWeights:
    """Fusion weights for a query type: global and relationship questions lean on the graph."""
    keyword, semantic, graph = DEFAULT_WEIGHTS.get(query_type, DEFAULT_WEIGHTS["hybrid"])
    return SearchWeights(keyword=keyword, semantic=semantic, graph=graph)


def normalize_weights(keyword: float, semantic: float, graph: float) -> SearchWeights:
    """Scale any non-negative weights (e.g. CLI `--weights 2,1,1`) so they sum to 1."""
    if min(keyword, semantic, graph) < 0:
        raise ValueError("weights must not be negative")
    total = keyword + semantic + graph
    if total <= 0:
        raise ValueError("at least one weight must be above 0")
    return SearchWeights(keyword=keyword / total, semantic=semantic / total, graph=graph / total)


def rrf_score(ranks: dict[str, int | None], weights: SearchWeights, config: RRFConfig | None = None) -> float:
    """Weighted RRF of one item from its 1-based rank per strategy (None: not found by it).
    With normalize_scores the sum is divided by the weight of the strategies that found it."""
    config = config or RRFConfig()
    score = total_weight = 0.0
    for strategy in ("keyword", "semantic", "graph"):
        rank = ranks.get(strategy)
        if rank is not None:
            w = getattr(weights, strategy)
            score += w / (config.k + rank)
            total_weight += w
    if config.normalize_scores and total_weight > 0:
        score /= total_weight
    return score


def normalize_scores(items: Sequence[SearchResultItem]) -> list[SearchResultItem]:
    """Min-max the items' scores to 0-1; equal scores are left as they are."""
    if not items:
        return []
    low, high = min(i.score for i in items), max(i.score for i in items)
    if high == low:
        return list(items)
    return [i.model_copy(update={"score": (i.score - low) / (high - low)}) for i in items]


def deduplicate_results(items: Iterable[SearchResultItem],
                        strategy: Literal["max_score", "sum_score"] = "max_score") -> list[SearchResultItem]:
    """Merge items with the same id (found by several strategies), first-seen order kept.
    max_score keeps the best-scored copy; sum_score adds scores and combined relevance, capped at 1."""
    seen: dict[str, SearchResultItem] = {}
    for item in items:
        kept = seen.get(item.id)
        if kept is None:
            seen[item.id] = item
        elif strategy == "max_score":
            if item.score > kept.score:
                seen[item.id] = item
        else:
            relevance = kept.relevance.model_copy(
                update={"combined": min(1.0, kept.relevance.combined + item.relevance.combined)})
            seen[item.id] = kept.model_copy(update={"score": min(1.0, kept.score + item.score), "relevance": relevance})
    return list(seen.values())


def filter_by_min_relevance(items: Iterable[SearchResultItem], min_relevance: float) -> list[SearchResultItem]:
    """The items whose combined relevance reaches the filter's min_relevance."""
    return [i for i in items if i.relevance.combined >= min_relevance]


def make_highlight(text: str, matches: Sequence[tuple[int, int]], field: str = "text", context_chars: int = 50,
                   max_length: int = 200) -> Highlight:
    """A fragment around the first match (with "..." where text was cut) and the matches inside
    it as offsets into the fragment, merged where they overlap."""
    if not matches:
        return Highlight(field=field, fragment=text[:max_length])
    spans = sorted((max(0, s), min(len(text), e)) for s, e in matches if e > s)
    first_start, first_end = spans[0]
    start, end = max(0, first_start - context_chars), min(len(text), first_end + context_chars)
    prefix = "..." if start > 0 else ""
    fragment = (prefix + text[start:end] + ("..." if end < len(text) else ""))[:max_length]
    shift = len(prefix) - start
    offsets: list[HighlightOffset] = []
    for s, e in spans:
        s, e = max(s + shift, len(prefix)), min(e + shift, len(prefix) + end - start, len(fragment))
        if e <= s:
            continue
        if offsets and s <= offsets[-1].end:
            previous = offsets.pop()
            s, e = previous.start, max(e, previous.end)
        offsets.append(HighlightOffset(start=s, end=e))
    return Highlight(field=field, fragment=fragment, offsets=offsets)


def expand_query(query: str, synonyms: dict[str, list[str]]) -> list[str]:
    """The query and one variant per synonym of each of its words (whole words, any case)."""
    expansions = [query]
    for word in dict.fromkeys(query.lower().split()):
        for synonym in synonyms.get(word, []):
            variant = re.sub(rf"\b{re.escape(word)}\b", synonym, query, flags=re.IGNORECASE)
            if variant not in expansions:
                expansions.append(variant)
    return expansions


def crag_grade(score: float, correct: float = 0.7, incorrect: float = 0.3) -> CRAGGrade:
    """Grade a 0-1 relevance: correct at or above `correct`, incorrect at or below `incorrect`."""
    if score >= correct:
        return "correct"
    if score <= incorrect:
        return "incorrect"
    return "ambiguous"
