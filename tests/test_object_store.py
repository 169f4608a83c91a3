"""An index in object storage (store.url: s3://bucket/prefix) against a real S3-protocol server:
moto in server mode on 127.0.0.1, spoken to by pyarrow's S3 client as a cloud bucket would be."""

from __future__ import annotations

import logging
import shutil
import socket

import boto3
import pyarrow as pa
import pytest

from monjyu import Monjyu, MonjyuConfig
from monjyu.config import StoreConfig, load_config
from monjyu.errors import ConfigError, MonjyuError
from monjyu.store import object_store
from tests.conftest import SAMPLES

QUESTIONS = ["How does LazyGraphRAG keep indexing cheap?", "Leiden communities", "検索拡張生成とは何ですか"]


@pytest.fixture(scope="session")
def s3_server():
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    yield f"http://127.0.0.1:{port}"
    server.stop()


@pytest.fixture
def bucket(s3_server, monkeypatch, request):
    """A fresh bucket; the AWS variables point pyarrow (and boto3, to inspect it) at the server."""
    for key, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                       "AWS_ENDPOINT_URL": s3_server, "AWS_REGION": "us-east-1"}.items():
        monkeypatch.setenv(key, value)
    name = request.node.name.replace("_", "-")[:50].lower()
    boto3.client("s3").create_bucket(Bucket=name)
    return name


def store_config(cache_dir, url: str) -> MonjyuConfig:
    return MonjyuConfig(cache_dir=str(cache_dir), store=StoreConfig(url=url, refresh_s=0))


def keys(bucket: str) -> list[str]:
    return [o["Key"] for o in boto3.client("s3").list_objects_v2(Bucket=bucket).get("Contents", [])]


def test_an_index_in_the_bucket_searches_like_the_local_one(bucket, tmp_path, cache_dir, sample_index):
    papers = tmp_path / "papers"
    shutil.copytree(SAMPLES, papers)
    writer = Monjyu(tmp_path / "writer-cache", store_config(cache_dir, f"s3://{bucket}/idx"))
    assert not writer.index([papers]).failures
    stored = keys(bucket)
    assert "idx/manifest.json" in stored and any(k.startswith("idx/generations/g000001/lancedb/") for k in stored)

    reader = Monjyu(tmp_path / "reader-cache", store_config(cache_dir, f"s3://{bucket}/idx"))  # another machine
    for question in QUESTIONS:
        for mode in ("hybrid", "keyword", "graph"):
            remote = [h.text_unit_id for h in reader.search(question, mode, top_k=5, answer=False).hits]
            local = [h.text_unit_id for h in sample_index.search(question, mode, top_k=5, answer=False).hits]
            assert remote == local, (question, mode)
    assert reader.status()["counts"] == sample_index.status()["counts"]


def test_a_build_killed_while_uploading_leaves_the_previous_generation_readable(bucket, tmp_path, cache_dir,
                                                                                monkeypatch):
    papers = tmp_path / "papers"
    shutil.copytree(SAMPLES, papers)
    url = f"s3://{bucket}/idx"
    Monjyu(tmp_path / "a", store_config(cache_dir, url)).index([papers])
    (papers / "extra.md").write_text("# Extra\n\nBM25F weighs fields such as titles and abstracts.\n", encoding="utf-8")

    copies = {"n": 0}
    real_copy = object_store.shutil.copyfileobj

    def dies_midway(src, dst, length=0):
        uploading = isinstance(dst, pa.NativeFile)  # a pyarrow stream to the bucket, not a local file
        copies["n"] += uploading
        if uploading and copies["n"] == 4:
            raise KeyboardInterrupt("killed")  # the process stops here: some files sent, no manifest
        return real_copy(src, dst, length)

    monkeypatch.setattr(object_store.shutil, "copyfileobj", dies_midway)
    with pytest.raises(KeyboardInterrupt):
        Monjyu(tmp_path / "b", store_config(cache_dir, url)).index([papers])
    monkeypatch.setattr(object_store.shutil, "copyfileobj", real_copy)
    assert any(k.startswith("idx/generations/g000002/") for k in keys(bucket))  # half a generation was sent

    reader = Monjyu(tmp_path / "c", store_config(cache_dir, url))
    assert reader.manifest().generation == "g000001"
    assert reader.status()["counts"]["documents"] == 9
    assert reader.search("Leiden communities", answer=False).hits

    Monjyu(tmp_path / "b", store_config(cache_dir, url)).index([papers])  # the next build completes and cleans up
    generations = {k.split("/")[2] for k in keys(bucket) if k.startswith("idx/generations/")} - {""}  # "" : a folder marker
    assert len(generations) == 1
    assert Monjyu(tmp_path / "d", store_config(cache_dir, url)).status()["counts"]["documents"] == 10


def test_conversations_live_in_the_bucket(bucket, tmp_path, cache_dir):
    papers = tmp_path / "papers"
    shutil.copytree(SAMPLES, papers)
    url = f"s3://{bucket}/idx"
    Monjyu(tmp_path / "a", store_config(cache_dir, url)).index([papers])
    Monjyu(tmp_path / "b", store_config(cache_dir, url)).ask("What is LazyGraphRAG?", "lazy", session="s1")
    assert "idx/sessions/s1.json" in keys(bucket)
    follow_up = Monjyu(tmp_path / "c", store_config(cache_dir, url)).ask("And its cost?", "lazy", session="s1")
    assert follow_up.turn == 2


def test_store_settings_from_the_environment_and_clear_errors(bucket, tmp_path, cache_dir, monkeypatch):
    monkeypatch.setenv("MONJYU_STORE__URL", f"s3://{bucket}/from-env")
    assert load_config().store.url == f"s3://{bucket}/from-env"
    with pytest.raises((ConfigError, ValueError), match="s3://bucket/prefix"):
        MonjyuConfig(store=StoreConfig(url="gs://elsewhere/idx"))
    monkeypatch.delenv("MONJYU_STORE__URL")
    missing = Monjyu(tmp_path / "x", store_config(cache_dir, "s3://no-such-bucket-here/idx"))
    with pytest.raises(MonjyuError, match="no-such-bucket-here"):
        missing.index([SAMPLES])
