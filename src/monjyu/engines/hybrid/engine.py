"""The HybridRAG pipeline (CONV-07): classify -> BM25 + vector + graph in parallel, weighted RRF ->
rerank -> CRAG and selective generation. Every stage runs for real; each can be switched off per
query, and the result records what each one did."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace

import numpy as np

from ...config import HybridConfig, RerankConfig, SearchConfig
from ...levels.entity_graph import EntityGraph
from ...errors import MonjyuError, ServiceError
from ...query import Query
from ...retrieval import Searcher
from ...retrieval.filters import trim
from ...schemas import SearchFilters
from ...retrieval.rankers import QUERY_TEXT_CHARS
from ...retrieval.rounds import feedback_round, sentence_naming
from ...retrieval.searcher import WALK_HEADS
from ...retrieval.fusion import weighted_rrf
from ...llm import UsageScope
from ...types import Answer, HybridItem, HybridSearchResult, SearchHit
from ..answer import AnswerEngine
from ..extractive import insufficient
from ..classify import Classification, llm_classify, rule_classify
from .crag import Grade, grade_llm, grade_local, sufficiency_llm, sufficiency_local
from ..request import SearchRequest
from .rerank import Reranker
from .response import public_request, request_weights, to_search_result

STRATEGIES = ("keyword", "semantic", "graph")
GRAPH_MODE = {"local": "entity", "global": "community", "relationship": "relation", "hybrid": "multihop"}
WebSearch = Callable[[str], Sequence[str]]  # a hook for CRAG's last resort; none is installed by default
Extract = Callable[[list[int]], Awaitable[dict]]  # Level 2 for these rows (kept), the run's counts


class HybridRAGEngine:
    def __init__(self, config: HybridConfig, rerank_config: RerankConfig, search_config: SearchConfig,
                 searcher: Searcher, embed_query: Callable[[Query], np.ndarray], answers: AnswerEngine,
                 reranker: Reranker | None, web_search: WebSearch | None = None,
                 entities: Callable[[], EntityGraph | None] | None = None, extract: Extract | None = None):
        """`entities`: Level 3 as it stands (None offline), its entities linked into the graph
        walk; `extract`: Level 2 extraction of some units, for relationship questions
        (hybrid.deepen_units)."""
        self.config = config
        self.rerank_config = rerank_config
        self.search_config = search_config
        self.searcher = searcher
        self.embed_query = embed_query
        self.answers = answers
        self.reranker = reranker
        self.web_search = web_search
        self.entities = entities
        self.extract = extract
        self.llm = answers.llm
        self.prompts_dir = answers.config.prompts_dir or None

    async def run(self, query: Query, request: SearchRequest) -> HybridSearchResult:
        """One search with the request's page, filters, threshold and switches, or those of the
        public request it came as (`request.public`: its type, embedding and options); the
        result's `response` is the page as that public request's `schemas.SearchResult`."""
        public = request.public
        if public is None:
            public = public_request(query.text, request.top_k, request.offset, request.filters, request.weights,
                                    request.rerank, self.config.crag if request.crag is None else request.crag)
            weights, rerank, crag = request.weights, request.rerank, request.crag
        else:
            weights = request_weights(public)
            rerank, crag = public.options.rerank_enabled, public.options.crag_enabled
        query = query.derive(public.text)  # as the public request has it (its schema strips the text)
        vector = None if public.embedding is None else np.asarray(public.embedding, dtype=np.float32)
        if self.entities is not None:
            self.entities()  # its entities join the graph walk where Level 2 has some
        t0 = time.perf_counter()
        with UsageScope() as usage:
            result = await self.asearch(query, public.options.limit, public.options.offset, request.filters, weights,
                                        rerank, crag, request.answer, request.on_token,
                                        query_type=public.type if "type" in public.model_fields_set else None,
                                        query_vector=vector, threshold=request.threshold)
        result.usage = usage.to_dict()
        result.timings_ms["total_ms"] = (time.perf_counter() - t0) * 1000
        result.response = to_search_result(result, public, self.searcher)
        return result

    # ------------------------------------------------------------------ stage 1
    async def classify(self, asked: Query, query_type: str | None = None) -> Classification:
        """The query's type and entities; `query_type` (from a request) is taken as given. A long
        query (a pasted passage) is classified by its first QUERY_TEXT_CHARS characters."""
        head = Query(asked.text[:QUERY_TEXT_CHARS], asked.language)
        entities = []
        if self.searcher.index.graph is not None:
            graph = self.searcher.index.graph
            entities = [graph.phrases[n] for n in graph.match(head.text, self.searcher.graph.phrases(asked))]
        rules = rule_classify(head, entities)
        if query_type is not None:
            return replace(rules, type=query_type, confidence=1.0, method="request")
        use_llm = self.llm is not None and self.config.classifier != "rules"
        if self.config.classifier == "llm" and self.llm is None:
            raise MonjyuError("hybrid.classifier is 'llm' but no LLM is configured (llm.provider is none)")
        return await llm_classify(self.llm, head, rules, self.prompts_dir) if use_llm else rules

    # ------------------------------------------------------------------ stage 2
    def graph_mode(self, cls: Classification) -> str:
        """The graph search the query type calls for; community search needs communities (a
        collection too small to group its phrases has none), else the entity walk runs."""
        mode = GRAPH_MODE[cls.type]
        return "entity" if mode == "community" and self.searcher.index.communities is None else mode

    def _strategy(self, name: str, query: Query, vector: np.ndarray, n: int, mask: np.ndarray | None,
                  cls: Classification, found: dict) -> tuple[list[tuple[int, float]], float]:
        """One strategy's ranking and its time in ms; community search also leaves the communities
        it ranked in `found` (they become `type: community` results)."""
        t = time.perf_counter()
        s = self.searcher
        if name == "keyword":
            ranked, _ = s.keyword.rank(query, n, mask)
        elif name == "semantic":
            ranked, _ = s.vector.rank(vector, n, mask)
        elif self.graph_mode(cls) == "community":
            ranked, _, found["communities"] = s.community.rank(query, vector, n, mask)
        elif self.graph_mode(cls) == "relation":
            ranked, _ = s.graph.relation(query, vector, n, mask, cls.entities)
        elif self.graph_mode(cls) == "multihop":
            ranked, _ = s.graph.multihop(query, vector, n, mask)
        else:  # entity: the walk from the query's phrases and its best vector hits
            ranked, _ = s.graph.rank(query, vector, n, mask)
        return ranked, (time.perf_counter() - t) * 1000

    async def _triple_search(self, query: Query, vector: np.ndarray, n: int, mask: np.ndarray | None,
                             cls: Classification, weights: dict[str, float],
                             found: dict | None = None) -> tuple[list[tuple[int, float]], dict, dict]:
        names = [k for k in STRATEGIES if weights[k] > 0 and (k != "graph" or self.searcher.index.graph is not None)]
        found = {} if found is None else found
        first = []
        if query.language == "ja" and "semantic" in names:
            # the passages its meaning finds choose its words' English glosses (nlp.glossary), which
            # the keyword search reads: found before it
            names = ["semantic"] + [k for k in names if k != "semantic"]
            first = [self._strategy("semantic", query, vector, n, mask, cls, found)]
            self.searcher.note_gloss_context(query, first[0][0])
        runs = first + await asyncio.gather(*(asyncio.to_thread(self._strategy, k, query, vector, n, mask, cls, found)
                                              for k in names[len(first):]))
        per = {k: dict(r) for k, (r, _) in zip(names, runs)}
        metrics = {k: {"count": len(r), "time_ms": round(ms, 2), "top_score": round(r[0][1], 6) if r else 0.0}
                   for k, (r, ms) in zip(names, runs)}
        if "graph" in metrics:
            metrics["graph"]["mode"] = self.graph_mode(cls)
        fused = weighted_rrf([[row for row, _ in r] for r, _ in runs], [weights[k] for k in names],
                             self.search_config.rrf_k)
        if self.search_config.feedback and fused:  # the second hop of multi-hop questions
            fused = feedback_round(self.searcher, query, vector, fused, n, mask)
        return fused, per, metrics

    # ------------------------------------------------------------------ stage 3
    def _rerank(self, query: Query, vector: np.ndarray,
                fused: list[tuple[int, float]]) -> tuple[list[tuple[int, float]], dict[int, float]]:
        """Rerank the best candidates; the final order fuses the reranker's order with the fused
        order (weighted RRF), so a reranker's mistake on one passage cannot bury a strong hit.
        Returns (row, final score) in the final order (the score orders the list: the rest,
        beyond the reranked head, is scaled below it) and the reranker's scores."""
        head = [row for row, _ in fused[:self.rerank_config.candidates]]
        texts = [self._text(row) for row in head]
        scores = self.reranker.scores(query, vector, texts, self.searcher.index.vectors[head])
        self._inherit_link_scores(query, vector, head, scores)
        by_rerank = [head[i] for i in np.argsort(-scores, kind="stable")]
        w = self.rerank_config.weight
        order = weighted_rrf([head, by_rerank], [1.0 - w, w], self.search_config.rrf_k)
        rest = fused[len(head):]
        if rest:  # below the head's last final score, in their fused order
            scale = 0.999 * order[-1][1] / rest[0][1]
            rest = [(row, score * scale) for row, score in rest]
        return order + rest, {row: float(v) for row, v in zip(head, scores)}

    def _inherit_link_scores(self, query: Query, vector: np.ndarray, head: list[int], scores: np.ndarray) -> None:
        """A passage that a top passage links to by title (the director's page, linked from the
        film's) shares few words with a multi-hop question; it is scored as relevant as the
        sentence that links to it (with the linking passage's embedding, for the local reranker),
        if that is higher, so reranking does not bury the second hop."""
        index = self.searcher.index
        if index.graph is None or not index.graph.about:
            return
        position = {row: i for i, row in enumerate(head)}
        links = [(position[unit], seed, sentence_naming(index.columns["text"][seed], phrase))
                 for seed in head[:self.search_config.feedback_keep]
                 for unit, phrase in index.graph.linked_units(seed) if unit in position]
        links = [(i, seed, sentence) for i, seed, sentence in links if sentence]
        if links:
            link_scores = self.reranker.scores(query, vector, [sentence for _, _, sentence in links],
                                               index.vectors[[seed for _, seed, _ in links]])
            for (i, _, _), value in zip(links, link_scores):
                scores[i] = max(scores[i], value)

    def _text(self, row: int) -> str:
        c = self.searcher.index.columns
        return f"{c['title'][row]}\n{c['text'][row]}" if c["title"][row] else c["text"][row]

    # ------------------------------------------------------------------ stage 4
    async def _grade(self, query: Query, vector: np.ndarray, rows: list[int]) -> list[Grade]:
        texts = [self.searcher.index.columns["text"][r] for r in rows]
        grades = await asyncio.to_thread(grade_local, query, vector, texts, self.answers.scorer,
                                         self.config.crag_correct, self.config.crag_incorrect)
        if self.llm is not None:
            grades = await grade_llm(self.llm, query, texts, grades, self.prompts_dir)
        return grades

    async def _rewrite(self, asked: Query, rows: list[int], grades: list[Grade]) -> str:
        """Nothing graded correct: a new query. The LLM rewrites it; without one, the query is
        extended with the phrases of the two best-graded results (pseudo-relevance feedback)."""
        query = asked.text
        if self.llm is not None:
            rewrites = await self.answers.aexpand(asked)
            if len(rewrites) > 1:
                return rewrites[1]
        graph = self.searcher.index.graph
        best = [r for r, _ in sorted(zip(rows, grades), key=lambda x: -x[1].score)][:2]
        if graph is None or not best:
            return query
        phrases = []
        for row in best:
            phrases += [graph.phrases[p] for p in graph.incidence[row].indices if not graph.is_hub[p]]
        return query + " " + " ".join(dict.fromkeys(phrases[:10]))

    # ------------------------------------------------------------------ entry point
    async def asearch(self, asked: Query, top_k: int = 10, offset: int = 0, filters: SearchFilters | None = None,
                      weights: dict[str, float] | None = None, rerank: bool | None = None, crag: bool | None = None,
                      answer: bool = True, on_token: Callable[[str], None] | None = None,
                      query_type: str | None = None, query_vector: np.ndarray | None = None,
                      threshold: float | None = None) -> HybridSearchResult:
        """`query_type` skips classification; `query_vector` skips embedding the query; filters
        and the similarity threshold bound every strategy's list."""
        query = asked.text  # the stages before the answer read its text
        timings: dict[str, float] = {}
        t = time.perf_counter()
        cls = await self.classify(asked, query_type)
        timings["classify_ms"] = (time.perf_counter() - t) * 1000
        w = dict(zip(STRATEGIES, self.config.weights[cls.type])) if weights is None else dict(weights)
        if set(w) != set(STRATEGIES) or abs(sum(w.values()) - 1.0) > 0.01 or min(w.values()) < 0:
            raise MonjyuError(f"weights must be keyword, semantic, graph in [0, 1] summing to 1 (+/- 0.01), got {w}")

        t = time.perf_counter()
        vector = await asyncio.to_thread(self.embed_query, asked) if query_vector is None else query_vector
        mask = self.searcher.restrict(filters, vector, threshold)
        n = max(self.search_config.candidates, offset + top_k)
        found: dict = {}
        fused, per, metrics = await self._triple_search(asked, vector, n, mask, cls, w, found)
        level3: dict = {}
        if cls.type == "relationship" and self.extract is not None and self.config.deepen_units and fused:
            t3 = time.perf_counter()
            fused, per, metrics, level3 = await self._deepen(asked, vector, n, mask, cls, w, found, fused, per, metrics)
            timings["level3_ms"] = (time.perf_counter() - t3) * 1000
        best = {k: max(scores.values()) for k, scores in per.items() if scores}
        fused = trim(filters, fused)
        timings["search_ms"] = (time.perf_counter() - t) * 1000

        t = time.perf_counter()
        use_rerank = (cls.type in self.config.rerank_types if rerank is None else rerank) and self.reranker is not None
        rerank_scores: dict[int, float] = {}
        if use_rerank and fused:
            fused, rerank_scores = await asyncio.to_thread(self._rerank, asked, vector, fused)
        order = [row for row, _ in fused]
        best["combined"] = fused[0][1] if fused else 0.0
        timings["rerank_ms"] = (time.perf_counter() - t) * 1000

        t = time.perf_counter()
        grades: dict[int, Grade] = {}
        crag_info = None
        if self.config.crag if crag is None else crag:
            order, grades, crag_info, rescored = await self._corrective(asked, vector, order, offset + top_k,
                                                                        mask, cls, w)
            if rescored is not None:  # the rewritten query's results replaced the first ones
                fused = [(row, rescored[row]) for row in order]
                best["combined"] = fused[0][1] if fused else 0.0
        timings["crag_ms"] = (time.perf_counter() - t) * 1000

        combined = {row: score for row, score in fused}
        page = order[offset:offset + top_k]
        levels = self._levels(page, per)
        q_terms = set(self.searcher.keyword.terms(asked))
        items = []
        for rank, row in enumerate(page, start=offset + 1):
            g = grades.get(row)
            hit = self.searcher.hit(row, combined.get(row, 0.0), rank, per.get("semantic", {}).get(row),
                                    per.get("keyword", {}).get(row))
            hit.level = levels[row]
            text = hit.text
            items.append(HybridItem(
                hit=hit,
                scores={"combined": combined.get(row, 0.0), "keyword": per.get("keyword", {}).get(row),
                        "semantic": per.get("semantic", {}).get(row), "graph": per.get("graph", {}).get(row),
                        "rerank": rerank_scores.get(row), "crag": g.score if g else None},
                grade=g.grade if g else None,
                strips=[text[a:b] for a, b in g.strips] if g and g.grade == "ambiguous" else [],
                highlights=_highlights(text, q_terms, self.searcher.analyzer)))

        result = HybridSearchResult(
            query=query, classification={"type": cls.type, "confidence": cls.confidence, "entities": cls.entities,
                                         "relation_hint": cls.relation_hint, "method": cls.method},
            weights=w, items=items, total_count=len(order), strategies=metrics,
            reranker=self.reranker.name if use_rerank else None, crag=crag_info, timings_ms=timings, best_scores=best,
            communities=[{"id": h.community.id, "level": h.community.level, "title": h.community.title,
                          "score": h.score, "text_unit_ids": [self.searcher.index.columns["id"][r] for r in h.matched_rows]}
                         for h in found.get("communities", [])], level3=level3)
        if answer:
            t = time.perf_counter()
            result.answer = await self._answer(asked, vector, items, crag_info, on_token)
            timings["answer_ms"] = (time.perf_counter() - t) * 1000
        return result

    async def _deepen(self, query: Query, vector: np.ndarray, n: int, mask: np.ndarray | None, cls: Classification,
                      w: dict[str, float], found: dict, fused: list, per: dict, metrics: dict) -> tuple:
        """A relationship question with an LLM, as lazy search deepens: the best
        hybrid.deepen_units passages get their entities and relations extracted (Level 2, or
        read back from the index), and when that changes Level 3 the three searches run again,
        the graph walk now going through its entities (a passage naming one under another name).
        Returns the (new) fusion and what the extraction did."""
        before = self.entities() if self.entities is not None else None
        run = await self.extract([row for row, _ in fused[:self.config.deepen_units]])
        after = self.entities() if self.entities is not None else None
        info = {**run, "entities": len(after) if after is not None else 0, "searched_again": after is not before}
        if after is not before:
            fused, per, metrics = await self._triple_search(query, vector, n, mask, cls, w, found)
        return fused, per, metrics, info

    def _levels(self, rows: list[int], per: dict) -> dict[int, int]:
        """The level each row came through: traced back to the WALK_HEADS best keyword and vector hits
        (Searcher.came_through)."""
        direct = {row for name in ("keyword", "semantic") for row in per.get(name, {})}
        heads = [row for name in ("keyword", "semantic")
                 for row, _ in sorted(per.get(name, {}).items(), key=lambda x: -x[1])[:WALK_HEADS]]
        walked = any(row not in direct for row in rows)
        entities = self.entities() if walked and self.entities is not None else None
        return self.searcher.came_through(rows, direct, heads, entities)

    async def _corrective(self, asked: Query, vector: np.ndarray, order: list[int], need: int, mask: np.ndarray | None,
                          cls: Classification, w: dict[str, float]) -> tuple[list[int], dict[int, Grade], dict,
                                                                               dict[int, float] | None]:
        """Grade the results a page needs (plus a margin), drop the incorrect; when nothing is
        correct, search once more with a rewritten query and keep the better graded set (then
        with that search's fused scores, else None)."""
        query = asked.text
        head = order[:max(need, self.rerank_config.candidates)]
        grades = dict(zip(head, await self._grade(asked, vector, head)))
        info: dict = {"rewritten_query": None, "web_search": False}
        rescored = None
        if not any(g.grade == "correct" for g in grades.values()):
            rewritten = await self._rewrite(asked, head, list(grades.values()))
            if rewritten != query:
                info["rewritten_query"] = rewritten
                again = asked.derive(rewritten)
                v2 = await asyncio.to_thread(self.embed_query, again)
                fused2, _, _ = await self._triple_search(again, v2, len(head), mask, cls, w)
                head2 = [row for row, _ in fused2[:len(head)]]
                grades2 = dict(zip(head2, await self._grade(asked, vector, head2)))
                if sum(g.grade == "correct" for g in grades2.values()) > 0:
                    head, grades, rescored = head2, grades2, dict(fused2)
            if self.web_search is not None and not any(g.grade == "correct" for g in grades.values()):
                info["web_search"] = True  # the hook's passages go to the answer as extra context
                info["web_results"] = list(self.web_search(query))
        kept = [row for row in head if grades[row].grade != "incorrect"]
        info["grades"] = {k: sum(g.grade == k for g in grades.values()) for k in ("correct", "ambiguous", "incorrect")}
        return kept, grades, info, rescored

    async def _answer(self, query: Query, vector: np.ndarray, items: list[HybridItem], crag_info: dict | None,
                      on_token: Callable[[str], None] | None) -> Answer:
        if crag_info is None:  # no grading: answer from the ranked items, as baseline RAG does
            return await self.answers.aanswer(query, vector, [i.hit for i in items], on_token)
        context = [i.hit.text for i in items if i.grade == "correct"] + [s for i in items for s in i.strips]
        context += crag_info.get("web_results", [])
        suff = sufficiency_local(query, context, self.searcher.analyzer, self.config.min_coverage)
        if self.llm is not None:
            suff = await sufficiency_llm(self.llm, query, context, suff, self.prompts_dir)
        crag_info["sufficiency"] = {"sufficient": suff.sufficient, "confidence": suff.confidence,
                                    "missing": suff.missing, "method": suff.method}
        lang = self.answers.language(query)
        if not suff.sufficient:
            return insufficient(lang, "abstained: the context lacks " + "; ".join(suff.missing))
        hits = []
        for i in items:
            if i.grade == "correct":
                hits.append(i.hit)
            elif i.grade == "ambiguous" and i.strips:  # only the relevant strips of a partly relevant unit
                hits.append(_strip_hit(i))
        try:
            return await self.answers.aanswer(query, vector, hits, on_token)
        except ServiceError as exc:  # aanswer already falls back; this guards the sufficiency path
            return insufficient(lang, f"the LLM failed: {exc}")


def _strip_hit(item: HybridItem) -> SearchHit:
    """The unit with its relevant strips only, each where it stands: the text between them blanked
    (a line break, then spaces), so the reader reads each strip as its own sentences and cites their
    characters in the paper. Joined by " … ", they had shifted every citation's characters, glued a
    heading strip to the sentence after it and opened quotes with the ellipsis."""
    text, kept, at = item.hit.text, [], 0
    for strip in item.strips:
        start = text.find(strip, at)
        if start < 0:  # not a piece of this unit's text: nothing to cite it by
            continue
        gap = text[at:start]
        kept += [gap if not gap.strip() else "\n" + " " * (len(gap) - 1), strip]
        at = start + len(strip)
    return replace(item.hit, text="".join(kept))


_WORD = re.compile(r"[0-9A-Za-z\u00c0-\u024f]+|[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff]+")


def _highlights(text: str, q_terms: set[str], analyzer) -> list[dict]:
    """Offsets of the words of `text` that match the query's index terms."""
    out = []
    for m in _WORD.finditer(text):
        word = m.group(0)
        if q_terms & set(analyzer.terms(word)):
            out.append({"text": word, "start": m.start(), "end": m.end()})
    return out[:50]
