"""Global questions ("what are the main themes?"), which relevance tests cannot answer: with an
LLM and `lazy.max_level` 4, from community reports (Level 4, GraphRAG's global search); without
one, themes from the community hierarchy (themes.py)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import asdict

import numpy as np

from ...config import LazyConfig
from ...levels.reports import community_key
from ...llm import LLM, UsageScope
from ...query import Query
from ...retrieval import Searcher
from ...schemas import SearchFilters
from ...retrieval.communities import Community
from ...types import Claim, LazySearchResult
from ..relevance import LocalRelevanceScorer
from .assessors import LLMAssessor
from .claims import cut_to_budget
from .themes import ThemeFinder
from .writing import ClaimWriter, PhaseCallback, page_of


class GlobalQuestions:
    """One search's answer to a global question: its settings, and the parts it reads."""

    def __init__(self, config: LazyConfig, searcher: Searcher, scorer: LocalRelevanceScorer, llm: LLM | None,
                 level4, embed_query: Callable[[Query], np.ndarray], min_sentence_score: float,
                 prompts_dir: str | None, count_tokens: Callable[[str], int], writer: ClaimWriter):
        self.config = config
        self.searcher = searcher
        self.scorer = scorer
        self.llm = llm
        self.level4 = level4
        self.embed_query = embed_query
        self.min_sentence_score = min_sentence_score
        self.prompts_dir = prompts_dir
        self.count_tokens = count_tokens
        self.writer = writer

    async def reports(self, asked: Query, budget: int, filters: SearchFilters | None,
                       threshold: float | None, top_k: int, offset: int, answer: bool, phase: PhaseCallback,
                       on_token: Callable[[str], None] | None) -> LazySearchResult:
        """A global question with an LLM (lazy.max_level 4): GraphRAG's global search over
        community reports. The communities are those the offline themes would read (the level
        with enough of them; for a topic, those holding its best passages); the reports they
        have are read from the index, up to lazy.max_reports missing ones are written (kept);
        map: their claims are scored against the question by the LLM; reduce: the answer is
        written from the best claims, citing the passages the report cited."""
        cfg, t = self.config, time.perf_counter()
        finder = ThemeFinder(self.searcher, self.scorer, self.min_sentence_score, self.embed_query, filters, threshold)
        query, lang = asked.text, asked.language
        plan = finder.plan(asked)
        if plan is None:  # the collection does not speak of the topic: the themes say so
            return await asyncio.to_thread(self.themes, asked, budget, filters, threshold, top_k, offset,
                                           answer, phase, on_token)
        with UsageScope() as usage:
            communities = plan[3][:cfg.report_communities]
            graph, cols = self.searcher.index.graph, self.searcher.index.columns
            keys = {c.id: community_key([graph.phrases[p] for p in c.phrases]) for c in communities}
            kept = self.level4.kept(list(keys.values()))
            calls = max(0, cfg.max_llm_calls - 2)  # the map and the answer keep a call each
            missing = [c for c in communities if keys[c.id] not in kept][:min(cfg.max_reports, calls)]
            items = []
            for c in missing:
                sentences = finder.central_sentences(c, cfg.report_sentences)
                items.append((keys[c.id], c.title, [(cols["text"][row], text) for row, _, _, text in sentences]))
            written, failed = await self.level4.write(items)
            kept.update(written)
            phase("reports", {"written": len(written), "read": len(kept) - len(written), "failed": failed})
            claims, owners, reports = self._report_claims(communities, keys, kept, written)
            room = max(1, cfg.max_llm_calls - len(items) - 1) * cfg.batch_size
            claims, owners = claims[:room], owners[:room]
            scores, _ = await LLMAssessor(self.llm, cfg.batch_size, lang, self.prompts_dir).assess(
                asked, [c.statement for c in claims])
            passing = [(Claim(c.statement, float(s), c.text_unit_ids, c.sentences), owner)
                       for c, s, owner in zip(claims, scores, owners) if s >= cfg.relevance_threshold]
            relevant = sorted((c for c, _ in passing), key=lambda c: -c.score)
            relevant = cut_to_budget(relevant, cfg.context_tokens, self.count_tokens)
            written_answer = await self.writer.answer(asked, lang, relevant, [], on_token, use_llm=True) if answer else None
        units = list(dict.fromkeys(u for c in relevant for u in c.text_unit_ids))
        # The map step shows each community by its report's title, or, where its report is
        # missing (beyond this search's budget, or failed), by its offline theme label.
        visits = [{"id": c.id, "level": c.level, "depth": 0,
                   "title": f"(report) {r['title']}" if r else ", ".join(finder.label(c)), "units_tested": 0,
                   "sentences_tested": r["claims"] if r else 0, "relevant": sum(owner == c.id for _, owner in passing),
                   "report": bool(r)} for c, r in zip(communities, reports)]
        return LazySearchResult(
            query=query, answer=written_answer, subqueries=[query], expanded_query=query, claims=relevant,
            relevant_sentences=[], communities_visited=visits, budget_used=0, budget_total=budget,
            assessor=f"llm:{self.llm.id}", stop_reason="reports", kept_text_unit_ids=units,
            hits=page_of(self.searcher, dict.fromkeys(units, 0.0), top_k, offset), total_count=len(units),
            timings_ms={"reports_ms": (time.perf_counter() - t) * 1000}, levels_reached=[0, 1, 4],
            reports=[r for r in reports if r],
            level4={"communities": len(communities), "reports_written": len(written),
                    "reports_read": len(kept) - len(written), "reports_failed": failed, "claims": len(claims),
                    "claims_relevant": len(relevant), "usage": usage.usage})

    def _report_claims(self, communities: list[Community], keys: dict[int, str], kept: dict, written: dict):
        """The claims of the communities' reports, citing the units (ids) they rest on (claims
        resting only on units the index no longer holds are dropped), and each report as shown."""
        rows_of_key = self.searcher.rows_by_text_key()
        ids = self.searcher.index.columns["id"]
        claims, owners, reports = [], [], []
        for c in communities:
            report = kept.get(keys[c.id])
            if report is None:
                reports.append(None)
                continue
            n = 0
            for claim in report.claims:
                units = list(dict.fromkeys(ids[rows_of_key[k][0]] for k, _ in claim["sources"] if k in rows_of_key))
                if units:
                    claims.append(Claim(claim["statement"], 0.0, units, [s for _, s in claim["sources"]]))
                    owners.append(c.id)
                    n += 1
            reports.append({"community_id": c.id, "level": c.level, "title": report.title, "summary": report.summary,
                            "claims": n, "written_now": keys[c.id] in written})
        return claims, owners, reports

    def themes(self, asked: Query, budget: int, filters: SearchFilters | None, threshold: float | None,
                top_k: int, offset: int, answer: bool, phase: PhaseCallback,
                on_token: Callable[[str], None] | None) -> LazySearchResult:
        """A global question without an LLM: themes from the community hierarchy (themes.py)
        instead of relevance tests, which find nothing to test against "the main themes"."""
        t = time.perf_counter()
        found = ThemeFinder(self.searcher, self.scorer, self.min_sentence_score, self.embed_query, filters,
                            threshold).answer(asked)
        query = asked.text
        visits = [{"id": th.community_id, "level": th.level, "depth": 0, "title": ", ".join(th.label),
                   "units_tested": len({r for r, *_ in th.sentences}), "sentences_tested": len(th.sentences),
                   "relevant": len(th.sentences)} for th in found.themes]
        for visit in visits:
            phase("visit", visit)
        units = list(dict.fromkeys(c.text_unit_id for c in found.answer.citations))
        hits = page_of(self.searcher, dict.fromkeys(units, 0.0), top_k, offset)
        if answer and on_token:
            on_token(found.answer.text)
        coverage = {"heading": found.heading, "topic": found.topic,
                    "documents": found.covered_documents,
                    "documents_total": found.total_documents, "communities": found.communities_used,
                    "communities_total": found.communities_total}
        return LazySearchResult(
            query=query, answer=found.answer if answer else None, subqueries=[query], expanded_query=query,
            claims=[], relevant_sentences=[], communities_visited=visits, budget_used=0, budget_total=budget,
            assessor="themes", stop_reason="themes" if found.themes else "not covered" if found.topic else "no themes",
            timings_ms={"themes_ms": (time.perf_counter() - t) * 1000}, kept_text_unit_ids=units, hits=hits,
            total_count=len(units), coverage=coverage, levels_reached=[0, 1],
            themes=[{"label": th.label, "community_id": th.community_id, "level": th.level,
                     "phrases": [asdict(p) for p in th.phrases],
                     "sentences": [{"text": text, "text_unit_id": self.searcher.index.columns["id"][row],
                                    "start": a, "end": b} for row, a, b, text in th.sentences]}
                    for th in found.themes])
