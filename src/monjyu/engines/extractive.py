"""The answer when no LLM is configured: the sentences of the sources that answer the question
(engines/reader.py picks them), each quote cited."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ..query import Query
from ..types import Answer, SearchHit
from .citations import citation_for
from .compose import Candidate
from .context import Source
from .footnotes import LABEL, REACH, footnotes_of, marks
from .quotes import with_heading_set_apart
from .reader import Reader

INSUFFICIENT = {
    "en": "Not enough information in the indexed documents to answer this question.",
    "ja": "索引された文書には、この質問に答えるための十分な情報が見つかりませんでした。",
}
EXTRACTIVE_NOTE = "extractive: sentences selected from the sources without an LLM"


def join_sentences(sentences: list[str]) -> str:
    """Sentences of one quote: a space between English ones, none after a Japanese full stop."""
    out = sentences[0]
    for s in sentences[1:]:
        out += s if out.endswith(("。", "！", "？")) else f" {s}"
    return out


def insufficient(language: str, note: str = "") -> Answer:
    return Answer(text=INSUFFICIENT.get(language, INSUFFICIENT["en"]), kind="insufficient",
                  language=language, note=note)


def unheard_answer(language: str, names: Sequence[str]) -> Answer:
    """"Insufficient", naming what the question asks about that no indexed text mentions: the
    passages retrieved for the rest of its words are about something else."""
    if language == "ja":
        said = "、".join(f"「{n}」" for n in names) + "はどの文書にも出てきません。"
    else:
        quoted = [f"“{n}”" for n in names]
        said = f"None of them mentions {' or '.join(quoted) if len(quoted) < 3 else ', '.join(quoted)}."
    answer = insufficient(language, "the question names what no indexed text mentions (nor a word two edits "
                                    f"away): {', '.join(names)}")
    answer.text = f"{answer.text}{'' if language == 'ja' else ' '}{said}"
    return answer


def extractive_answer(query: Query, query_vector: np.ndarray, sources: Sequence[Source], reader: Reader,
                      language: str, min_score: float = 3.0,
                      text_after: Callable[[SearchHit, int], str] | None = None) -> Answer:
    """One line per quote (adjacent sentences of a passage joined), the best first, each ending
    with its [n]; the first quote of a source is that source's citation snippet. A quote's footnote
    that gives a web address follows it (`footnotes.py`; the document's text after the passage from
    `text_after`)."""
    candidates = reader.candidates(query, query_vector, sources)
    if not candidates:
        return insufficient(language, "no quotable sentence in the retrieved passages")
    quotes, notice = reader.pick(query, candidates, min_score)
    if not quotes:
        if reader.model_decides(query.text):
            return insufficient(language, f"no sentence reached the reader model's threshold ({reader.model.threshold:g}) "
                                          f"nor scored >= {reader.sure_relevance:g} for relevance")
        return insufficient(language, f"no sentence scored >= {min_score} for relevance")
    lines, citations, cited = [], [], set()
    for quote in quotes:
        source = quote[0].sentence.source
        said = join_sentences([with_heading_set_apart(c.quote, source.hit.section) for c in quote])
        notes = "".join(f" ({LABEL.get(language, LABEL['en'])} {mark}: {note})"
                        for mark, note in quoted_footnotes(quote, text_after)
                        if all(note not in x for x in (*lines, said)))  # not where it is quoted already
        lines.append(f"{said}{notes} [{source.number}]")
        if source.number not in cited:
            cited.add(source.number)
            first, last = quote[0].sentence, quote[-1].sentence
            snippet = source.hit.text[first.start_char - source.hit.start_char:last.end_char - source.hit.start_char]
            citations.append(citation_for(source, snippet, first.start_char, last.end_char))
    return Answer(text="\n".join(lines), kind="extractive", citations=citations, language=language,
                  note=EXTRACTIVE_NOTE, notice=notice)


def quoted_footnotes(quote: list[Candidate],
                     text_after: Callable[[SearchHit, int], str] | None) -> list[tuple[str, str]]:
    """(mark, note) of each footnote a quote's sentences mark that gives a web address: looked for
    in its passage after the quote, then in the document's text after the passage."""
    sentences = [c.sentence.text for c in quote]
    if not any(marks(s) for s in sentences):  # most quotes: no text after them read
        return []
    hit = quote[0].sentence.source.hit
    following = hit.text[quote[-1].sentence.end_char - hit.start_char:]
    if len(following) < REACH and text_after is not None:
        following += text_after(hit, REACH - len(following))
    return footnotes_of(sentences, following)
