"""The claims and the answer of a lazy search: claims from the relevant sentences (by the LLM
within its call cap, or the sentences themselves), the answer written from them by the LLM with
its citations checked, or extractive without one."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from string import Template

from ...config import LazyConfig
from ...errors import ServiceError
from ...llm import LLM, Message, load_prompt
from ...query import Query
from ...retrieval import Searcher
from ...types import Answer, Claim, RelevantSentence, SearchHit
from ..answer import generate
from ..citations import citation_for, resolve_citations
from ..context import Source
from ..extractive import insufficient
from ..relevance import LocalRelevanceScorer
from .claims import cut_to_budget, deduplicate, llm_claims, sentence_claims
from .conversation import LazyConversation

PhaseCallback = Callable[[str, dict], None]


def page_of(searcher: Searcher, scored_units: dict[str, float], top_k: int, offset: int) -> list[SearchHit]:
    """One page of the kept units (text unit id -> score, best first) as hits."""
    page = list(scored_units.items())[offset:offset + top_k]
    return [searcher.hit(searcher.row_of(u), score, rank, None, None)
            for rank, (u, score) in enumerate(page, start=offset + 1)]


class ClaimWriter:
    """One search's writer: its settings, and the parts it writes with."""

    def __init__(self, config: LazyConfig, searcher: Searcher, scorer: LocalRelevanceScorer, llm: LLM | None,
                 count_tokens: Callable[[str], int], prompts_dir: str | None,
                 check_answer: Callable[[str, Sequence[Source], str], Answer] | None,
                 byline: Callable[[Query, Sequence[Source], str, Callable[[str], None] | None], Answer | None]
                 | None = None):
        """`check_answer`: the LLM answer's check (AnswerEngine.checked); `byline`: the answer to who
        wrote a paper or which papers someone wrote, from the bylines (AnswerEngine.byline)."""
        self.config = config
        self.searcher = searcher
        self.scorer = scorer
        self.llm = llm
        self.count_tokens = count_tokens
        self.prompts_dir = prompts_dir
        self.check_answer = check_answer
        self.byline = byline

    def sources(self, claims: Sequence[Claim]) -> tuple[list[Source], dict[str, int]]:
        number: dict[str, int] = {}
        sources: list[Source] = []
        for claim in claims:
            for unit in claim.text_unit_ids:
                if unit not in number:
                    number[unit] = len(sources) + 1
                    sources.append(Source(number[unit], self.searcher.hit(self.searcher.row_of(unit), 0.0, 0, None, None)))
        return sources, number

    async def answer(self, query: Query, lang: str, claims: Sequence[Claim], relevant: Sequence[RelevantSentence],
                      on_token: Callable[[str], None] | None, use_llm: bool) -> Answer:
        if not claims:
            return insufficient(lang, "no sentence passed the relevance test")
        sources, number = self.sources(claims)
        if self.byline is not None and (byline := self.byline(query, sources, lang, on_token)) is not None:
            return byline  # the bylines say it, no claim does
        listing = "\n".join(f"- {c.statement} " + "".join(f"[{number[u]}]" for u in c.text_unit_ids) for c in claims)
        note = ""
        if self.llm is not None and not use_llm:
            note = "the LLM call cap was reached"
        elif self.llm is not None:
            system = Template(load_prompt("lazy_answer", lang, self.prompts_dir)).safe_substitute(
                response_type=self.config.response_type)
            user = Template(load_prompt("lazy_answer_user", lang, self.prompts_dir)).safe_substitute(
                claims=listing, question=query.text)
            messages = [Message("system", system), Message("user", user)]
            try:
                written = await generate(self.llm, messages, on_token)
                if written.strip() and self.check_answer is not None:
                    return self.check_answer(written, sources, lang)
                text, citations = resolve_citations(written, sources)
                if text:
                    return Answer(text=text, kind="llm", citations=citations, language=lang,
                                  note="" if citations else "the model cited no source")
                note = "the LLM returned an empty answer"
            except ServiceError as exc:
                note = f"the LLM failed ({exc})"
        # Extractive: the best claims, each with its sources; one citation per source.
        best = {s.text: s for s in relevant}
        lines, citations, cited = [], [], set()
        for claim in claims[:8]:
            lines.append(f"{claim.statement} " + "".join(f"[{number[u]}]" for u in claim.text_unit_ids))
            for unit in claim.text_unit_ids:
                if unit not in cited:
                    cited.add(unit)
                    s = next((best[t] for t in claim.sentences if t in best and best[t].text_unit_id == unit), None)
                    src = sources[number[unit] - 1]
                    citations.append(citation_for(src, s.text, s.start_char, s.end_char) if s else citation_for(src))
        text = "\n".join(lines)
        if on_token:
            on_token(text)
        note = (note + ", so " if note else "") + "extractive: relevant sentences found by lazy search, without an LLM"
        return Answer(text=text, kind="extractive", citations=citations, language=lang, note=note)


    async def claims_and_answer(self, query: Query, lang: str, relevant: list[RelevantSentence], llm_calls: int,
                                visits: list[dict], conversation: LazyConversation | None, timings: dict[str, float],
                                phase: PhaseCallback, on_token: Callable[[str], None] | None
                                ) -> tuple[list[Claim], Answer, int]:
        """The claims of the relevant sentences (the LLM's, for as many groups as the call cap
        leaves room for), the answer written from them, and the LLM calls made so far; the
        conversation, if any, takes the turn."""
        cfg = self.config
        t = time.perf_counter()
        groups: dict[int | None, list[RelevantSentence]] = {}
        for s in relevant:  # best sentence first, so groups come out best first too
            groups.setdefault(s.community_id, []).append(s)
        allowed = cfg.max_llm_calls - llm_calls - 1 if self.llm is not None else 0
        if cfg.map_claims == "auto" and sum(self.count_tokens(s.text) for s in relevant) <= cfg.context_tokens:
            allowed = 0  # the sentences fit the answer's context as they are: a map step would only restate them
        by_llm, rest = list(groups.values())[:max(0, allowed)], list(groups.values())[max(0, allowed):]
        claims = sentence_claims([s for g in rest for s in g])
        if by_llm:
            more, calls = await llm_claims(self.llm, query.text, by_llm, lang, self.prompts_dir)
            claims += more
            llm_calls += calls
        if conversation:
            claims += [Claim(c.statement, c.score * 0.5, list(c.text_unit_ids), list(c.sentences)) for c in conversation.claims]
        claims = deduplicate(claims, self.scorer.embed, cfg.claim_similarity, self.scorer.cosine_floor)
        claims = cut_to_budget(claims, cfg.context_tokens, self.count_tokens)
        timings["claims_ms"] = (time.perf_counter() - t) * 1000
        phase("claims", {"claims": len(claims)})

        t = time.perf_counter()
        answer = await self.answer(query, lang, claims, relevant, on_token,
                                    use_llm=llm_calls < cfg.max_llm_calls)
        timings["answer_ms"] = (time.perf_counter() - t) * 1000
        phase("answer", {"kind": answer.kind})

        if conversation is not None:
            conversation.turns.append((query.text, answer.text))
            conversation.claims = claims
            conversation.productive_communities = list(dict.fromkeys(
                [v["id"] for v in visits if v["relevant"] and v["id"] is not None]
                + conversation.productive_communities))
        return claims, answer, llm_calls
