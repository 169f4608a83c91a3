"""Lazy search's engine: built once per index generation, it runs each search as a `LazySearch`
(search.py) with the request's settings over lazy.*."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
from pydantic import ValidationError

from ...config import LazyConfig
from ...errors import ConfigError, MonjyuError
from ...levels.entity_graph import EntityGraph
from ...llm import UsageScope
from ...query import Query
from ...retrieval import Searcher
from ...types import LazySearchResult
from ..answer import AnswerEngine
from ..request import SearchRequest
from .search import LazySearch

if TYPE_CHECKING:
    from ...levels import LevelFour, LevelTwo


class LazySearchEngine:
    """The parts lazy search reads, built once per index generation; each search runs as a
    `LazySearch` with its own settings (the request's preset, budget and level over lazy.*)."""

    def __init__(self, config: LazyConfig, searcher: Searcher, embed_query: Callable[[Query], np.ndarray],
                 answers: AnswerEngine, level2: LevelTwo | None = None, level4: LevelFour | None = None,
                 level3: Callable[[], EntityGraph | None] | None = None, prompts_dir: str | None = None,
                 min_sentence_score: float = 3.0):
        """`answers`: its scorer tests sentences offline, its LLM (if any) tests, extracts claims and
        answers, its `checked` resolves an LLM answer's citations. `level2`: entity extraction
        with the LLM, for deepening; `level3`: the entity graph over what Level 2 holds now
        (rebuilt after an extraction); `level4`: community reports, for global questions."""
        self.config = config
        self.searcher = searcher
        self.embed_query = embed_query
        self.answers = answers
        self.level2, self.level3, self.level4 = level2, level3, level4
        self.prompts_dir = prompts_dir
        self.min_sentence_score = min_sentence_score  # local relevance a theme's sentence needs to a topic

    def settings(self, request: SearchRequest) -> LazyConfig:
        """lazy.* with the request's preset, budget and level; a bad one is refused by name."""
        overrides = {k: v for k, v in {"preset": request.preset, "budget": request.budget,
                                       "max_level": request.level}.items() if v is not None}
        if request.level is not None and request.level > 1 and self.answers.llm is None:
            raise MonjyuError(f"level {request.level} is built by an LLM, and none is configured (llm.provider: "
                              "none); configure one, or search at level 1")
        try:
            return LazyConfig.model_validate({**self.config.model_dump(), **overrides})
        except ValidationError as exc:
            raise ConfigError(f"lazy search settings: {exc.errors()[0]['msg']} (preset z100|z500|z1500, "
                              "budget >= 1, level 1, 2, 3 or 4)") from None

    async def run(self, query: Query, request: SearchRequest) -> LazySearchResult:
        """One search with the request's settings, page, filters and threshold; its conversation,
        phase and token callbacks."""
        search = LazySearch(self.settings(request), self.searcher, self.embed_query, self.answers, self.level2,
                            self.level3, self.level4, self.prompts_dir, self.min_sentence_score)
        t0 = time.perf_counter()
        with UsageScope() as usage:
            result = await search.asearch(query, request.conversation, request.on_phase, request.on_token,
                                          request.filters, request.threshold, request.top_k, request.offset,
                                          request.answer)
        result.usage = usage.to_dict()
        result.timings_ms["total_ms"] = (time.perf_counter() - t0) * 1000
        return result
