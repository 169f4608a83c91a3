"""Every rule of the public search schemas (CONV-03-05), valid and invalid, and lossless JSON."""

from __future__ import annotations

import json
from datetime import date
from typing import get_args

import pytest
from pydantic import ValidationError

from monjyu.config import HybridConfig
from monjyu.engines.hybrid.response import make_highlight
from monjyu.retrieval.fusion import linear_fusion, weighted_rrf
from monjyu.schemas import (
    CRAGScore, DateRange, Highlight, HighlightOffset, RelevanceScore, ResultMetadata, SearchFilters, SearchOptions, SearchQuery,
    SearchResult, SearchResultContent, SearchResultItem, SearchResultSources, SearchStrategyMetrics, SearchWeights,
    StrategyMetric,
)


def item(id_: str, score: float, combined: float | None = None) -> SearchResultItem:
    return SearchResultItem(id=id_, score=score, relevance=RelevanceScore(combined=score if combined is None else combined),
                            content=SearchResultContent(text=f"text of {id_}"))


def full_result() -> SearchResult:
    """A response with every field set to a non-default value."""
    query = SearchQuery(
        text="関係は？ how are RRF and reranking related",
        type="relationship",
        embedding=[0.1, -0.25, 1e-7],
        filters=SearchFilters(document_ids=["doc-1"], file_types=["pdf", "md"], entity_types=["person"], path_glob="a/*.pdf",
                              date_from=date(2023, 1, 1), date_to=date(2024, 12, 31), min_relevance=0.05, authors=["Ro"],
                              year_from=2019, year_to=2020, kinds=["table"], cites=["c"], cited_by=["d"],
                              collections=["Thesis/Ch 2"], tags=["t"], item_types=["book"]),
        options=SearchOptions(limit=100, offset=40, include_metadata=False, include_highlights=False, rerank_enabled=False,
                              crag_enabled=True, strategies=["keyword", "graph"],
                              weights=SearchWeights(keyword=0.2, semantic=0.2, graph=0.6)),
    )
    hit = SearchResultItem(
        id="u-7", type="community", score=0.8125,
        relevance=RelevanceScore(combined=0.8125, keyword=0.5, semantic=0.75, graph=1.0, rerank=0.9,
                                 crag=CRAGScore(relevance="ambiguous", confidence=0.55, needs_web_search=True,
                                                refined_query="RRF reranking relation")),
        content=SearchResultContent(text="RRF fuses ranks.", summary="fusion", context_before="a", context_after="b"),
        highlights=[Highlight(field="text", fragment="RRF fuses ranks.", offsets=[HighlightOffset(start=0, end=3),
                                                                                 HighlightOffset(start=10, end=15)])],
        sources=SearchResultSources(chunk_id="u-7", file_id="doc-1", entity_ids=["e1", "e2"], community_id="12",
                                    community_ids=["3", "12"]),
        metadata=ResultMetadata(title="T", source_path="a/b.pdf", page=3, section="2 Method", kind="caption",
                                authors=["A. Author"], year=2020, chunk_index=4, start_char=10, end_char=90),
    )
    metric = StrategyMetric(enabled=True, result_count=3, processing_time=1.5, top_score=0.75)
    return SearchResult(query=query, results=[hit], total_count=41, processing_time=12.25,
                        strategies=SearchStrategyMetrics(keyword=metric, semantic=StrategyMetric(enabled=False), graph=metric))


# ------------------------------------------------------------------ round trip and names
def test_json_round_trip_is_lossless():
    result = full_result()
    again = SearchResult.model_validate_json(result.model_dump_json())
    assert again == result
    assert again.model_dump() == result.model_dump()
    camel = SearchResult.model_validate_json(result.model_dump_json(by_alias=True))  # as a TypeScript client sends it
    assert camel == result


@pytest.mark.parametrize("model", [SearchQuery(text="x"), SearchOptions(), SearchFilters()])
def test_round_trip_of_defaults(model):
    assert type(model).model_validate_json(model.model_dump_json()) == model


def test_camel_case_names_from_the_spec_are_accepted_and_written():
    q = SearchQuery.model_validate({"text": "q", "filters": {"fileIds": ["a"], "minRelevance": 0.5,
                                                             "dateRange": {"start": "2024-01-01", "end": None}},
                                    "options": {"rerankEnabled": False, "cragEnabled": True, "includeHighlights": False}})
    assert q.filters.document_ids == ["a"] and q.filters.min_relevance == 0.5 and q.filters.date_from == date(2024, 1, 1)
    assert q.filters.date_to is None
    assert not q.options.rerank_enabled and q.options.crag_enabled and not q.options.include_highlights
    dumped = q.model_dump(by_alias=True)
    assert dumped["filters"]["documentIds"] == ["a"] and dumped["options"]["rerankEnabled"] is False
    assert "document_ids" in q.model_dump()["filters"]  # Python callers see snake_case


def test_the_spec_filter_form_reads_into_the_one_filter_type():
    """searchFiltersSchema's names and ranges, nulls as Zod sends them, give the same filter as
    this type's own names (the API's, the CLI's, MCP's)."""
    spec = SearchFilters.model_validate({"fileIds": ["a"], "entityTypes": None, "dateRange": {"from": "2024-01-01"},
                                         "year_range": {"start": 2019, "end": 2020}, "minRelevance": 0.3})
    own = SearchFilters(document_ids=["a"], date_from="2024-01-01", year_from=2019, year_to=2020, min_relevance=0.3)
    assert spec == own
    with pytest.raises(ValidationError, match="after end"):
        SearchFilters.model_validate({"yearRange": {"start": 2020, "end": 2019}})


def test_typescript_dates_and_conv07_from_to_names():
    r = DateRange.model_validate_json('{"from": "2024-01-01T00:00:00.000Z", "to": "2024-03-01"}')
    assert (r.start, r.end) == (date(2024, 1, 1), date(2024, 3, 1))


def test_unknown_fields_are_refused():
    with pytest.raises(ValidationError, match="extra"):
        SearchOptions(limt=5)
    with pytest.raises(ValidationError):
        SearchQuery.model_validate({"text": "q", "options": {"rerank": True}})


def test_models_are_frozen():
    with pytest.raises(ValidationError):
        SearchOptions().limit = 5


# ------------------------------------------------------------------ SearchQuery
@pytest.mark.parametrize("text", ["a", "x" * 1000, "x" * 20_000, "  padded  ", "日本語の質問"])
def test_query_text_valid(text):
    assert SearchQuery(text=text).text == text.strip()


@pytest.mark.parametrize("text", ["", "   ", "\n\t"])  # the length limit is search.max_query_chars, in the facade
def test_query_text_invalid(text):
    with pytest.raises(ValidationError, match="text"):
        SearchQuery(text=text)


def test_query_text_length_is_counted_after_trimming():
    assert len(SearchQuery(text="  " + "x" * 1000 + "  ").text) == 1000


def test_query_defaults_and_types():
    q = SearchQuery(text="q")
    assert q.type == "hybrid" and q.embedding is None and q.options == SearchOptions() and q.filters == SearchFilters()
    for t in ("local", "global", "relationship", "hybrid"):
        assert SearchQuery(text="q", type=t).type == t
    with pytest.raises(ValidationError, match="type"):
        SearchQuery(text="q", type="semantic")
    with pytest.raises(ValidationError, match="embedding"):
        SearchQuery(text="q", embedding=["a"])


# ------------------------------------------------------------------ filters and dates
def test_filters_defaults_and_lists():
    f = SearchFilters()
    assert f.document_ids == [] and f.file_types == [] and f.entity_types == [] and f.date_from is None
    assert f.min_relevance == 0.0 and not f.active
    f = SearchFilters(document_ids=[], file_types=[".PDF"], entity_types=["person"], kinds=["Table"])
    assert f.file_types == ["pdf"] and f.entity_types == ["PERSON"] and f.kinds == ["table"] and f.active
    for bad in ({"document_ids": "doc-1"}, {"entity_types": ["method"]}, {"kinds": ["chapter"]}, {"year_from": 19}):
        with pytest.raises(ValidationError):
            SearchFilters(**bad)


def test_filter_vocabularies_match_the_index():
    from monjyu.nlp.noun_phrases import CONCEPT, ENTITY_LABELS, MISC
    from monjyu.schemas import ENTITY_TYPES, Kind
    from monjyu.types import KINDS
    assert set(get_args(Kind)) == set(KINDS) and set(ENTITY_TYPES) == ENTITY_LABELS | {CONCEPT, MISC}


@pytest.mark.parametrize("value", [0.0, 0.3, 1.0])
def test_min_relevance_valid(value):
    assert SearchFilters(min_relevance=value).min_relevance == value


@pytest.mark.parametrize("value", [-0.0001, 1.0001, 2])
def test_min_relevance_invalid(value):
    with pytest.raises(ValidationError, match="min_relevance"):
        SearchFilters(min_relevance=value)


@pytest.mark.parametrize("start,end", [(None, None), (date(2024, 1, 1), None), (None, date(2024, 1, 1)),
                                       (date(2024, 1, 1), date(2024, 1, 1)), (date(2023, 12, 31), date(2024, 1, 1))])
def test_date_range_valid(start, end):
    r = DateRange(start=start, end=end)
    assert (r.start, r.end) == (start, end)


def test_date_range_reversed_is_refused():
    with pytest.raises(ValidationError, match="after end"):
        DateRange(start=date(2024, 1, 2), end=date(2024, 1, 1))
    with pytest.raises(ValidationError, match="after end"):
        SearchFilters.model_validate({"dateRange": {"start": "2024-06-01", "end": "2024-01-01"}})
    with pytest.raises(ValidationError, match="reversed"):
        SearchFilters(date_from="2024-06-01", date_to="2024-01-01")


def test_date_range_needs_dates():
    with pytest.raises(ValidationError):
        DateRange(start="last week")


# ------------------------------------------------------------------ weights
@pytest.mark.parametrize("w", [(1, 0, 0), (0, 0, 1), (0.35, 0.35, 0.3), (0.33, 0.34, 0.33), (0.33, 0.33, 0.335),
                               (0.34, 0.34, 0.325)])
def test_weights_valid(w):
    SearchWeights(keyword=w[0], semantic=w[1], graph=w[2])


@pytest.mark.parametrize("w", [(0.33, 0.33, 0.33), (0.5, 0.5, 0.02), (0, 0, 0), (0.5, 0.5, 0.5)])
def test_weights_must_sum_to_one(w):
    with pytest.raises(ValidationError, match="sum to 1.0"):
        SearchWeights(keyword=w[0], semantic=w[1], graph=w[2])


@pytest.mark.parametrize("w", [(-0.1, 0.6, 0.5), (1.1, -0.1, 0.0), (0.0, 0.0, 1.01)])
def test_each_weight_is_between_0_and_1(w):
    with pytest.raises(ValidationError, match="greater than or equal to 0|less than or equal to 1"):
        SearchWeights(keyword=w[0], semantic=w[1], graph=w[2])


def test_weights_are_all_required():
    with pytest.raises(ValidationError, match="graph"):
        SearchWeights(keyword=0.5, semantic=0.5)


# ------------------------------------------------------------------ options
def test_options_defaults_follow_the_spec():
    o = SearchOptions()
    assert (o.limit, o.offset, o.include_metadata, o.include_highlights, o.rerank_enabled, o.crag_enabled) == \
        (20, 0, True, True, True, False)
    assert o.strategies == ["hybrid"] and o.weights == SearchWeights(keyword=0.35, semantic=0.35, graph=0.3)


@pytest.mark.parametrize("limit", [1, 50, 100])
def test_limit_valid(limit):
    assert SearchOptions(limit=limit).limit == limit


@pytest.mark.parametrize("limit", [0, -1, 101, 1.5])
def test_limit_invalid(limit):
    with pytest.raises(ValidationError, match="limit"):
        SearchOptions(limit=limit)


def test_offset():
    assert SearchOptions(offset=0).offset == 0 and SearchOptions(offset=10_000).offset == 10_000
    with pytest.raises(ValidationError, match="offset"):
        SearchOptions(offset=-1)


def test_strategies():
    assert SearchOptions(strategies=["keyword", "semantic", "graph", "hybrid"]).strategies[-1] == "hybrid"
    with pytest.raises(ValidationError, match="strategies"):
        SearchOptions(strategies=[])
    with pytest.raises(ValidationError, match="strategies"):
        SearchOptions(strategies=["vector"])


def test_options_check_their_weights():
    with pytest.raises(ValidationError, match="sum to 1.0"):
        SearchOptions(weights={"keyword": 1, "semantic": 1, "graph": 1})


# ------------------------------------------------------------------ result items and scores
@pytest.mark.parametrize("field", ["combined", "keyword", "semantic", "graph", "rerank"])
def test_relevance_scores_are_between_0_and_1(field):
    base = {"combined": 0.5}
    assert RelevanceScore(**{**base, field: 0.0}) and RelevanceScore(**{**base, field: 1.0})
    for bad in (-0.01, 1.01):
        with pytest.raises(ValidationError, match=field):
            RelevanceScore(**{**base, field: bad})


def test_relevance_optional_stages():
    r = RelevanceScore(combined=0.2)
    assert r.rerank is None and r.crag is None and r.keyword == 0.0


def test_crag_score():
    for grade in ("correct", "ambiguous", "incorrect"):
        assert CRAGScore(relevance=grade, confidence=0.5).relevance == grade
    with pytest.raises(ValidationError, match="relevance"):
        CRAGScore(relevance="maybe", confidence=0.5)
    for bad in (-0.1, 1.1):
        with pytest.raises(ValidationError, match="confidence"):
            CRAGScore(relevance="correct", confidence=bad)


def test_result_item_rules():
    assert item("a", 0.0).type == "chunk" and item("b", 1.0).score == 1.0
    for bad in (-0.1, 1.1):
        with pytest.raises(ValidationError, match="score"):
            item("a", bad, combined=0.5)
    with pytest.raises(ValidationError, match="type"):
        SearchResultItem(id="a", type="entity", score=0.5, relevance={"combined": 0.5}, content={"text": ""})


def test_highlight_offsets_valid():
    h = Highlight(fragment="hello world", offsets=[{"start": 0, "end": 5}, {"start": 6, "end": 11}])
    assert [(o.start, o.end) for o in h.offsets] == [(0, 5), (6, 11)]
    assert Highlight(fragment="ab", offsets=[{"start": 0, "end": 1}, {"start": 1, "end": 2}])  # touching is fine
    assert Highlight(fragment="").offsets == []


@pytest.mark.parametrize("start,end,message", [(-1, 2, "start"), (3, 3, "greater than start"), (4, 2, "greater than start")])
def test_highlight_offset_invalid(start, end, message):
    with pytest.raises(ValidationError, match=message):
        HighlightOffset(start=start, end=end)


def test_highlight_offsets_inside_the_fragment():
    assert Highlight(fragment="hello", offsets=[{"start": 0, "end": 5}])
    with pytest.raises(ValidationError, match="outside the fragment"):
        Highlight(fragment="hello", offsets=[{"start": 2, "end": 6}])


def test_highlight_offsets_ordered_without_overlap():
    with pytest.raises(ValidationError, match="ascending"):
        Highlight(fragment="hello world", offsets=[{"start": 6, "end": 11}, {"start": 0, "end": 5}])
    with pytest.raises(ValidationError, match="ascending"):
        Highlight(fragment="hello world", offsets=[{"start": 0, "end": 5}, {"start": 4, "end": 8}])


def test_strategy_metric_rules():
    assert StrategyMetric(result_count=0, processing_time=0.0, top_score=1.0)
    for kwargs in ({"result_count": -1}, {"processing_time": -0.5}, {"top_score": 1.5}, {"result_count": 2.5}):
        with pytest.raises(ValidationError, match=next(iter(kwargs))):
            StrategyMetric(**kwargs)


def test_search_result_counts():
    q = SearchQuery(text="q")
    assert SearchResult(query=q).total_count == 0
    with pytest.raises(ValidationError, match="total_count"):
        SearchResult(query=q, total_count=-1)
    with pytest.raises(ValidationError, match="processing_time"):
        SearchResult(query=q, processing_time=-1)
    with pytest.raises(ValidationError, match="query"):
        SearchResult.model_validate({"query": {"text": ""}})


# ------------------------------------------------------------------ the pipeline's own rules
def test_hybrid_weights_per_query_type_are_valid_request_weights():
    """The engine's weights per query type (config) pass the request schema's rules."""
    for query_type, (keyword, semantic, graph) in HybridConfig().weights.items():
        assert SearchWeights(keyword=keyword, semantic=semantic, graph=graph)
    assert set(HybridConfig().weights) == {"local", "global", "relationship", "hybrid"}


def test_weighted_rrf():
    fused = dict(weighted_rrf([[1, 2], [2, 3]], [0.5, 0.3], k=60))
    assert fused[1] == pytest.approx(0.5 / 61)
    assert fused[2] == pytest.approx(0.5 / 62 + 0.3 / 61)
    assert fused[3] == pytest.approx(0.3 / 62)
    assert [i for i, _ in weighted_rrf([[1, 2], [2, 3]], [0.5, 0.3])] == [2, 1, 3]
    assert weighted_rrf([[1, 2]], [0.0]) == []  # a list with no weight adds nothing
    assert [i for i, _ in weighted_rrf([[5], [4]], [1.0, 1.0])] == [4, 5]  # ties by item


def test_linear_fusion():
    fused = dict(linear_fusion([[(1, 10.0), (2, 5.0), (3, 0.0)], [(3, 0.9), (2, 0.1)]], [0.5, 0.5]))
    assert fused == pytest.approx({1: 0.5, 2: 0.25, 3: 0.5})


def test_make_highlight():
    text = "Reciprocal rank fusion merges ranked lists. " * 5
    h = make_highlight(text, [(60, 64), (11, 15)], context_chars=5, max_length=200)
    assert h.fragment.startswith("...") and h.fragment.endswith("...")
    assert [h.fragment[o.start:o.end] for o in h.offsets] == ["rank"]  # the later match is outside the fragment
    whole = make_highlight("rank fusion", [(0, 4), (2, 8), (5, 11)])
    assert whole.fragment == "rank fusion" and [(o.start, o.end) for o in whole.offsets] == [(0, 11)]
    assert make_highlight("abc" * 100, [], max_length=10).fragment == "abcabcabca"
    cut = make_highlight("x" * 500, [(100, 400)], context_chars=10, max_length=50)
    assert len(cut.fragment) == 50 and cut.offsets[0].end == 50


def test_json_schema_is_snake_case_for_mcp_clients():
    schema = json.dumps(SearchQuery.model_json_schema())
    assert '"document_ids"' in schema and '"documentIds"' not in schema and '"minLength": 1' in schema
