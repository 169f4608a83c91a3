"""LazyGraphRAG query: refine -> match -> explore communities under a relevance budget -> claims -> answer.

Exploration follows Microsoft's description of LazyGraphRAG. Communities of the top level are
ranked by the query's best text units they hold; each visit tests the community's best untested
units sentence by sentence, spending one unit of budget per sentence. After
`zero_relevance_limit` visits in a row find nothing, the level has stopped paying and the search
deepens into the sub-communities of the communities that did pay (of the best-ranked ones if
none did). It stops when the budget is spent, enough relevant sentences are found, the LLM call
cap or the depth limit is reached, or nothing is left to test.

With an LLM (`lazy.max_level` 2 or more), a search whose tests found too little (or that asks
how things relate) deepens to Level 2: the units it kept are sent to entity and relation
extraction (kept in the index, see monjyu.levels), and the units that name the same entities, in
their extraction or as a noun phrase, are tested with `lazy.deepen_budget` tests more. At
`lazy.max_level` 3 or more the entities are Level 3's (monjyu.levels.entity_graph): one entity
under all its names, so a unit naming it under another name is linked too. At
`lazy.max_level` 4 a global question is answered from community reports (Level 4) instead.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
from pydantic import BaseModel, Field

from ...config import LazyConfig
from ...ingest.sentences import statement_spans
from ...levels.entity_graph import EntityGraph
from ...llm import LLM, UsageScope
from ...llm.replies import structured_reply
from ...query import Query
from ...retrieval import Searcher
from ...schemas import SearchFilters
from ...retrieval.communities import Community
from ...retrieval.fusion import weighted_rrf
from ...types import LazySearchResult, RelevantSentence
from ..answer import AnswerEngine
from ..classify import rule_classify
from ..context import Source
from ..relevance import sentences_of
from .assessors import LLMAssessor, LocalAssessor, RelevanceAssessor
from .conversation import LazyConversation
from .global_questions import GlobalQuestions
from .writing import ClaimWriter, PhaseCallback, page_of

if TYPE_CHECKING:
    from ...levels import LevelFour, LevelTwo

BRIDGED_UNITS = 3  # budget left after the bridges: every statement of this many best units bridges too
# A community of more units than SIMILAR_ROWS that the search may return (a top-level theme of a
# million-unit index) ranks by similarity only those of its unmatched units among the query's
# NEAREST nearest units: reading every member's vector costs more than the visit's tests.
SIMILAR_ROWS = 20_000
NEAREST = 1_000



class Refinement(BaseModel):
    subqueries: list[str] = Field(default_factory=list)
    expanded_query: str = ""


@dataclass
class _State:
    budget: int
    enough: int
    max_llm_calls: int
    used: int = 0
    llm_calls: int = 0
    relevant: list[RelevantSentence] = field(default_factory=list)
    tested_units: set[int] = field(default_factory=set)
    visits: list[dict] = field(default_factory=list)
    allowed: np.ndarray | None = None  # the units filters and threshold let through (None: all)
    match_rank: np.ndarray | None = None  # per unit: its rank in the matching search (unmatched: after all)
    unmatched_rank: int = 0  # the rank match_rank gives the units the matching search did not return
    similarity: np.ndarray | None = None  # per unit: best cosine to a subquery, NaN until first needed
    nearest: np.ndarray | None = None  # per unit: among the NEAREST to a subquery (found when first needed)

    def stop_reason(self) -> str | None:
        if self.used >= self.budget:
            return "budget"
        if len(self.relevant) >= self.enough:
            return "sufficient"
        if self.llm_calls >= self.max_llm_calls:
            return "max_llm_calls"
        return None


class LazySearch:
    """One lazy search: its settings, and the engine's parts its level lets it use."""

    def __init__(self, config: LazyConfig, searcher: Searcher, embed_query: Callable[[Query], np.ndarray],
                 answers: AnswerEngine, level2: LevelTwo | None, level3: Callable[[], EntityGraph | None] | None,
                 level4: LevelFour | None, prompts_dir: str | None, min_sentence_score: float):
        self.config = config
        self.searcher = searcher
        self.embed_query = embed_query
        self.scorer = answers.scorer
        self.llm = llm = answers.llm
        self.level2 = level2 if llm is not None and config.max_level >= 2 else None
        self.level3 = level3 if self.level2 is not None and config.max_level >= 3 else None
        self.level4 = level4 if llm is not None and config.max_level >= 4 else None
        self.count_tokens = answers.count_tokens
        self.prompts_dir = prompts_dir
        self.min_sentence_score = min_sentence_score  # local relevance a theme's sentence needs to a topic
        self.check_answer = answers.checked
        self.refused_as_unheard = answers.refused_as_unheard
        self.writer = ClaimWriter(config, self.searcher, self.scorer, self.llm, self.count_tokens, self.prompts_dir,
                                  self.check_answer, answers.byline)
        self.global_questions = GlobalQuestions(config, self.searcher, self.scorer, self.llm, self.level4,
                                                self.embed_query, self.min_sentence_score, self.prompts_dir,
                                                self.count_tokens, self.writer)

    # ------------------------------------------------------------------ phases
    async def _refine(self, asked: Query, conversation: LazyConversation | None) -> tuple[list[Query], Query]:
        """Subqueries and an expanded query from the LLM; without one, the query alone."""
        query, lang = asked.text, asked.language
        if self.llm is None:
            return [asked], asked
        history = ""
        if conversation and conversation.turns:
            history = "\nEarlier in this conversation:\n" + "\n".join(f"Q: {q}\nA: {a[:300]}" for q, a in conversation.turns[-3:])
        reply = await structured_reply(self.llm, "subqueries", lang, query, Refinement, self.prompts_dir,
                                       max_subqueries=self.config.max_subqueries, history=history)
        if reply is None:
            return [asked], asked
        subs = [s.strip() for s in reply.subqueries if any(ch.isalnum() for ch in s)][:self.config.max_subqueries]
        return [asked.derive(s) for s in dict.fromkeys([query] + subs)], asked.derive(reply.expanded_query.strip() or query)

    def _match(self, subqueries: Sequence[Query], vectors: np.ndarray, filters: SearchFilters | None,
               threshold: float | None, k: int) -> list[int]:
        """The k text units ranked best for all subqueries (hybrid per subquery, fused by RRF)."""
        lists = []
        for q, v in zip(subqueries, vectors):
            result = self.searcher.search(q, v, "hybrid", k, filters=filters, threshold=threshold)
            lists.append([self.searcher.row_of(h.text_unit_id) for h in result.hits])
        return [row for row, _ in weighted_rrf(lists, [1.0] * len(lists), self.searcher.config.rrf_k)][:k]

    # ------------------------------------------------------------------ exploration
    def _next_units(self, rows: np.ndarray, state: _State, query_vectors: np.ndarray) -> list[int]:
        """The community's best untested units that the search may return (filters, threshold):
        matched ones by match rank, then by their best cosine to a subquery, computed the first
        time a unit is ranked (a search of a million units reads the vectors of the communities it
        visits, not all of them; of a community larger than SIMILAR_ROWS, only those near the
        query: see there). No cosine is computed while matched units fill the visit."""
        if state.allowed is not None:
            rows = rows[state.allowed[rows]]
        rank = state.match_rank[rows]
        if len(rows) > SIMILAR_ROWS:
            near = (rank != state.unmatched_rank) | self._nearest(state, query_vectors)[rows]
            rows, rank = rows[near], rank[near]
        if state.tested_units:
            untested = ~np.isin(rows, np.fromiter(state.tested_units, dtype=np.int64))
            rows, rank = rows[untested], rank[untested]
        if not len(rows):
            return []
        visit = self.config.units_per_visit
        if np.count_nonzero(rank < state.unmatched_rank) >= visit:  # these ranks are distinct: no cosine decides
            return rows[np.argsort(rank, kind="stable")[:visit]].tolist()
        similarity = state.similarity
        unknown = rows[np.isnan(similarity[rows])]
        if len(unknown):
            similarity[unknown] = (self.searcher.index.vectors[unknown] @ query_vectors.T).max(axis=1)
        order = np.lexsort((-similarity[rows], rank))  # stable: ties keep the community's order
        return rows[order[:visit]].tolist()

    def _nearest(self, state: _State, query_vectors: np.ndarray) -> np.ndarray:
        """Per unit: among the NEAREST units to a subquery (the vector search's, filters applied)."""
        if state.nearest is None:
            state.nearest = np.zeros(len(self.searcher.index), dtype=bool)
            for vector in query_vectors:
                found, _ = self.searcher.vector.rank(vector, NEAREST, state.allowed)
                state.nearest[[row for row, _ in found]] = True
        return state.nearest

    async def _test_units(self, query: Query, rows: list[int], community: Community | None, depth: int | None,
                          state: _State, assessor: RelevanceAssessor, keep: bool = False, title: str | None = None) -> int:
        """Relevance-test the sentences of `rows` within the remaining budget; returns relevant count.
        keep: a unit none of whose sentences passes still keeps its best one (lazy.keep_matched)."""
        hits = [self.searcher.hit(r, 0.0, 0, None, None) for r in rows]
        every = sentences_of([Source(i + 1, h) for i, h in enumerate(hits)])
        room = state.budget - state.used
        if isinstance(assessor, LLMAssessor):  # each batch is one call: stay under the call cap
            room = min(room, (state.max_llm_calls - state.llm_calls) * assessor.batch_size)
        sentences = every[:max(0, room)]
        # A unit the budget cut off before any of its sentences was tested stays untested.
        cut_off = {s.source.hit.text_unit_id for s in every[len(sentences):]} - \
            {s.source.hit.text_unit_id for s in sentences}
        state.tested_units.update(r for r, h in zip(rows, hits) if h.text_unit_id not in cut_off)
        if not sentences:
            return 0
        threshold = self.config.relevance_threshold if isinstance(assessor, LLMAssessor) else self.config.local_threshold
        scores, calls = await assessor.assess(query, [s.text for s in sentences])
        state.used += len(sentences)
        state.llm_calls += calls
        found = 0
        passed: set[str] = set()
        best_failing: dict[str, tuple[float, object]] = {}  # keep: each unit's best sentence below the threshold
        for s, score in zip(sentences, scores):
            unit = s.source.hit.text_unit_id
            if score >= threshold:
                found += 1
                passed.add(unit)
                state.relevant.append(self._relevant(s, score, community))
            elif keep and score > best_failing.get(unit, (-1.0, None))[0]:
                best_failing[unit] = (float(score), s)
        for unit, (score, s) in best_failing.items():
            if unit not in passed:
                state.relevant.append(self._relevant(s, score, community))
        state.visits.append({"id": community.id if community else None, "level": community.level if community else None,
                             "depth": depth, "title": title or (community.title if community else "(ranked units)"),
                             "units_tested": len(rows), "sentences_tested": len(sentences), "relevant": found})
        return found

    @staticmethod
    def _relevant(s, score: float, community: Community | None) -> RelevantSentence:
        return RelevantSentence(text=s.text, score=float(score), text_unit_id=s.source.hit.text_unit_id,
                                document_id=s.source.hit.document_id, community_id=community.id if community else None,
                                start_char=s.start_char, end_char=s.end_char)

    async def _test_in_order(self, query: Query, rows: Sequence[int], state: _State, assessor: RelevanceAssessor,
                             depth: int | None, keep: bool = False, title: str | None = None) -> str | None:
        """Tests the untested of `rows` in their order, a visit's worth of units at a time; the
        stop reason once one holds."""
        step = self.config.units_per_visit
        untested = [r for r in rows if r not in state.tested_units]
        for start in range(0, len(untested), step):
            if state.stop_reason():
                break
            await self._test_units(query, untested[start:start + step], None, depth, state, assessor, keep, title)
        return state.stop_reason()

    async def _explore(self, query: Query, ranked: list[int], query_vectors: np.ndarray,
                       state: _State, assessor: RelevanceAssessor, boost: Sequence[int], on_phase: PhaseCallback) -> str:
        cfg = self.config
        communities = self.searcher.index.communities
        if self.llm is None and cfg.keep_matched:  # the matched head first, kept whatever the local test says
            head = [r for r in ranked if state.allowed is None or state.allowed[r]][:cfg.keep_matched]
            if stop := await self._test_in_order(query, head, state, assessor, 0, keep=True):
                return stop
        if communities is None:  # Level 0 index: test units in rank order, one "visit" per batch
            return await self._test_in_order(query, ranked, state, assessor, 0) or "exhausted"

        weight = self.searcher.config.community_title_weight
        titles = {"title_scores": communities.title_similarity(query_vectors, weight), "title_weight": weight}
        frontier = [h.community for h in communities.rank(ranked, level=communities.levels[0], **titles)]
        frontier = _boosted(frontier, boost)[:cfg.breadth_limit]
        depth = 0
        while frontier:
            productive, zero_run = [], 0
            for community in frontier:
                if state.stop_reason():
                    return state.stop_reason()
                rows = self._next_units(community.unit_rows, state, query_vectors)
                if not rows:
                    continue
                found = await self._test_units(query, rows, community, depth, state, assessor)
                on_phase("visit", state.visits[-1])
                if found:
                    productive.append(community)
                    zero_run = 0
                else:
                    zero_run += 1
                    if zero_run >= cfg.zero_relevance_limit:
                        break  # this level stopped paying: deepen
            if depth >= cfg.max_depth:
                break
            parents = productive or frontier[:cfg.zero_relevance_limit]
            children = {c.id for p in parents for c in communities.children(p.id)}
            frontier = [h.community for h in communities.rank(ranked, allowed=children, **titles)][:cfg.breadth_limit]
            depth += 1
        # The walk ended (max depth, or no community left) with budget to spare: the best matched
        # units it never reached are tested in rank order, since unspent budget buys nothing.
        return await self._test_in_order(query, ranked, state, assessor, None) or "exhausted"

    async def _deeper_match(self, query: Query, ranked: list[int], state: _State, assessor: RelevanceAssessor,
                            match: Callable[[int], list[int]]) -> str:
        """Budget the walk and the links left unspent (every matched unit tested) buys the next
        top_k_units of the matching search (`match`: k -> its k best units), tested in rank order,
        so a larger preset keeps finding evidence instead of stopping with budget in hand."""
        while not state.stop_reason():
            have = set(ranked)
            more = [r for r in match(len(ranked) + self.config.top_k_units) if r not in have]
            if not more:
                return "exhausted"
            state.match_rank[more] = np.arange(len(ranked), len(ranked) + len(more))
            ranked.extend(more)
            await self._test_in_order(query, more, state, assessor, None)
        return state.stop_reason()

    async def _bridges(self, query: Query, state: _State, filters: SearchFilters | None,
                       threshold: float | None) -> None:
        """Budget left once every matched unit is tested follows the evidence one hop: each of the
        best relevant sentences (one per unit, `lazy.max_bridges` of them) joined to the question
        (a question about a film's director + the film's sentence that names him) is searched, and
        its best units not kept yet are tested against that joined question. A second hop shares its
        words with the first hop's sentence, not with the question, so neither the question's
        match nor its relevance test reaches it. Budget still left then bridges from the other
        statements of the BRIDGED_UNITS best units. Offline only: with an LLM, the refinement's
        subqueries carry the hops."""
        cfg = self.config
        passing = [s for s in _best_per_unit(state.relevant) if s.score >= cfg.local_threshold]
        bridged: set[str] = set()
        for sentence in passing[:cfg.max_bridges]:
            if state.stop_reason():
                return
            bridged.add(sentence.text)
            await self._bridge(query, sentence.text, state, filters, threshold)
        # A unit's best sentence is the one like the question; the one naming the second hop often
        # is not ("She was the chief queen of King Dikkha", on Saw Thanda's page, asked where her
        # husband died).
        texts = self.searcher.index.columns["text"]
        for sentence in passing[:BRIDGED_UNITS]:
            row = self.searcher.row_of(sentence.text_unit_id)
            for a, b in statement_spans(texts[row], self.searcher.index.sentence_spans(row) or None):
                if state.stop_reason():
                    return
                statement = texts[row][a:b]
                if statement not in bridged:
                    bridged.add(statement)
                    await self._bridge(query, statement, state, filters, threshold)

    async def _bridge(self, query: Query, sentence: str, state: _State, filters: SearchFilters | None,
                      threshold: float | None) -> None:
        """The question joined to `sentence`, searched; its best units not kept yet tested against it,
        also those the question alone failed (the second hop shares no word with the question).
        What passes scores no more than the threshold, below what the question itself passed: a
        test against the joined question says it continues that sentence, not that it answers."""
        cfg = self.config
        joined = query.derive(f"{query.text} {sentence}")
        assessor = self._local_assessor(joined)
        kept = {s.text_unit_id for s in state.relevant}
        hits = self.searcher.search(joined, assessor.query_vector, "hybrid", cfg.units_per_visit + len(kept),
                                    filters=filters, threshold=threshold).hits
        rows = [self.searcher.row_of(h.text_unit_id) for h in hits if h.text_unit_id not in kept][:cfg.units_per_visit]
        if rows:
            before = len(state.relevant)
            await self._test_units(joined, rows, None, None, state, assessor, title=f"(bridge: {sentence[:60]})")
            for found in state.relevant[before:]:
                found.score = min(found.score, cfg.local_threshold)

    def _needs_level2(self, asked: Query, state: _State) -> bool:
        """Deepen to Level 2 (an LLM and lazy.max_level 2 given) when the question asks how things
        relate, or when the tests found fewer relevant sentences than enough: both want links the
        noun-phrase graph may not have. A global question asks for themes, not links: it never
        deepens to entities."""
        if self.level2 is None:
            return False
        kind = rule_classify(asked, []).type
        return kind in ("relationship", "hybrid") or (kind != "global" and len(state.relevant) < state.enough)

    async def _level2(self, asked: Query, ranked: list[int], state: _State) -> dict:
        """Level 2 on demand: the best units the search kept (else the best it tested), up to
        lazy.extract_units, get their entities and relations (from the store, or the LLM once);
        the units naming those entities (in any stored extraction, or as a noun phrase) are then
        tested, most entities shared first, with lazy.deepen_budget more tests. They are tested
        by the LLM (no local prefilter) against the question joined to the relations extracted: a
        second hop shares no word with the question, only with the relation that leads to it.
        Extraction calls count against lazy.max_llm_calls like every other call of the engine."""
        cfg, searcher = self.config, self.searcher
        kept = [searcher.row_of(s.text_unit_id) for s in _best_per_unit(sorted(state.relevant, key=lambda s: -s.score))]
        visited = (kept or [r for r in ranked if r in state.tested_units])[:cfg.extract_units]
        texts = searcher.index.columns["text"]
        extractions, run = await self.level2.extract([texts[r] for r in visited],
                                                     max_calls=max(0, state.max_llm_calls - state.llm_calls))
        state.llm_calls += run.sent
        names = set().union(*(e.names() for e in extractions.values()))
        entities = self.level3() if self.level3 is not None else None
        shared = self._units_sharing(names, entities)
        linked = [r for r in shared if r not in state.tested_units and (state.allowed is None or state.allowed[r])]
        linked.sort(key=lambda r: (-shared[r], state.match_rank[r], r))
        relations = [r.description or f"{r.source} - {r.target}" for e in extractions.values() for r in e.relations]
        joined = asked.derive(" ".join([asked.text, *relations[:5]]))
        linked_assessor = LLMAssessor(self.llm, cfg.batch_size, asked.language, self.prompts_dir)
        before = len(state.relevant)
        state.budget = max(state.budget, state.used) + cfg.deepen_budget
        title = f"(level {3 if entities is not None else 2}: units naming " + ", ".join(sorted(names)[:5]) + ")"
        for start in range(0, len(linked), cfg.units_per_visit):
            if state.used >= state.budget:
                break
            await self._test_units(joined, linked[start:start + cfg.units_per_visit], None, None, state,
                                   linked_assessor, title=title)
        return {"units_sent": run.sent, "units_reused": run.reused, "units_failed": run.failed,
                "entities": len(names), "units_linked": len(linked), "relevant": len(state.relevant) - before,
                "level": 3 if entities is not None else 2}

    def _units_sharing(self, names: set[str], entities: EntityGraph | None) -> Counter[int]:
        """Each unit naming one of the entities `names` (entity keys), with how many it names: at
        Level 3 an entity's units under all its names (Level 3 links noun phrases too); at Level
        2 the units whose stored extraction names it, or where it is a noun phrase."""
        shared: Counter[int] = Counter()
        if entities is not None:
            for e in {entities.entity_of(n) for n in names} - {None}:
                shared.update(entities.units[e].tolist())
            return shared
        rows_of_key = self.searcher.rows_by_text_key()
        for units in self.level2.units_naming(names).values():
            shared.update(r for key in units for r in rows_of_key.get(key, ()))
        graph = self.searcher.index.graph
        if graph is not None:
            for name in names:
                node = graph.vocab.get(name)
                if node is not None and not graph.is_hub[node]:
                    shared.update(graph.units_of(node).tolist())
        return shared

    def _local_assessor(self, query: Query) -> LocalAssessor:
        """The offline relevance test for `query`, its terms weighted by their IDF in the
        collection: a sentence naming a question's rare terms is relevant, one naming only its
        common words ("study", "patients") much less."""
        weights = self.searcher.index.bm25.idf(set(self.scorer.query_terms(query))) or None
        return LocalAssessor(self.scorer, self.embed_query(query), weights)

    def _linked_evidence(self, state: _State) -> list[RelevantSentence]:
        """The second hop of the evidence: a relevant sentence that names the title of another
        unit (the film's page: "directed by Frank Lloyd"; the unit titled Frank Lloyd) makes
        that unit's opening statement relevant too, at the naming sentence's score. A multi-hop
        question shares few words with its second hop, so a relevance test alone rejects it.
        Budget the exploration left unspent then follows the titles the kept units name in any
        of their sentences, best unit first, one relevance test's worth per link."""
        graph = self.searcher.index.graph
        if graph is None or not graph.about:
            return []
        have = {s.text_unit_id for s in state.relevant}
        found: list[RelevantSentence] = []

        def follow(sentence: RelevantSentence, named: str | None) -> bool:
            """Link from the sentence's unit to the units whose titles `named` holds (None: any
            its unit names); False once the budget is spent."""
            for unit, phrase in graph.linked_units(self.searcher.row_of(sentence.text_unit_id)):
                if named is None and state.used >= state.budget:
                    return False
                uid = self.searcher.index.columns["id"][unit]
                if uid in have or (named is not None and phrase not in named) or \
                        (state.allowed is not None and not state.allowed[unit]):
                    continue
                opening = self._opening_statement(unit, sentence)
                if opening is not None:
                    found.append(opening)
                    have.add(uid)
                    state.used += named is None
            return True

        for sentence in state.relevant:
            follow(sentence, sentence.text.lower())
        for sentence in _best_per_unit(state.relevant):
            if not follow(sentence, None):
                break
        return found

    def _opening_statement(self, unit: int, naming: RelevantSentence) -> RelevantSentence | None:
        texts = self.searcher.index.columns["text"]
        spans = statement_spans(texts[unit], self.searcher.index.sentence_spans(unit) or None)
        if not spans:
            return None
        a, b = spans[0]
        hit = self.searcher.hit(unit, 0.0, 0, None, None)
        return RelevantSentence(text=texts[unit][a:b], score=naming.score, text_unit_id=hit.text_unit_id,
                                document_id=hit.document_id, community_id=naming.community_id,
                                start_char=hit.start_char + a, end_char=hit.start_char + b)

    # ------------------------------------------------------------------ entry point
    async def asearch(self, *args, **kwargs) -> LazySearchResult:
        """Filters and the similarity threshold bound every unit matched or tested; `hits` are
        the units that held relevant sentences, best first, paged by top_k/offset; answer=False
        stops after exploration (no claims, no answer, no LLM calls for them). With an LLM, the
        result's usage_by_level splits the calls between Level 1 (relevance tests, claims, the
        answer) and Level 2 (extraction and the tests of the units it linked)."""
        with UsageScope() as total:
            result = await self._asearch(*args, **kwargs)
        deeper = {level: info.pop("usage") for level, info in (("2", result.level2), ("4", result.level4))
                  if "usage" in info}
        if self.llm is not None:
            rest = total.usage
            for usage in deeper.values():
                rest = rest - usage
            result.usage_by_level = {"1": rest.to_dict(), **{k: v.to_dict() for k, v in deeper.items()}}
        return result

    async def _asearch(self, asked: Query, conversation: LazyConversation | None = None,
                      on_phase: PhaseCallback | None = None, on_token: Callable[[str], None] | None = None,
                      filters: SearchFilters | None = None, threshold: float | None = None,
                      top_k: int = 10, offset: int = 0, answer: bool = True) -> LazySearchResult:
        cfg = self.config
        phase = on_phase or (lambda name, info: None)
        query, lang = asked.text, asked.language  # the stages below still take the text
        budget, enough = cfg.resolved()
        if conversation is not None:
            communities = self.searcher.index.communities
            conversation.follow(self.searcher.has_unit,
                                lambda c: communities is not None and c in communities.by_id)
        is_global = self.searcher.index.communities is not None and rule_classify(asked, []).type == "global"
        if self.level4 is not None and is_global:
            return await self.global_questions.reports(asked, budget, filters, threshold, top_k, offset, answer, phase, on_token)
        if self.llm is None and is_global:
            result = await asyncio.to_thread(self.global_questions.themes, asked, budget, filters, threshold, top_k, offset,
                                             answer, phase, on_token)
            if conversation is not None and result.answer is not None:
                conversation.turns.append((query, result.answer.text))
                result.turn = len(conversation.turns)
            return result
        # Exploration keeps two calls of the cap for the claims and the answer.
        reserve = 2 if self.llm is not None else 0
        state = _State(budget=budget, enough=enough, max_llm_calls=max(1, cfg.max_llm_calls - reserve))
        timings: dict[str, float] = {}

        t = time.perf_counter()
        subqueries, expanded = await self._refine(asked, conversation)
        state.llm_calls += 1 if self.llm is not None else 0  # the cap counts the engine's calls; a JSON repair retry is part of its call
        timings["refine_ms"] = (time.perf_counter() - t) * 1000
        phase("refine", {"subqueries": [q.text for q in subqueries], "expanded_query": expanded.text})

        t = time.perf_counter()
        query_vectors = np.stack([self.embed_query(q) for q in subqueries])
        ranked = self._match(subqueries, query_vectors, filters, threshold, cfg.top_k_units)
        state.allowed = self.searcher.restrict(filters, query_vectors[0], threshold)
        state.match_rank = np.full(len(self.searcher.index), len(ranked), dtype=np.int64)
        state.match_rank[ranked] = np.arange(len(ranked))
        state.unmatched_rank = len(ranked)
        state.similarity = np.full(len(self.searcher.index), np.nan, dtype=np.float32)
        timings["match_ms"] = (time.perf_counter() - t) * 1000
        phase("match", {"units": len(ranked)})

        t = time.perf_counter()
        assessor: RelevanceAssessor
        local = self._local_assessor(expanded)
        if self.llm is not None:
            assessor = LLMAssessor(self.llm, cfg.batch_size, lang, self.prompts_dir, local, cfg.prefilter)
        else:
            assessor = local
        boost = conversation.productive_communities if conversation else []
        stop = await self._explore(asked, ranked, query_vectors, state, assessor, boost, phase)
        if cfg.follow_links:
            state.relevant += self._linked_evidence(state)
        if stop == "exhausted" and state.used < state.budget:
            found = len(state.relevant)
            if self.llm is None and cfg.max_bridges:
                await self._bridges(asked, state, filters, threshold)
            stop = await self._deeper_match(asked, ranked, state, assessor,
                                            lambda k: self._match(subqueries, query_vectors, filters, threshold, k))
            if cfg.follow_links and len(state.relevant) > found:
                state.relevant += self._linked_evidence(state)
        timings["explore_ms"] = (time.perf_counter() - t) * 1000
        phase("explore", {"budget_used": state.used, "relevant": len(state.relevant), "stop": stop})
        level2: dict = {}
        if self._needs_level2(asked, state):
            t = time.perf_counter()
            with UsageScope() as level2_usage:
                level2 = await self._level2(asked, ranked, state)
            level2["usage"] = level2_usage.usage
            timings["level2_ms"] = (time.perf_counter() - t) * 1000
            phase("level2", {k: v for k, v in level2.items() if k != "usage"})

        relevant = sorted(state.relevant, key=lambda s: -s.score)
        best: dict[str, float] = {}
        for s in relevant:
            best.setdefault(s.text_unit_id, s.score)
        # The kept units in the order the matching search ranked them (a stronger order than one
        # sentence's relevance score, measured on papers), the units exploration found beyond its
        # list after them, by relevance.
        match_rank = {self.searcher.index.columns["id"][row]: i for i, row in enumerate(ranked)}
        best = dict(sorted(best.items(), key=lambda kv: (match_rank.get(kv[0], len(match_rank)), -kv[1])))
        hits = page_of(self.searcher, best, top_k, offset)
        result = LazySearchResult(
            query=query, answer=None, subqueries=[q.text for q in subqueries], expanded_query=expanded.text, claims=[],
            relevant_sentences=relevant, communities_visited=state.visits, budget_used=state.used,
            budget_total=budget, assessor=assessor.name, stop_reason=stop, timings_ms=timings,
            kept_text_unit_ids=list(best), hits=hits, total_count=len(best),
            levels_reached=[0, 1, *range(2, level2["level"] + 1)] if level2 else [0, 1] if self.searcher.index.graph is not None else [0])
        result.level2 = level2
        refused = self.refused_as_unheard(asked, on_token) if answer else None
        if refused is not None:  # a question about something no document mentions
            result.answer = refused
        elif answer:
            result.claims, result.answer, state.llm_calls = await self.writer.claims_and_answer(
                asked, lang, relevant, state.llm_calls, state.visits, conversation, timings, phase, on_token)
            result.turn = len(conversation.turns) if conversation is not None else 0
        return result

def _best_per_unit(sentences: Sequence[RelevantSentence]) -> list[RelevantSentence]:
    """Each unit's best-scoring sentence, best first."""
    best: dict[str, RelevantSentence] = {}
    for sentence in sorted(sentences, key=lambda s: -s.score):
        best.setdefault(sentence.text_unit_id, sentence)
    return list(best.values())


def _boosted(communities: list[Community], first: Sequence[int]) -> list[Community]:
    """Communities that paid in earlier turns of a conversation go first, the rest keep their order."""
    if not first:
        return communities
    order = {cid: i for i, cid in enumerate(first)}
    return sorted(communities, key=lambda c: order.get(c.id, len(order)))
