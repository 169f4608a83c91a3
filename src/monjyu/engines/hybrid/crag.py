"""Stage 4: Corrective RAG and selective generation. Each result is graded correct / ambiguous /
incorrect; incorrect ones are dropped, ambiguous ones are cut down to their relevant sentences
(strips). The answer is written only when the graded context suffices; otherwise the engine
abstains and says what is missing."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from pydantic import BaseModel, Field

from ...ingest.sentences import split_sentences
from ...llm import LLM
from ...llm.replies import structured_reply
from ...nlp.analyzer import Analyzer
from ...nlp.lang import detect_language
from ...query import Query
from ..relevance import LocalRelevanceScorer


@dataclass
class Grade:
    grade: str  # correct | ambiguous | incorrect
    score: float  # 0-1
    strips: list[tuple[int, int]] = field(default_factory=list)  # relevant sentence spans in the unit text


def grade_local(query: Query, query_vector: np.ndarray, texts: Sequence[str], scorer: LocalRelevanceScorer,
                correct: float, incorrect: float) -> list[Grade]:
    """Thresholds on the best sentence's local relevance (0-10); strips are the sentences that pass
    the incorrect threshold."""
    spans = [split_sentences(t) or [(0, len(t))] for t in texts]
    flat = [t[a:b] for t, group in zip(texts, spans) for a, b in group]
    scores = scorer.score(query, query_vector, flat)
    grades, i = [], 0
    for group in spans:
        s = scores[i:i + len(group)]
        i += len(group)
        best = float(s.max())
        kind = "correct" if best >= correct else ("incorrect" if best < incorrect else "ambiguous")
        grades.append(Grade(kind, best / 10.0, [span for span, v in zip(group, s) if v >= incorrect]))
    return grades


class LLMGrade(BaseModel):
    index: int
    grade: str = Field(pattern="^(correct|ambiguous|incorrect)$")
    score: float = Field(ge=0, le=1)


class LLMGrades(BaseModel):
    grades: list[LLMGrade]


async def grade_llm(llm: LLM, query: Query, texts: Sequence[str], fallback: list[Grade],
                    prompts_dir: str | None = None) -> list[Grade]:
    """The LLM grades all results in one call; results it leaves out keep the local grade."""
    listing = "\n\n".join(f"[{i}] {t[:1500]}" for i, t in enumerate(texts))
    reply = await structured_reply(llm, "crag_grade", query.language, listing, LLMGrades, prompts_dir,
                                   query=query.text)
    if reply is None:
        return fallback
    grades = list(fallback)
    for g in reply.grades:
        if 0 <= g.index < len(grades):
            grades[g.index] = Grade(g.grade, g.score, fallback[g.index].strips if g.grade == "ambiguous" else [])
    return grades


# What a question asks for, and a pattern the context must contain to answer it.
_INTENTS = [
    (re.compile(r"^\s*(when|what year|what date|in which year)\b|いつ|何年|何月|日付", re.I),
     re.compile(r"\b(1[0-9]{3}|20[0-9]{2})\b|\d+年|\d+月|\d+日|\b(january|february|march|april|may|june|july|"
                r"august|september|october|november|december)\b", re.I), "a date"),
    (re.compile(r"^\s*how (many|much)\b|いくつ|何人|何個|何件|どのくらい", re.I),
     re.compile(r"\d|\b(one|two|three|four|five|six|seven|eight|nine|ten|hundred|thousand|million)\b|[一二三四五六七八九十百千万]", re.I),
     "a number"),
]


@dataclass
class Sufficiency:
    sufficient: bool
    confidence: float
    missing: list[str]
    method: str


def sufficiency_local(query: Query, context: Sequence[str], analyzer: Analyzer, min_coverage: float) -> Sufficiency:
    """Enough when the correct context covers most of the question's terms and holds the kind of
    value the question asks for (a date for "when", a number for "how many")."""
    if not context:
        return Sufficiency(False, 1.0, ["any passage relevant to the question"], "rules")
    text = "\n".join(context)
    missing = []
    for asks, holds, what in _INTENTS:
        if asks.search(query.text) and not holds.search(text):
            missing.append(what)
    q_terms = list(dict.fromkeys(query.view("terms", lambda: analyzer.terms(query.text))))
    c_terms = set(analyzer.terms(text))
    uncovered = [t for t in q_terms if t not in c_terms]
    coverage = 1.0 - len(uncovered) / len(q_terms) if q_terms else 1.0
    # A Japanese question over English text shares no terms: the graded relevance stands in.
    if coverage < min_coverage and query.language == detect_language(text):
        missing.append("mentions of: " + ", ".join(uncovered[:8]))
    return Sufficiency(not missing, round(coverage, 3), missing, "rules")


class LLMSufficiency(BaseModel):
    sufficient: bool
    confidence: float = Field(ge=0, le=1)
    missing: list[str] = Field(default_factory=list)


async def sufficiency_llm(llm: LLM, query: Query, context: Sequence[str], fallback: Sufficiency,
                          prompts_dir: str | None = None) -> Sufficiency:
    if not context:
        return fallback
    listing = "\n\n".join(f"[{i + 1}] {t[:1500]}" for i, t in enumerate(context))
    p = await structured_reply(llm, "sufficiency", query.language, listing, LLMSufficiency, prompts_dir,
                               query=query.text)
    if p is None:
        return fallback
    return Sufficiency(p.sufficient, p.confidence, p.missing, f"llm:{llm.id}")
