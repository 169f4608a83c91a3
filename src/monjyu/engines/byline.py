"""Who wrote a paper, when it was published, and which papers someone wrote: asked of a folder of
papers, answered from the byline the index keeps for each document (its authors and year, from the
PDF's first page, the Zotero item or the file's metadata), not from body sentences, none of which
says it.

The paper is the one the question names among the retrieved passages: the document most of the
first five come from (retrieval dwells on the paper a question names), where two of them do or
its title holds a word of the question. A question that names no such paper is left to
the reader, as is any question about what the authors say or found ("According to the ZeRO
authors, what ...?").

An author the question names as the writer of what it asks about ("Which papers did Noam Shazeer
write?", "the paper by Hinton") is found among the names on the bylines (`Authors`): the search
then reads their papers alone, and a question that asks nothing more is answered with the list of
them.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from ..nlp.byline_questions import ASKING_WORDS
from ..types import TEXT, Answer, SearchHit
from .citations import citation_for
from .context import Source, next_number

# Of more authors than this, the answer names the first ones and counts the rest.
NAMED = 6
SCANNED = 5  # the passages whose documents may be the one asked about
LISTED = 20  # the papers of an author an answer lists; it counts the others
NAME_WORDS = 6  # the most words of a name looked for (a pasted section is read in linear time)
CUE_CHARS = 40  # how far before and after a name the words tying it to the papers are looked for


def named_paper(sources: Sequence[Source], question_terms: Iterable[str],
                terms: Callable[[str], list[str]]) -> Source | None:
    """The first passage of the paper the question names: of the documents of the first `SCANNED`
    passages, the one most of those passages come from (then the one whose title holds most of
    `question_terms`, the words that ask for a byline aside, then the first); None where it holds
    only one of them and its title none of the question's words, or where it has no byline (another
    paper's would answer wrongly)."""
    question_terms = set(question_terms) - set(terms(ASKING_WORDS))
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
    """A byline's names as an answer writes them: the first NAMED of many, the others counted."""
    shown = list(authors[:NAMED]) if len(authors) > NAMED + 1 else list(authors)
    more = len(authors) - len(shown)
    if language == "ja":
        return "、".join(shown) + (f" ほか{more}名" if more else "")
    if more:
        return f"{', '.join(shown)} and {more} others"
    return shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} and {shown[-1]}"


def byline_line(asked: str, title: str, authors: Sequence[str], year: int | None, number: int, language: str,
                cited: bool = False) -> str | None:
    """A byline as an answer's line, cited [number]: who wrote `title` (`asked` "authors") or when
    ("year"); `cited`: a work the passages cite, not a paper of the collection. None where the year
    asked for is not known."""
    if asked == "year" and not year:
        return None
    title = title.strip()
    if language == "ja":
        if asked == "year":
            by = authors[0] + ("ほか" if len(authors) > 1 else "")
            return f"{'文献に引用されている' if cited else ''}「{title}」（{by}）は{year}年に発表されました。[{number}]"
        dated, said = (f"（{year}年）" if year else ""), ("（文献に引用されている研究）" if cited else "")
        return f"「{title}」{dated}の著者は{_names(authors, language)}です{said}。[{number}]"
    if asked == "year":
        by = authors[0] + (" et al." if len(authors) > 1 else "")
        said = ", the work the passages cite for it," if cited else ""
        return f"“{title}” by {by}{said} was published in {year}. [{number}]"
    dated, said = (f" ({year})" if year else ""), (": the work the passages cite for it" if cited else "")
    return f"“{title}”{dated} is by {_names(authors, language)}{said}. [{number}]"


def paper_source(document_id: str, sources: Sequence[Source],
                 first_passage: Callable[[str], SearchHit | None] | None) -> Source | None:
    """A paper of the collection as a source to cite its byline to: its first retrieved passage of
    body text (not a caption, which says nothing of who wrote it), else its first passage, numbered
    after the sources; None where neither is, or it has no byline."""
    own = next((s for s in sources if s.hit.document_id == document_id and (s.hit.kind or TEXT) == TEXT), None)
    if own is None and first_passage is not None and (hit := first_passage(document_id)) is not None:
        own = Source(next_number(sources), hit)
    return own if own is not None and own.hit.authors else None


def byline_answer(asked: str, source: Source, language: str) -> Answer | None:
    """The byline of `source`'s document as the answer to a question that `asked` ("authors" or
    "year") about it, cited to that passage; None where the document lacks the year asked for."""
    h = source.hit
    text = byline_line(asked, h.document_title, h.authors, h.year, source.number, language)
    if text is None:
        return None
    return Answer(text=text, kind="extractive", citations=[citation_for(source)], language=language,
                  note="byline: the authors and year the index keeps for the cited document")


# ---------------------------------------------------------------------------- papers by an author

# A run of Latin words, where a name is looked for ("Noam Shazeer", "noam shazeer", "Kaiming Heの論文").
_NAME_WORD = r"[A-Za-z\u00C0-\u024F][A-Za-z\u00C0-\u024F'’.-]*"
_NAME_RUN = re.compile(rf"{_NAME_WORD}(?:\s+{_NAME_WORD})*")
# How a question ties a name to the papers it wrote: "by X", "papers of X", "X's paper", "X wrote",
# "X has written", "X is an author of", "Xが書いた", "Xの論文", "Xが著者".
_BY_BEFORE = re.compile(r"(?:\bby|\bpapers? of|\bwork of)\s+$", re.I)
_BY_AFTER = re.compile(r"^(?:['’]s\b|\s+(?:wrote|write|writes|written|has written|have written|authored|"
                       r"co-?authored|(?:is |was )?(?:an|one of the|a co-?)\s*authors?\b)|"
                       r"\s*(?:が(?:書|執筆|著者)|の(?:論文|著作)))", re.I)
_TIES = re.compile(r"\bby\b|\b(?:papers?|work) of\b|['’]s\b|\b(?:wr[io]tes?|written|authored|authors?)\b|"
                   r"が(?:書|執筆|著者)|の(?:論文|著作)", re.I)
# ... but a question about the papers that cite or build on someone's is not about theirs.
_NOT_THEIRS = re.compile(r"\bcit(?:e|es|ed|ing)\b|\bbuilds? on\b|\bextends?\b|\bfollow-up\b|引用", re.I)
# The words a question that only asks which papers someone wrote is made of, besides the name.
LISTING_WORDS = ASKING_WORDS + " which what list name show give any these those library collection co " \
                               "論文 書く 執筆 著者 入る 挙げる 一覧 どれ 教える 下さる ある"


def _name_key(name: str) -> str:
    """Given name and surname, lower case, without accents or initials: "Noah D. Goodman" and "Noah
    Goodman" are one key."""
    plain = "".join(c for c in unicodedata.normalize("NFKD", name) if not unicodedata.combining(c)).lower()
    words = [w.strip(".") for w in plain.replace(",", " ").split() if len(w.strip(".")) > 1]
    return f"{words[0]} {words[-1]}" if len(words) > 1 else "".join(words)


@dataclass(frozen=True)
class Paper:
    document_id: str
    title: str
    year: int | None


@dataclass(frozen=True)
class AskedAuthor:
    name: str  # as the bylines write it
    papers: tuple[Paper, ...]  # the documents whose byline has it, the earliest first
    rest: str  # the question without the name and the words tying it to the papers ("by X", "X's")

    @property
    def documents(self) -> frozenset[str]:
        return frozenset(p.document_id for p in self.papers)


class Authors:
    """The names on the collection's bylines, to find the one a question names: by given name and
    surname in any case (initials and accents aside), or by a capitalised surname only one of them has."""

    def __init__(self, bylines: Iterable[tuple[Paper, Sequence[str]]]):
        """`bylines`: each document and its authors."""
        self.papers: dict[str, set[Paper]] = {}
        self.by_key: dict[str, str] = {}
        surnames: dict[str, set[str]] = {}
        for paper, names in bylines:
            for name in names or ():
                if key := _name_key(name):
                    name = self.by_key.setdefault(key, name)
                    self.papers.setdefault(name, set()).add(paper)
                    surnames.setdefault(key.split()[-1], set()).add(name)
        self.by_surname = {s: next(iter(n)) for s, n in surnames.items() if len(n) == 1}

    def asked(self, text: str) -> AskedAuthor | None:
        """The author whose papers `text` asks about ("Which papers did Noam Shazeer write?", "papers
        by Hinton", "Kaiming Heの論文"), or None."""
        if not self.by_key or _NOT_THEIRS.search(text):
            return None
        for run in _NAME_RUN.finditer(text):
            words = list(re.finditer(r"\S+", run.group()))
            for length in range(min(len(words), NAME_WORDS), 0, -1):
                for i in range(len(words) - length + 1):
                    start, end = run.start() + words[i].start(), run.start() + words[i + length - 1].end()
                    if text[end - 2:end] in ("'s", "’s"):  # "Hinton's paper": the name, then its "'s"
                        end -= 2
                    key = _name_key(text[start:end])
                    # a full name in any case, no longer than the byline writes it; a surname capitalised
                    name = (self.by_key.get(key) if length > 1 else
                            self.by_surname.get(key) if text[start].isupper() else None)
                    if not name or length > len(name.split()):
                        continue
                    # the words tying the name to the papers, read close to it
                    at = max(0, start - CUE_CHARS)
                    before, after = _BY_BEFORE.search(text[at:start]), _BY_AFTER.match(text[end:end + CUE_CHARS])
                    if before or after:
                        papers = sorted(self.papers[name], key=lambda p: (p.year or 0, p.title, p.document_id))
                        # the rest of the question: without "by X" or "X's" (an "X wrote" keeps its verb)
                        cut_from = at + before.start() if before else start
                        cut_to = end + len(after.group()) if after and after.group()[:1] in "'’" else end
                        return AskedAuthor(name, tuple(papers), " ".join(f"{text[:cut_from]} {text[cut_to:]}".split()))
        return None


def ties_to_an_author(text: str) -> bool:
    """Whether `text` has the words that tie a name to the papers it wrote ("by", "'s", "wrote", "の論文"
    ...), without which `Authors.asked` finds none: the bylines are read only for such a question."""
    return bool(_TIES.search(text))


def only_lists_papers(text: str, author: AskedAuthor, terms: Callable[[str], list[str]]) -> bool:
    """Whether `text` asks nothing but which papers the author wrote ("What did Kaiming He write?"),
    not something of them ("What does the paper by Hinton say about temperature?")."""
    return not set(terms(text)) - set(terms(author.name)) - set(terms(LISTING_WORDS))


def papers_by_answer(author: AskedAuthor, sources: Sequence[Source], language: str,
                     first_passage: Callable[[str], SearchHit | None] | None = None) -> Answer:
    """Every paper whose byline names the author, those among `sources` first, each cited to its first
    passage there; the others to their first passage (`first_passage`), numbered after the sources:
    the filtered search may have ranked one paper's passages above every other's."""
    theirs = author.documents
    cited: dict[str, Source] = {}
    for s in sources:
        if s.hit.document_id in theirs:
            cited.setdefault(s.hit.document_id, s)
    papers = sorted(author.papers, key=lambda p: p.document_id not in cited)  # stable: retrieved first, then by year
    papers, more = papers[:LISTED], len(papers) - LISTED
    number = next_number(sources)
    for p in papers:
        if p.document_id not in cited and first_passage is not None and (hit := first_passage(p.document_id)):
            cited[p.document_id] = Source(number, hit)
            number += 1
    items = []
    for p in papers:
        marker = f"[{cited[p.document_id].number}]" if p.document_id in cited else ""
        year = (f"（{p.year}年）" if language == "ja" else f" ({p.year})") if p.year else ""
        items.append(f"「{p.title.strip()}」{year}{marker}" if language == "ja"
                     else f"“{p.title.strip()}”{year}{' ' + marker if marker else ''}")
    count = len(author.papers)
    if language == "ja":
        text = f"{author.name}が著者に名を連ねる論文は{count}本です：{'、'.join(items)}{f'、ほか{more}本' if more > 0 else ''}。"
    else:
        if more > 0:
            items.append(f"{more} more")
        listed = items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"
        text = f"{author.name} is an author of {count} of the indexed papers: {listed}."
    citations = [citation_for(cited[p.document_id]) for p in papers if p.document_id in cited]
    return Answer(text=text, kind="extractive", citations=citations, language=language,
                  note=f"byline: the indexed papers whose authors include {author.name}")
