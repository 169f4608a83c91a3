"""Sentence relevance assessors (0-10 scores) behind one interface: the LLM in batches, or the
local scorer when no LLM is configured. The lazy search result names the one that ran."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from string import Template
from typing import Protocol

import numpy as np
from pydantic import BaseModel, Field

from ...errors import ServiceError
from ...llm import LLM, Message, load_prompt
from ..relevance import LocalRelevanceScorer


class RelevanceAssessor(Protocol):
    name: str

    async def assess(self, query: str, sentences: Sequence[str]) -> tuple[list[float], int]:
        """Scores for the sentences, and the LLM calls spent."""


class LocalAssessor:
    name = "local"

    def __init__(self, scorer: LocalRelevanceScorer, query_vector: np.ndarray):
        self.scorer = scorer
        self.query_vector = query_vector

    async def assess(self, query: str, sentences: Sequence[str]) -> tuple[list[float], int]:
        scores = await asyncio.to_thread(self.scorer.score, query, self.query_vector, list(sentences))
        return [float(s) for s in scores], 0


class SentenceScore(BaseModel):
    index: int
    score: float = Field(ge=0, le=10)


class SentenceScores(BaseModel):
    scores: list[SentenceScore]


class LLMAssessor:
    """One chat call per batch of sentences (batches run concurrently within the LLM's limit).
    A batch whose call fails scores 0: the budget was spent, nothing relevant was learnt."""

    def __init__(self, llm: LLM, batch_size: int, language: str, prompts_dir: str | None = None):
        self.llm = llm
        self.batch_size = batch_size
        self.name = f"llm:{llm.id}"
        self._system = load_prompt("relevance", language, prompts_dir)

    async def _batch(self, query: str, batch: Sequence[str]) -> list[float]:
        listing = "\n".join(f"{i}. {s}" for i, s in enumerate(batch))
        system = Template(self._system).safe_substitute(query=query)
        try:
            result = await self.llm.achat([Message("system", system), Message("user", listing)], schema=SentenceScores)
        except ServiceError:
            return [0.0] * len(batch)
        scores = [0.0] * len(batch)
        for item in result.parsed.scores:
            if 0 <= item.index < len(batch):
                scores[item.index] = item.score
        return scores

    async def assess(self, query: str, sentences: Sequence[str]) -> tuple[list[float], int]:
        batches = [sentences[i:i + self.batch_size] for i in range(0, len(sentences), self.batch_size)]
        results = await asyncio.gather(*(self._batch(query, b) for b in batches))
        return [s for r in results for s in r], len(batches)
