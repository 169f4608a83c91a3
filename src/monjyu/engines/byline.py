"""Who wrote a paper, and when it was published: asked of a folder of papers, answered from the
byline the index keeps for each document (its authors and year, from the PDF's first page, the
Zotero item or the file's metadata), not from body sentences, none of which says it.

The paper is the one the question names among the retrieved passages: the document most of the
first five come from (retrieval dwells on the paper a question names), where two of them do or
its title holds a word of the question. A question that names no such paper is left to
the reader, as is any question about what the authors say or found ("According to the ZeRO
authors, what ...?").
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from ..types import Answer
from .citations import citation_for
from .context import Source

# "Who wrote ...?", "Who are the authors of ...?", "Which researchers wrote ...?", "Name the authors
# of ...", "著者は誰", "誰が書いた", "執筆者は": the names on the byline.
_ASKS_AUTHORS = re.compile(
    r"^\s*who\b[^?]*\b(?:wrote|write|written|authored|authors?)\b|"
    r"^\s*(?:which|what) (?:researchers|people|authors|scientists|team)\b[^?]*\b(?:wrote|authored|write)\b|"
    r"^\s*(?:name|list|give)(?: me)? the authors\b|"
    r"(?:著者|執筆者|筆者)(?:たち|ら)?(?:は|が)(?:誰|だれ|どなた)|(?:誰|だれ)が(?:書|執筆)|(?:書い|執筆し)たのは(?:誰|だれ)|"
    r"(?:著者|執筆者)(?:の名前)?を(?:教え|挙げ|示)", re.I)
# "When was ... published?", "In what year was ... published?", "何年に発表", "いつ出版".
_ASKS_YEAR = re.compile(r"^\s*(?:when|(?:in )?(?:what|which) year)\b[^?]*\b(?:published|written|released as a paper)\b|"
                        r"\bpublication (?:year|date)\b|(?:何年|いつ)(?:に|頃)?(?:発表|出版|公開|刊行|出さ)", re.I)
# The words that ask for a byline, not for a paper: left out of the question's words matched to titles.
ASKING_WORDS = "paper papers article study work author authors wrote written write authored publish published " \
               "publication year researchers people 論文 著者 執筆者 筆者 発表 出版"
# Of more authors than this, the answer names the first ones and counts the rest.
NAMED = 6
SCANNED = 5  # the passages whose documents may be the one asked about


def asks_byline(text: str) -> str | None:
    """"authors" or "year" where the question asks who wrote a paper or when it was published."""
    if _ASKS_AUTHORS.search(text):
        return "authors"
    if _ASKS_YEAR.search(text):
        return "year"
    return None


def named_paper(sources: Sequence[Source], question_terms: set[str],
                terms: Callable[[str], list[str]]) -> Source | None:
    """The first passage of the paper the question names: of the documents of the first `SCANNED`
    passages, the one most of those passages come from (then the one whose title holds most of
    `question_terms`, then the first); None where it holds only one of them and its title none of
    the question's words, or where it has no byline (another paper's would answer wrongly)."""
    first: dict[str, Source] = {}
    counts: dict[str, int] = {}
    for s in list(sources)[:SCANNED]:
        doc = s.hit.document_id
        counts[doc] = counts.get(doc, 0) + 1
        first.setdefault(doc, s)
    if not first:
        return None
    overlap = {doc: len(question_terms & set(terms(s.hit.document_title))) for doc, s in first.items()}
    best = max(first.values(), key=lambda s: (counts[s.hit.document_id], overlap[s.hit.document_id]))  # ties: the first
    named = counts[best.hit.document_id] >= 2 or overlap[best.hit.document_id]
    return best if named and best.hit.authors else None


def _names(authors: Sequence[str], language: str) -> str:
    shown = list(authors[:NAMED]) if len(authors) > NAMED + 1 else list(authors)
    more = len(authors) - len(shown)
    if language == "ja":
        return "、".join(shown) + (f" ほか{more}名" if more else "")
    if more:
        return f"{', '.join(shown)} and {more} others"
    return shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} and {shown[-1]}"


def byline_answer(asked: str, source: Source, language: str) -> Answer | None:
    """The byline of `source`'s document as the answer to a question that `asked` ("authors" or
    "year") about it, cited to that passage; None where the document lacks the year asked for."""
    h = source.hit
    if asked == "year" and not h.year:
        return None
    title, n, year = h.document_title.strip(), source.number, h.year
    if language == "ja":
        if asked == "year":
            by = h.authors[0] + ("ほか" if len(h.authors) > 1 else "")
            text = f"「{title}」（{by}）は{year}年に発表されました。[{n}]"
        else:
            text = f"「{title}」{f'（{year}年）' if year else ''}の著者は{_names(h.authors, language)}です。[{n}]"
    elif asked == "year":
        first = h.authors[0] + (" et al." if len(h.authors) > 1 else "")
        text = f"“{title}” by {first} was published in {year}. [{n}]"
    else:
        text = f"“{title}”{f' ({year})' if year else ''} is by {_names(h.authors, language)}. [{n}]"
    return Answer(text=text, kind="extractive", citations=[citation_for(source)], language=language,
                  note="byline: the authors and year the index keeps for the cited document")
