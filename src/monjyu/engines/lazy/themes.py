"""Global questions answered from the community hierarchy, without an LLM.

"What are the main themes of these papers?" names nothing a relevance test can look for, so
testing sentences against it finds none. The Level 1 communities are the collection's themes
already: groups of noun phrases that occur together. A thematic answer takes the communities that
matter (for the whole collection: those whose passages span the most documents; for "what do
these papers say about X": those holding the best passages about X) and writes one theme for each;
when that level gives fewer than MAX_THEMES themes on a topic, the next finer level's communities
within those that gave none are read after it.

A community's passages are all those naming one of its phrases, so at a coarse level most
passages lie in several communities. A theme's label is drawn from its community's own passages:
those whose phrases (weighted by rarity) lie more in it than in any other community of its level
(`own_rows`). The label is two or three phrases that stand for those passages: each far more
frequent there than in the whole collection, never a stock research word ("study", "evidence",
"management"), ordered by how many of the passages name it, and written as the papers write them
("MERS-CoV", "species"), not as the graph keeps them (lower case, the head lemmatised:
"mers-cov", "specie"). Its quotes are sentences of its passages (back matter left out) naming
those phrases, from the passages closest to its own (and, for a topic, to the topic), from
different papers where it can; a quote naming more of another theme's label than of its own goes.
Themes are diverse: no label shares more than half its phrases with an earlier one. The heading
is a sentence, in the question's language, saying how much of the collection the themes cover.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from ...ingest.sentences import is_title_line, statement_spans
from ...nlp.analyzer import Analyzer
from ...nlp.lang import detect_language
from ...nlp.spelling import spellings, written_form
from ...query import Query
from ...retrieval import Searcher
from ...schemas import SearchFilters
from ...retrieval.communities import Community
from ...types import Answer, Citation
from ..citations import citation_for
from ..context import Source
from ..quotes import clean_quote, quotable_span
from ..relevance import LocalRelevanceScorer

# Words that say "about the collection" rather than what it is about: a question made only of
# these (and stop words) asks about the whole collection; the rest of its phrases is its topic.
_CUE_TERMS = {
    "en": set("""theme themes main topic topics idea ideas finding findings trend trends overview overall summary
                 summarize summarise general collection corpus paper papers document documents article articles
                 these those all whole across common pattern patterns key say says said report reports
                 discuss discussed describe described give tell used use what which how
                 study studied studies examine examined investigate investigated explore explored cover covered
                 address addressed research researched""".split()),
    "ja": {"テーマ", "主", "全体", "要約", "概要", "概観", "傾向", "まとめ", "全般", "俯瞰", "文書", "論文", "群",
           "共通", "要点", "知見", "点", "何", "こと", "もの", "的"},
}
_WORD = re.compile(r"[0-9A-Za-z\u00c0-\u024f]+")
# Words of any research report: a label made of them says nothing of its theme ("study,
# evidence, management"). A longer phrase holding one ("age group") may still label a theme.
STOCK_PHRASES = frozenset("""
study research evidence finding result analysis data datum method approach effect factor role level aim
purpose objective conclusion background introduction discussion limitation importance significance
difference comparison change increase decrease information review article author report case basis
addition respect view point term order form need context example number total range amount proportion
percentage majority mean average value presence absence ability potential possibility aspect feature
characteristic condition situation issue question interest management age appendix table figure fig
section chapter supplementary
""".split()) | {"present study", "current study", "this study", "et al", "supplementary material",
                "supplementary file", "supplementary information", "supplementary data"}

# Sections a theme does not read: what a paper says of its making, not what it is about.
_BACK_MATTER = re.compile(r"acknowledge?ments?|contributions|funding|competing interests|conflicts? of interest|"
                          r"謝辞", re.IGNORECASE)

MAX_THEMES = 10
SENTENCES_PER_THEME = 2
LABEL_PHRASES = 3
MIN_LABEL_PHRASES = 2
MIN_COMMUNITY_UNITS = 3
MIN_LIFT = 2.0  # a label phrase's share of its community's own passages, against the collection's
UNITS_PER_COMMUNITY = 40  # the passages of a community whose sentences are read
TOPIC_PASSAGES = 20  # a topic's themes are the communities holding its best passages
SURFACE_PASSAGES = 50  # passages read for the way a label phrase is written


@dataclass
class ThemePhrase:
    label: str  # as the papers write it
    phrase: str  # the graph's phrase (normalised)
    community_share: float  # share of the community's own passages naming it
    collection_share: float  # share of all passages naming it


@dataclass
class Theme:
    community_id: int
    level: int
    phrases: list[ThemePhrase]  # its label, most of its passages first
    sentences: list[tuple[int, int, int, str]]  # (unit row, start, end in the unit, text)
    documents: int  # documents its passages come from

    @property
    def label(self) -> list[str]:
        return [p.label for p in self.phrases]


@dataclass
class ThemeAnswer:
    answer: Answer
    themes: list[Theme] = field(default_factory=list)
    topic: str = ""
    covered_documents: int = 0
    total_documents: int = 0
    communities_used: int = 0
    communities_total: int = 0
    heading: str = ""  # the answer's first line, when it has themes


def topic_of(query: str, analyzer: Analyzer, lang: str, phrases: list[str]) -> str:
    """What a global question is about once its cue words are gone ("" for the whole
    collection): its noun phrases (`phrases`, GraphRanker.phrases) that are not all cue words,
    or for Japanese its nouns that are not cues."""
    cues = _CUE_TERMS[lang]
    if lang == "ja":
        return "".join(w for w in analyzer.japanese_nouns(query) if w not in cues)
    kept = [p for p in dict.fromkeys(phrases) if any(w not in cues and analyzer.terms(w) for w in _WORD.findall(p))]
    if not kept:  # no noun phrase ("... about reranking?"): its content words
        kept = [w for w in _WORD.findall(query) if w.lower() not in cues and analyzer.terms(w)]
    return " ".join(p for p in kept if not any(p != o and f" {p} " in f" {o} " for o in kept))


class ThemeFinder:
    def __init__(self, searcher: Searcher, scorer: LocalRelevanceScorer, min_sentence_score: float,
                 embed_query: Callable[[Query], np.ndarray], filters: SearchFilters | None = None,
                 threshold: float | None = None):
        self.searcher = searcher
        self.index = searcher.index
        self.filters, self.threshold = filters, threshold
        self.allowed: np.ndarray | None = None  # the passages filters and threshold let through
        self.scorer = scorer
        self.min_sentence_score = min_sentence_score
        self.embed_query = embed_query
        self.analyzer = searcher.analyzer
        self._own: dict[int, np.ndarray] = {}  # community id -> its own passages
        self.topic_rows: np.ndarray | None = None  # a topic's best passages (plan)
        self.about: Query | None = None  # the topic as a query of its own (plan)
        self._memberships: dict[int, tuple[dict[int, int], sp.csr_matrix]] = {}
        self._back_matter: np.ndarray | None = None

    # ------------------------------------------------------------------ choosing communities
    def _level(self) -> int:
        """The coarsest level with enough substantial communities to give MAX_THEMES themes."""
        communities = self.index.communities
        for level in communities.levels:
            if sum(len(self._rows(c)) >= MIN_COMMUNITY_UNITS for c in communities.by_id.values()
                   if c.level == level) >= MAX_THEMES:
                return level
        return communities.levels[-1]

    def _rows(self, community: Community) -> np.ndarray:
        """The community's passages that searches may return (text and captions)."""
        rows = community.unit_rows
        return rows if self.allowed is None else rows[self.allowed[rows]]

    def _membership(self, level: int) -> tuple[dict[int, int], sp.csr_matrix]:
        """The communities of a level (id -> column) and which phrases each holds (phrases x
        communities), each weighted by its rarity (idf), hub phrases left out; built once a level."""
        if level not in self._memberships:
            graph = self.index.graph
            communities = [c for c in self.index.communities.by_id.values() if c.level == level]
            phrases = np.concatenate([c.phrase_ids for c in communities]) if communities else np.zeros(0, np.int64)
            owner = np.repeat(np.arange(len(communities)), [len(c.phrase_ids) for c in communities])
            weight = graph.idf[phrases] * ~graph.is_hub[phrases]
            membership = sp.csr_matrix((weight, (phrases, owner)), shape=(graph.incidence.shape[1], len(communities)))
            self._memberships[level] = ({c.id: i for i, c in enumerate(communities)}, membership)
        return self._memberships[level]

    def _body_rows(self, community: Community) -> np.ndarray:
        """The community's passages without back matter (a paper's acknowledgements and author
        contributions are not what it is about)."""
        if self._back_matter is None:
            self._back_matter = np.array([bool(_BACK_MATTER.search(s or "")) for s in self.index.columns["section"]])
        rows = self._rows(community)
        return rows[~self._back_matter[rows]]

    def own_rows(self, community: Community) -> np.ndarray:
        """The community's own passages: those whose phrases lie more in it than in any other
        community of its level."""
        if community.id not in self._own:
            columns, membership = self._membership(community.level)
            rows = self._body_rows(community)
            # How much of each passage's phrases lies in each community of the level.
            affinity = ((self.index.graph.incidence[rows] > 0).astype(np.float32) @ membership).toarray()
            self._own[community.id] = rows[affinity[:, columns[community.id]] >= affinity.max(axis=1)]
        return self._own[community.id]

    def _candidates(self, level: int, topic_rows: list[int]) -> list[Community]:
        communities = self.index.communities
        pool = [c for c in communities.by_id.values() if c.level == level and len(self._rows(c)) >= MIN_COMMUNITY_UNITS]
        if topic_rows:  # the communities holding the topic's best passages, best first
            ranked = communities.rank(topic_rows[:TOPIC_PASSAGES], level=level)
            allowed = {c.id for c in pool}
            return [h.community for h in ranked if h.community.id in allowed]
        docs = self.index.columns["document_id"]
        breadth = {c.id: len({docs[r] for r in self._rows(c)}) for c in pool}
        return sorted(pool, key=lambda c: (-breadth[c.id], -len(self._rows(c)), c.id))

    def _finer_candidates(self, level: int, topic: str, themes: list[Theme]) -> Iterator[Community]:
        """For a topic, the next finer level's communities, read once the chosen level's have
        given fewer than MAX_THEMES `themes`: a coarse community that gave no theme on films (one
        mostly about football) may hold finer ones that do, each quote passing the relevance test
        against the topic. Those within a community that gave a theme are left out: they would
        split its topic into a second theme on it. Not for the whole collection: there, what the
        coarse level found too weak to name is its figure text and reference lists ("Tokyo,
        Games" from RETRO's sample continuations)."""
        finer = [other for other in self.index.communities.levels if other > level]
        if finer and topic:
            given = {theme.community_id for theme in themes}
            for community in self._candidates(finer[0], self.topic_rows.tolist()):
                if community.parent not in given:
                    yield community

    # ------------------------------------------------------------------ one theme
    def _distinctive(self, community: Community, rows: np.ndarray) -> dict[int, tuple[int, float]]:
        """The community's phrases that stand for its own passages `rows`: (passages naming it,
        its share there against its share of the collection) for each named by two or more,
        at least MIN_LIFT times as frequent there, not a hub, not a stock research word."""
        graph = self.index.graph
        phrases = community.phrase_ids
        counts = np.asarray((graph.incidence[rows][:, phrases] > 0).sum(axis=0)).ravel()
        lift = (counts / len(rows)) / (graph.df[phrases] / graph.incidence.shape[0])
        keep = (counts >= 2) & ~graph.is_hub[phrases] & (lift >= MIN_LIFT)
        return {int(p): (int(n), float(x)) for p, n, x in zip(phrases[keep], counts[keep], lift[keep])
                if graph.phrases[p] not in STOCK_PHRASES}

    def _central(self, community: Community, topic_vector: np.ndarray | None, own: np.ndarray | None = None):
        """The sentences of the community's passages naming its distinctive phrases (those of
        the passages it stands for, `own`: by default its own passages): (weight named, row,
        start, end, phrases named) each, with the phrases' weights (passages naming it x log of
        its lift) and their (count, lift); None when it has none."""
        own = self.own_rows(community) if own is None else own
        if len(own) < 2:
            return None
        stats = self._distinctive(community, own)
        rows = self._body_rows(community)
        weights = {p: n * float(np.log(lift)) for p, (n, lift) in stats.items()}
        if not weights:
            return None
        top = sorted(weights, key=lambda p: (-weights[p], p))[:30]
        terms = {p: t for p in top if (t := set(self.analyzer.terms(self.index.graph.phrases[p])))}
        cols = self.index.columns
        # Read first the passages naming the most of its distinctive phrases and most like the
        # community's own passages (and, for a topic, the closest to it).
        inc = self.index.graph.incidence[rows][:, top]
        naming = np.asarray((inc > 0).multiply(np.array([weights[p] for p in top])).sum(axis=1)).ravel()
        vectors = self.index.vectors[rows]
        centre = self.index.vectors[own].mean(axis=0)
        centrality = vectors @ (centre / (np.linalg.norm(centre) or 1.0))
        naming = naming / (naming.max() or 1.0) + centrality
        if topic_vector is not None:
            naming = naming + vectors @ topic_vector
        order = _across_documents(rows[np.argsort(-naming, kind="stable")], cols["document_id"])[:UNITS_PER_COMMUNITY]
        candidates = []
        for row in order.tolist():
            text = cols["text"][row]
            for a, b in statement_spans(text, self.index.sentence_spans(row) or None):
                if cols["kind"][row] != "text":
                    continue
                sentence_terms = set(self.analyzer.terms(text[a:b]))
                named = [p for p, t in terms.items() if t <= sentence_terms]
                if (len(named) >= 2 or (named and topic_vector is not None)) and quotable_span(text, a, b) \
                        and _opens_and_flows(text[a:b]):
                    candidates.append((sum(weights[p] for p in named), row, a, b, named))
        return (candidates, weights, stats) if candidates else None

    def central_sentences(self, community: Community, n: int) -> list[tuple[int, int, int, str]]:
        """The community's n most central sentences (naming most of its distinctive phrases), as
        (unit row, start, end, text): what its report is written from. A community too small to
        have such sentences gives its passages' sentences in order."""
        central = self._central(community, None)
        cols = self.index.columns
        if central is None:
            found = [(0.0, row, a, b) for row in self._rows(community)[:n].tolist()
                     for a, b in statement_spans(cols["text"][row], self.index.sentence_spans(row) or None)
                     if not is_title_line(cols["text"][row], a, b)]
        else:
            found = [(-score, row, a, b) for score, row, a, b, _ in central[0]]
        seen, out = set(), []
        for _, row, a, b in sorted(found, key=lambda c: (c[0], c[1], c[2]) if central else 0):
            text = cols["text"][row][a:b]
            if text not in seen:
                seen.add(text)
                out.append((row, a, b, text))
            if len(out) == n:
                break
        return out

    def label(self, community: Community) -> list[str]:
        """The community's label without quotes (what a missing Level 4 report shows): its
        distinctive phrases naming most of its own passages, as written."""
        central = self._central(community, None)
        if central is None:
            return []
        _, weights, stats = central
        return [p.label for p in self._label(community, sorted(weights, key=lambda p: (-weights[p], p))[:10], stats)]

    def _label(self, community: Community, phrases: list[int], stats: dict[int, tuple[int, float]],
               quotes: Sequence[str] = (), own: np.ndarray | None = None) -> list[ThemePhrase]:
        """Up to LABEL_PHRASES of `phrases`, none sharing a word with another, ordered by how many
        of the community's own passages name them. With quotes, only phrases the quotes write out,
        and each quote's best first, so that every quote fits the label. Each is spelled as its
        quotes write it most often (or else its own passages)."""
        graph, cols = self.index.graph, self.index.columns
        own = self.own_rows(community) if own is None else own
        texts = [cols["text"][r] for r in own[:SURFACE_PASSAGES].tolist()]

        def rank(p: int) -> tuple:
            return -stats[p][0], -stats[p][1], p

        written: dict[int, str] = {}
        for p in phrases:
            in_quotes = spellings(graph.phrases[p], quotes)
            if quotes and not in_quotes:
                continue  # named by a quote's terms only ("g additional" in "additionally")
            # A quote's sentence-initial "Survey" is the passages' "survey": the most frequent
            # spelling overall among those the quotes use.
            quoted = {form.lower() for form in in_quotes}
            forms = [form for form, _ in (in_quotes + spellings(graph.phrases[p], texts)).most_common()
                     if not quoted or form.lower() in quoted]
            if forms:
                written[p] = forms[0]
        firsts = [min((p for p in written if spellings(graph.phrases[p], [q])), key=rank, default=None) for q in quotes]
        chosen: list[int] = []
        words: set[str] = set()
        for p in dict.fromkeys([*(p for p in firsts if p is not None), *sorted(written, key=rank)]):
            if not words & set(graph.phrases[p].split()):
                chosen.append(p)
                words |= set(graph.phrases[p].split())
            if len(chosen) == LABEL_PHRASES:
                break
        n_own, n_all = len(own), graph.incidence.shape[0]
        return [ThemePhrase(written[p], graph.phrases[p], round(stats[p][0] / n_own, 3),
                            round(float(graph.df[p]) / n_all, 3)) for p in sorted(chosen, key=rank)]

    def _topic_theme(self, community: Community, topic: str, topic_vector: np.ndarray | None,
                     used_docs: set[str], used_sentences: set[tuple[int, int]]) -> Theme | None:
        """The community's theme; for a topic it has none on, the theme of its passages among the
        topic's best (a community of films holds the few passages on football a collection has,
        and their phrases are not the films')."""
        theme = self._theme(community, topic, topic_vector, used_docs, used_sentences)
        if theme is None and self.topic_rows is not None:
            own = self.own_rows(community)
            on_topic = own[np.isin(own, self.topic_rows)]
            if len(on_topic) >= 2:
                theme = self._theme(community, topic, topic_vector, used_docs, used_sentences, on_topic)
        return theme

    def _theme(self, community: Community, topic: str, topic_vector: np.ndarray | None,
               used_docs: set[str], used_sentences: set[tuple[int, int]],
               own: np.ndarray | None = None) -> Theme | None:
        """The community's theme, standing for `own` (by default its own passages)."""
        central = self._central(community, topic_vector, own)
        if central is None:
            return None
        candidates, _, stats = central
        rows = self._rows(community)
        cols = self.index.columns
        scores = np.array([c[0] for c in candidates], dtype=np.float64)
        scores /= scores.max() or 1.0
        if topic_vector is not None:  # about the topic (the extractive answers' relevance rule), then central
            relevance = self.scorer.score(self.about, topic_vector, [cols["text"][r][a:b] for _, r, a, b, _ in candidates])
            scores = np.where(relevance >= self.min_sentence_score, scores + relevance / 10.0, -1.0)
        chosen, docs, seen_terms, graph = [], set(), [], self.index.graph
        # Sentences from papers no earlier theme cited come first, then from papers this theme
        # does not cite yet, then any; never two saying nearly the same thing.
        for rule in ("new paper", "other paper", "any"):
            for i in np.argsort(-scores, kind="stable"):
                _, row, a, b, named = candidates[i]
                doc = cols["document_id"][row]
                if len(chosen) == SENTENCES_PER_THEME or scores[i] < 0 or (row, a) in used_sentences or \
                        any(c[0] == row and c[1] == a for c in chosen) or \
                        (rule != "any" and doc in docs) or (rule == "new paper" and doc in used_docs):
                    continue
                words = set(self.analyzer.terms(cols["text"][row][a:b]))
                if any(len(words & w) > 0.6 * min(len(words), len(w)) for w in seen_terms):
                    continue
                # The phrases it writes out ("state" is named by "state-of-the-art"'s terms only).
                named = [p for p in named if spellings(graph.phrases[p], [cols["text"][row][a:b]])]
                if not named:
                    continue
                chosen.append((row, a, b, named))
                docs.add(doc)
                seen_terms.append(words)
        if len(chosen) < SENTENCES_PER_THEME:
            return None
        phrases = self._label(community, list({p for *_, named in chosen for p in named}), stats,
                              [cols["text"][row][a:b] for row, a, b, _ in chosen], own)
        if len(phrases) < MIN_LABEL_PHRASES:
            return None
        return Theme(community_id=community.id, level=community.level, phrases=phrases,
                     sentences=[(row, a, b, cols["text"][row][a:b]) for row, a, b, _ in chosen],
                     documents=len({cols["document_id"][r] for r in rows}))

    # ------------------------------------------------------------------ the answer
    def topic(self, query: Query) -> str:
        """What the question asks the themes of ("" for the whole collection), by topic_of."""
        return topic_of(query.text, self.analyzer, query.language,
                        self.searcher.graph.phrases(query) if query.language != "ja" else [])

    def plan(self, query: Query) -> tuple[str, np.ndarray | None, int, list[Community]] | None:
        """What a global answer reads: the topic ("" for the whole collection) and its vector, the
        level, and the communities to read, best first; None when the collection does not speak
        of the topic."""
        lang, topic = query.language, self.topic(query)
        self.allowed = self.searcher.restrict(self.filters, self.embed_query(query), self.threshold)
        topic_vector, topic_rows = None, []
        if topic:
            self.about = about = query.derive(topic)
            topic_vector = self.embed_query(about)
            hits = self.searcher.search(about, topic_vector, "hybrid", 50, filters=self.filters,
                                        threshold=self.threshold).hits
            topic_rows = [self.searcher.row_of(h.text_unit_id) for h in hits]
            self.topic_rows = np.array(topic_rows, dtype=np.int64)
            if not self._covered(topic, lang, [h.text for h in hits[:TOPIC_PASSAGES]]):
                return None
        level = self._level()
        return topic, topic_vector, level, self._candidates(level, topic_rows)

    def answer(self, query: Query) -> ThemeAnswer:
        """The themes of the collection, or of the topic the question names, as an answer."""
        lang = query.language
        total_docs = len(set(self.index.columns["document_id"]))
        plan = self.plan(query)
        if plan is None:
            topic = self.topic(query)
            return ThemeAnswer(_not_covered(topic, lang), topic=topic, total_documents=total_docs)
        topic, topic_vector, level, candidates = plan
        themes: list[Theme] = []
        used_docs: set[str] = set()
        used_sentences: set[tuple[int, int]] = set()  # no sentence is cited by two themes
        labels: list[set[str]] = []
        for community in itertools.chain(candidates, self._finer_candidates(level, topic, themes)):
            if len(themes) == MAX_THEMES:
                break
            theme = self._topic_theme(community, topic, topic_vector, used_docs, used_sentences)
            if theme is None:
                continue
            label = set(theme.label)
            if any(len(label & other) > len(label) / 2 for other in labels):
                continue  # says what an earlier theme says
            themes.append(theme)
            labels.append(label)
            used_docs.update(self.index.columns["document_id"][r] for r, *_ in theme.sentences)
            used_sentences.update((r, a) for r, a, *_ in theme.sentences)
        themes = self._one_topic_each(themes, topic, topic_vector)
        covered = len({self.index.columns["document_id"][r] for t in themes
                       for c in [self.index.communities.by_id[t.community_id]] for r in self._rows(c)})
        level_total = sum(1 for c in self.index.communities.by_id.values() if c.level == level)
        result = ThemeAnswer(Answer(text="", kind="extractive"), themes, topic, covered, total_docs,
                             len(themes), level_total)
        result.answer = self._write(result, lang)
        return result

    def _one_topic_each(self, themes: list[Theme], topic: str, topic_vector: np.ndarray | None) -> list[Theme]:
        """The themes with no quote that names more of another theme's label than of its own:
        such a quote goes, and its theme is quoted again without it, or goes too."""
        labels = [[set(self.analyzer.terms(p.label)) for p in t.phrases] for t in themes]
        kept: list[Theme] = []
        for i, theme in enumerate(themes):
            stray = set()
            for row, a, _, text in theme.sentences:
                words = set(self.analyzer.terms(text))
                named = [sum(t <= words for t in label) for label in labels]
                if max(named) > named[i]:
                    stray.add((row, a))
            if stray:
                others = {(r, a) for t in themes if t is not theme for r, a, *_ in t.sentences}
                used_docs = {self.index.columns["document_id"][r] for t in kept for r, *_ in t.sentences}
                theme = self._topic_theme(self.index.communities.by_id[theme.community_id], topic, topic_vector,
                                          used_docs, others | stray)
            if theme is not None:
                kept.append(theme)
        return kept

    def _covered(self, topic: str, lang: str, passages: list[str]) -> bool:
        """Does the collection speak of the topic? In the topic's language: one sentence of its
        best passages, with the next, names more than half of its terms, and at least half of
        their weight by rarity (a term the collection never uses weighs most): "stock market prediction" is not
        covered by a sentence about a seafood market, nor "quantum computing" by "quantum dots". Across languages (a Japanese topic, English papers),
        no word can match and no similarity of the topic to the graph's phrases tells covered
        from not (README, "Measured"): the themes decide, each of whose cited sentences must pass
        the relevance test against the topic; none passing, the answer says it is not covered."""
        if passages and lang == "ja" and all(detect_language(p) != "ja" for p in passages):
            return True
        ordered = self.analyzer.terms(topic)
        terms = set(ordered)
        if not terms:
            return False
        bm25 = self.index.bm25
        unseen = float(np.log(1.0 + (bm25.n_docs + 0.5) / 0.5))
        idf = bm25.idf(terms)
        if idf and ordered[-1] not in idf:  # its head noun is nowhere in the collection ("deep-sea volcanoes")
            return False
        weight = {t: idf.get(t, unseen) for t in terms}
        total = sum(weight.values())
        for passage in passages:
            sentences = [set(self.analyzer.terms(x)) for x in _sentences(passage)]
            for here, after in zip(sentences, sentences[1:] + [set()]):
                named = terms & (here | after)
                if len(named) > len(terms) / 2 and sum(weight[t] for t in named) >= total / 2:
                    return True
        return False

    def _write(self, result: ThemeAnswer, lang: str) -> Answer:
        if not result.themes and result.topic:
            return _not_covered(result.topic, lang)
        if not result.themes:
            return Answer(text=("このコレクションには主題を示せるだけの共起する語句がありません。" if lang == "ja" else
                                "The collection holds too few recurring phrases to name its themes."),
                          kind="insufficient", language=lang, note="no community had two sentences naming its phrases")
        hits: dict[int, Source] = {}
        lines, citations = [], []
        for n, theme in enumerate(result.themes, start=1):
            quoted = []
            for row, a, b, text in theme.sentences:
                if row not in hits:
                    hits[row] = Source(len(hits) + 1, self.searcher.hit(row, 0.0, 0, None, None))
                source = hits[row]
                citations.append(citation_for(source, text, source.hit.start_char + a, source.hit.start_char + b))
                # as the reader quotes: the paper's own "[22]" would read as one of the answer's markers
                quoted.append(f"{clean_quote(text)} [{source.number}]")
            lines.append(f"{n}. {', '.join(theme.label)}: " + " ".join(quoted))
        result.heading = heading(len(result.themes), result.topic, result.covered_documents,
                                 result.total_documents, lang)
        # One citation per cited sentence, numbered by passage.
        unique: dict[tuple[str, int], Citation] = {}
        for c in citations:
            unique.setdefault((c.text_unit_id, c.start_char), c)
        return Answer(text="\n".join([result.heading, *lines]), kind="extractive", citations=list(unique.values()),
                      language=lang, note="extractive: themes from the community hierarchy, without an LLM")


def heading(themes: int, topic: str, covered: int, total: int, lang: str) -> str:
    """The sentence a thematic answer opens with: how many themes, about what, across how much
    of the collection."""
    if lang == "ja":
        about = f"「{topic}」について、" if topic else ""
        across = f"{total} 件の文書にわたる" if covered == total else f"{total} 件の文書のうち {covered} 件にわたる"
        return f"{about}{across} {themes} のテーマ:"
    about = f" about {topic}" if topic else ""
    across = f"all {total} documents" if covered == total else f"{covered} of the {total} documents"
    return f"{themes} theme{'s' if themes != 1 else ''}{about} across {across}:"


def _across_documents(rows: np.ndarray, documents) -> np.ndarray:
    """Ranked rows reordered so that each document's best comes before any document's second
    best (and so on): a theme's quotes are read from as many papers as its passages span."""
    seen: Counter = Counter()
    turn = np.empty(len(rows), np.int64)
    for i, row in enumerate(rows.tolist()):
        turn[i] = seen[documents[row]]
        seen[documents[row]] += 1
    return rows[np.argsort(turn, kind="stable")]


def _opens_and_flows(sentence: str) -> bool:
    """A theme's quote opens as a sentence does (a capital, a digit, a quote or bracket before
    one, or any non-Latin letter) and says nothing twice: figure text a PDF lost its layout in
    (", 2 ] colored by LCP with +1 ... LCP = 0, 1, 2 ... LCP = 0, 1, 2") does neither."""
    opening = sentence.lstrip("\"'“‘([ ")
    if not opening or not (opening[0].isupper() or opening[0].isdigit() or not opening[0].isascii()):
        return False
    words = sentence.lower().split()
    grams = list(zip(words, words[1:], words[2:], words[3:]))
    return len(set(grams)) == len(grams)


def _sentences(text: str) -> list[str]:
    return [text[a:b] for a, b in statement_spans(text)] or [text]


def _not_covered(topic: str, lang: str) -> Answer:
    text = (f"この文書コレクションは「{topic}」を扱っていません。" if lang == "ja" else
            f"The collection does not cover {topic}: no passage of it speaks of that.")
    return Answer(text=text, kind="insufficient", language=lang,
                  note="the question's topic is not named in the collection (themes.py: ThemeFinder._covered)")
