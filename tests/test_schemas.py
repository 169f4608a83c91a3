"""Every rule of the public search schemas (CONV-03-05), valid and invalid, and lossless JSON."""

from __future__ import annotations

import json
from datetime import date

import pytest
from pydantic import ValidationError

from monjyu.schemas import (
    CRAGScore, DateRange, Highlight, HighlightOffset, QueryClassification, RelevanceScore, RerankConfig,
    RRFConfig, SearchFilters, SearchOptions, SearchQuery, SearchResult, SearchResultContent, SearchResultItem,
    SearchResultSources, SearchStrategyMetrics, SearchWeights, StrategyMetric, crag_grade, deduplicate_results,
    default_weights, expand_query, filter_by_min_relevance, make_highlight, normalize_scores, normalize_weights,
    rrf_score,
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
        filters=SearchFilters(file_ids=["doc-1"], file_types=["pdf", "md"], entity_types=["method"],
                              date_range=DateRange(start=date(2023, 1, 1), end=date(2024, 12, 31)), min_relevance=0.05),
        options=SearchOptions(limit=100, offset=40, include_metadata=False, include_highlights=False, rerank_enabled=False,
                              crag_enabled=True, strategies=["keyword", "graph"],
                              weights=SearchWeights(keyword=0.2, semantic=0.2, graph=0.6)),
    )
    hit = SearchResultItem(
        id="u-7", type="entity", score=0.8125,
        relevance=RelevanceScore(combined=0.8125, keyword=0.5, semantic=0.75, graph=1.0, rerank=0.9,
                                 crag=CRAGScore(relevance="ambiguous", confidence=0.55, needs_web_search=True,
                                                refined_query="RRF reranking relation")),
        content=SearchResultContent(text="RRF fuses ranks.", summary="fusion", context_before="a", context_after="b"),
        highlights=[Highlight(field="text", fragment="RRF fuses ranks.", offsets=[HighlightOffset(start=0, end=3),
                                                                                 HighlightOffset(start=10, end=15)])],
        sources=SearchResultSources(chunk_id="u-7", file_id="doc-1", entity_ids=["e1", "e2"], community_id="12",
                                    relation_ids=["r1"]),
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


@pytest.mark.parametrize("model", [SearchQuery(text="x"), RRFConfig(), RerankConfig(), SearchOptions(), SearchFilters(),
                                   QueryClassification(original_query="q", type="local", confidence=1.0,
                                                       suggested_weights=default_weights("local"))])
def test_round_trip_of_defaults(model):
    assert type(model).model_validate_json(model.model_dump_json()) == model


def test_camel_case_names_from_the_spec_are_accepted_and_written():
    q = SearchQuery.model_validate({"text": "q", "filters": {"fileIds": ["a"], "minRelevance": 0.5,
                                                             "dateRange": {"start": "2024-01-01", "end": None}},
                                    "options": {"rerankEnabled": False, "cragEnabled": True, "includeHighlights": False}})
    assert q.filters.file_ids == ["a"] and q.filters.min_relevance == 0.5 and q.filters.date_range.start == date(2024, 1, 1)
    assert not q.options.rerank_enabled and q.options.crag_enabled and not q.options.include_highlights
    dumped = q.model_dump(by_alias=True)
    assert dumped["filters"]["fileIds"] == ["a"] and dumped["options"]["rerankEnabled"] is False
    assert "file_ids" in q.model_dump()["filters"]  # Python callers see snake_case


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
    assert f.file_ids is None and f.file_types is None and f.entity_types is None and f.date_range is None
    assert f.min_relevance == 0.3
    f = SearchFilters(file_ids=[], file_types=["pdf"], entity_types=["person"])
    assert f.file_ids == [] and f.file_types == ["pdf"]
    with pytest.raises(ValidationError):
        SearchFilters(file_ids="doc-1")


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
        SearchResultItem(id="a", type="document", score=0.5, relevance={"combined": 0.5}, content={"text": ""})


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


# ------------------------------------------------------------------ settings
def test_rrf_config():
    assert RRFConfig().k == 60 and RRFConfig().normalize_scores
    assert RRFConfig(k=1).k == 1 and RRFConfig(k=1000).k == 1000
    for bad in (0, 1001, 60.5):
        with pytest.raises(ValidationError, match="k"):
            RRFConfig(k=bad)


def test_rerank_config():
    c = RerankConfig()
    assert (c.enabled, c.model, c.top_k, c.batch_size) == (True, "cross-encoder/ms-marco-MiniLM-L-6-v2", 50, 16)
    assert RerankConfig(top_k=1, batch_size=1) and RerankConfig(top_k=100, batch_size=32)
    for kwargs in ({"top_k": 0}, {"top_k": 101}, {"batch_size": 0}, {"batch_size": 33}):
        with pytest.raises(ValidationError, match=next(iter(kwargs))):
            RerankConfig(**kwargs)


def test_query_classification():
    c = QueryClassification(original_query="AとBの関係は？", type="relationship", confidence=0.9, extracted_entities=["A", "B"],
                            suggested_weights=default_weights("relationship"), expanded_queries=["A B relation"])
    assert c.extracted_entities == ["A", "B"]
    with pytest.raises(ValidationError, match="confidence"):
        QueryClassification(original_query="q", type="local", confidence=1.2, suggested_weights=default_weights("local"))
    with pytest.raises(ValidationError, match="type"):
        QueryClassification(original_query="q", type="other", confidence=0.5, suggested_weights=default_weights("local"))
    with pytest.raises(ValidationError, match="sum to 1.0"):
        QueryClassification(original_query="q", type="local", confidence=0.5,
                            suggested_weights={"keyword": 0.9, "semantic": 0.9, "graph": 0.9})


# ------------------------------------------------------------------ utilities
@pytest.mark.parametrize("query_type,expected", [("local", (0.35, 0.35, 0.30)), ("global", (0.2, 0.3, 0.5)),
                                                 ("relationship", (0.2, 0.2, 0.6)), ("hybrid", (0.33, 0.34, 0.33))])
def test_default_weights_per_query_type(query_type, expected):
    w = default_weights(query_type)
    assert (w.keyword, w.semantic, w.graph) == expected


def test_normalize_weights():
    w = normalize_weights(2, 1, 1)
    assert (w.keyword, w.semantic, w.graph) == (0.5, 0.25, 0.25)
    assert normalize_weights(0, 0, 3).graph == 1.0
    with pytest.raises(ValueError, match="above 0"):
        normalize_weights(0, 0, 0)
    with pytest.raises(ValueError, match="negative"):
        normalize_weights(-1, 1, 1)


def test_rrf_score():
    w = SearchWeights(keyword=0.5, semantic=0.3, graph=0.2)
    raw = RRFConfig(normalize_scores=False)
    assert rrf_score({"keyword": 1, "semantic": 2, "graph": None}, w, raw) == pytest.approx(0.5 / 61 + 0.3 / 62)
    assert rrf_score({"keyword": 1, "semantic": 2}, w) == pytest.approx((0.5 / 61 + 0.3 / 62) / 0.8)
    assert rrf_score({}, w) == 0.0
    assert rrf_score({"graph": 1}, w, RRFConfig(k=1, normalize_scores=False)) == pytest.approx(0.1)
    assert rrf_score({"keyword": 1}, w) > rrf_score({"keyword": 2}, w)


def test_normalize_scores():
    items = normalize_scores([item("a", 0.2), item("b", 0.6), item("c", 0.4)])
    assert [i.score for i in items] == pytest.approx([0.0, 1.0, 0.5])
    same = [item("a", 0.3), item("b", 0.3)]
    assert normalize_scores(same) == same and normalize_scores([]) == []


def test_deduplicate_results():
    items = [item("a", 0.3), item("b", 0.5), item("a", 0.6), item("a", 0.1)]
    best = deduplicate_results(items)
    assert [(i.id, i.score) for i in best] == [("a", 0.6), ("b", 0.5)]
    summed = deduplicate_results(items[:3], "sum_score")
    assert [i.id for i in summed] == ["a", "b"]
    assert summed[0].score == pytest.approx(0.9) and summed[0].relevance.combined == pytest.approx(0.9)
    capped = deduplicate_results([item("x", 0.7), item("x", 0.8)], "sum_score")
    assert capped[0].score == 1.0 and capped[0].relevance.combined == 1.0


def test_filter_by_min_relevance():
    items = [item("a", 0.5, combined=0.29), item("b", 0.5, combined=0.3), item("c", 0.5, combined=0.9)]
    assert [i.id for i in filter_by_min_relevance(items, SearchFilters().min_relevance)] == ["b", "c"]


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


def test_expand_query():
    syn = {"rag": ["retrieval-augmented generation"], "fast": ["quick", "rapid"]}
    assert expand_query("Fast RAG", syn) == ["Fast RAG", "quick RAG", "rapid RAG", "Fast retrieval-augmented generation"]
    assert expand_query("ragged edges", syn) == ["ragged edges"]  # whole words only
    assert expand_query("no synonyms here", syn) == ["no synonyms here"]


@pytest.mark.parametrize("score,grade", [(1.0, "correct"), (0.7, "correct"), (0.69, "ambiguous"), (0.31, "ambiguous"),
                                         (0.3, "incorrect"), (0.0, "incorrect")])
def test_crag_grade(score, grade):
    assert crag_grade(score) == grade


def test_json_schema_is_snake_case_for_mcp_clients():
    schema = json.dumps(SearchQuery.model_json_schema())
    assert '"file_ids"' in schema and '"fileIds"' not in schema and '"minLength": 1' in schema
