"""Distributed indexing on a real Ray cluster of two nodes started on this machine (two raylets of
one CPU each, object stores capped): the index equals a local build of the same files, tasks run
on both nodes, and a worker that dies mid-task is replaced and its task re-run.
Loading in spawned worker processes of this machine: the same index, and calls whose worker died
run in the build process."""

from __future__ import annotations

import json
import multiprocessing
import os

import numpy as np
import pytest

from monjyu import Monjyu, MonjyuConfig
from monjyu.errors import MonjyuError
from monjyu.index import builder, distributed
from monjyu.index.builder import generation_dir
from monjyu.store import LanceStore
from monjyu.store.lancedb_store import COMMUNITIES

from .conftest import SAMPLES
from .test_cli import run


def test_the_cli_builds_on_a_local_ray_cluster(tmp_path, cache_dir):
    """Runs before the module's cluster starts: the CLI starts (and stops) its own."""
    pytest.importorskip("ray")
    idx = str(tmp_path / "idx")
    out = json.loads(run(["index", str(SAMPLES), "--index", idx, "--executor", "ray", "--json"], tmp_path, cache_dir).stdout)
    assert out["documents"] == 9 and out["failures"] == []
    refused = run(["index", str(SAMPLES), "--index", idx, "--address", "auto"], tmp_path, cache_dir, check=False)
    assert refused.returncode != 0 and "--executor ray only" in refused.stderr


@pytest.fixture(scope="module")
def ray_cluster():
    ray = pytest.importorskip("ray")
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "object_store_memory": 128 << 20,
                                                             "include_dashboard": False})
    cluster.add_node(num_cpus=1, object_store_memory=128 << 20)
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, log_to_driver=False)
    yield ray
    ray.shutdown()
    cluster.shutdown()


def tables(m: Monjyu):
    store = LanceStore(generation_dir(m.index_dir, m.workspace.manifest().generation) / "lancedb")
    units = store.units(["id", "text", "vector"]).sort_by("id")
    communities = store.read(COMMUNITIES).sort_by("id").drop_columns(["id"]) if store.has(COMMUNITIES) else None
    return units, communities


def test_a_ray_build_equals_a_local_build_even_when_a_worker_dies(ray_cluster, tmp_path, samples_copy, sample_index,
                                                                  monkeypatch):
    died = tmp_path / "a-worker-died"
    real_embed = distributed._embed_task

    def embed_but_die_the_first_time(config, texts):  # pickled by value: runs on the worker
        if not os.path.exists(died):
            open(died, "w").close()
            os._exit(1)  # the worker process dies in the middle of its task
        return real_embed(config, texts)

    monkeypatch.setattr(distributed, "_embed_task", embed_but_die_the_first_time)
    real_load = builder.load_source

    def load_and_say_where(path, doc_id, config, entry=None):  # each file's task leaves the id of the node it ran on
        import ray

        (tmp_path / f"ran-on-{ray.get_runtime_context().get_node_id()}").touch()
        return real_load(path, doc_id, config, entry)

    monkeypatch.setattr(builder, "load_source", load_and_say_where)
    assert len([n for n in ray_cluster.nodes() if n["Alive"]]) == 2
    cold = MonjyuConfig(cache_dir=str(tmp_path / "cold-cache"))  # every passage and phrase computed on the cluster
    report = Monjyu(tmp_path / "ray-index", cold).index([samples_copy], executor="ray")
    assert died.exists() and not report.failures and report.embedded == report.text_units
    assert len(list(tmp_path.glob("ran-on-*"))) == 2  # both nodes loaded files

    units, communities = tables(Monjyu(tmp_path / "ray-index", cold))
    local_units, local_communities = tables(sample_index)
    assert units["id"].to_pylist() == local_units["id"].to_pylist()
    assert units["text"].to_pylist() == local_units["text"].to_pylist()
    a = np.stack(units["vector"].to_numpy(zero_copy_only=False))
    b = np.stack(local_units["vector"].to_numpy(zero_copy_only=False))
    assert (np.sum(a * b, axis=1) >= 0.9999).all()
    assert communities.equals(local_communities)


def test_executor_options_that_do_not_apply_are_refused(tmp_path, samples_copy, make_config):
    m = Monjyu(tmp_path / "idx", make_config())
    with pytest.raises(MonjyuError, match="--executor ray only"):
        m.index([samples_copy], address="auto")
    with pytest.raises(MonjyuError, match="unknown executor 'spark'"):
        m.index([samples_copy], executor="spark")
    with pytest.raises(MonjyuError, match="ingest.processes set this machine's worker processes"):
        Monjyu(tmp_path / "idx", make_config(ingest={"processes": 2})).index([samples_copy], executor="ray")


def test_a_build_loading_in_worker_processes_equals_one_loading_in_the_build_process(tmp_path, samples_copy,
                                                                                    sample_index, make_config,
                                                                                    monkeypatch):
    used = []

    def run_all(*args, processes=1, sizes=None):
        used.append(processes)
        return distributed.run_all(*args, processes=processes, sizes=sizes)

    monkeypatch.setattr(builder, "run_all", run_all)
    monkeypatch.setattr(builder, "LOAD_WORKERS_MIN_BYTES", 0)  # the samples are far below 1 MB
    m = Monjyu(tmp_path / "idx", make_config(ingest={"processes": 2}))
    report = m.index([samples_copy])
    assert used == [2] and not report.failures
    units, communities = tables(m)
    local_units, local_communities = tables(sample_index)
    assert units.equals(local_units) and communities.equals(local_communities)


def _square_or_die_in_a_worker(x: int) -> int:
    if x == 2 and multiprocessing.parent_process() is not None:
        os._exit(1)  # the worker process dies; in the build process the call succeeds
    return x * x


def test_calls_whose_worker_process_died_run_in_the_build_process():
    finished = []
    results = distributed.run_all(None, _square_or_die_in_a_worker, [(x,) for x in range(5)], finished.append,
                                  processes=2)
    assert results == [0, 1, 4, 9, 16] and len(finished) == 5


def _in_the_build_process(_: int) -> bool:
    return multiprocessing.parent_process() is None


def test_the_build_process_loads_beside_its_worker_processes():
    """With two processes, one worker is spawned and the build process runs calls too (while the
    worker starts and after): the first call goes to the worker, the next to the build process."""
    finished = []
    assert distributed.run_all(None, _in_the_build_process, [(0,), (1,)], finished.append, processes=2) == [False, True]
    assert len(finished) == 2


def _warn_in_a_worker(x: int) -> int:
    import logging
    import warnings

    logging.getLogger("some.library").warning("library chatter %d", x)
    warnings.warn(f"a library warning {x}")
    return x


def test_worker_processes_log_to_the_build_log_not_the_terminal(capfd):
    """A CLI build's root handlers write logs/build.log; a worker's records and warnings go there
    too, never to the worker's own stderr (the terminal)."""
    import logging

    records = []

    class Keep(logging.Handler):
        def emit(self, record):
            records.append(record.getMessage())

    root = logging.getLogger()
    saved = root.handlers[:]
    root.handlers = [Keep()]
    try:
        assert distributed.run_all(None, _warn_in_a_worker, [(1,), (2,)], lambda n: None, processes=2) == [1, 2]
    finally:
        root.handlers = saved
    assert {"library chatter 1", "library chatter 2"} <= set(records)
    assert any("a library warning 1" in r for r in records)
    assert "chatter" not in capfd.readouterr().err
