"""Claims (the map step): statements drawn from the relevant sentences, one community group at a
time; then de-duplicated by embedding similarity, ranked and cut to the answer's context budget."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

import numpy as np
from pydantic import BaseModel, Field

from ...llm import LLM
from ...llm.replies import structured_reply
from ...types import Claim, RelevantSentence


class ClaimItem(BaseModel):
    statement: str
    sources: list[int] = Field(default_factory=list)


class ClaimList(BaseModel):
    claims: list[ClaimItem] = Field(default_factory=list)


def sentence_claims(sentences: Sequence[RelevantSentence]) -> list[Claim]:
    """Without an LLM every relevant sentence is a claim, in its own words."""
    return [Claim(statement=" ".join(s.text.split()), score=s.score, text_unit_ids=[s.text_unit_id], sentences=[s.text])
            for s in sentences]


async def llm_claims(llm: LLM, query: str, groups: Sequence[Sequence[RelevantSentence]], language: str,
                     prompts_dir: str | None = None) -> tuple[list[Claim], int]:
    """One call per group; a group whose call fails keeps its sentences as claims."""
    async def one(group: Sequence[RelevantSentence]) -> list[Claim]:
        listing = "\n".join(f"{i}. {s.text}" for i, s in enumerate(group))
        reply = await structured_reply(llm, "claims", language, listing, ClaimList, prompts_dir, query=query)
        if reply is None:
            return sentence_claims(group)
        claims = []
        for item in reply.claims:
            support = [group[i] for i in dict.fromkeys(item.sources) if 0 <= i < len(group)]
            if item.statement.strip() and support:  # a claim with no valid source cannot be cited
                claims.append(Claim(statement=item.statement.strip(), score=max(s.score for s in support),
                                    text_unit_ids=list(dict.fromkeys(s.text_unit_id for s in support)),
                                    sentences=[s.text for s in support]))
        return claims

    results = await asyncio.gather(*(one(g) for g in groups if g))
    return [c for r in results for c in r], len([g for g in groups if g])


def deduplicate(claims: Sequence[Claim], embed: Callable[[list[str]], np.ndarray], threshold: float,
                cosine_floor: float = 0.0) -> list[Claim]:
    """Best claims first; a claim at similarity >= `threshold` to a kept one is merged into it.
    Similarity is cosine rescaled from the embedder's floor for unrelated text: e5 puts unrelated
    sentences near 0.75, so a raw 0.85 would merge distinct claims on one topic."""
    ranked = sorted(claims, key=lambda c: -c.score)
    if not ranked:
        return []
    vectors = embed([c.statement for c in ranked])
    kept: list[int] = []
    for i, claim in enumerate(ranked):
        if kept:
            sims = (vectors[kept] @ vectors[i] - cosine_floor) / (1.0 - cosine_floor)
            j = int(np.argmax(sims))
            if sims[j] >= threshold:
                into = ranked[kept[j]]
                into.text_unit_ids = list(dict.fromkeys(into.text_unit_ids + claim.text_unit_ids))
                into.sentences = list(dict.fromkeys(into.sentences + claim.sentences))
                continue
        kept.append(i)
    return [ranked[i] for i in kept]


def cut_to_budget(claims: Sequence[Claim], budget_tokens: int, count_tokens: Callable[[str], int]) -> list[Claim]:
    out, used = [], 0
    for c in claims:
        cost = count_tokens(c.statement) + 4
        if used + cost > budget_tokens:
            break
        used += cost
        out.append(c)
    return out
