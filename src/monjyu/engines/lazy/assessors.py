"""Sentence relevance assessors (0-10 scores) behind one interface: the LLM in batches, or the
local scorer when no LLM is configured. The lazy search result names the one that ran."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Protocol

import numpy as np
from pydantic import BaseModel, Field

from ...llm import LLM
from ...llm.replies import structured_reply
from ...query import Query
from ..relevance import LocalRelevanceScorer


class RelevanceAssessor(Protocol):
    name: str

    async def assess(self, query: Query, sentences: Sequence[str]) -> tuple[list[float], int]:
        """Scores for the sentences, and the LLM calls spent."""


class LocalAssessor:
    name = "local"

    def __init__(self, scorer: LocalRelevanceScorer, query_vector: np.ndarray,
                 term_weights: dict[str, float] | None = None):
        self.scorer = scorer
        self.query_vector = query_vector
        self.term_weights = term_weights

    async def assess(self, query: Query, sentences: Sequence[str]) -> tuple[list[float], int]:
        scores = await asyncio.to_thread(self.scorer.score, query, self.query_vector, list(sentences),
                                         self.term_weights)
        return [float(s) for s in scores], 0


class SentenceScores(BaseModel):
    scores: list[float] = Field(default_factory=list)  # one 0-10 score per numbered sentence, in order


class LLMAssessor:
    """One chat call per batch of sentences (batches run concurrently within the LLM's limit).
    A cascade: the local scorer tests every sentence first and only those at or above `prefilter`
    go to the LLM (the rest are clearly unrelated, and keep their local score), so the budget buys
    far fewer tokens. A batch whose call fails scores 0: the budget was spent, nothing was learnt."""

    def __init__(self, llm: LLM, batch_size: int, language: str, prompts_dir: str | None = None,
                 local: LocalAssessor | None = None, prefilter: float = 0.0):
        self.llm = llm
        self.batch_size = batch_size
        self.name = f"llm:{llm.id}"
        self.language, self.prompts_dir = language, prompts_dir
        self.local = local
        self.prefilter = prefilter

    async def _batch(self, query: Query, batch: Sequence[str]) -> list[float]:
        listing = "\n".join(f"{i}. {s}" for i, s in enumerate(batch))
        reply = await structured_reply(self.llm, "relevance", self.language, listing, SentenceScores, self.prompts_dir,
                                       query=query.text)
        if reply is None:
            return [0.0] * len(batch)
        scores = [min(10.0, max(0.0, float(v))) for v in reply.scores[:len(batch)]]
        return scores + [0.0] * (len(batch) - len(scores))

    async def assess(self, query: Query, sentences: Sequence[str]) -> tuple[list[float], int]:
        scores = [0.0] * len(sentences)
        todo = list(range(len(sentences)))
        if self.local is not None and self.prefilter > 0:
            local, _ = await self.local.assess(query, sentences)
            todo = [i for i in todo if local[i] >= self.prefilter]
            scores = list(local)
        batches = [todo[i:i + self.batch_size] for i in range(0, len(todo), self.batch_size)]
        results = await asyncio.gather(*(self._batch(query, [sentences[i] for i in b]) for b in batches))
        for batch, result in zip(batches, results):
            for i, value in zip(batch, result):
                scores[i] = value
        return scores, len(batches)
