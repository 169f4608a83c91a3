"""Names in a text, as the reader matches them: the terms of capitalised words, one-letter names
("the E gene", "E遺伝子"), which retrieved documents a quote names as a name of its own (the next
step of a question asked through something), and the question that step's page answers."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from typing import NamedTuple

from ..nlp.analyzer import EN_STOPWORDS
from ..nlp.glossary import shared_glossary
from ..types import SearchHit

QUALIFIER = re.compile(r"\s*\([^()]*\)\s*$")  # "(film)", "(2017 Film)" after a title
# A quote introduces the name the question asks through with a word of the question in another form
# ("directed by" for "the director of") when the two share a stem of at least this many letters. Not fitted.
INTRODUCING_STEM = 5
# A capitalised word that does not open the text; in Japanese text, a Latin word written after kana
# or kanji ("Marjatta RaitaとBruce Coulter"), which no sentence rule capitalises.
_CJK = "\u3000-\u30ff\u3400-\u9fff\uff00-\uffef"
_CAPITALISED = re.compile(rf"(?:(?<=\s)|(?<=[{_CJK}]))[A-Z](?:[^\W{_CJK}]|['-])*")
# A one-letter name and the word it names ("the E gene", "hepatitis B", "vitamin D"): the analyzer
# drops lone letters, which would leave "the E gene or the N gene" two sides with the same terms.
_LETTER_FIRST = re.compile(r"\b([A-Z])\s+(?=([a-z][a-z-]+)\b)")
_LETTER_AFTER = re.compile(r"\b(?=([a-z][a-z-]+)\s+([A-Z])\b)")
_JA_LETTER_FIRST = re.compile(r"(?<![A-Za-z0-9])([A-Z])(?=([\u30a0-\u30ff\u4e00-\u9fff]+))")  # E遺伝子
_JA_LETTER_AFTER = re.compile(r"(?=([\u30a0-\u30ff\u4e00-\u9fff]+)([A-Z])(?![A-Za-z0-9]))")  # ビタミンD
# A name written in a question begins and ends where no Latin letter or digit runs on ("Live" is not in
# "Olive"; "Lothair II" is in "Lothair IIの母親", where kana follow).
_LATIN = "0-9A-Za-z\u00c0-\u024f"


def capitalised_terms(analyzer, text: str) -> set[str]:
    """The terms of `text`'s capitalised words, as names are written (`_CAPITALISED`: the word that
    opens `text` counts only where the caller puts a space before it)."""
    return set(analyzer.terms(" ".join(_CAPITALISED.findall(text))))


def run_at(name: list[str], terms: list[str]) -> int:
    """Where `terms` hold the terms of `name`, one after the other; -1 where they do not."""
    n = len(name)
    return next((i for i in range(len(terms) - n + 1) if terms[i:i + n] == name), -1) if n else -1


def in_a_row(name: list[str], terms: list[str]) -> bool:
    """`terms` hold the terms of `name`, one after the other."""
    return run_at(name, terms) >= 0


_WRITTEN = re.compile(r"[^\W_][\w'’-]*")


def written_alone(name: str, text: str, known: str) -> bool:
    """`text` writes `name` as a name of its own, not inside a longer one ("Dream Chasers Records",
    "the Order of the British Empire" for the pages "Dream" and "Empire"): the capitalised words
    that run on from it are words of `known`, the named document's text ("King Norodom Suramarit" on
    the page of King Norodom Suramarit). True where `text` does not spell it out word for word."""
    words = [(m.group(), m.start()) for m in _WRITTEN.finditer(text)]
    lower = [w.lower() for w, _ in words]
    wanted = [w.lower() for w in _WRITTEN.findall(name)]
    known_words = {w.lower() for w in _WRITTEN.findall(known)}
    n, found = len(wanted), False
    for i in range(len(words) - n + 1):
        if not n or lower[i:i + n] != wanted:
            continue
        found = True
        before = i - 1
        while before >= 0 and words[before][0][0].isupper():
            before -= 1
        after = i + n
        while after < len(words) and words[after][0][0].isupper():
            after += 1
        if all(w in known_words for w in lower[before + 1:i] + lower[i + n:after]):
            return True
    return not found


def letter_names(analyzer, text: str) -> set[str]:
    """The one-letter names of `text` as terms: "e gene" for "the E gene", "hepatitis b"; in
    Japanese, with the English gloss of the word the letter is written against ("E遺伝子": "e
    gene", "ビタミンD": "vitamin d"), so that they meet the English names of English papers."""
    def glossed(word: str) -> list[str]:
        return list(shared_glossary().english(word)) or shared_glossary().terms(word)

    out = set()
    for pattern, letter_first, read in ((_LETTER_FIRST, True, analyzer.terms), (_LETTER_AFTER, False, analyzer.terms),
                                        (_JA_LETTER_FIRST, True, glossed), (_JA_LETTER_AFTER, False, glossed)):
        for m in pattern.finditer(text):
            letter, word = (m.group(1), m.group(2)) if letter_first else (m.group(2), m.group(1))
            if stem := read(word):
                out.add(f"{letter.lower()} {stem[0]}" if letter_first else f"{stem[0]} {letter.lower()}")
    return out


class DocumentName(NamedTuple):
    """A retrieved document as a quote may name it: its title without a qualifier ("The Room (film)":
    "The Room"), that name's terms, and the document's text."""

    name: str
    terms: list[str]
    text: str


def document_names(analyzer, hits: dict[str, SearchHit]) -> dict[str, DocumentName]:
    """Each document's `DocumentName`, worked out once for all the quotes that may name it."""
    out = {}
    for doc, hit in hits.items():
        name = QUALIFIER.sub("", hit.document_title)
        out[doc] = DocumentName(name, analyzer.terms(name), hit.text)
    return out


def documents_named(analyzer, quote: str, documents: dict[str, DocumentName], question: list[str],
                    asked: set[str]) -> set[str]:
    """The ids of `documents` whose name `quote` names and the question does not (its terms
    `question`, in order; `asked`: with a Japanese question's English glosses): the name's words in
    a row, one of them capitalised, not inside a longer name; the question names its subject
    ("Raghnall Mac Ruaidhrí's grandfather"), not the step ("Ruaidhrí Mac Ruaidhrí"). Of several,
    those the quote introduces with a word of the question's in another form ("written and directed
    by Gia Coppola, based on James Franco's ..." for "the director of film X")."""
    written = capitalised_terms(analyzer, " " + quote)
    said = analyzer.terms(quote)
    named = {doc: d.terms for doc, d in documents.items()
             if in_a_row(d.terms, said) and set(d.terms) & written and not in_a_row(d.terms, question)
             and written_alone(d.name, quote, d.text)}

    def introduced(name: list[str]) -> bool:  # the two terms before it hold a question's word's stem
        at = max(run_at(name, said), 0)
        return any(min(len(w), len(a)) >= INTRODUCING_STEM and (a.startswith(w) or w.startswith(a))
                   for w in said[max(0, at - 2):at] for a in asked)

    return {doc for doc, name in named.items() if introduced(name)} or set(named)


def renamed(question: str, name: str, other: str) -> str | None:
    """`question` with the name `name` (its words in a row, in any case) written as `other`: what the
    next step's page is asked ("Where did the composer of film The Straw Hat die?" -> "Where did the
    composer of film Isaac Schwartz die?", over the page of Isaac Schwartz, who composed it). None
    where the question does not write the name."""
    words = re.findall(r"\w+", name)
    if not words:
        return None
    out, n = re.subn(_name_pattern(words), lambda _: other, question, count=1, flags=re.I)
    return out if n else None


def _name_pattern(words: list[str]) -> str:
    """A name's words in a row, any non-word characters between them, not inside a longer Latin word
    ("Live" is not in "Olive"; kana or kanji may touch it)."""
    return rf"(?<![{_LATIN}])" + r"\W+".join(map(re.escape, words)) + rf"(?![{_LATIN}])"


def subject_document(question: str, titles: dict[str, str]) -> str | None:
    """The document of `titles` (id: title) that the question names by its title, in any case: with its
    qualifier ("Dancing in the Rain (film)" in "... of film Dancing In The Rain (Film)?"), or without it
    where no other document has that name ("Big Stone Gap" for "Big Stone Gap (film)"). Of several, the
    one of the most words ("The Outlaw Express", not its namesake "Outlaw Express"); None where none is,
    or two tie. The question writes it as a name, with a capital letter, and not only as its first
    word: "What are the results?" does not name a document called "Results"."""
    bases = Counter(QUALIFIER.sub("", title).lower() for title in titles.values())

    def written(name: str) -> int:
        """The words of `name` where the question writes it as a name, else 0."""
        words = re.findall(r"\w+", name)
        found = re.search(_name_pattern(words), question, flags=re.I) if words else None
        named = found and any(ch.isupper() for ch in found.group(0)) and (found.start() > 0 or len(words) > 1)
        return len(words) if named else 0

    held = []
    for doc, title in titles.items():
        base = QUALIFIER.sub("", title)
        names = [title] + ([base] if base != title and bases[base.lower()] == 1 else [])
        words = next((n for n in map(written, names) if n), 0)
        if words:
            held.append((words, doc))
    held.sort(reverse=True)
    return held[0][1] if held and (len(held) == 1 or held[0][0] > held[1][0]) else None


# The Query view that holds the document `paper_asked_about` gives, where the answer engine found one.
ASKED_PAPER = "asked paper"
# A run of capitalised words, as a question writes a name ("the Vision Transformer", "ResNet's",
# "Transformerの"): its opening question word is not one. A size may follow a model's name with a
# hyphen ("OPT-175B", "ResNet-50": the model the name stands for; "Transformer-XL" is another).
_NAME_RUN = re.compile(rf"(?:^|(?<=[\s(\"“{_CJK}]))[A-Z][^\W{_CJK}]*(?:[-/][^\W{_CJK}]+)*"
                       rf"(?:\s+[A-Z][^\W{_CJK}]*(?:[-/][^\W{_CJK}]+)*)*")
_POSSESSIVE = re.compile(r"['’]s$")
_SIZED = r"(?:-\d[\w.]*)?"


# A question names a paper by its title where it writes, case and punctuation aside, the whole title
# or its subtitle ("Scaling Language Modeling with Pathways" of "PaLM: Scaling ..."); the name before
# the colon with the subtitle's opening words, as the title writes them ("STaR: Self-Taught
# Reasoner"); or the side before the colon in quotes ("An Image is Worth 16x16 Words"): at least this
# many words. A title's opening words alone, and the side before its colon unquoted, are names
# questions use for the topic ("Vesicular stomatitis virus", "Autoregressive search engines"). Not fitted.
TITLE_WORDS = 3
# A title's words: Latin letters and digits apart from the kana and kanji a Japanese question writes
# around them ("Attention Is All You Needでは").
_TITLE_WORD = re.compile(r"[A-Za-z0-9]+|[^\W\dA-Za-z_]+")
_OPENING_QUOTE, _CLOSING_QUOTE = "\"“'‘「『(", "\"”'’」』)"
# What a question that names a paper by its title reads as, the title taken out: "Which base language
# model did the paper fine-tune?". Not the name before the title's colon ("STaR"), which the sentences
# that present the paper write as often as its title's other words.
_THE_PAPER = {"en": "the paper", "ja": "この論文"}


class TitleNamed(NamedTuple):
    """Where a question writes a paper's title (`PaperTitles.named`)."""

    paper: str  # its document id
    start: int  # the span of the question that writes it, quotes and brackets around it included
    end: int


class _Phrase(NamedTuple):
    words: list[str]
    exact: bool  # written in the title's case
    quoted: bool  # only in quotes


def _title_phrases(title: str) -> list[_Phrase]:
    """The word sequences a question may write a paper's title as (TITLE_WORDS)."""
    lower = lambda text: [w.lower() for w in _TITLE_WORD.findall(text)]  # noqa: E731
    phrases = [_Phrase(lower(title), False, False)]
    if ":" in title:
        name, subtitle = title.split(":", 1)
        phrases += [_Phrase(lower(subtitle), False, False), _Phrase(lower(name), False, True)]
        named, opening = _TITLE_WORD.findall(name), _TITLE_WORD.findall(subtitle)
        phrases += [_Phrase(named + opening[:n], True, False) for n in range(1, len(opening))]
    return [p for p in phrases if len(p.words) >= TITLE_WORDS]


class PaperTitles:
    """The titles of the collection's papers (document id: title), indexed by the first word of each
    way a question may write one (`_title_phrases`), so that a question is looked up in the time its
    words take, however many papers there are."""

    def __init__(self, titles: dict[str, str]):
        self.titles = titles
        self._by_first: dict[str, list[tuple[str, _Phrase]]] = {}
        for paper, title in titles.items():
            for phrase in _title_phrases(title):
                self._by_first.setdefault(phrase.words[0], []).append((paper, phrase))

    def named(self, question: str) -> TitleNamed | None:
        """The paper whose title the question writes, the longest where several are; None where none
        is, or two papers' titles are written as long."""
        found = [(m.group(), m.start(), m.end()) for m in _TITLE_WORD.finditer(question)]
        written = [w for w, _, _ in found]
        lowered = [w.lower() for w in written]

        def quoted(first: int, last: int) -> bool:
            start, end = found[first][1], found[last][2]
            return (start > 0 and question[start - 1] in _OPENING_QUOTE
                    and end < len(question) and question[end] in _CLOSING_QUOTE)

        best: dict[str, tuple[int, int, int]] = {}  # document id: (words, first word, last word)
        for i in range(len(found)):
            for key, exact in ((written[i], True), (lowered[i], False)):
                for paper, phrase in self._by_first.get(key, ()):
                    words, n = written if exact else lowered, len(phrase.words)
                    if (phrase.exact == exact and words[i:i + n] == phrase.words
                            and n > best.get(paper, (0, 0, 0))[0] and (not phrase.quoted or quoted(i, i + n - 1))):
                        best[paper] = (n, i, i + n - 1)
        if not best:
            return None
        longest = max(n for n, _, _ in best.values())
        papers = [p for p, (n, _, _) in best.items() if n == longest]
        if len(papers) != 1:
            return None
        _, first, last = best[papers[0]]
        start, end = found[first][1], found[last][2]
        while start > 0 and question[start - 1] in _OPENING_QUOTE:  # the quotes around it
            start -= 1
        while end < len(question) and question[end] in _CLOSING_QUOTE:
            end += 1
        return TitleNamed(papers[0], start, end)


# The words left of a question about a paper as a whole once its title is taken out ("What is X
# about?", "「X」とは何ですか？"): question words and function words, in English and Japanese.
_WHOLE_PAPER = frozenset({"paper", "article", "work"})
_JA_FUNCTION = re.compile(r"[\u3040-\u309f]|[何誰]")


def asked_of_the_paper(question: str, named: TitleNamed, language: str) -> str:
    """The question with the title it names its paper by taken out: "In the paper, what value of
    label smoothing was used?", "Which base language model did the paper fine-tune?". The title's
    words would otherwise lead the reading to the sentences that present the paper (its abstract
    writes them all), not to the one that answers. A question that asks nothing of the paper but
    itself ("What is Attention Is All You Need about?", the title alone) is left as it is: those
    sentences answer it."""
    before = question[:named.start]
    rest = _TITLE_WORD.findall(before + " " + question[named.end:])
    if not any(w.lower() not in EN_STOPWORDS and w.lower() not in _WHOLE_PAPER and _JA_FUNCTION.sub("", w)
               for w in rest):
        return question
    name = _THE_PAPER.get(language, _THE_PAPER["en"])
    if before.rstrip().lower().endswith(name):  # "the paper Improving language models by ..."
        name = ""
    return " ".join((before + name + question[named.end:]).split())


def paper_asked_about(question: str, aliases: dict[str, list[str]], writes: Callable[[str, str], bool],
                      titled: TitleNamed | None = None) -> str | None:
    """The paper of the collection a question asks about by the name the papers citing it give it
    (`aliases`, the index's citations.json: "Transformer" for "Attention Is All You Need") or by its
    title (`titled`: `PaperTitles.named`), where that is the one paper it names so and it names nothing
    else the paper does not write (`writes(name, document_id)`): "Which optimizer was used to train
    the Transformer?" asks about that paper, not about the papers that use Transformers; "...
    Primer's improvement over the standard Transformer?" and "the Vision Transformer" do not. A
    plural alias ("Transformers") names a kind, not a paper. None where no paper, or more than one,
    is so named."""
    named, others = set(), []
    if titled is not None:
        named.add(titled.paper)
        question = question[:titled.start] + " " + question[titled.end:]
    runs = [_POSSESSIVE.sub("", m.group()) for m in _NAME_RUN.finditer(question.strip())]
    runs = [r for r in runs if r.lower() not in EN_STOPWORDS]
    for run in runs:
        papers = {doc for doc, names in aliases.items() for name in names
                  if not (name.endswith("s") and name[:-1] in names)
                  and re.fullmatch(re.escape(name) + _SIZED, run)}
        if papers:
            named |= papers
        else:
            others.append(run)
    if len(named) != 1:
        return None
    paper = next(iter(named))
    return paper if all(writes(name, paper) for name in others) else None
