"""HybridRAG results in the public response schema (CONV-03-05): what the API returns as
`result.response`, and what CLI `--json` and MCP print.

Every score in the schema is 0-1. RRF, BM25 and PageRank scores have no fixed scale, so the
combined, keyword and graph scores are divided by the best score of their list for this query;
the semantic score is the cosine similarity (clipped at 0); rerank is the local reranker's
0-10 relevance / 10 (or a cross-encoder's / API's score squashed to 0-1).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from ...errors import MonjyuError
from ...retrieval import Searcher
from ...schemas import (CRAGScore, Highlight, HighlightOffset, RelevanceScore, ResultMetadata, SearchFilters, SearchOptions, SearchQuery,
                        SearchResult, SearchResultContent, SearchResultItem, SearchResultSources, SearchStrategyMetrics,
                        StrategyMetric)
from ...types import HybridItem, HybridSearchResult


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


def _item(item: HybridItem, result: HybridSearchResult, request: SearchQuery, searcher: Searcher) -> SearchResultItem:
    s, top = item.scores, result.best_scores
    hit = item.hit
    row = searcher.row_of(hit.text_unit_id)
    crag = None
    if item.grade is not None:
        crag = CRAGScore(relevance=item.grade, confidence=min(1.0, max(0.0, s["crag"] or 0.0)),
                         needs_web_search=bool(result.crag and result.crag.get("web_search")),
                         refined_query=(result.crag or {}).get("rewritten_query"))
    combined = _unit(s["combined"], top.get("combined", 0.0))
    highlights = []
    if request.options.include_highlights and item.highlights:
        highlights = [make_highlight(hit.text, [(h["start"], h["end"]) for h in item.highlights])]
    before, after = searcher.neighbour_text(row)
    communities = [str(c) for c in searcher.unit_communities(row)]
    metadata = None
    if request.options.include_metadata:
        metadata = ResultMetadata(title=hit.document_title, source_path=hit.source_path, page=hit.page,
                                  section=hit.section, kind=hit.kind, authors=hit.authors, year=hit.year,
                                  chunk_index=hit.chunk_index, start_char=hit.start_char, end_char=hit.end_char)
    return SearchResultItem(
        id=hit.text_unit_id, type="chunk", score=combined,
        relevance=RelevanceScore(combined=combined, keyword=_unit(s["keyword"], top.get("keyword", 0.0)),
                                 semantic=_unit(s["semantic"], 1.0), graph=_unit(s["graph"], top.get("graph", 0.0)),
                                 rerank=_rerank_unit(s["rerank"], result.reranker), crag=crag),
        content=SearchResultContent(text=" … ".join(item.strips) if item.strips else hit.text,
                                    context_before=before or None, context_after=after or None),
        highlights=highlights,
        sources=SearchResultSources(chunk_id=hit.text_unit_id, file_id=hit.document_id,
                                    entity_ids=[str(e) for e in searcher.graph.unit_phrases(row)],
                                    community_ids=communities, community_id=communities[-1] if communities else None,
                                    level=hit.level),
        metadata=metadata)


def _community_items(result: HybridSearchResult, chunks: list[SearchResultItem]) -> list[SearchResultItem]:
    """The communities that community search ranked, each scored as its best passage on this
    page (a community none of whose passages is on the page is left out), labelled by its
    representative phrases."""
    on_page = {c.id: c for c in chunks}
    out = []
    for community in result.communities:
        mine = [on_page[u] for u in community["text_unit_ids"] if u in on_page]
        if not mine:
            continue
        best = max(mine, key=lambda c: c.score)
        out.append(SearchResultItem(
            id=f"community-{community['id']}", type="community", score=best.score,
            relevance=RelevanceScore(combined=best.score),
            content=SearchResultContent(text=best.content.text, summary=community["title"]),
            sources=SearchResultSources(community_id=str(community["id"]), community_ids=[str(community["id"])],
                                        chunk_id=best.id, file_id=best.sources.file_id)))
    return out


def to_search_result(result: HybridSearchResult, request: SearchQuery, searcher: Searcher) -> SearchResult:
    """One page of a HybridRAG search as the public SearchResult of `request`: its passages and,
    for community search, its communities, in the order of their scores."""
    metrics = {}
    for name in ("keyword", "semantic", "graph"):
        m = result.strategies.get(name)
        if m is None:  # weight 0, or no Level 1 graph
            metrics[name] = StrategyMetric(enabled=False)
            continue
        scale = 1.0 if name == "semantic" else result.best_scores.get(name, 0.0)
        metrics[name] = StrategyMetric(result_count=m["count"], processing_time=m["time_ms"],
                                       top_score=_unit(m["top_score"], scale))
    chunks = [_item(i, result, request, searcher) for i in result.items]
    # Stable sort: a community comes just before its best passage (equal scores keep list order).
    items = sorted(_community_items(result, chunks) + chunks, key=lambda x: -x.score)
    return SearchResult(query=request, results=items, total_count=result.total_count + len(result.communities),
                        processing_time=result.timings_ms.get("total_ms", 0.0),
                        strategies=SearchStrategyMetrics(**metrics))


def public_request(text: str, top_k: int, offset: int, filters: SearchFilters | None,
                   weights: dict[str, float] | None, rerank: bool | None, crag: bool) -> SearchQuery:
    """HybridRAG's options given as arguments, as the public request (the result echoes it),
    validated by its rules."""
    options: dict[str, Any] = {"limit": top_k, "offset": offset, "crag_enabled": crag}
    if rerank is not None:
        options["rerank_enabled"] = rerank
    if weights is not None:
        options["weights"] = weights
    try:
        return SearchQuery(text=text, options=SearchOptions(**options),
                           filters=filters or SearchFilters())
    except ValidationError as exc:
        err = exc.errors()[0]
        # The request's names, spelt as the arguments (limit is top_k, *_enabled the flags).
        names = {"limit": "top_k", "rerank_enabled": "rerank", "crag_enabled": "crag"}
        where = ".".join(names.get(str(p), str(p)) for p in err["loc"])
        raise MonjyuError(f"hybrid search {where}: {err['msg']}") from None


def request_weights(request: SearchQuery) -> dict[str, float] | None:
    """The public request's fusion weights (None: by the query's type, when it chose none);
    strategies left out of `options.strategies` get none and the rest are scaled back to a sum
    of 1 ("hybrid" means all three)."""
    if not request.options.model_fields_set & {"weights", "strategies"}:
        return None
    w = request.options.weights.model_dump()
    chosen = set(request.options.strategies)
    if "hybrid" not in chosen:
        w = {k: (v if k in chosen else 0.0) for k, v in w.items()}
        total = sum(w.values())
        if total <= 0:
            raise MonjyuError(f"options.strategies {sorted(chosen)} have no weight in options.weights")
        w = {k: v / total for k, v in w.items()}
    return w
