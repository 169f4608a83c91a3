"""Who proposed a method, asked of a folder of papers ("Who introduced layer normalization?",
"RWKVを提案したのは誰ですか？"): body sentences seldom name the people behind a method (a paper
says "we propose X", or "X [20]"), so the answer is a byline.

- The collection paper that presents the method: a retrieved paper whose title names the method
  ("FlashAttention: Fast and ..."), or one of whose sentences claims it ("We introduce Retro, ...",
  "... which we call Pathways Language Model (PaLM)", "Our Vision Transformer (ViT)"): its byline,
  and that sentence.
- Else the work the retrieved passages cite for it: the reference entry of a citation right after
  the name ("the Adam optimizer [20]", "GPT-3 (Brown et al., 2020)"), or of one whose entry's title
  holds the name ("[1] ... Layer normalization. arXiv ..."): its authors, title and year, and the
  citing sentence. An entry that names a paper of the collection answers with that paper's byline.

A method may be named twice ("MAML, model-agnostic meta-learning", "the Vision Transformer (ViT)"):
either name will do. None where neither way finds it: the reader answers as for any question.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..ingest.sentences import statement_spans
from ..nlp.byline_questions import ORIGINATOR_WORDS
from ..nlp.glossary import shared_glossary
from ..types import Answer, SearchHit
from .byline import byline_answer, names_of
from .citations import citation_for
from .context import Source

# A sentence's claim that its paper presents something: the method's name must come within
# CLAIM_REACH terms after it ("We propose a new simple network architecture, the Transformer").
_CLAIMS = re.compile(r"\bwe\s+(?:\w+\s+)?(?:propose|introduce|present|develop|call|term|dub)\w*\b|"
                     r"\b(?:which|that) we (?:call|term|dub|introduce|propose)\w*\b|\bour\b", re.I)
CLAIM_REACH = 15
CITED_REACH = 6  # a citation cites the name when its words are among the last terms before it
_NAME_BREAKS = re.compile(r"[,()、（）:;]")
_JAPANESE = re.compile(r"[\u3040-\u30ff\u3400-\u9fff]")


@dataclass
class DocumentReferences:
    """A document's reference entries (their index: authors, title, year), the in-text citations
    pointing at them (document offsets), and the entries that name a paper of the collection."""

    entries: dict[int, dict] = field(default_factory=dict)
    marks: list[tuple[int, int, list[int]]] = field(default_factory=list)
    linked: dict[int, str] = field(default_factory=dict)


@dataclass
class _Cited:
    entry: dict
    linked: str | None
    source: Source
    sentence: tuple[int, int]  # offsets in the source's text
    titled: bool  # the entry's title holds the name
    votes: int = 1


# Head nouns that say what kind of thing a method is ("residual networks", "the Adam optimizer"): a
# name's other words name it, and a title or sentence need not write these.
KIND_WORDS = "network model method algorithm architecture framework approach technique system optimizer"


@dataclass(frozen=True)
class Name:
    """A name the question gives the method: the words a text must write, each as the index terms it
    may be written as, and how many words the name had with its kind words ("residual networks":
    residual, 2)."""

    words: tuple[frozenset[str], ...]
    length: int


def method_names(question: str, asked: re.Match[str], terms: Callable[[str], list[str]]) -> list[Name]:
    """Each name the question gives the method: the words after the asking ones ("the Adam
    optimizer"), or in Japanese the question less them, cut at commas and brackets; a Japanese word
    as itself or any English term its glosses give (学習: learn, study, ...). A name of kind words
    alone ("the model") names nothing."""
    rest = question[asked.end():] if asked.start() == 0 and not _JAPANESE.search(asked.group(0)) else question
    asking, kinds = set(terms(ORIGINATOR_WORDS)), set(terms(KIND_WORDS))
    names = []
    for part in _NAME_BREAKS.split(rest):
        words = [frozenset({t}) for t in terms(part) if t not in asking and not _JAPANESE.search(t)]
        unglossed = []  # Japanese words JMdict lacks (オプティマイザー): only Japanese text can hold them
        if _JAPANESE.search(part):
            for word, english in shared_glossary().readings(part):
                written = frozenset(terms(word))
                if not (english | written) & asking:
                    (words if english else unglossed).append(english | written)
        words = words or unglossed
        named = tuple(w for w in words if not w & kinds)
        if named:
            names.append(Name(named, len(words)))
    return names


def _holds(names: list[Name], text_terms: set[str]) -> bool:
    return any(all(word & text_terms for word in name.words) for name in names)


def _titled(names: list[Name], title: str, terms: Callable[[str], list[str]]) -> bool:
    """Whether the title names the method: its words before a colon are a name ("PaLM: Scaling ..."),
    or it holds a name of two words or more ("Deep Residual Learning ..." for 残差学習, residual
    learning, and for residual networks): a one-word name in a longer title ("RWKV: Reinventing RNNs
    for the Transformer Era") is what the paper is about, not what it presents."""
    before = set(terms(title.split(":")[0])) if ":" in title else set()
    if before and any(all(word & before for word in name.words) and before <= frozenset().union(*name.words)
                      for name in names):
        return True
    return _holds([name for name in names if name.length >= 2], set(terms(title)))


def _claim(names: list[Name], source: Source, terms: Callable[[str], list[str]]) -> tuple[int, tuple[int, int]] | None:
    """The source's sentence that claims the method for its paper, and how soon after the claim its
    name comes (a verb's claim before "our"'s), or None."""
    text, best = source.hit.text, None
    for a, b in statement_spans(text):
        for m in _CLAIMS.finditer(text, a, b):
            after = terms(text[m.end():b])[:CLAIM_REACH]
            ours = m.group(0).lower() == "our"
            for name in names:
                at = [next((i for i, t in enumerate(after) if t in word), None) for word in name.words]
                if None in at:
                    continue
                reach = max(at)
                if ours and reach >= len(name.words):  # "our" claims only the name it is written before ("Our Vision
                    continue                     # Transformer"), not "our use of Adam"
                reach += CLAIM_REACH if ours else 0
                if best is None or reach < best[0]:
                    best = (reach, (a, b))
    return best


def presenting_paper(names: list[Name], sources: Sequence[Source],
                     terms: Callable[[str], list[str]]) -> tuple[Source, tuple[int, int] | None] | None:
    """The first source of the paper that presents the method (its title holds a name; else its
    sentence claims it soonest), with the claiming sentence where there is one; None if none does."""
    claimed: tuple[int, int, Source, tuple[int, int]] | None = None
    for rank, source in enumerate(sources):
        h = source.hit
        if not h.authors:
            continue
        if _titled(names, h.document_title, terms):
            return source, None
        if (found := _claim(names, source, terms)) is not None and (claimed is None or found[0] < claimed[0]):
            claimed = (found[0], rank, source, found[1])
    return (claimed[2], claimed[3]) if claimed is not None else None


def cited_work(names: list[Name], sources: Sequence[Source], terms: Callable[[str], list[str]],
               references: Callable[[str], DocumentReferences | None]) -> _Cited | None:
    """The reference entry the sources cite for the method: of the citations in their text whose
    last terms before them hold a name, or whose entry's title does (the sentence holding it too),
    the entry whose title holds it, then the one cited for it most often; None where none is."""
    found: dict[str, _Cited] = {}
    for source in sources:
        h = source.hit
        refs = references(h.document_id)
        if refs is None or not refs.entries:
            continue
        spans = statement_spans(h.text)
        for start, end, entries in refs.marks:
            at = start - h.start_char
            if not 0 <= at < len(h.text) or end > h.end_char:
                continue
            a, b = next(((a, b) for a, b in spans if a <= at < b), (0, len(h.text)))
            before = terms(h.text[a:at])[-CITED_REACH:]
            sentence_terms = set(terms(h.text[a:b]))
            for index in entries:
                entry = refs.entries.get(index)
                if entry is None:
                    continue
                titled = _holds(names, set(terms(entry.get("title") or ""))) and _holds(names, sentence_terms)
                if not (titled or (len(entries) == 1 and _holds(names, set(before)))):
                    continue
                key = " ".join(terms(entry.get("title") or entry.get("text") or ""))
                if key in found:
                    found[key].votes += 1
                else:
                    found[key] = _Cited(entry, refs.linked.get(index), source, (a, b), titled)
    if not found:
        return None
    return max(found.values(), key=lambda c: (c.titled, c.votes))


def originators_answer(question: str, asked: re.Match[str], sources: Sequence[Source], language: str,
                       terms: Callable[[str], list[str]],
                       references: Callable[[str], DocumentReferences | None] | None,
                       first_passage: Callable[[str], SearchHit | None] | None) -> Answer | None:
    """Who proposed the method the question names (module docstring), cited to the passage that says
    it; None where no retrieved paper presents it and no citation names it."""
    names = method_names(question, asked, terms)
    if not names:
        return None
    presented = presenting_paper(names, sources, terms)
    if presented is not None:
        source, sentence = presented
        return _with_sentence(byline_answer("authors", source, language), source, sentence,
                              "originators: the byline of the paper that presents the method")
    if references is None:
        return None
    cited = cited_work(names, sources, terms, references)
    if cited is None:
        return None
    linked = first_passage(cited.linked) if cited.linked and first_passage is not None else None
    if linked is not None and linked.authors:  # the work cited is a paper of the collection
        own = Source(number=cited.source.number, hit=linked)
        answer = byline_answer("authors", own, language)
        answer.citations = [citation_for(cited.source)]
        return _with_sentence(answer, cited.source, cited.sentence,
                              "originators: the byline of the collection paper the passages cite for the method")
    entry = cited.entry
    if not entry.get("authors"):
        return None
    title, year, by, n = (entry.get("title") or "").strip(), entry.get("year"), names_of(entry["authors"], language), \
        cited.source.number
    if language == "ja":
        text = f"「{title}」{f'（{year}年）' if year else ''}の著者は{by}です（文献に引用されている研究）。[{n}]"
    else:
        text = f"“{title}”{f' ({year})' if year else ''} is by {by}: the work the passages cite for it. [{n}]"
    answer = Answer(text=text, kind="extractive", citations=[citation_for(cited.source)], language=language)
    return _with_sentence(answer, cited.source, cited.sentence,
                          "originators: the reference entry the passages cite for the method")


def _with_sentence(answer: Answer | None, source: Source, sentence: tuple[int, int] | None, note: str) -> Answer | None:
    """The answer, then the sentence that claims or cites the method (cited to the same source)."""
    if answer is None:
        return None
    answer.note = note
    if sentence is not None:
        a, b = sentence
        quote = " ".join(source.hit.text[a:b].split())
        answer.text += f"\n{quote} [{source.number}]"
    return answer
