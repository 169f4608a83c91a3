"""Who proposed a method, or when, asked of a folder of papers ("Who introduced layer normalization?",
"RWKVを提案したのは誰ですか？", "When was the Transformer introduced?"): body sentences seldom name
the people behind a method (a paper says "we propose X", or "X [20]"), so the answer is a byline.

- The collection paper that presents the method: a retrieved paper whose title names the method
  ("FlashAttention: Fast and ..."), or one of whose sentences claims it ("We introduce Retro, ...",
  "... which we call Pathways Language Model (PaLM)", "Our Vision Transformer (ViT)"), the name
  before any clause that says more about it: its byline, and that sentence. Where citing papers
  call a paper of the collection by the name (citations.json's names: "Transformer" for "Attention
  Is All You Need"), only that paper's sentences are read so, and its byline answers where none
  claims it.
- Else the work the retrieved passages cite for it: the reference entry of a citation right after
  the name ("the Adam optimizer [20]", "GPT-3 (Brown et al., 2020)"), or of one whose title names it
  as a paper's title would ("[1] ... Layer normalization. arXiv ..."; not "Transformers are RNNs:
  ..." for the Transformer): its authors, title and year, and the citing sentence. An entry that
  names a paper of the collection answers with that paper's byline.

A question that asks when is answered with the year of that byline or entry. A method may be named
twice ("MAML, model-agnostic meta-learning", "the Vision Transformer (ViT)"): either name will do.
None where no way finds it: the reader answers as for any question.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..ingest.sentences import statement_spans
from ..nlp.byline_questions import JAPANESE, ORIGINATOR_WORDS
from ..nlp.glossary import shared_glossary
from ..query import Query
from ..types import Answer, SearchHit
from .byline import byline_answer, byline_line, paper_source
from .citations import citation_for
from .context import Source, next_number
from .quotes import with_heading_set_apart

# A sentence's claim that its paper presents something: the method's name must come within
# CLAIM_REACH terms after it ("We propose a new simple network architecture, the Transformer").
_CLAIMS = re.compile(r"\bwe\s+(?:\w+\s+)?(?:propose|introduce|present|develop|call|term|dub)\w*\b|"
                     r"\b(?:which|that) we (?:call|term|dub|introduce|propose)\w*\b", re.I)
# "Our Vision Transformer (ViT)": a capitalised name the paper gives its own work, with its short form
# (a weaker claim than a verb's; "our transformer decoder" claims nothing).
_OURS = re.compile(r"\b[Oo]ur\s+((?:[A-Z][\w-]*\s+){0,4}[A-Z][\w-]*)\s*\(([A-Z][\w-]*)\)")
CLAIM_REACH = 15
# Of the passages a search for a method's name finds (the first NAME_SEARCH), a claim counts where the name is
# the first thing claimed.
NAMED_FIRST = 1
NAME_SEARCH = 30
# ... and before a clause that says more about it: "we introduce the RWKV model, a novel architecture
# that combines the strengths of RNNs and Transformers" does not claim the Transformer.
_CLAUSE = re.compile(r"\b(?:which|that|who|whose|where|while|whereas|because)\b", re.I)
# ... and not after a preposition: "we present a brief comparison with Bert-Large" presents no BERT.
_GOVERNING = frozenset({"with", "of", "to", "for", "on", "over", "against", "than", "from", "by", "in", "into",
                        "between", "versus", "vs", "like", "unlike"})
_RAW_WORD = re.compile(r"[^\W_][\w-]*")
CITED_REACH = 6  # a citation cites the name when its words are among the last terms before it
_NAME_BREAKS = re.compile(r"[,()、（）:;]")
_LATIN_WORD = re.compile(r"[A-Za-z][A-Za-z0-9-]*")


@dataclass
class DocumentReferences:
    """A document's reference entries (their index: authors, title, year), the in-text citations
    pointing at them (document offsets), and the entries that name a paper of the collection."""

    entries: dict[int, dict] = field(default_factory=dict)
    marks: list[tuple[int, int, list[int]]] = field(default_factory=list)
    linked: dict[int, str] = field(default_factory=dict)


@dataclass
class CollectionReferences:
    """What the collection's papers cite: each document's references (`DocumentReferences`), and the
    names citing papers give each paper of the collection ("Transformer" for "Attention Is All You
    Need": the word before most citations of it; citations.json's aliases)."""

    documents: dict[str, DocumentReferences] = field(default_factory=dict)
    names: dict[str, list[str]] = field(default_factory=dict)


@dataclass
class _Cited:
    entry: dict
    linked: str | None
    source: Source
    sentence: tuple[int, int]  # offsets in the source's text
    titled: bool  # the entry's title names the method
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


def method_names(named: str, terms: Callable[[str], list[str]]) -> list[Name]:
    """Each name the words that name the method give it (`asks_originators`), cut at commas and
    brackets, its asking words left out; a Japanese word as itself or any English term its glosses
    give (学習: learn, study, ...). A name of kind words alone ("the model") names nothing."""
    asking, kinds = set(terms(ORIGINATOR_WORDS)), set(terms(KIND_WORDS))
    names = []
    for part in _NAME_BREAKS.split(named):
        words = [frozenset({t}) for t in terms(part) if t not in asking and not JAPANESE.search(t)]
        unglossed = []  # Japanese words JMdict lacks (オプティマイザー): only Japanese text can hold them
        if JAPANESE.search(part):
            for word, english in shared_glossary().readings(part):
                written = frozenset(terms(word))
                if not (english | written) & asking:
                    (words if english else unglossed).append(english | written)
        words = words or unglossed
        naming = tuple(w for w in words if not w & kinds)
        if naming:
            names.append(Name(naming, len(words)))
        # the one capitalised word among lower-case ones names it alone too: "the Reptile meta-learning
        # algorithm" is Reptile ("We introduce Reptile, an algorithm ..."); "the Vision Transformer" is not
        # "Transformer"
        capitalised = [w for w in _LATIN_WORD.findall(part) if w[0].isupper()]
        if len(capitalised) == 1 and len(naming) > 1 and (own := frozenset(terms(capitalised[0]))) in naming:
            names.append(Name((own,), 1))
    return names


def _holds(names: list[Name], text_terms: set[str]) -> bool:
    return any(all(word & text_terms for word in name.words) for name in names)


def _is_a_name(names: list[Name], text_terms: set[str]) -> bool:
    """Whether the terms are one of the names and nothing more ("PaLM", "Transformer")."""
    return bool(text_terms) and any(all(word & text_terms for word in name.words) and
                                    text_terms <= frozenset().union(*name.words) for name in names)


def _titled(names: list[Name], title: str, terms: Callable[[str], list[str]]) -> bool:
    """Whether the title names the method: its words before a colon (or all of them) are a name
    ("PaLM: Scaling ...", "Layer normalization"), or it holds a name of two words or more ("Deep
    Residual Learning ..." for 残差学習, residual learning, and for residual networks): a one-word
    name in a longer title ("RWKV: Reinventing RNNs for the Transformer Era") is what the paper is
    about, not what it presents."""
    if _is_a_name(names, set(terms(title.split(":")[0]))):
        return True
    return _holds([name for name in names if name.length >= 2], set(terms(title)))


def _claim(names: list[Name], source: Source, terms: Callable[[str], list[str]],
           reach: int = CLAIM_REACH) -> tuple[int, tuple[int, int]] | None:
    """The source's sentence that claims the method for its paper, and how soon after the claim its
    name comes (a verb's claim, the name's first word within `reach` terms of it, before an "our"
    name's), or None."""
    text, best = source.hit.text, None
    for a, b in statement_spans(text):
        for m in _CLAIMS.finditer(text, a, b):
            clause = _CLAUSE.search(text, m.end(), b)
            claimed = text[m.end():clause.start() if clause else b]
            after = terms(claimed)[:CLAIM_REACH]
            for name in names:
                at = [next((i for i, t in enumerate(after) if t in word), None) for word in name.words]
                if None not in at and min(at) < reach and (best is None or max(at) < best[0]) and \
                        not _governed(claimed, name, terms):
                    best = (max(at), (a, b))
        for m in _OURS.finditer(text, a, b):  # "Our Vision Transformer (ViT)" names ViT, not the Transformer
            if best is None and any(_is_a_name(names, set(terms(m.group(i)))) for i in (1, 2)):
                best = (CLAIM_REACH, (a, b))
    return best


def _governed(claimed: str, name: Name, terms: Callable[[str], list[str]]) -> bool:
    """Whether a preposition comes before the name's first word in what a claim says it presents."""
    words = _RAW_WORD.findall(claimed)
    first = next((k for k, w in enumerate(words) if any(t in name.words[0] for t in terms(w))), len(words))
    return any(w.lower() in _GOVERNING for w in words[:first])


def presenting_paper(names: list[Name], sources: Sequence[Source], terms: Callable[[str], list[str]],
                     reach: int = CLAIM_REACH) -> tuple[Source, tuple[int, int] | None] | None:
    """The first source of the paper that presents the method (its title names it; else its
    sentence claims it soonest, `reach` as `_claim`), with the claiming sentence where there is one;
    None if none does."""
    claimed: tuple[int, Source, tuple[int, int]] | None = None
    for source in sources:
        h = source.hit
        if not h.authors:
            continue
        if _titled(names, h.document_title, terms):
            return source, None
        if (found := _claim(names, source, terms, reach)) is not None and (claimed is None or found[0] < claimed[0]):
            claimed = (found[0], source, found[1])
    return (claimed[1], claimed[2]) if claimed is not None else None


def named_by_citers(names: list[Name], known: dict[str, list[str]], terms: Callable[[str], list[str]]) -> str | None:
    """The paper of the collection that citing papers call by one of the method's names, where exactly
    one is ("Transformer": "Attention Is All You Need"); None otherwise."""
    found = {doc for doc, said in known.items() for alias in said if _is_a_name(names, set(terms(alias)))}
    return found.pop() if len(found) == 1 else None


def cited_work(names: list[Name], sources: Sequence[Source], terms: Callable[[str], list[str]],
               references: CollectionReferences) -> _Cited | None:
    """The reference entry the sources cite for the method: of the citations in their text whose
    last terms before them hold a name, or whose entry's title does (the sentence holding it too),
    the entry whose title holds it, then the one cited for it most often; None where none is."""
    found: dict[str, _Cited] = {}
    for source in sources:
        h = source.hit
        refs = references.documents.get(h.document_id)
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
                titled = _titled(names, entry.get("title") or "", terms) and _holds(names, sentence_terms)
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


def originators_answer(asked: str, named: str, sources: Sequence[Source], language: str,
                       terms: Callable[[str], list[str]],
                       references: Callable[[], CollectionReferences] | None,
                       first_passage: Callable[[str], SearchHit | None] | None,
                       search_within: Callable[[Query, list[str], int], list[SearchHit]] | None = None
                       ) -> Answer | None:
    """Who proposed the method that `named` names, or when (`asked`: "authors" or "year"; module
    docstring), cited to the passage that says it; None where no retrieved paper presents it and no
    citation names it, or the year asked for is not known. The paper that presents it is looked for
    in the passages retrieved for the question, then in the other passages of their papers that a
    search for its name within those papers finds (`search_within`): "Who proposed the Vision
    Transformer?" retrieves ViT's passages that do not claim it, and others' in which something is
    proposed. Where the citing papers call a paper of the collection by the name, only its passages
    are read so."""
    names = method_names(named, terms)
    if not names:
        return None
    collection = references() if references is not None else None
    # the paper the citing papers call by the name presents it, whatever another paper's sentence
    # seems to claim ("we propose searching for more efficient alternatives to Transformer")
    called = named_by_citers(names, collection.names, terms) if collection is not None else None
    papers = [called] if called is not None else list(dict.fromkeys(s.hit.document_id for s in sources))
    presented = presenting_paper(names, [s for s in sources if s.hit.document_id in papers], terms)
    if presented is None and search_within is not None:
        # passages found by the name alone: only a title, "Our Name (ABBR)" or a claim that names it
        # first ("We introduce Reptile, ..."; not "we present a brief comparison with BERT")
        found = search_within(Query.of(named), papers, NAME_SEARCH)
        presented = presenting_paper(names, _more_sources(found, sources), terms, reach=NAMED_FIRST)
    if presented is not None:
        source, sentence = presented
        return _with_sentence(byline_answer(asked, source, language), source, sentence,
                              "originators: the byline of the paper that presents the method")
    if collection is None:
        return None
    if called is not None and (own := paper_source(called, sources, first_passage)) is not None:
        return _with_sentence(byline_answer(asked, own, language), own, None,
                              "originators: the byline of the paper the citing papers call by the method's name")
    cited = cited_work(names, sources, terms, collection)
    if cited is None:
        return None
    if cited.linked and (own := paper_source(cited.linked, sources, first_passage)) is not None:
        # the work cited is a paper of the collection: its byline, cited to it, then the citing sentence
        return _with_sentence(byline_answer(asked, own, language), cited.source, cited.sentence,
                              "originators: the byline of the collection paper the passages cite for the method")
    entry = cited.entry
    text = byline_line(asked, entry.get("title") or "", entry["authors"], entry.get("year"), cited.source.number,
                       language, cited=True) if entry.get("authors") else None
    if text is None:
        return None
    answer = Answer(text=text, kind="extractive", citations=[citation_for(cited.source)], language=language)
    return _with_sentence(answer, cited.source, cited.sentence,
                          "originators: the reference entry the passages cite for the method")


def _more_sources(hits: list[SearchHit], sources: Sequence[Source]) -> list[Source]:
    """The passages of `hits` (of the sources' papers, so a search's filters hold) that are not
    sources, each numbered next after the sources (the one an answer cites is the only one it adds)."""
    seen = {s.hit.text_unit_id for s in sources}
    number = next_number(sources)
    return [Source(number, h) for h in hits if h.text_unit_id not in seen]


def _with_sentence(answer: Answer | None, source: Source, sentence: tuple[int, int] | None, note: str) -> Answer | None:
    """The answer, then the sentence that claims or cites the method, cited to its source."""
    if answer is None:
        return None
    answer.note = note
    if sentence is not None:
        a, b = sentence
        # a PDF paragraph's bold run-in label set apart as the reader's quotes set it ("Residual Dropout: We ...")
        quote = with_heading_set_apart(" ".join(source.hit.text[a:b].split()), source.hit.section)
        answer.text += f"\n{quote} [{source.number}]"
        if all(c.number != source.number for c in answer.citations):
            answer.citations.append(citation_for(source))
    return answer
