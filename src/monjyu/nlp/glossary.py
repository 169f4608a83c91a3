"""English words for a Japanese question's nouns, from JMdict (the `jamdict-data` package).

A Japanese question over English papers shares almost no index terms with them: BM25 and the
reader's term features see only its Latin words ("Transformer", "ZeRO-R"), and the embedding
carries the rest alone. The dictionary's main translation of each of its nouns (系列 "series",
順序 "order", 損失 "loss", スパイク "spike") gives them English words to match. Only the first
short gloss is taken (of the first sense, as a rule): every gloss of the first two senses brought
noise ("settlement" beside "solution", "mock-up" beside "model") and measured worse
(docs/benchmarks.md). Where the search has found passages by the question's meaning, the gloss
they use is taken instead of a first gloss they lack (系列 "sequence" rather than "series" over
papers on sequence models): the dictionary's first sense is the commonest in general, not in this
collection.

JMdict is the Electronic Dictionary Research and Development Group's work, under CC BY-SA 4.0;
it is read from the installed package, never copied into the index or this repository.
"""

from __future__ import annotations

import functools
import re
import sqlite3
import threading
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from ..errors import MonjyuError
from .analyzer import Analyzer

# Nouns that are grammar more than content: numerals, counters, adverbial nouns (ため, 時, 程度).
_SKIP_POS1 = {"数詞"}
_SKIP_POS2 = {"副詞可能", "助数詞可能"}
_HIRAGANA_ONLY = re.compile(r"[\u3040-\u309f]+")
# A katakana run long enough to be two words the dictionary has (ウシ + コロナウイルス)
_KATAKANA = re.compile(r"[\u30a0-\u30ff]{4,}")
# A katakana word that may be written with or without a final long-vowel mark (エンコーダ(ー)).
_LONG_VOWEL_VARIANT = re.compile(r"[\u30a1-\u30fa][\u30a1-\u30fc]+")
# A parenthesised note with no parentheses inside: taken out innermost first, so that a nested one
# goes whole ("dog (Canis (lupus) familiaris)" -> "dog").
_INNER_PARENTHESES = re.compile(r"\([^()]*\)")
# "+g.lang": SQLite otherwise walks the index of every English gloss (0.2 s a word) rather than the
# word's own rows (under a millisecond); the unary plus keeps the planner off that index.
_GLOSSES = ("SELECT g.text FROM {table} k JOIN Sense s ON s.idseq = k.idseq JOIN SenseGloss g ON g.sid = s.ID "
            "WHERE k.text = ? AND +g.lang = 'eng' ORDER BY k.idseq, s.ID, g.rowid")
MAX_GLOSS_WORDS = 3  # a longer gloss explains the word rather than translating it
# A Japanese query's view of the terms of the passages its meaning finds first, and how many:
# which of a word's glosses the collection means (`Glossary.english_in`).
GLOSS_CONTEXT = "gloss context"
CONTEXT_PASSAGES = 10

# The question word of a Japanese question, as an English one opens ("なぜ" -> "Why"); the first
# that the question holds, in this order ("何人" before "何").
_ASKS = (("なぜ|どうして|何故", "Why"), ("いつ", "When"), ("どこ", "Where"), ("誰|だれ", "Who"),
         ("何人|いくつ|何種類|何個|何件|何回", "How many"), ("どれくらい|どのくらい|どれほど", "How much"),
         ("どのように|どうやって|どのようにして|どう", "How"), ("何|どの|どれ|どんな|どういう", "What"))
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December")
# A date as English writes it: "2019年12月" -> "December 2019", "2013年" -> "2013", "12月" -> "December".
_DATES = ((re.compile(r"(\d{4})年(1[0-2]|0?[1-9])月"), lambda m: f"{_MONTHS[int(m[2]) - 1]} {m[1]}"),
          (re.compile(r"(1[0-2]|0?[1-9])月"), lambda m: _MONTHS[int(m[1]) - 1]),
          (re.compile(r"(\d+)[年日]"), lambda m: m[1]))
_LATIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9.+\-/]*")
# The words a reading keeps: nouns, verbs, adjectives; not する, ある, いる, なる (非自立可能: they
# carry the grammar, not what is asked) nor numerals.
_READ_POS = ("名詞", "動詞", "形容詞", "形状詞")
_NOT_READ_POS1 = _SKIP_POS1 | {"非自立可能"}
# A compound the analyser writes as several morphemes (集中 + 治療, 潜伏 + 期間, 抗 + ウイルス + 薬,
# 待ち + 時間) is read by the model whole, up to this many morphemes: JMdict has many such terms of
# art, and their parts' glosses miss them ("concentration treatment" for 集中治療, "intensive care").
# The search's terms keep the parts' glosses: more passages share them (コロナ + ウイルス: "corona",
# "virus" rather than "coronavirus"), and read whole they found fewer answers (docs/benchmarks.md).
MAX_COMPOUND = 4
_COMPOUND = ("名詞", "普通名詞", "一般", "*", "*", "*")  # a joined compound is read as a common noun


def jmdict_path() -> Path:
    """The JMdict database the `jamdict-data` package installs."""
    try:
        from importlib.resources import files

        path = Path(str(files("jamdict_data").joinpath("jamdict.db")))
    except ModuleNotFoundError:
        path = None
    if path is None or not path.is_file():
        raise MonjyuError("JMdict is not installed (the jamdict-data package): Japanese questions cannot be "
                          "matched with the English words of the documents. Install it with "
                          "`pip install jamdict-data==1.5`.")
    return path


def _without_notes(text: str) -> str:
    """A gloss without its parenthesised notes, nested ones too."""
    while True:
        text, n = _INNER_PARENTHESES.subn(" ", text)
        if not n:
            return text


class Glossary:
    """The English glosses of a Japanese word, read from JMdict once per word: the first, or the
    one the passages a question's meaning finds use (`english_in`, `gloss_in`)."""

    def __init__(self, path: Path | None = None, analyzer: Analyzer | None = None):
        self._path = path
        self._analyzer = analyzer or Analyzer()
        self._db: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        self.english = functools.lru_cache(maxsize=50_000)(self._english)
        self.gloss = functools.lru_cache(maxsize=50_000)(self._gloss)
        self.short_glosses = functools.lru_cache(maxsize=50_000)(self._short_glosses)
        self.parts = functools.lru_cache(maxsize=50_000)(self._parts)

    def _rows(self, table: str, word: str) -> list[str]:
        with self._lock:
            if self._db is None:
                path = self._path or jmdict_path()
                self._db = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, check_same_thread=False)
            return [text for (text,) in self._db.execute(_GLOSSES.format(table=table), (word,))]

    def _glosses(self, word: str) -> Iterator[str]:
        """The word's English glosses in JMdict's order, their parenthesised notes left out; a
        katakana word's as written with or without a final long-vowel mark where JMdict has only the
        other (オプティマイザー as オプティマイザ "optimizer": technical writing drops the mark, JIS Z 8301)."""
        rows = self._rows("Kanji", word) or self._rows("Kana", word)
        if not rows and _LONG_VOWEL_VARIANT.fullmatch(word):
            rows = self._rows("Kana", word[:-1] if word.endswith("ー") else word + "ー")
        for text in rows:
            yield " ".join(_without_notes(text).split())

    def _short_glosses(self, word: str) -> tuple[str, ...]:
        """The word's glosses of at most MAX_GLOSS_WORDS words, as written without "to", in JMdict's
        order ("使う" -> "use", ...)."""
        texts = (text[3:] if text.startswith("to ") else text for text in self._glosses(word))
        # a suffix's gloss ("-ian" of 人) is not the noun's
        return tuple(text for text in texts
                     if text and not text.startswith("-") and len(text.split()) <= MAX_GLOSS_WORDS)

    def compounds(self, text: str) -> list[tuple[str, tuple[str, ...]]]:
        """(word, part of speech) of each morpheme of the Japanese runs of `text` (its normalised
        form), save that a compound JMdict has, of two to MAX_COMPOUND nouns, prefixes, suffixes and
        verb stems, is one common noun as written (the longest from each morpheme on)."""
        out: list[tuple[str, tuple[str, ...]]] = []
        for run in self._analyzer.japanese_runs(text):
            start = 0
            while start < len(run):
                end = next((e for e in range(min(len(run), start + MAX_COMPOUND), start + 1, -1)
                            if self._is_compound(run[start:e])), None)
                if end is None:
                    out.append(run[start][1:])
                    start += 1
                else:
                    out.append(("".join(surface for surface, _, _ in run[start:end]), _COMPOUND))
                    start = end
        return out

    def _is_compound(self, morphemes: list[tuple[str, str, tuple[str, ...]]]) -> bool:
        """Nouns (a prefix may open them, suffixes and verb stems such as 待ち be among them, a noun or a
        suffix ends them) that JMdict has as one word with a short gloss."""
        pos = [p for _, _, p in morphemes]
        if pos[0][0] == "接尾辞" or pos[-1][0] not in ("名詞", "接尾辞"):
            return False
        if not all(p[0] in ("名詞", "接頭辞", "接尾辞") or p[0] == "動詞" and p[5].startswith("連用形") for p in pos):
            return False
        written = "".join(surface for surface, _, _ in morphemes)
        return not _HIRAGANA_ONLY.fullmatch(written) and bool(self.short_glosses(written))

    def _parts(self, word: str) -> tuple[str, ...]:
        """A katakana word JMdict lacks (the analyser reads an unknown katakana run as one word) as
        the katakana words it has that write it, each the longest that fits (ウシコロナウイルス: ウシ
        "cattle", コロナウイルス "coronavirus"; ベネズエラウマ: "Venezuela", "horse"); the word alone
        where they do not write all of it (スワブ)."""
        if self.short_glosses(word) or not _KATAKANA.fullmatch(word):
            return (word,)
        out, start = [], 0
        while start < len(word):
            end = next((e for e in range(len(word), start + 1, -1) if self.short_glosses(word[start:e])), None)
            if end is None:
                return (word,)
            out.append(word[start:end])
            start = end
        return tuple(out)

    def _english(self, word: str) -> tuple[str, ...]:
        """The index terms of the word's first short gloss ("順序" -> order), or () if it has none."""
        for text in self.short_glosses(word):
            if terms := self._analyzer.terms(text):
                return tuple(terms)
        return ()

    def _gloss(self, word: str) -> str:
        """The word's first short English gloss as written, without "to" and parentheses ("使う" ->
        "use", "治療" -> "treatment"), or "" if it has none (`gloss`, cached as `english` is)."""
        return next(iter(self.short_glosses(word)), "")

    def _in_context(self, word: str, context: Mapping[str, int] | None) -> str | None:
        """The gloss of `word` the passages of `context` (their terms counted) use, where they use
        not the first but another: of those, the one whose rarest term they hold most often (系列
        "series" -> "sequence" over papers on sequence models, 行列 "line" -> "matrix", ヒト "-ian" ->
        "human being"). None where the first gloss is in them, or none is, or no context is known."""
        if not context:
            return None
        glosses = [(text, self._analyzer.terms(text)) for text in self.short_glosses(word)]
        held = [(min(context.get(t, 0) for t in terms), -i, text) for i, (text, terms) in enumerate(glosses) if terms]
        if not held or held[0][0] > 0:
            return None
        best = max(held)
        return best[2] if best[0] > 0 else None

    def english_in(self, word: str, context: Mapping[str, int] | None = None) -> tuple[str, ...]:
        """`english`, or the index terms of the gloss the passages of `context` use."""
        chosen = self._in_context(word, context)
        return self.english(word) if chosen is None else tuple(self._analyzer.terms(chosen))

    def gloss_in(self, word: str, context: Mapping[str, int] | None = None) -> str:
        """`gloss`, or the gloss the passages of `context` use."""
        chosen = self._in_context(word, context)
        return self.gloss(word) if chosen is None else chosen

    def english_reading(self, question: str, context: Mapping[str, int] | None = None) -> str:
        """A Japanese question as English words, for a reader that learnt English questions over
        English sentences: its question word, then its Latin words as written and its content words'
        first glosses, in its order ("Tervilの成人における致死率はどのくらいですか？" -> "How much
        Tervil adult case fatality rate?"). Word order and grammar are lost, the words an answering
        sentence holds often not. `context`: the terms of the passages the question's meaning
        finds first, counted (`passage_words`), which choose among a word's glosses."""
        asks = next((english for pattern, english in _ASKS if re.search(pattern, question)), "")
        for pattern, written in _DATES:
            question = pattern.sub(lambda m: f" {written(m)} ", question)
        words: list[str] = []
        for run in re.split(rf"({_LATIN.pattern})", question):
            if _LATIN.fullmatch(run):
                words.append(run)
                continue
            for word, pos in self.compounds(run):
                if pos[0] in _READ_POS and pos[1] not in _NOT_READ_POS1 and not _HIRAGANA_ONLY.fullmatch(word):
                    for part in self.parts(word):
                        english = self.gloss_in(part, context)
                        if english and english not in words:
                            words.append(english)
        return " ".join(([asks] if asks else []) + words) + "?"

    def terms(self, text: str, context: Mapping[str, int] | None = None) -> list[str]:
        """The English index terms of the content nouns of the Japanese runs of `text` (their
        glosses chosen as `english_reading` chooses them)."""
        out: list[str] = []
        for word in self._content_nouns(text):
            out.extend(t for t in self.english_in(word, context) if t not in out)
        return out

    def readings(self, text: str) -> list[tuple[str, frozenset[str]]]:
        """Each content noun of the Japanese runs of `text` with every English index term its short
        glosses give (学習: study, learn, ...): a match with English text that need not choose one."""
        return [(word, frozenset(t for gloss in self.short_glosses(word) for t in self._analyzer.terms(gloss)))
                for word in self._content_nouns(text)]

    def _content_nouns(self, text: str) -> Iterator[str]:
        """The content nouns of the Japanese runs of `text`, a katakana word JMdict lacks as its parts."""
        for word, pos in self._analyzer.japanese_morphemes(text):
            if pos[0] != "名詞" or pos[1] in _SKIP_POS1 or pos[2] in _SKIP_POS2 or _HIRAGANA_ONLY.fullmatch(word):
                continue
            yield from self.parts(word)


_shared: Glossary | None = None
_shared_lock = threading.Lock()


def shared_glossary() -> Glossary:
    """One glossary per process: its word cache is shared by every searcher and scorer."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = Glossary()
        return _shared


def with_english_glosses(query: str, terms: list[str], language: str,
                         context: Mapping[str, int] | None = None) -> list[str]:
    """`terms`, followed, for a Japanese query (`language`, the query's), by the English glosses
    of its nouns not among them (chosen by `context`, the query's `GLOSS_CONTEXT` view)."""
    if language != "ja":
        return terms
    have = set(terms)
    return terms + sorted(set(shared_glossary().terms(query, context)) - have)


def passage_words(analyzer: Analyzer, texts: Iterable[str]) -> Counter[str]:
    """The terms of the passages a Japanese question's meaning finds first (the vector search's
    first CONTEXT_PASSAGES), counted: the context that chooses which of a word's English glosses
    the collection means (a Query's GLOSS_CONTEXT view, set by the search)."""
    return Counter(term for text in texts for term in analyzer.terms(text))
