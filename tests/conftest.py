"""Shared fixtures: real files, the real embedder, real LanceDB; one embedding cache per session."""

from __future__ import annotations

import os
import shutil
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
