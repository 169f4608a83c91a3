"""The offline reader: which retrieved sentences answer the question, and how many to quote.

Similarity alone picks sentences that restate the question. The reader scores each quotable
sentence of the retrieved passages by how likely it is to hold the answer: its meaning and the
question's rare terms (as the local relevance scorer has them), the terms of the sentences around
it (an answer often says "it" where the question names the thing), whether it carries what the
question asks for (a number for "how many", a reason for "why" ...), how much it says beyond the
question's own words, and how well retrieval ranked its passage. The weights of those features
are a logistic model fitted on half of covidqa-dev's papers (the fitting script is in the
repository's benchmarks; figures are reported on the other half); the trained cross-encoder
(`cross_encoder.py`) reads the sentences they rank best. The reader chooses the lead, and
`compose.py` puts the answer together from it: one or two sentences for a fact or a definition,
more for a list, a comparison, a reason or a method.

Nothing is quoted from captions, references or front matter, headings, title lines, figure or
table text, or reference entries inside body text (`quotes.py`); a sentence in the question's
language is preferred when the passages have one that answers.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from ..nlp.abbreviations import defined_abbreviations, question_forms, spelled_out
from ..nlp.glossary import GLOSS_CONTEXT, shared_glossary
from ..nlp.lang import detect_language
from ..query import Query
from .context import Source
from .compose import Candidate, Draft
from .cross_encoder import ReaderModel
from .definitions import defines, term_asked
from .names import ASKED_PAPER, letter_names, subject_document
from .question_wording import asks_to_choose, carries, is_question, question_asks, question_sides
from .quotes import clean_quote, quotable
from .relevance import LocalRelevanceScorer, Sentence, sentences_of

# ---------------------------------------------------------------------------- languages

# How much better (log-odds) a sentence in another language must be to be quoted before one in
# the question's language.
LANGUAGE_MARGIN = 1.5


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
        return query.view("english reading",
                          lambda: shared_glossary().english_reading(query.text, query.known(GLOSS_CONTEXT)))
    return query.text


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
        rank = {id(source): i + 1 for i, source in enumerate(sources)}  # the sources' order, not their numbers
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
                1.0 if carries(asks, quote) else 0.0,
                len(new_terms) / len(own) if own else 0.0,
                1.0 / math.sqrt(rank[id(s.source)]),
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
            # A question that names a retrieved document by its whole title ("... of film The Outlaw Express?"),
            # or a paper by the name citing papers give it (ASKED_PAPER: "... to train the Transformer?"), is
            # about it: the best sentence of its page leads, not a namesake's ("Outlaw Express is a 1938
            # film ...") nor one of the next step's page read for the question as asked; the step follows it.
            if not question_sides(text):
                titles = {c.sentence.source.hit.document_id: c.sentence.source.hit.document_title for c in candidates}
                subject = query.known(ASKED_PAPER) or subject_document(text, titles)
                own = next((c for c in pool if c.sentence.source.hit.document_id == subject), None)
                if own is not None and own is not pool[0]:
                    pool.remove(own)
                    pool.insert(0, own)
        # A question that asks what a thing is ("What is FlashAttention?") is answered by the best sentence
        # that says it (definitions.py: "We propose FlashAttention, an IO-aware exact attention algorithm
        # ..."), failing one by the best that spells out its abbreviation, of the paper it names where it
        # names one: not by one that only mentions the thing.
        term = term_asked(query)
        if term:
            paper = query.known(ASKED_PAPER)
            said = max((c for c in pool if paper in (None, c.sentence.source.hit.document_id)),
                       key=lambda c: (defines(c.quote, term), c is pool[0], c.score), default=None)
            if said is not None and defines(said.quote, term) > defines(pool[0].quote, term):
                pool.remove(said)
                pool.insert(0, said)
        draft = Draft(query, candidates, pool, self.scorer, self.term_weights, self.model, self.max_sentences,
                      decides, model_reading(query, candidates))
        return draft.compose(), note
