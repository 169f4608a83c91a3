"""The OpenAI-compatible embedding client against a local server that speaks the protocol."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from monjyu import Monjyu, MonjyuConfig
from monjyu.config import EmbeddingConfig
from monjyu.embed.openai import OpenAIEmbedder
from monjyu.errors import ServiceError


class EmbeddingsHandler(BaseHTTPRequestHandler):
    """Test double of an embeddings endpoint: vectors from letter counts, plus scripted failures."""

    fail_next: list[int] = []
    seen: list[dict] = []

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        EmbeddingsHandler.seen.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization"),
                                      "api-key": self.headers.get("api-key")})
        if EmbeddingsHandler.fail_next:
            code = EmbeddingsHandler.fail_next.pop(0)
            self.send_response(code)
            self.end_headers()
            self.wfile.write(b'{"error": "try later"}')
            return
        data = []
        for i, text in enumerate(body["input"]):
            vec = [text.lower().count(c) + 0.01 for c in "abcdefghijklmnop"]
            data.append({"index": i, "embedding": vec, "object": "embedding"})
        payload = json.dumps({"data": data[::-1], "model": body["model"]}).encode()  # out of order on purpose
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


@pytest.fixture
def server():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), EmbeddingsHandler)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    EmbeddingsHandler.fail_next, EmbeddingsHandler.seen = [], []
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()


def test_batches_order_and_auth(server, monkeypatch):
    monkeypatch.setenv("MY_KEY", "sk-test")
    emb = OpenAIEmbedder(EmbeddingConfig(provider="openai", base_url=server + "/v1", model="m",
                                         api_key_env="MY_KEY", batch_size=2))
    vecs = emb.embed_passages(["aaa", "bbb", "ccc"])
    assert vecs.shape == (3, 16) and emb.dim == 16
    assert np.argmax(vecs[0]) == 0 and np.argmax(vecs[1]) == 1 and np.argmax(vecs[2]) == 2
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0)
    assert [len(s["body"]["input"]) for s in EmbeddingsHandler.seen] == [2, 1]
    assert EmbeddingsHandler.seen[0]["path"] == "/v1/embeddings" and EmbeddingsHandler.seen[0]["auth"] == "Bearer sk-test"


def test_azure_url_and_key_header(server, monkeypatch):
    monkeypatch.setenv("AZ_KEY", "az-secret")
    emb = OpenAIEmbedder(EmbeddingConfig(provider="openai", base_url=server, model="my-deploy",
                                         api_key_env="AZ_KEY", api_version="2024-10-21"))
    emb.embed_queries(["hello"])
    seen = EmbeddingsHandler.seen[0]
    assert seen["path"] == "/openai/deployments/my-deploy/embeddings?api-version=2024-10-21"
    assert seen["api-key"] == "az-secret" and seen["auth"] is None


def test_retries_on_429_and_500(server):
    EmbeddingsHandler.fail_next = [429, 500]
    emb = OpenAIEmbedder(EmbeddingConfig(provider="openai", base_url=server + "/v1", model="m"))
    assert emb.embed_passages(["abc"]).shape == (1, 16)
    assert len(EmbeddingsHandler.seen) == 3


def test_client_errors_are_clear(server):
    EmbeddingsHandler.fail_next = [400]
    emb = OpenAIEmbedder(EmbeddingConfig(provider="openai", base_url=server + "/v1", model="m"))
    with pytest.raises(ServiceError, match="answered 400"):
        emb.embed_passages(["abc"])
    dead = OpenAIEmbedder(EmbeddingConfig(provider="openai", base_url="http://127.0.0.1:9/v1", model="m", timeout_s=2))
    with pytest.raises(ServiceError, match="cannot reach"):
        dead.embed_passages(["abc"])


def test_index_and_search_through_the_endpoint(server, tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.txt").write_text("aaaa aaaa apple")
    (tmp_path / "docs" / "b.txt").write_text("bbbb bbbb bobbin")
    cfg = MonjyuConfig(embedding={"provider": "openai", "base_url": server + "/v1", "model": "m"})
    m = Monjyu(tmp_path / "idx", cfg)
    m.index([tmp_path / "docs"])
    assert m.status()["embedder"] == {"id": "openai/m", "dim": 16}
    assert m.search("a a a", mode="vector", top_k=1).hits[0].document_id == "docs/a.txt"
