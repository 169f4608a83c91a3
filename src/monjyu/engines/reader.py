"""The offline reader: which retrieved sentences answer the question, and how many to quote.

Similarity alone picks sentences that restate the question. The reader scores each quotable
sentence of the retrieved passages by how likely it is to hold the answer: its meaning and the
question's rare terms (as the local relevance scorer has them), the terms of the sentences around
it (an answer often says "it" where the question names the thing), whether it carries what the
question asks for (a number for "how many", a reason for "why" ...), how much it says beyond the
question's own words, and how well retrieval ranked its passage. The weights of those features
are a logistic model fitted on half of covidqa-dev's papers (the fitting script is in the
repository's benchmarks; figures are reported on the other half). It leads with the best sentence and stops when the question is answered: one or two
sentences for a fact or a definition, more for a list, a comparison, a reason or a method.

Nothing is quoted from captions, references or front matter, headings, title lines, figure or
table text, or reference entries inside body text (`quotes.py`); a sentence in the question's
language is preferred when the passages have one that answers.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import NamedTuple

import numpy as np

from ..nlp.abbreviations import defined_abbreviations, question_forms, spelled_out
from ..nlp.glossary import shared_glossary, with_english_glosses
from ..nlp.lang import detect_language
from ..query import Query
from .context import Source
from .cross_encoder import ReaderModel
from .names import capitalised_terms, document_names, documents_named, in_a_row, letter_names, renamed
from .question_wording import asks_to_choose, is_question, question_asks, question_sides
from .quotes import clean_quote, quotable
from .relevance import LocalRelevanceScorer, Sentence, sentences_of

# ---------------------------------------------------------------------------- the answer's kind

# What a sentence carries, for each kind of question.
_CARRIES = {
    "number": re.compile(r"\d|\b(one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|hundred|"
                         r"thousand|million|billion|dozen|half|twice|double|triple)\b|[一二三四五六七八九十百千万億]", re.I),
    "date": re.compile(r"\b(1[6-9]|20)\d\d\b|\b(January|February|March|April|May|June|July|August|September|"
                       r"October|November|December)\b|\bcentury\b|\d+年|\d+月", re.I),
    "person": re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z]+ [A-Z][a-z]+\b|\bet al\b|[一-龯]{1,3}[\s　][一-龯]{1,3}"),
    "place": re.compile(r"\b(in|at|from|of) (the )?[A-Z][a-z]+|[都道府県市国州]"),
    "reason": re.compile(r"\b(because|due to|since|as a result|result(s|ed)? (in|from)|caused by|owing to|therefore|"
                         r"thus|hence|leads? to|led to|so that|in order to|allows?|enables?|reason|attributed to|"
                         r"responsible for|consequently)\b|ため|ので|から|により|によって|原因", re.I),
    "compare": re.compile(r"\b(than|whereas|while|unlike|compared|in contrast|outperforms?|instead of|rather than|"
                          r"better|worse|faster|slower|more|less|fewer|higher|lower|similar|same as)\b|より|比べ|対して|一方", re.I),
    "list": re.compile(r",.*,|;|\b(include|includes|including|such as|consists? of|comprises?|namely|first|second|"
                       r"both|two|three|several)\b|・|、.*、", re.I),
    "method": re.compile(r"\b(by|using|uses?|through|via|with|propose[sd]?|method|approach|computes?|estimates?|"
                         r"trains?|applies|applying|replaces?|combines?)\b|によって|を用いて|により|使って", re.I),
    "choice": re.compile(r"\b(than|whereas|unlike|compared|in contrast|not|no|both|neither|also|same|first|"
                         r"earlier|later|more|less|larger|smaller)\b|ない|より|比べ", re.I),
    "definition": re.compile(r"\b(is|are|was|were) (a|an|the|defined|known|called|termed|referred)\b|\brefers? to\b|"
                             r"\bdefined as\b|\bknown as\b|\bstands? for\b|\bi\.e\.|とは|である|のこと", re.I),
}

# How much better (log-odds) a sentence in another language must be to be quoted before one in
# the question's language.
LANGUAGE_MARGIN = 1.5


# How far an answer of each kind goes: at most this many sentences and words, and a further
# sentence only while its score is within `margin` of the best one's (log-odds; 1.0 = odds 1 : e).
# A fact or a definition stops after one or two sentences; a list, a comparison, a reason or a
# method takes more.
@dataclass(frozen=True)
class Extent:
    sentences: int
    words: int
    margin: float


_FACT = Extent(2, 70, 0.75)
_EXTENT = {"number": _FACT, "date": _FACT, "person": _FACT, "place": _FACT, "definition": _FACT, "": _FACT,
           "method": Extent(4, 120, 2.0), "reason": Extent(4, 120, 2.0),
           "list": Extent(5, 140, 2.5), "compare": Extent(5, 140, 2.5), "choice": Extent(3, 100, 1.5)}
# A fact's answer whose lead the model is unsure of (its log-odds under UNSURE_LEAD) goes on to
# `_UNSURE_FACT`: on the fit half of covidqa-dev's papers, a lead the model gave 2 or more held
# the gold 9 times in 10, one under 2 fewer than 6 in 10, and the next best sentences often hold it.
# Fitted there (the benchmarks page): a sure lead keeps the answer short. After an unsure lead, a
# sentence the model is sure of (UNSURE_LEAD or more) comes first of the others (`Reader.pick`).
UNSURE_LEAD = 2.0
_UNSURE_FACT = Extent(3, 80, 2.0)
# Of the sentences an answer quotes (chosen by the features and the model together), the one the
# model reads as the answer by this much more log-odds than the lead comes first: the features
# weigh the question's own words, which a sentence that only restates it carries too. Chosen on the
# validation sets (benchmarks page): 0.5 and 1 gave the held quarter's first sentence the most, and
# at 0 (any sentence read better) SQuAD's held-out articles lost 11 first sentences of 1,803.
MODEL_FIRST = 1.0
# A fact's answer that is one sentence of fewer words than this goes on with the sentence after it
# in its passage: a short sentence the question's words lead to is often one that announces the
# answer ("NDV has a number of appealing qualities as a vaccine vector."), and the next one gives it.
# Not fitted: on the validation sets (benchmarks page) 25 held a little more, for 3 more words.
SHORT_ANSWER = 20
# Two sentences say the same of two things when they share this many words besides the question's
# ("step", "time", "seconds"): one about a side that parallels a quote about the other is quoted
# before one that only names it. Not fitted.
PARALLEL_WORDS = 2
# A sentence that opens by setting itself against the one before ("On the contrary, the mortality in
# Wuhan ranged from 11 to 15%." after "... our patients had zero mortality."): for a question that
# weighs two things, the sentence before is the other side, and is quoted with it. ("Similarly, ..."
# adds one more of a kind; the sentence before it is not the other side.)
SET_AGAINST_BEFORE = re.compile(r"^(On the contrary|In contrast|By contrast|Conversely|On the other hand|"
                                r"In comparison|By comparison)\b|^(一方|これに対し|それに対し|対照的に)")


_WORD = re.compile(r"[^\W_]+")


# ---------------------------------------------------------------------------- features and model

FEATURES = ("semantic", "lexical", "context", "carries", "novelty", "rank", "first_of_passage", "length",
            "pairs", "semantic_context", "focus_early", "lexical_plain")
# Logistic weights over FEATURES, fitted on half of covidqa-dev's papers (listwise: only the
# differences between one question's sentences count, so no bias); refit with the reader bench.
WEIGHTS = np.array([3.957, -0.575, 2.59, 0.766, 2.221, 2.253, -0.552, -1.231, 0.772, 1.826, 0.594, 2.761],
                   dtype=np.float32)
# With the trained model (answer.reader: model): the same features and weights, and the model's
# log-odds with the one weight fitted on the quarter of the fit half's papers the model never trained
# on (the reader fit benchmark with --model --fit-on held --model-scale-only). Refitting every weight
# there (84 questions) cost 2wiki's answers their gold passages (benchmarks page).
MODEL_WEIGHTS = np.append(WEIGHTS, np.float32(0.138))


def model_column(model: ReaderModel, query: str, quotes: list[str], feature_scores: np.ndarray,
                 read: int, before: list[str] | None = None, passages: list | None = None) -> np.ndarray:
    """The model's log-odds for each quote (with the sentence `before` it, or its `passages` and
    place there, for a model that reads them): it reads the `read` quotes the features score best;
    a quote it did not read counts as the least likely of those it read."""
    order = np.argsort(-feature_scores, kind="stable")[:read]
    logits = model.scores(query, [quotes[i] for i in order], [before[i] for i in order] if before else None,
                          [passages[i] for i in order] if passages else None)
    column = np.full(len(quotes), float(logits.min()), dtype=np.float32)
    column[order] = logits
    return column


def passage_quotes(candidates: Sequence["Candidate"], forms: dict[str, tuple[str, bool]] | None = None
                   ) -> list[tuple[list[str], int]]:
    """Each candidate's passage as quoted (spelled out with the question's `forms`) and its place
    there, what a model that reads windows is given: one list a passage, shared by its candidates."""
    quoted: dict[int, list[str]] = {}
    for c in candidates:
        if id(c.passage) not in quoted:
            quoted[id(c.passage)] = [spelled_out(clean_quote(x.text), forms or {}) for x in c.passage]
    return [(quoted[id(c.passage)], c.position) for c in candidates]


def model_reading(query: Query, candidates: Sequence["Candidate"]) -> str:
    """The question as the model reads it: a Japanese one over English sentences only as its English words."""
    if query.language == "ja" and all(c.language != "ja" for c in candidates):
        return query.view("english reading", lambda: shared_glossary().english_reading(query.text))
    return query.text


class Side(NamedTuple):
    """A thing a question weighs ("..., A or B?")."""

    weights: dict[str, float]  # the terms it is known by that the other sides lack, with their IDF
    key: str  # the term that names it most surely


@dataclass
class Candidate:
    sentence: Sentence
    position: int  # index among its passage's statements
    language: str
    features: np.ndarray = field(default_factory=lambda: np.zeros(len(FEATURES), dtype=np.float32))
    relevance: float = 0.0  # the local scorer's 0-10 relevance (the gate)
    terms: frozenset[str] = frozenset()  # its index terms
    titled: frozenset[str] = frozenset()  # the terms of its document's title (what "it" may stand for)
    score: float = 0.0  # the model's log-odds that the sentence holds the answer (relative to the others)
    answers: float | None = None  # the trained model's own log-odds (answer.reader: model; model_column)
    passage: list[Sentence] = field(default_factory=list)  # its passage's sentences (`position` indexes them)

    @cached_property
    def quote(self) -> str:
        """The sentence as quoted (`clean_quote`), read by every feature and pick: worked out once."""
        return clean_quote(self.sentence.text)

    @cached_property
    def before(self) -> str:
        """The sentence before it, as quoted: what a model trained with it reads beside it (worked out
        only for such a model, and for the training candidates)."""
        return clean_quote(self.passage[self.position - 1].text) if self.position else ""


class Reader:
    """Picks and orders the sentences of an extractive answer."""

    def __init__(self, scorer: LocalRelevanceScorer,
                 term_weights: Callable[[set[str]], dict[str, float]] | None = None,
                 max_sources: int = 10, max_sentences: int = 5, model: ReaderModel | None = None,
                 model_candidates: int = 40, sure_relevance: float = 6.0):
        """`max_sentences` caps every answer (answer.extractive_sentences); the question's kind
        usually stops it sooner. `model`: the trained cross-encoder, which reads the
        `model_candidates` sentences the features rank best (answer.reader: model) and may refuse
        passages only where no sentence's relevance reaches `sure_relevance`."""
        self.scorer = scorer
        self.term_weights = term_weights
        self.max_sources = max_sources
        self.max_sentences = max_sentences
        self.model = model
        self.model_candidates = model_candidates
        self.sure_relevance = sure_relevance

    def candidates(self, query: Query, query_vector: np.ndarray, sources: Sequence[Source]) -> list[Candidate]:
        """Every quotable sentence of the first `max_sources` passages, with its features."""
        text = query.text
        sources = list(sources)[:self.max_sources]
        sentences = sentences_of(sources)
        by_source: dict[int, list[Sentence]] = {}
        kept = []  # (sentence, its index among its passage's statements)
        for s in sentences:
            siblings = by_source.setdefault(s.source.number, [])
            siblings.append(s)
            if quotable(s):
                kept.append((s, len(siblings) - 1))
        if not kept:
            return []
        scorer, analyzer = self.scorer, self.scorer.analyzer
        q_terms = scorer.query_terms(query)
        weights = (self.term_weights(set(q_terms)) if self.term_weights else None) or None
        asks = question_asks(text)
        vectors = scorer.embed([s.text for s, _ in kept])
        semantic = scorer.semantic(vectors, query_vector)
        # the sentence read with its neighbours in the passage (mean of their vectors)
        row = {id(s): i for i, (s, _) in enumerate(kept)}
        means = np.array([vectors[[row[id(x)] for x in by_source[s.source.number][max(0, pos - 1):pos + 2]
                                   if id(x) in row]].mean(axis=0) for s, pos in kept])
        semantic_context = scorer.semantic(means / np.maximum(np.linalg.norm(means, axis=1, keepdims=True), 1e-12),
                                           query_vector)
        # the names the passages (or the question) abbreviate: a sentence is read with the question's
        # form of them, by the features and by the model
        forms = question_forms(text, defined_abbreviations([text, *(x.hit.text for x in sources)]))
        term_lists = {id(s): analyzer.terms(spelled_out(s.text, forms)) for s in sentences}
        terms_of = {k: set(v) for k, v in term_lists.items()}
        q_list = query.view("terms", lambda: analyzer.terms(text))
        q_pairs = set(zip(q_list, q_list[1:]))
        focus = max(q_terms, key=lambda t: ((weights or {}).get(t, 0.0), t)) if q_terms else ""
        lexical = np.array([scorer.term_share(q_terms, terms_of[id(s)], weights) for s, _ in kept], dtype=np.float32)
        relevance = scorer.combine(semantic, lexical)  # the gate: the local scorer's 0-10 relevance
        titles = {n: frozenset(analyzer.terms(t := ss[0].source.hit.document_title)) | letter_names(analyzer, t)
                  for n, ss in by_source.items()}
        out = []
        for i, (s, pos) in enumerate(kept):
            own = terms_of[id(s)]
            listed = term_lists[id(s)]
            pairs = set(zip(listed, listed[1:]))
            siblings = by_source[s.source.number]
            around = set().union(*(terms_of[id(x)] for x in siblings[max(0, pos - 1):pos + 2]))
            new_terms = own - q_terms
            quote = clean_quote(s.text)
            n_words = len(quote.split())
            f = np.array([
                semantic[i],
                lexical[i],
                scorer.term_share(q_terms, around, weights),
                1.0 if asks and _CARRIES[asks].search(quote) else 0.0,
                len(new_terms) / len(own) if own else 0.0,
                1.0 / math.sqrt(s.source.number),
                1.0 if pos == 0 else 0.0,
                math.log1p(n_words) / math.log1p(40),
                len(q_pairs & pairs) / len(q_pairs) if q_pairs else 0.0,
                semantic_context[i],
                1.0 if focus in listed[:max(3, len(listed) // 3)] else 0.0,
                scorer.term_share(q_terms, own),
            ], dtype=np.float32)
            c = Candidate(s, pos, detect_language(quote), f, float(relevance[i]),
                          frozenset(own | letter_names(analyzer, s.text)), titles[s.source.number])
            c.quote = quote  # the cached quote: worked out once, here, for the features
            c.passage = siblings
            out.append(c)
        scores = np.array([c.features for c in out]) @ WEIGHTS
        for c, z in zip(out, scores):
            c.score = float(z)
        if self.model is not None:
            self._read(model_reading(query, out), out, forms)
        return out

    def _read(self, query: str, candidates: list[Candidate], forms: dict[str, tuple[str, bool]]) -> None:
        """The model's log-odds (`model_column`) for each sentence as `spelled_out` gives it with the
        question's `forms` ("VEEV is ..." as "Venezuelan equine encephalitis virus (VEEV) is ..."
        where the question writes the long form), and the score that combines them with the
        features."""
        before = [spelled_out(c.before, forms) for c in candidates] if self.model.reads_before else None
        passages = passage_quotes(candidates, forms) if self.model.reads_window else None
        column = model_column(self.model, query, [spelled_out(c.quote, forms) for c in candidates],
                              np.array([c.score for c in candidates]), self.model_candidates, before, passages)
        for c, z in zip(candidates, column):
            c.answers = float(z)
            c.score = float(np.append(c.features, c.answers) @ MODEL_WEIGHTS)

    def _names(self, query: Query) -> list[str]:
        """The rare names of the question (terms of its capitalised words, not the first, with an
        IDF at least half the rarest term's), rarest first: the things it asks about, each of
        which an answer should speak to ("Which film came first, Aas Ka Panchhi or Phoolwari?")."""
        terms = self.scorer.query_terms(query)
        weights = (self.term_weights(set(terms)) if self.term_weights else None) or {}
        top = max(weights.values(), default=0.0)
        # a Latin name opening a Japanese question is a name all the same
        opening = " " if query.language == "ja" else ""
        capitalised = capitalised_terms(self.scorer.analyzer, opening + query.text)
        return sorted((t for t in terms & capitalised if top and weights.get(t, 0.0) >= 0.5 * top),
                      key=lambda t: (-weights[t], t))

    def _sides(self, query: Query, paired: list[str]) -> list[Side]:
        """For each thing the question weighs (`paired`, from question_sides): the terms it is
        known by that the other sides lack, with their IDF, and its key, the rarest of them that
        is written capitalised ("Shenzhen" in "the patients managed by the Shenzhen team"), else
        the rarest."""
        analyzer = self.scorer.analyzer
        terms = analyzer.terms
        # a Japanese side is also known by the English glosses of its nouns (旅行者: traveller), as
        # the question's terms are
        sides = [set(with_english_glosses(side, terms(side), query.language)) | letter_names(analyzer, side)
                 for side in paired]
        own = [side.difference(*(other for other in sides if other is not side)) for side in sides]
        weights = (self.term_weights(set().union(*own)) if self.term_weights else None) or {}
        out = []
        for side, text in zip(own, paired):
            if side:
                named = side & capitalised_terms(analyzer, " " + text)
                out.append(Side({t: weights.get(t, 1.0) for t in side},
                                max(named or side, key=lambda t: (weights.get(t, 1.0), t))))
        return out

    def model_decides(self, text: str) -> bool:
        """Whether the model (with the relevance scale's sure grade) decides if the passages answer
        `text`. Not for a yes/no or A-or-B question ("Who lived longer, A or B?" too, which asks
        for a person first): the model learnt from answers that are spans of a sentence (SQuAD,
        JaQuAD, COVID-QA), none a yes or a no or a pick between two, so its score does not tell
        whether such a question is answered; nor for keywords or a request ("noun phrase graph
        without an LLM"), which ask no question. The features' relevance gate decides those."""
        return self.model is not None and not asks_to_choose(text) and is_question(text)

    def pick(self, query: Query, candidates: list[Candidate], min_relevance: float) -> tuple[list[list[Candidate]], str]:
        """The quotes (runs of adjacent sentences of one passage), best first, and a notice for
        the reader when they are in another language than the question's."""
        text, lang = query.text, query.language
        decides = self.model_decides(text)
        if not decides:
            gate = [c for c in candidates if c.relevance >= min_relevance]
        elif max(c.relevance for c in candidates) >= self.sure_relevance:
            # A sentence the relevance scale grades "correct" (as Corrective RAG does) is on the
            # question: the model, which finds no span it recognises in some answering sentences
            # ("How are communities of phrases detected?"), ranks them but does not refuse.
            gate = candidates
        elif all(c.language != lang for c in candidates):
            # The model learnt questions over sentences of their own language (SQuAD, JaQuAD): over
            # sentences of another only, it ranks them, and the relevance scale says whether they
            # answer ("ResNetの残差学習は...どんな問題を解決するために..." over the English paper).
            gate = candidates if max(c.relevance for c in candidates) >= min_relevance else []
        else:  # the model decides whether the passages answer at all
            gate = candidates if max(c.answers for c in candidates) >= self.model.threshold else []
        if not gate:
            return [], ""
        same = [c for c in gate if c.language == lang]
        best = max(c.score for c in gate)
        # Quotes in the question's language when one of them answers about as well as the best
        # sentence in any language; otherwise the best ones, with a notice.
        if same and max(c.score for c in same) < best - LANGUAGE_MARGIN:
            same = []
        note = ""
        if not same:
            note = ("日本語で答える文が索引された文書に見つからないため、英語の文を引用しています" if lang == "ja" else
                    "no sentence in English answers this in the indexed documents, so the quotes are in another language")
        pool = sorted(same or gate, key=lambda c: -c.score)
        if decides:
            # The lead is a sentence the model reads as an answer (at or above the threshold it refuses under),
            # where one is: the features alone may prefer a sentence that names the question's subject at length
            # and answers nothing ("VEEV is an arthropod-borne virus ..." for its mortality rate); over sentences
            # of another language only (its threshold never fitted there), one the relevance scale grades on it.
            accepted = next((c for c in pool if c.answers >= self.model.threshold
                             and (same or c.relevance >= min_relevance)), None)
            if accepted is not None and accepted is not pool[0]:
                pool.remove(accepted)
                pool.insert(0, accepted)
        asks = question_asks(text)
        paired = question_sides(text)
        # a question that weighs two things is answered by a sentence about each, whatever it asks
        choice = asks == "choice" or (bool(paired) and asks not in ("compare", "list"))
        extent = _EXTENT["choice" if choice else asks]
        lead = pool[0]
        # Over a sentence of another language the model reads a question it never learnt in that pairing
        # (a Japanese one as its English words): its sureness, fitted within one language, is not taken.
        if extent is _FACT and decides and (lead.answers < UNSURE_LEAD or lead.language != lang):
            extent = _UNSURE_FACT
        picked: list[Candidate] = [lead]
        words = len(lead.quote.split())
        seen = set(_WORD.findall(lead.quote.lower()))

        def fits(c: Candidate, parallel: bool = False, any_length: bool = False) -> bool:
            """Within the answer's words (unless `any_length`), not the sentence before the lead, and saying
            something not quoted already; `parallel`: a sentence about another side may say it in the words
            quoted of the first ("The E gene ... with a nucleotide identity of 100%")."""
            vocab = set(_WORD.findall(c.quote.lower()))
            return ((any_length or words + len(c.quote.split()) <= extent.words)
                    and (parallel or len(vocab & seen) <= 0.6 * len(vocab))
                    # the sentence before the lead would push the lead off the answer's first place
                    and not (c.sentence.source is lead.sentence.source and c.position == lead.position - 1))

        def take(c: Candidate) -> None:
            nonlocal words
            picked.append(c)
            words += len(c.quote.split())
            seen.update(_WORD.findall(c.quote.lower()))

        most = min(extent.sentences, self.max_sentences)
        at = {(id(c.sentence.source), c.position): c for c in candidates}

        def speaks_of(held: frozenset[str], side: Side) -> bool:
            """`held` (a sentence's terms) has the side's key or a third of its weight."""
            weight = sum(w for t, w in side.weights.items() if t in held)
            return side.key in held or weight >= sum(side.weights.values()) / 3

        def named_document(side: Side, among: list[Candidate]) -> str | None:
            """The one document of `among` whose title holds the side's key and every other word
            of it that some title holds (where several do, the one whose title is nothing more):
            the side is that document's subject, and a namesake's sentence does not speak of it
            ("Christopher Newton (Criminal)" beside the director's and the sculptor's pages; "the
            movies Wizards of the Lost Kingdom" beside "... II"). None when no one document is."""
            in_titles = frozenset().union(*(c.titled for c in among))
            words = {t for t in side.weights if t in in_titles}
            if side.key not in words:
                return None
            titles = {c.sentence.source.hit.document_id: c.titled for c in among if words <= c.titled}
            exact = [d for d, t in titles.items() if t == words] or list(titles)
            return exact[0] if len(exact) == 1 else None

        asked = self.scorer.query_terms(query)  # a Japanese question's with its nouns' English glosses

        def says_alike(c: Candidate, quotes: list[Candidate]) -> bool:
            """`c` says of its side what one of `quotes` says of another, in the same words (at least
            PARALLEL_WORDS of them beyond the question's and numbers: "For our big models, ... step
            time was 1.0 seconds." beside "For our base models ..., each training step took about 0.4
            seconds.")."""
            return any(sum(not t.isdigit() for t in (c.terms & q.terms) - asked) >= PARALLEL_WORDS for q in quotes)

        def speak_to(sides: list[Side], among: list[Candidate], weighed: bool) -> None:
            """A side no quote speaks of yet is answered by the best sentence of `among` that does,
            however it scores beside the lead; with `weighed` (the things the question weighs), by
            the best of those that say of it, and of no other side, what a quote says of another,
            where one does (above a sentence that only names it: the big model's dropout rate, when
            the base model's training time is quoted; not a restatement of that quote that names
            both), failing any, by the best sentence of a document whose title names it ("It was
            released in 1961."), and in words parallel to a quote's if need be. A side that is the
            title of one document among them is spoken of by that document alone."""
            def speaker(side: Side) -> Callable[[Candidate], bool]:
                own = named_document(side, among) if weighed else None
                if own is None:
                    return lambda c: speaks_of(c.terms, side)
                return lambda c: c.sentence.source.hit.document_id == own

            speakers = [speaker(side) for side in sides]
            for side, speaks in zip(sides, speakers):
                if len(picked) >= most or any(speaks(c) for c in picked):
                    continue
                free = [c for c in among if c not in picked and fits(c, parallel=weighed)]
                holders = [c for c in free if speaks(c)]
                of_others = lambda c: any(s(c) for s in speakers if s is not speaks)  # noqa: E731
                others = [c for c in picked if of_others(c)] if weighed else []
                holder = next((c for c in holders if not of_others(c) and says_alike(c, others)),
                              holders[0] if holders else None)
                if holder is None and weighed:
                    holder = next((c for c in free if speaks_of(c.titled, side)), None)
                if holder is not None:
                    take(holder)

        def speak_to_each() -> None:
            """Each thing the question weighs ("... first, A or B?"), from any sentence in the
            question's language (one about a side may share no word with the question but its
            name, under the relevance gate); then each rare name it asks about, from the gated pool."""
            if paired:
                speak_to(self._sides(query, paired),
                         sorted((c for c in candidates if c.language == lead.language), key=lambda c: -c.score), True)
            speak_to([Side({name: 1.0}, name) for name in self._names(query)], pool, False)

        if choice or paired:
            # yes or no, A or B, "Is A ... than B?": a sentence about each thing named comes before
            # more of the best, which could fill the answer (a comparison's five sentences of A)
            before = at.get((id(lead.sentence.source), lead.position - 1))
            if (before is not None and SET_AGAINST_BEFORE.match(lead.quote)
                    and words + len(before.quote.split()) <= extent.words):
                take(before)  # one quote with the lead, in the passage's order
            speak_to_each()
        documents = document_names(self.scorer.analyzer,
                                   {c.sentence.source.hit.document_id: c.sentence.source.hit for c in candidates})
        q_list = query.view("terms", lambda: self.scorer.analyzer.terms(text))
        reading = model_reading(query, candidates)

        def bridge(quote: Candidate) -> Candidate | None:
            """The best sentence of another retrieved document whose title `quote` names and the question does not:
            the next step of a question asked through something ("the director of film X": X's sentence names the
            director, whose page says where they were born), of any length where a comparison needs one a side."""
            named = documents_named(self.scorer.analyzer, quote.quote, documents, q_list, asked)
            named -= {c.sentence.source.hit.document_id for c in picked}
            steps = [c for c in candidates if c.sentence.source.hit.document_id in named
                     and c.language == lead.language and fits(c, parallel=True, any_length=bool(paired))]
            # a step names what it is about, qualifier and all, as the quote it follows does ("At the
            # age of 30 he ..." does not; nor does a list of namesakes: "Empress (disambiguation)");
            # failing one, its document opens with a sentence that names it in full ("Charles Edward
            # Anderson Berry (October 18, 1926 - ...)" on the page "Chuck Berry")
            step = max((c for c in steps if c.titled <= c.terms), key=lambda c: c.score, default=None)
            opening = (c for c in steps if c.position == 0
                       and c.terms.intersection(documents[c.sentence.source.hit.document_id].terms))
            step = step or next(opening, None)
            if step is None or not decides:
                return step
            # The step's page may answer in another sentence than the one naming it ("Schwartz died in Siversky,
            # ..."): the model reads its sentences for the question with its subject renamed the step.
            doc = step.sentence.source.hit.document_id
            subject = next((d for d in (quote.sentence.source.hit.document_id, *documents)
                            if in_a_row(documents[d].terms, q_list)), None)
            asked_of_step = subject and renamed(reading, documents[subject].name, documents[doc].name)
            if not asked_of_step:
                return step
            own = [step] + [c for c in steps if c.sentence.source.hit.document_id == doc and c is not step]
            return own[int(np.argmax(self.model.scores(asked_of_step, [c.quote for c in own])))]

        def linked_step(quote: Candidate) -> tuple[Candidate, Candidate] | None:
            """Where `quote` names no next step, the best sentence of its passage that does ("... and
            composer Jonny Greenwood.") and that step, within the answer's words."""
            for link in sorted((c for c in candidates if c.sentence.source is quote.sentence.source
                                and c not in picked and fits(c, parallel=True)), key=lambda c: -c.score):
                step = bridge(link)
                if step is not None and words + len(link.quote.split()) + len(step.quote.split()) <= extent.words:
                    return link, step
            return None

        # From the lead, or from the quote about each side: a question that weighs things asked through
        # them ("the director who is older, A or B?") takes a step from each, past its extent's
        # sentences. A question about one thing may take it through a link, one sentence more (a
        # question that weighs two is not: a side's passage names its cast, not what the question asks).
        steps_cap = most + (len(picked) - 1 if paired else 0)
        lead_step = None  # the step the lead leads to
        for quote in list(picked):
            step = bridge(quote) if len(picked) < steps_cap else None
            if step is None and not paired and len(picked) <= steps_cap and (linked := linked_step(quote)):
                take(linked[0])
                step = linked[1]
            if step is not None:
                take(step)
                lead_step = step if quote is lead else lead_step
        if extent is _UNSURE_FACT:
            # The model is unsure of the lead, which the features and its reading chose together: a
            # sentence it is sure answers comes next, however far the features rank it below.
            sure = next((c for c in pool[1:] if c.answers >= UNSURE_LEAD and c not in picked and fits(c)), None)
            if sure is not None:
                take(sure)
        for c in pool[1:]:
            if len(picked) >= most or c.score < lead.score - extent.margin:
                break
            if c not in picked and fits(c):
                take(c)
        if not (choice or paired):
            speak_to_each()
        if (extent in (_FACT, _UNSURE_FACT) and len(picked) == 1 and words < SHORT_ANSWER
                and lead.language != "ja"):  # a Japanese sentence is not counted in words
            after = at.get((id(lead.sentence.source), lead.position + 1))
            if after is not None and words + len(after.quote.split()) <= extent.words:  # the extent's bound
                take(after)
        if decides and not (choice or paired):  # a choice keeps its sides in the order they came
            # A question asked through something is answered by the step, where the model is unsure
            # that the lead answers ("X is a 1989 film directed by Jim Wynorski." for "Where was the
            # director of X born?"; not "Gia Coppola (born January 1, 1987) ..., granddaughter of
            # Francis Ford Coppola" for "When was Gia Coppola born?").
            stepped = lead_step is not None and lead.answers < UNSURE_LEAD
            reads_best = lead_step if stepped else max(picked, key=lambda c: c.answers)
            if stepped or reads_best.answers >= lead.answers + MODEL_FIRST:
                picked.remove(reads_best)
                picked.insert(0, reads_best)
        # Adjacent sentences of one passage become one quote, in the passage's order, where the
        # first of them was picked.
        quotes: list[list[Candidate]] = []
        for c in picked:
            joined = next((q for q in quotes if q[0].sentence.source is c.sentence.source
                           and any(abs(x.position - c.position) == 1 for x in q)), None)
            if joined is None:
                quotes.append([c])
            else:
                joined.append(c)
                joined.sort(key=lambda x: x.position)
        # A quote that ends announcing a list ("... from four elements:") takes the items that follow.
        for q in quotes:
            while q[-1].quote.endswith((":", "：")) and len(q) < 6 and words < extent.words + 60:
                nxt = at.get((id(q[-1].sentence.source), q[-1].position + 1))
                if nxt is None or any(nxt is c for quote in quotes for c in quote):
                    break
                q.append(nxt)
                words += len(nxt.quote.split())
        return quotes, note
