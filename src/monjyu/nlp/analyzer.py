"""Keyword analyzer for BM25: English words stemmed without stop words, Japanese via SudachiPy.

Mixed text is split into script runs so an English term inside a Japanese sentence (and the
reverse) is still matched.
"""

from __future__ import annotations

import re
import threading
from functools import lru_cache

import Stemmer

_RUNS = re.compile(r"([\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uff66-\uff9f\u30fc]+)|([0-9A-Za-z\u00c0-\u024f]+(?:['’][A-Za-z]+)?)")

# A compact English stop-word list (the usual IR list: articles, pronouns, auxiliaries, prepositions).
EN_STOPWORDS = frozenset("""
a about above after again against all am an and any are aren't as at be because been before being below
between both but by can cannot could couldn't did didn't do does doesn't doing don't down during each few
for from further had hadn't has hasn't have haven't having he he'd he'll he's her here here's hers herself
him himself his how how's i i'd i'll i'm i've if in into is isn't it it's its itself let's me more most
mustn't my myself no nor not of off on once only or other ought our ours ourselves out over own same shan't
she she'd she'll she's should shouldn't so some such than that that's the their theirs them themselves then
there there's these they they'd they'll they're they've this those through to too under until up very was
wasn't we we'd we'll we're we've were weren't what what's when when's where where's which while who who's
whom why why's with won't would wouldn't you you'd you'll you're you've your yours yourself yourselves
""".split())

# Japanese parts of speech that carry content for retrieval.
_JA_KEEP_POS = {"名詞", "動詞", "形容詞", "形状詞", "副詞", "接頭辞"}
# numerals, and the grammatical words of any part of speech ("よう" of どのように, "する", "いる")
_JA_DROP_POS1 = {"数詞", "助動詞語幹", "非自立可能"}


class Analyzer:
    """Turns text into index terms. Thread-safe; SudachiPy tokenizers are per thread."""

    def __init__(self) -> None:
        self._local = threading.local()

    def _sudachi(self):
        tok = getattr(self._local, "tok", None)
        if tok is None:
            from sudachipy import Dictionary, SplitMode

            tok = Dictionary(dict="core").tokenizer(mode=SplitMode.B)
            self._local.tok = tok
        return tok

    def terms(self, text: str) -> list[str]:
        out: list[str] = []
        for m in _RUNS.finditer(text):
            cjk, word = m.group(1), m.group(2)
            if word:
                w = word.lower().replace("’", "'")
                if w in EN_STOPWORDS or (len(w) == 1 and not w.isdigit()):
                    continue
                out.append(_stem(w))
            else:
                out.extend(self._japanese_terms(cjk))
        return out

    def japanese_morphemes(self, text: str) -> list[tuple[str, tuple[str, ...]]]:
        """(normalised form, part of speech) of each morpheme of the Japanese runs of `text`."""
        return [(normalised, pos) for run in self.japanese_runs(text) for _, normalised, pos in run]

    def japanese_runs(self, text: str) -> list[list[tuple[str, str, tuple[str, ...]]]]:
        """The morphemes of each Japanese run of `text`, as (surface, normalised form, part of
        speech): what a compound written across morphemes is looked up by (待ち + 時間)."""
        tokenize = self._sudachi().tokenize
        return [[(t.surface(), t.normalized_form(), tuple(t.part_of_speech())) for t in tokenize(m.group(1))]
                for m in _RUNS.finditer(text) if m.group(1)]

    def japanese_nouns(self, text: str) -> list[str]:
        """The nouns (normalised forms) of the Japanese runs of `text`: what a question is about."""
        return [w for w, pos in self.japanese_morphemes(text) if pos[0] == "名詞" and pos[1] not in _JA_DROP_POS1]

    def _japanese_terms(self, run: str) -> list[str]:
        terms = []
        for morpheme in self._sudachi().tokenize(run):
            pos = morpheme.part_of_speech()
            if pos[0] not in _JA_KEEP_POS or pos[1] in _JA_DROP_POS1:
                continue
            surface = morpheme.normalized_form()
            if len(surface) == 1 and _HIRAGANA.fullmatch(surface):
                continue
            terms.append(surface)
        return terms


_HIRAGANA = re.compile(r"[\u3040-\u309f]")
_STEMMER = Stemmer.Stemmer("english")


@lru_cache(maxsize=200_000)
def _stem(word: str) -> str:
    return _STEMMER.stemWord(word)
