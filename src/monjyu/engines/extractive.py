"""The answer when no LLM is configured: the most relevant sentences of the sources, each cited."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..ingest.sentences import is_title_line
from ..types import Answer
from .citations import citation_for
from .context import Source
from .relevance import LocalRelevanceScorer, sentences_of

INSUFFICIENT = {
    "en": "Not enough information in the indexed documents to answer this question.",
    "ja": "索引された文書には、この質問に答えるための十分な情報が見つかりませんでした。",
}


def insufficient(language: str, note: str = "") -> Answer:
    return Answer(text=INSUFFICIENT.get(language, INSUFFICIENT["en"]), kind="insufficient",
                  language=language, note=note)


def extractive_answer(query: str, query_vector: np.ndarray, sources: Sequence[Source], scorer: LocalRelevanceScorer,
                      language: str, max_sentences: int = 5, per_source: int = 2, min_score: float = 3.0) -> Answer:
    """Best sentences first, at most `per_source` from one text unit; each line ends with its [n]."""
    sentences = [s for s in sentences_of(sources)  # a title restates nothing: never an answer line
                 if not is_title_line(s.source.hit.text, s.start_char - s.source.hit.start_char,
                                      s.end_char - s.source.hit.start_char)]
    if not sentences:
        return insufficient(language, "no retrieved passage")
    scores = scorer.score(query, query_vector, [s.text for s in sentences])
    picked, per_unit = [], {}
    for i in np.argsort(-scores, kind="stable"):
        if scores[i] < min_score or len(picked) >= max_sentences:
            break
        s = sentences[i]
        if per_unit.get(s.source.number, 0) >= per_source:
            continue
        per_unit[s.source.number] = per_unit.get(s.source.number, 0) + 1
        picked.append(s)
    if not picked:
        return insufficient(language, f"no sentence scored >= {min_score} for relevance")
    lines, citations, cited = [], [], set()
    for s in picked:
        lines.append(f"{' '.join(s.text.split())} [{s.source.number}]")
        if s.source.number not in cited:  # one citation per source: its best sentence is the snippet
            cited.add(s.source.number)
            citations.append(citation_for(s.source, s.text, s.start_char, s.end_char))
    return Answer(text="\n".join(lines), kind="extractive", citations=citations, language=language,
                  note="extractive: sentences selected from the sources without an LLM")
