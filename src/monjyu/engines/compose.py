"""How the offline reader's answer is put together, once its lead is chosen (`Reader.pick`).

An answer leads with the best sentence and stops when the question is answered: one or two
sentences for a fact or a definition, more for a list, a comparison, a reason or a method
(`Extent`). Where the question weighs things ("..., A or B?") or names rare things, a sentence
about each comes before more of the best; where it is asked through something ("the director of
film X"), the answer takes the step to the page the quote names (`Draft.bridge`). Adjacent
sentences of one passage become one quote.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import NamedTuple

import numpy as np

from ..nlp.glossary import GLOSS_CONTEXT, with_english_glosses
from ..query import Query
from .cross_encoder import ReaderModel
from .definitions import defines, term_asked
from .names import ASKED_PAPER, capitalised_terms, document_names, documents_named, in_a_row, letter_names, renamed
from .question_wording import SET_AGAINST, amount_units, carries, question_asks, question_sides, weighed_by
from .quotes import clean_quote
from .relevance import LocalRelevanceScorer, Sentence


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
# sentence the model is sure of (UNSURE_LEAD or more) comes first of the others.
UNSURE_LEAD = 2.0
_UNSURE_FACT = Extent(3, 80, 2.0)
# Of the sentences an answer quotes (chosen by the features and the model together), the one the
# model reads as the answer by this much more log-odds than the lead comes first: the features
# weigh the question's own words, which a sentence that only restates it carries too. Chosen on the
# validation sets (benchmarks page): 0.5 and 1 gave the held quarter's first sentence the most, and
# at 0 (any sentence read better) SQuAD's held-out articles lost 11 first sentences of 1,803.
MODEL_FIRST = 1.0
# An answer that is one sentence of fewer words than this goes on with the sentence after it in its
# paragraph (not the next paragraph's: a footnote's line was followed by body text), whatever it asks
# for (a fact, a list, a reason; not a choice, which quotes each side): a short sentence the
# question's words lead to is often one that announces the answer ("NDV has a number of appealing
# qualities as a vaccine vector."), and the next one gives it. Not fitted: on the validation sets
# (benchmarks page) 25 held a little more, for 3 more words.
SHORT_ANSWER = 20
# Two sentences say the same of two things when they share this many words besides the question's
# ("step", "time", "seconds"): one about a side that parallels a quote about the other is quoted
# before one that only names it. Not fitted.
PARALLEL_WORDS = 2
# Where the quotes about a side name the other side too, the model reads this many of the side's own
# sentences (best first) for the question asked of that side alone (`Draft.state_apart`). Not fitted.
READ_APART = 10
# A sentence that opens by setting itself against the one before ("On the contrary, the mortality in
# Wuhan ranged from 11 to 15%." after "... our patients had zero mortality."): for a question that
# weighs two things, the sentence before is the other side, and is quoted with it. ("Similarly, ..."
# adds one more of a kind; the sentence before it is not the other side.)
SET_AGAINST_BEFORE = re.compile(r"^(On the contrary|In contrast|By contrast|Conversely|On the other hand|"
                                r"In comparison|By comparison)\b|^(一方|これに対し|それに対し|対照的に)")
# A "where" question's lead that gives its place only as "there", its last word ("The full evaluation
# results of PaLM on BIG-bench will be made available there."): the place is in the sentence before
# it ("The benchmark is hosted at https://..."), which is quoted with it.
PLACE_BEFORE = re.compile(r"\bthere\W*$", re.I)

_WORD = re.compile(r"[^\W_]+")


def same_paragraph(first: Sentence, then: Sentence) -> bool:
    """Whether `then` goes on in the paragraph of `first`, before it in one passage: no blank line
    between them."""
    hit = first.source.hit
    return "\n\n" not in hit.text[first.end_char - hit.start_char:then.start_char - hit.start_char]


@dataclass
class Candidate:
    """A quotable sentence of the retrieved passages, as the reader scores it (`Reader.candidates`)."""

    sentence: Sentence
    position: int  # index among its passage's statements
    language: str
    features: np.ndarray  # the reader's FEATURES
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


class Side(NamedTuple):
    """A thing a question weighs ("..., A or B?")."""

    weights: dict[str, float]  # the terms it is known by that the other sides lack, with their IDF
    key: str  # the term that names it most surely
    asked: str = ""  # the question as asked of it alone, the other sides taken out (`asked_of`); "": not read


def asked_of(question: str, others: list[str]) -> str:
    """`question` with each of `others` taken out, with the "or", と or "than" that joins it to its side:
    "Which ..., SARS-CoV in 2003 or MERS-CoV since 2012?" asked of SARS-CoV is "Which ..., SARS-CoV
    in 2003?"."""
    for other in others:
        # "Did infections among crew members peak before those among passengers?" asked of passengers:
        # they take the other side's place, and the comparison goes ("Did infections among passengers?")
        if m := re.search(rf"{re.escape(other)}(?P<between>.*?)\s+{SET_AGAINST}\s+(?P<side>.+?)(?=[?？,;]|$)", question):
            question = question[:m.start()] + m["side"] + m["between"] + question[m.end():]
            continue
        question = re.sub(rf"(?:,?\s+or\s+|と|\s+{SET_AGAINST}\s+)?{re.escape(other)}(?:,?\s+or\b|と)?", "", question,
                          count=1)
    return re.sub(r"\s+([?？,:])", r"\1", " ".join(question.split()))


def speaks_of(held: frozenset[str], side: Side) -> bool:
    """`held` (a sentence's terms) has the side's key or a third of its weight."""
    weight = sum(w for t, w in side.weights.items() if t in held)
    return side.key in held or weight >= sum(side.weights.values()) / 3


def named_document(side: Side, among: list[Candidate]) -> str | None:
    """The one document of `among` whose title holds the side's key and every other word of it
    that some title holds (where several do, the one whose title is nothing more): the side is that
    document's subject, and a namesake's sentence does not speak of it ("Christopher Newton
    (Criminal)" beside the director's and the sculptor's pages; "the movies Wizards of the Lost
    Kingdom" beside "... II"). None when no one document is."""
    in_titles = frozenset().union(*(c.titled for c in among))
    words = {t for t in side.weights if t in in_titles}
    if side.key not in words:
        return None
    titles = {c.sentence.source.hit.document_id: c.titled for c in among if words <= c.titled}
    exact = [d for d, t in titles.items() if t == words] or list(titles)
    return exact[0] if len(exact) == 1 else None


class Draft:
    """One answer being put together from the lead: the sentences picked so far, their words, and
    the rules by which more are added (`compose`)."""

    def __init__(self, query: Query, candidates: list[Candidate], pool: list[Candidate], scorer: LocalRelevanceScorer,
                 term_weights: Callable[[set[str]], dict[str, float]] | None, model: ReaderModel | None,
                 max_sentences: int, decides: bool, reading: str):
        """`pool`: the sentences that may answer, best first (`pool[0]` leads); `candidates`: every
        scored sentence, which a side or a step may come from; the reader's `scorer`, `term_weights`,
        `model` and `max_sentences` (`Reader`); `decides`: the model decides whether and how surely
        the passages answer (`Reader.model_decides`); `reading`: the question as the model reads it
        (`reader.model_reading`)."""
        self.query, self.candidates, self.pool, self.decides, self.reading = query, candidates, pool, decides, reading
        self.scorer, self.term_weights, self.model = scorer, term_weights, model
        self.analyzer = analyzer = scorer.analyzer
        text = query.text
        self.asks = question_asks(text)
        self.paired = question_sides(text)
        self.measure = weighed_by(text)  # what the things it weighs are weighed by: an amount, a date, ""
        self.term = term_asked(query)  # what the question asks to be defined ("What is X?"), or ""
        # a question that weighs two things is answered by a sentence about each, whatever it asks
        self.choice = self.asks == "choice" or (bool(self.paired) and self.asks not in ("compare", "list"))
        self.extent = _EXTENT["choice" if self.choice else self.asks]
        self.lead = lead = pool[0]
        # Over a sentence of another language the model reads a question it never learnt in that pairing
        # (a Japanese one as its English words): its sureness, fitted within one language, is not taken.
        if self.extent is _FACT and decides and (lead.answers < UNSURE_LEAD or lead.language != query.language):
            self.extent = _UNSURE_FACT
        self.picked: list[Candidate] = [lead]
        self.words = len(lead.quote.split())
        self.seen = set(_WORD.findall(lead.quote.lower()))
        self.most = min(self.extent.sentences, max_sentences)
        self.at = {(id(c.sentence.source), c.position): c for c in candidates}
        self.asked = scorer.query_terms(query)  # a Japanese question's with its nouns' English glosses
        # the retrieved documents by name, and the question's terms in order: where a quote's names lead
        self.documents = document_names(analyzer, {c.sentence.source.hit.document_id: c.sentence.source.hit
                                                   for c in candidates})
        self.q_list = query.view("terms", lambda: analyzer.terms(text))

    # ------------------------------------------------------------------------ picking a sentence

    def fits(self, c: Candidate, parallel: bool = False, any_length: bool = False, before_lead: bool = False) -> bool:
        """Within the answer's words (unless `any_length`), not the sentence before the lead (unless
        `before_lead`), and saying something not quoted already; `parallel`: a sentence about another
        side may say it in the words quoted of the first ("The E gene ... with a nucleotide identity
        of 100%")."""
        vocab = set(_WORD.findall(c.quote.lower()))
        lead = self.lead
        return ((any_length or self.words + len(c.quote.split()) <= self.extent.words)
                and (parallel or len(vocab & self.seen) <= 0.6 * len(vocab))
                # the sentence before the lead would push the lead off the answer's first place
                and (before_lead or not (c.sentence.source is lead.sentence.source
                                         and c.position == lead.position - 1)))

    def take(self, c: Candidate) -> None:
        self.picked.append(c)
        self.words += len(c.quote.split())
        self.seen.update(_WORD.findall(c.quote.lower()))

    # ------------------------------------------------------------------------ the things it weighs

    def names(self) -> list[str]:
        """The rare names of the question (terms of its capitalised words, not the first, with an
        IDF at least half the rarest term's), rarest first: the things it asks about, each of
        which an answer should speak to ("Which film came first, Aas Ka Panchhi or Phoolwari?")."""
        terms = self.scorer.query_terms(self.query)
        weights = (self.term_weights(set(terms)) if self.term_weights else None) or {}
        top = max(weights.values(), default=0.0)
        # a Latin name opening a Japanese question is a name all the same
        opening = " " if self.query.language == "ja" else ""
        capitalised = capitalised_terms(self.analyzer, opening + self.query.text)
        return sorted((t for t in terms & capitalised if top and weights.get(t, 0.0) >= 0.5 * top),
                      key=lambda t: (-weights[t], t))

    def sides(self) -> list[Side]:
        """For each thing the question weighs (`paired`, from question_sides): the terms it is
        known by that the other sides lack, with their IDF, and its key, the rarest of them that
        is written capitalised ("Shenzhen" in "the patients managed by the Shenzhen team"), else
        the rarest."""
        analyzer = self.analyzer
        # a Japanese side is also known by the English glosses of its nouns (旅行者: traveller), as
        # the question's terms are
        lang, context = self.query.language, self.query.known(GLOSS_CONTEXT)
        sides = [set(with_english_glosses(side, analyzer.terms(side), lang, context)) | letter_names(analyzer, side)
                 for side in self.paired]
        own = [side.difference(*(other for other in sides if other is not side)) for side in sides]
        weights = (self.term_weights(set().union(*own)) if self.term_weights else None) or {}
        # the model reads a side's own question in the words it was asked (a Japanese question over
        # English papers is read as its English words, from which no side can be taken out), where
        # the question says more than its sides ("Is A larger than B?" asked of B is "B?")
        sides_say = set().union(*sides)
        readable = (self.model is not None and self.reading == self.query.text
                    and any(t not in sides_say for t in self.q_list))
        out = []
        for side, text in zip(own, self.paired):
            if side:
                named = side & capitalised_terms(analyzer, " " + text)
                asked = asked_of(self.query.text, [p for p in self.paired if p is not text]) if readable else ""
                out.append(Side({t: weights.get(t, 1.0) for t in side},
                                max(named or side, key=lambda t: (weights.get(t, 1.0), t)), asked))
        return out

    def says_alike(self, c: Candidate, quotes: list[Candidate]) -> bool:
        """`c` says of its side what one of `quotes` says of another, in the same words (at least
        PARALLEL_WORDS of them beyond the question's and numbers: "For our big models, ... step
        time was 1.0 seconds." beside "For our base models ..., each training step took about 0.4
        seconds.")."""
        return any(sum(not t.isdigit() for t in (c.terms & q.terms) - self.asked) >= PARALLEL_WORDS
                   for q in quotes)

    def speak_to(self, sides: list[Side], among: list[Candidate], weighed: bool) -> None:
        """A side no quote speaks of yet is answered by the best sentence of `among` that does,
        however it scores beside the lead; with `weighed` (the things the question weighs), of any
        length (a long lead does not crowd a side out), of those that state a date or an amount
        where the question weighs the sides by one (`stating_the_measure`), of those an amount in the
        unit another side's quote states its own in (`in_like_units`), and by the best of
        those that say of it, and of no other side, what a quote says of another (of several that
        state an amount, the one the model reads best as the question asked of that side: a
        model's total training time, not its step time, for "which needed more training time"),
        where one does (above a sentence that only names it: the big model's dropout rate, when
        the base model's training time is quoted; not a restatement of that quote that names
        both), failing any, by the best sentence of a document whose title names it ("It was
        released in 1961."), and in words parallel to a quote's if need be. A side that is the
        title of one document among them is spoken of by that document alone. A side whose every quote
        names another side too may still get a sentence of its own (`parallel_apart`, else `state_apart` or
        `relevant_apart`)."""
        def speaker(side: Side) -> Callable[[Candidate], bool]:
            own = named_document(side, among) if weighed else None
            if own is None:
                return lambda c: speaks_of(c.terms, side)
            return lambda c: c.sentence.source.hit.document_id == own

        speakers = [speaker(side) for side in sides]
        for side, speaks in zip(sides, speakers):
            if len(self.picked) >= self.most:
                continue
            of_others = lambda c: any(s(c) for s in speakers if s is not speaks)  # noqa: E731
            if spoken := [c for c in self.picked if speaks(c)]:
                if weighed and all(map(of_others, spoken)):
                    alone = [c for c in among if c not in self.picked and speaks(c) and not of_others(c)]
                    apart = [c for c in self.picked if of_others(c) and not speaks(c)]
                    if (parallel := self.parallel_apart(alone, apart)) is not None:
                        self.take(parallel)
                    elif side.asked:
                        self.state_apart(side.asked, spoken, alone)
                    elif self.measure and self.reading != self.query.text:
                        self.relevant_apart(alone)
                continue
            free = [c for c in among if c not in self.picked and self.fits(c, parallel=weighed, any_length=weighed)]
            others = [c for c in self.picked if of_others(c)] if weighed else []
            holders = self.stating_the_measure([c for c in free if speaks(c)], weighed)
            holders = self.in_like_units(holders, others) or holders
            holders = [c for c in holders if not of_others(c) and self.says_alike(c, others)] or holders
            # of several amounts a side states (its step time, its total training time), the model
            # reads which one the question asks of it; a date is one a thing (its birth, its release)
            reads = weighed and side.asked and self.measure == "amount"
            holder = self.read_for(side.asked, holders) if reads else next(iter(holders), None)
            if holder is None and weighed:
                holder = next(iter(self.stating_the_measure([c for c in free if speaks_of(c.titled, side)], weighed)),
                              None)
            if holder is not None:
                self.take(holder)

    def read_for(self, asked: str, sentences: list[Candidate]) -> Candidate | None:
        """The best of the first READ_APART `sentences` as the model reads the question `asked` of
        one side alone; the first where there is one."""
        sentences = sentences[:READ_APART]
        if len(sentences) < 2:
            return next(iter(sentences), None)
        return sentences[int(np.argmax(self.model.scores(asked, [c.quote for c in sentences])))]

    def stating_the_measure(self, sentences: list[Candidate], weighed: bool) -> list[Candidate]:
        """Where the things a question weighs are weighed by a date ("Which came out first, ...?") or
        an amount ("Were more cases diagnosed on the ship than ...?"), those of `sentences` that state
        one, where some do: "199 symptomatic cases have been diagnosed on board", not "An outbreak
        ... has occurred on a cruise ship, the Diamond Princess."."""
        if not (weighed and self.measure):
            return sentences
        return [c for c in sentences if carries(self.measure, c.quote)] or sentences

    def in_like_units(self, sentences: list[Candidate], others: list[Candidate]) -> list[Candidate]:
        """Where the question weighs the sides by an amount, those of `sentences` that state one in a
        unit the quotes about the other sides (`others`) state theirs in: beside "89% nucleotide
        identity with bat SL-CoVZXC21", RaTG13's "... shared ∼96% homology ...", not its "... greater
        than 1,100 nt differences ..."; none where the question weighs no amount."""
        if self.measure != "amount" or not others:
            return []
        units = set().union(*(amount_units(c.quote) for c in others))
        return [c for c in sentences if amount_units(c.quote) & units]

    def parallel_apart(self, alone: list[Candidate], apart: list[Candidate]) -> Candidate | None:
        """Where every quote about a side names the other too: the best of the side's own sentences
        (`alone`) that says of it what a quote about another side alone (`apart`) from the same
        document says of that one ("... the peak incidence was identified for the period from 2 to 4
        February among passengers ..." beside "The epidemic peak among crew members was seen for the
        period from 8 to 10 February 2020."), as a side no quote speaks of takes one; None where
        none does. A paper reports the groups it sets side by side in like words; a like sentence of
        another paper is a coincidence of its words ("... parameters ...")."""
        def document(c: Candidate) -> str:
            return c.sentence.source.hit.document_id

        return next((c for c in alone if self.fits(c, parallel=True, before_lead=True)
                     and self.says_alike(c, [q for q in apart if document(q) == document(c)])), None)

    def state_apart(self, asked: str, spoken: list[Candidate], alone: list[Candidate]) -> None:
        """Where every quote about a side names the other too, they may say what the question asks of
        one only ("... two main modifications: squaring ReLU activations and adding a depthwise
        convolution ...", asked which is the most effective): the model reads the question as asked
        of this side (`Side.asked`) over them and the best READ_APART of the side's own sentences, and
        the best of those is quoted where it reads at least as well as they do. It may be the sentence
        before the lead ("This net achieved 67 test errors whereas a smaller net ... with no
        regularization achieved 146 errors.", before the soft-targets net's 74)."""
        alone = [c for c in alone if self.fits(c, parallel=True, before_lead=True)][:READ_APART]
        if not alone:
            return
        scores = self.model.scores(asked, [c.quote for c in spoken + alone])
        best = int(np.argmax(scores[len(spoken):]))
        if scores[len(spoken) + best] >= max(scores[:len(spoken)]):
            self.take(alone[best])

    def relevant_apart(self, alone: list[Candidate]) -> None:
        """`state_apart` where the model cannot read the question as asked of the side (a Japanese
        question over English sentences, read as its English words) and the question weighs the sides
        by a date or an amount: of the side's own sentences that state one and pass the answer's
        relevance gate (the pool), the one that holds most of the question's words (the local
        scorer's relevance)."""
        gated = {id(c) for c in self.pool}
        alone = [c for c in alone if id(c) in gated and carries(self.measure, c.quote)
                 and self.fits(c, parallel=True, before_lead=True)]
        if alone:
            self.take(max(alone, key=lambda c: c.relevance))

    def speak_to_each(self) -> None:
        """Each thing the question weighs ("... first, A or B?"), from any sentence in the
        question's language (one about a side may share no word with the question but its
        name, under the relevance gate); then each rare name it asks about, from the gated pool."""
        if self.paired:
            self.speak_to(self.sides(), sorted((c for c in self.candidates if c.language == self.lead.language),
                                               key=lambda c: -c.score), True)
        self.speak_to([Side({name: 1.0}, name) for name in self.names()], self.pool, False)

    # ------------------------------------------------------------------------ steps to another page

    def bridge(self, quote: Candidate) -> Candidate | None:
        """The best sentence of another retrieved document whose title `quote` names and the question does not:
        the next step of a question asked through something ("the director of film X": X's sentence names the
        director, whose page says where they were born), of any length where a comparison needs one a side."""
        documents, q_list = self.documents, self.q_list
        named = documents_named(self.analyzer, quote.quote, documents, q_list, self.asked)
        named -= {c.sentence.source.hit.document_id for c in self.picked}
        steps = [c for c in self.candidates if c.sentence.source.hit.document_id in named
                 and c.language == self.lead.language and self.fits(c, parallel=True, any_length=bool(self.paired))]
        # a step names what it is about, qualifier and all, as the quote it follows does ("At the
        # age of 30 he ..." does not; nor does a list of namesakes: "Empress (disambiguation)");
        # failing one, its document opens with a sentence that names it in full ("Charles Edward
        # Anderson Berry (October 18, 1926 - ...)" on the page "Chuck Berry")
        step = max((c for c in steps if c.titled <= c.terms), key=lambda c: c.score, default=None)
        opening = (c for c in steps if c.position == 0
                   and c.terms.intersection(documents[c.sentence.source.hit.document_id].terms))
        step = step or next(opening, None)
        if step is None or not self.decides:
            return step
        # The step's page may answer in another sentence than the one naming it ("Schwartz died in Siversky,
        # ..."): the model reads its sentences for the question with its subject renamed the step.
        doc = step.sentence.source.hit.document_id
        subject = next((d for d in (quote.sentence.source.hit.document_id, *documents)
                        if in_a_row(documents[d].terms, q_list)), None)
        asked_of_step = subject and renamed(self.reading, documents[subject].name, documents[doc].name)
        if not asked_of_step:
            return step
        own = [step] + [c for c in steps if c.sentence.source.hit.document_id == doc and c is not step]
        # Of them, those that carry what the question asks, where one does: a place for "where was he born?"
        # ("Born into a middle-class family in St. Louis, ..." and not the opening "Charles Edward Anderson
        # Berry (October 18, 1926 - March 18, 2017) was ...", which the model reads for a birth). Not for a
        # person: two capitalised words, which most sentences of a person's page hold.
        if self.asks != "person":
            own = [c for c in own if carries(self.asks, c.quote)] or own
        return own[int(np.argmax(self.model.scores(asked_of_step, [c.quote for c in own])))]

    def linked_step(self, quote: Candidate) -> tuple[Candidate, Candidate] | None:
        """Where `quote` names no next step, the best sentence of its passage that does ("... and
        composer Jonny Greenwood.") and that step, within the answer's words."""
        for link in sorted((c for c in self.candidates if c.sentence.source is quote.sentence.source
                            and c not in self.picked and self.fits(c, parallel=True)), key=lambda c: -c.score):
            step = self.bridge(link)
            if step is not None and self.words + len(link.quote.split()) + len(step.quote.split()) <= self.extent.words:
                return link, step
        return None

    def take_steps(self) -> Candidate | None:
        """From the lead, or from the quote about each side: a question that weighs things asked through
        them ("the director who is older, A or B?") takes a step from each, past its extent's sentences.
        A question about one thing may take it through a link, one sentence more (a question that weighs
        two is not: a side's passage names its cast, not what the question asks). Returns the step the
        lead leads to."""
        paired, picked = self.paired, self.picked
        steps_cap = self.most + (len(picked) - 1 if paired else 0)
        lead_step = None
        for quote in list(picked):
            step = self.bridge(quote) if len(picked) < steps_cap else None
            if step is None and not paired and len(picked) <= steps_cap and (linked := self.linked_step(quote)):
                self.take(linked[0])
                step = linked[1]
            if step is not None:
                self.take(step)
                lead_step = step if quote is self.lead else lead_step
        return lead_step

    # ------------------------------------------------------------------------ the whole answer

    def compose(self) -> list[list[Candidate]]:
        """The quotes (runs of adjacent sentences of one passage), best first."""
        lead, extent, picked, at = self.lead, self.extent, self.picked, self.at
        weighs = self.choice or bool(self.paired)
        if weighs:
            # yes or no, A or B, "Is A ... than B?": a sentence about each thing named comes before
            # more of the best, which could fill the answer (a comparison's five sentences of A)
            self.take_set_against(lead)  # one quote with the lead, in the passage's order
            self.speak_to_each()
        elif self.asks == "place" and PLACE_BEFORE.search(lead.quote):
            # the sentence before, in its paragraph, that says where "there" is
            self.take_before(lead, lambda before: same_paragraph(before.sentence, lead.sentence)
                             and carries("place", before.quote))
        lead_step = self.take_steps()
        if extent is _UNSURE_FACT:
            # The model is unsure of the lead, which the features and its reading chose together: a
            # sentence it is sure answers comes next, however far the features rank it below.
            sure = next((c for c in self.pool[1:] if c.answers >= UNSURE_LEAD and c not in picked and self.fits(c)),
                        None)
            if sure is not None:
                self.take(sure)
        for c in self.pool[1:]:
            if len(picked) >= self.most or c.score < lead.score - extent.margin:
                break
            if c not in picked and self.fits(c):
                self.take(c)
        if not weighs:
            self.speak_to_each()
        else:
            # a later quote that sets itself against the sentence before it takes that sentence too, as
            # the lead does above (a Japanese question's lead may name both sides, and "On the
            # contrary, ..." come after it for one of them)
            for c in picked[1:]:
                self.take_set_against(c)
        if (not weighs and len(picked) == 1 and self.words < SHORT_ANSWER
                and lead.language != "ja"):  # a Japanese sentence is not counted in words
            after = at.get((id(lead.sentence.source), lead.position + 1))
            if (after is not None and same_paragraph(lead.sentence, after.sentence)
                    and self.words + len(after.quote.split()) <= extent.words):  # the extent's bound
                self.take(after)
        if self.decides and not weighs:  # a choice keeps its sides in the order they came
            # A question asked through something is answered by the step, where the model is unsure
            # that the lead answers ("X is a 1989 film directed by Jim Wynorski." for "Where was the
            # director of X born?"; not "Gia Coppola (born January 1, 1987) ..., granddaughter of
            # Francis Ford Coppola" for "When was Gia Coppola born?").
            stepped = lead_step is not None and lead.answers < UNSURE_LEAD
            # a question about a paper (ASKED_PAPER) is answered from it, whatever another paper says
            paper = self.query.known(ASKED_PAPER)
            own = [c for c in picked if c.sentence.source.hit.document_id == paper] or picked
            reads_best = lead_step if stepped else max(own, key=lambda c: c.answers)
            # (a lead that says what the thing asked about is, `definitions.py`, stays first)
            if stepped or (reads_best.answers >= lead.answers + MODEL_FIRST
                           and defines(lead.quote, self.term) <= defines(reads_best.quote, self.term)):
                picked.remove(reads_best)
                picked.insert(0, reads_best)
        return self.quotes()

    def take_set_against(self, c: Candidate) -> None:
        """Where `c` opens by setting itself against the sentence before it (SET_AGAINST_BEFORE), that
        sentence, the other side's."""
        if SET_AGAINST_BEFORE.match(c.quote):
            self.take_before(c, lambda before: True)

    def take_before(self, c: Candidate, wanted: Callable[[Candidate], bool]) -> None:
        """The sentence before `c` in its passage, where `wanted`, within the answer's words (`fits`:
        whatever words the two share, and before the lead too)."""
        before = self.at.get((id(c.sentence.source), c.position - 1))
        if (before is not None and before not in self.picked and wanted(before)
                and self.fits(before, parallel=True, before_lead=True)):
            self.take(before)

    def quotes(self) -> list[list[Candidate]]:
        """Adjacent sentences of one passage become one quote, in the passage's order, where the
        first of them was picked; a quote that ends announcing a list ("... from four elements:")
        takes the items that follow."""
        quotes: list[list[Candidate]] = []
        for c in self.picked:
            joined = next((q for q in quotes if q[0].sentence.source is c.sentence.source
                           and any(abs(x.position - c.position) == 1 for x in q)), None)
            if joined is None:
                quotes.append([c])
            else:
                joined.append(c)
                joined.sort(key=lambda x: x.position)
        for q in quotes:
            while q[-1].quote.endswith((":", "：")) and len(q) < 6 and self.words < self.extent.words + 60:
                nxt = self.at.get((id(q[-1].sentence.source), q[-1].position + 1))
                if nxt is None or any(nxt is c for quote in quotes for c in quote):
                    break
                q.append(nxt)
                self.words += len(nxt.quote.split())
        return quotes
