"""HybridRAG results in the public response schema (CONV-03-05): what the API returns as
`result.response`, and what CLI `--json` and MCP print.

Every score in the schema is 0-1. RRF, BM25 and PageRank scores have no fixed scale, so the
combined, keyword and graph scores are divided by the best score of their list for this query;
the semantic score is the cosine similarity (clipped at 0); rerank is the local reranker's
0-10 relevance / 10 (or a cross-encoder's / API's score squashed to 0-1).
"""

from __future__ import annotations

import math

from ...schemas import (CRAGScore, RelevanceScore, SearchQuery, SearchResult, SearchResultContent,
                        SearchResultItem, SearchResultSources, SearchStrategyMetrics, StrategyMetric, make_highlight)
from ...types import HybridItem, HybridSearchResult


def _unit(value: float | None, scale: float) -> float:
    if value is None or scale <= 0:
        return 0.0
    return min(1.0, max(0.0, value / scale))


def _rerank_unit(value: float | None, reranker: str | None) -> float | None:
    if value is None:
        return None
    if reranker == "local":
        return min(1.0, max(0.0, value / 10.0))
    return 1.0 / (1.0 + math.exp(-value)) if not 0.0 <= value <= 1.0 else value  # logits -> 0-1


def _item(item: HybridItem, result: HybridSearchResult, include_highlights: bool) -> SearchResultItem:
    s, top = item.scores, result.best_scores
    hit = item.hit
    crag = None
    if item.grade is not None:
        crag = CRAGScore(relevance=item.grade, confidence=min(1.0, max(0.0, s["crag"] or 0.0)),
                         needs_web_search=bool(result.crag and result.crag.get("web_search")),
                         refined_query=(result.crag or {}).get("rewritten_query"))
    combined = _unit(s["combined"], top.get("combined", 0.0))
    highlights = []
    if include_highlights and item.highlights:
        highlights = [make_highlight(hit.text, [(h["start"], h["end"]) for h in item.highlights])]
    return SearchResultItem(
        id=hit.text_unit_id, type="chunk", score=combined,
        relevance=RelevanceScore(combined=combined, keyword=_unit(s["keyword"], top.get("keyword", 0.0)),
                                 semantic=_unit(s["semantic"], 1.0), graph=_unit(s["graph"], top.get("graph", 0.0)),
                                 rerank=_rerank_unit(s["rerank"], result.reranker), crag=crag),
        content=SearchResultContent(text=" … ".join(item.strips) if item.strips else hit.text),
        highlights=highlights,
        sources=SearchResultSources(chunk_id=hit.text_unit_id, file_id=hit.document_id))


def to_search_result(result: HybridSearchResult, request: SearchQuery) -> SearchResult:
    """One page of a HybridRAG search as the public SearchResult of `request`."""
    metrics = {}
    for name in ("keyword", "semantic", "graph"):
        m = result.strategies.get(name)
        if m is None:  # weight 0, or no Level 1 graph
            metrics[name] = StrategyMetric(enabled=False)
            continue
        scale = 1.0 if name == "semantic" else result.best_scores.get(name, 0.0)
        metrics[name] = StrategyMetric(result_count=m["count"], processing_time=m["time_ms"],
                                       top_score=_unit(m["top_score"], scale))
    return SearchResult(query=request, results=[_item(i, result, request.options.include_highlights) for i in result.items],
                        total_count=result.total_count, processing_time=result.timings_ms.get("total_ms", 0.0),
                        strategies=SearchStrategyMetrics(**metrics))
