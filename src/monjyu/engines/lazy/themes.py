"""Global questions answered from the community hierarchy, without an LLM.

"What are the main themes of these papers?" names nothing a relevance test can look for, so
testing sentences against it finds none. The Level 1 communities are the collection's themes
already: groups of noun phrases that occur together. A thematic answer takes the communities that
matter (for the whole collection: those whose passages span the most documents; for "what do
these papers say about X": those holding the best passages about X), labels each by its most
distinctive phrases, and cites its most central sentences: those naming most of those phrases
(and, for a topic, closest to it), from different papers where it can. Themes are diverse: one
community per sub-tree of the hierarchy, and no label sharing more than half its phrases with an
earlier one. The answer says how much of the collection it covered.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ...ingest.sentences import is_title_line, statement_spans
from ...nlp.analyzer import Analyzer
from ...nlp.lang import detect_language
from ...retrieval import SearchFilters, Searcher
from ...retrieval.communities import Community
from ...types import Answer, Citation
from ..citations import citation_for
from ..context import Source
from ..relevance import LocalRelevanceScorer

# Words that say "about the collection" rather than what it is about: a question made only of
# these (and stop words) asks about the whole collection; the rest of its phrases is its topic.
_CUE_TERMS = {
    "en": set("""theme themes main topic topics idea ideas finding findings trend trends overview overall summary
                 summarize summarise general collection corpus paper papers document documents article articles
                 these those all whole across common pattern patterns key say says said report reports
                 discuss discussed describe described give tell used use what which how""".split()),
    "ja": {"テーマ", "主", "全体", "要約", "概要", "概観", "傾向", "まとめ", "全般", "俯瞰", "文書", "論文", "群",
           "共通", "要点", "知見", "点", "何", "こと", "もの", "的"},
}
_WORD = re.compile(r"[0-9A-Za-z\u00c0-\u024f]+")

MAX_THEMES = 10
SENTENCES_PER_THEME = 2
LABEL_PHRASES = 3
MIN_COMMUNITY_UNITS = 3
UNITS_PER_COMMUNITY = 40  # the passages of a community whose sentences are read
TOPIC_PASSAGES = 20  # a topic's themes are the communities holding its best passages


@dataclass
class Theme:
    community_id: int
    level: int
    label: list[str]  # its most distinctive phrases that its cited sentences name
    sentences: list[tuple[int, int, int, str]]  # (unit row, start, end in the unit, text)
    documents: int  # documents its passages come from


@dataclass
class ThemeAnswer:
    answer: Answer
    themes: list[Theme] = field(default_factory=list)
    topic: str = ""
    covered_documents: int = 0
    total_documents: int = 0
    communities_used: int = 0
    communities_total: int = 0


def topic_of(query: str, analyzer: Analyzer, lang: str, phrases: list[str]) -> str:
    """What a global question is about once its cue words are gone ("" for the whole
    collection): its noun phrases (`phrases`, Searcher.query_phrases) that are not all cue words,
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
                 embed_query: Callable[[str], np.ndarray], filters: SearchFilters | None = None,
                 threshold: float | None = None):
        self.searcher = searcher
        self.index = searcher.index
        self.filters, self.threshold = filters, threshold
        self.allowed: np.ndarray | None = None  # the passages filters and threshold let through
        self.scorer = scorer
        self.min_sentence_score = min_sentence_score
        self.embed_query = embed_query
        self.analyzer = searcher.analyzer

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

    # ------------------------------------------------------------------ one theme
    def _phrase_weights(self, community: Community, rows: np.ndarray) -> dict[int, float]:
        """How much each of the community's phrases stands for it: the share of the phrase's
        passages that lie in the community (a phrase found everywhere names no theme) x its idf
        (rare is specific) x log(1 + its passages in the community) (a one-off names no theme)."""
        graph = self.index.graph
        inc = graph.incidence[rows]
        counts = np.asarray((inc > 0).sum(axis=0)).ravel()
        return {p: float(counts[p] / graph.df[p] * graph.idf[p] * np.log1p(counts[p])) for p in community.phrases
                if counts[p] > 1 and not graph.is_hub[p]}

    def _phrase_terms(self, phrases: list[int]) -> dict[int, set[str]]:
        graph = self.index.graph
        return {p: set(self.analyzer.terms(graph.phrases[p])) for p in phrases}

    def _central(self, community: Community, topic_vector: np.ndarray | None):
        """The community's sentences naming its distinctive phrases: (phrase weight named, row,
        start, end, phrases named) each, and the phrase weights; None when it has none."""
        rows = self._rows(community)
        weights = self._phrase_weights(community, rows)
        if not weights:
            return None
        top = sorted(weights, key=lambda p: (-weights[p], p))[:30]
        terms = {p: t for p, t in self._phrase_terms(top).items() if t}
        cols = self.index.columns
        # Read the passages naming the most of its distinctive phrases (and, for a topic, the
        # closest to it) first.
        inc = self.index.graph.incidence[rows][:, top]
        naming = np.asarray((inc > 0).multiply(np.array([weights[p] for p in top])).sum(axis=1)).ravel()
        if topic_vector is not None:
            naming = naming / (naming.max() or 1.0) + self.index.vectors[rows] @ topic_vector
        order = rows[np.argsort(-naming, kind="stable")][:UNITS_PER_COMMUNITY]
        candidates = []
        for row in order.tolist():
            text = cols["text"][row]
            for a, b in statement_spans(text, self.index.sentence_spans(row) or None):
                if is_title_line(text, a, b):
                    continue
                sentence_terms = set(self.analyzer.terms(text[a:b]))
                named = [p for p, t in terms.items() if t <= sentence_terms]
                if len(named) >= 2 or (named and topic_vector is not None):
                    candidates.append((sum(weights[p] for p in named), row, a, b, named))
        return (candidates, weights) if candidates else None

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

    def _theme(self, community: Community, topic: str, topic_vector: np.ndarray | None,
               used_docs: set[str], used_sentences: set[tuple[int, int]]) -> Theme | None:
        central = self._central(community, topic_vector)
        if central is None:
            return None
        candidates, weights = central
        rows = self._rows(community)
        cols = self.index.columns
        scores = np.array([c[0] for c in candidates], dtype=np.float64)
        scores /= scores.max() or 1.0
        if topic_vector is not None:  # about the topic (the extractive answers' relevance rule), then central
            relevance = self.scorer.score(topic, topic_vector, [cols["text"][r][a:b] for _, r, a, b, _ in candidates])
            scores = np.where(relevance >= self.min_sentence_score, scores + relevance / 10.0, -1.0)
        chosen, docs, seen_terms = [], set(), []
        # Sentences from papers no earlier theme cited come first, then from papers this theme
        # does not cite yet, then any; never two saying nearly the same thing.
        for rule in ("new paper", "other paper", "any"):
            for i in np.argsort(-scores, kind="stable"):
                _, row, a, b, named = candidates[i]
                doc = cols["document_id"][row]
                words = set(self.analyzer.terms(cols["text"][row][a:b]))
                if len(chosen) == SENTENCES_PER_THEME or scores[i] < 0 or (row, a) in used_sentences or \
                        any(c[0] == row and c[1] == a for c in chosen) or \
                        (rule != "any" and doc in docs) or (rule == "new paper" and doc in used_docs):
                    continue
                if any(len(words & w) > 0.6 * min(len(words), len(w)) for w in seen_terms):
                    continue
                chosen.append((row, a, b, named))
                docs.add(doc)
                seen_terms.append(words)
        if len(chosen) < SENTENCES_PER_THEME:
            return None
        named_all = {p for *_, named in chosen for p in named}
        label_ids = sorted(named_all, key=lambda p: (-weights[p], p))[:LABEL_PHRASES]
        graph = self.index.graph
        return Theme(community_id=community.id, level=community.level,
                     label=[graph.phrases[p] for p in label_ids],
                     sentences=[(row, a, b, cols["text"][row][a:b]) for row, a, b, _ in chosen],
                     documents=len({cols["document_id"][r] for r in rows}))

    # ------------------------------------------------------------------ the answer
    def plan(self, query: str, lang: str) -> tuple[str, np.ndarray | None, int, list[Community]] | None:
        """What a global answer reads: the topic ("" for the whole collection) and its vector, the
        level, and the communities to read, best first; None when the collection does not speak
        of the topic."""
        topic = topic_of(query, self.analyzer, lang, self.searcher.query_phrases(query) if lang != "ja" else [])
        self.allowed = self.searcher.restrict(self.filters, self.embed_query(query), self.threshold)
        topic_vector, topic_rows = None, []
        if topic:
            topic_vector = self.embed_query(topic)
            hits = self.searcher.search(topic, topic_vector, "hybrid", 50, filters=self.filters,
                                        threshold=self.threshold).hits
            topic_rows = [self.searcher.row_of(h.text_unit_id) for h in hits]
            if not self._covered(topic, lang, [h.text for h in hits[:TOPIC_PASSAGES]]):
                return None
        level = self._level()
        return topic, topic_vector, level, self._candidates(level, topic_rows)

    def answer(self, query: str, lang: str) -> ThemeAnswer:
        total_docs = len(set(self.index.columns["document_id"]))
        plan = self.plan(query, lang)
        if plan is None:
            topic = topic_of(query, self.analyzer, lang, self.searcher.query_phrases(query) if lang != "ja" else [])
            return ThemeAnswer(_not_covered(topic, lang), topic=topic, total_documents=total_docs)
        topic, topic_vector, level, candidates = plan
        themes: list[Theme] = []
        used_docs: set[str] = set()
        used_sentences: set[tuple[int, int]] = set()  # no sentence is cited by two themes
        labels: list[set[str]] = []
        for community in candidates:
            if len(themes) == MAX_THEMES:
                break
            theme = self._theme(community, topic, topic_vector, used_docs, used_sentences)
            if theme is None:
                continue
            label = set(theme.label)
            if any(len(label & other) > len(label) / 2 for other in labels):
                continue  # says what an earlier theme says
            themes.append(theme)
            labels.append(label)
            used_docs.update(self.index.columns["document_id"][r] for r, *_ in theme.sentences)
            used_sentences.update((r, a) for r, a, *_ in theme.sentences)
        covered = len({self.index.columns["document_id"][r] for t in themes
                       for c in [self.index.communities.by_id[t.community_id]] for r in self._rows(c)})
        level_total = sum(1 for c in self.index.communities.by_id.values() if c.level == level)
        result = ThemeAnswer(Answer(text="", kind="extractive"), themes, topic, covered, total_docs,
                             len(themes), level_total)
        result.answer = self._write(result, lang)
        return result

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
        terms = set(self.analyzer.terms(topic))
        if not terms:
            return False
        bm25 = self.index.bm25
        unseen = float(np.log(1.0 + (bm25.n_docs + 0.5) / 0.5))
        idf = bm25.idf(terms)
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
                quoted.append(f"{' '.join(text.split())} [{source.number}]")
            lines.append(f"{n}. {', '.join(theme.label)}: " + " ".join(quoted))
        about = f" about {result.topic}" if result.topic and lang != "ja" else ""
        if lang == "ja":
            head = (f"{result.total_documents} 件の文書のうち {result.covered_documents} 件を含む "
                    f"{result.communities_used} 個のテーマ（全 {result.communities_total} コミュニティ中）:")
        else:
            head = (f"{result.communities_used} themes{about} (of {result.communities_total} communities at this "
                    f"level), drawn from {result.covered_documents} of the {result.total_documents} documents:")
        # One citation per cited sentence, numbered by passage.
        unique: dict[tuple[str, int], Citation] = {}
        for c in citations:
            unique.setdefault((c.text_unit_id, c.start_char), c)
        return Answer(text="\n".join([head, *lines]), kind="extractive", citations=list(unique.values()),
                      language=lang, note="extractive: themes from the community hierarchy, without an LLM")


def _sentences(text: str) -> list[str]:
    return [text[a:b] for a, b in statement_spans(text)] or [text]


def _not_covered(topic: str, lang: str) -> Answer:
    text = (f"この文書コレクションは「{topic}」を扱っていません。" if lang == "ja" else
            f"The collection does not cover {topic}: no passage of it speaks of that.")
    return Answer(text=text, kind="insufficient", language=lang,
                  note="the question's topic is not named in the collection (themes.py: ThemeFinder._covered)")
