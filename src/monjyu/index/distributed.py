"""The costly build stages fanned out to a Ray cluster (`monjyu index DIR --executor ray`), and
loading spread over worker processes of this machine (`run_all` with `processes`).

Loading + chunking (one task per file), passage embedding and noun-phrase extraction (one task
per batch) run on the cluster's workers; the build process keeps everything else: the caches
(only cache misses are sent out), the checks, Level 1, writing the generation and publishing it
to the configured store. Each worker loads the embedder and the NLP models once and keeps them
for every task it runs. A worker that dies is replaced and its task run again (Ray's task
retries); a file that cannot be read is a reported failure, as in a local build, never a retry.
Workers must see the files at the paths given (a shared filesystem), and have MONJYU installed.
"""

from __future__ import annotations

import logging
import multiprocessing
import queue
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from ..config import EmbeddingConfig, MonjyuConfig
from ..errors import IngestError, MonjyuError
from ..ingest.catalog import CatalogEntry
from ..runtime import WorkerLogs, cpu_cores, forward_logs
from ..types import Document, TextUnit

log = logging.getLogger(__name__)

TASK_RETRIES = 3  # runs of a task whose worker died, before the build fails
EMBED_BATCH = 64  # passages per embedding task
PHRASE_BATCH = 128  # texts per noun-phrase task

_models: dict[str, Any] = {}  # per process (a worker, or the build itself): loaded once, kept for the next task


def _model(key: str, make: Callable[[], Any]) -> Any:
    if key not in _models:
        _models[key] = make()
    return _models[key]


class LoadFailure(NamedTuple):
    """A file that could not be read, and why (reported, as every failure of a build)."""

    path: str
    reason: str


def load_source(path: Path, doc_id: str, config: MonjyuConfig, entry: CatalogEntry | None = None
                ) -> tuple[list[Document], list[TextUnit], list[list[str]]] | LoadFailure:
    """One file loaded (with a catalog's metadata over the parsed ones), chunked, and its units'
    BM25 terms analysed: a build task, run in the build process or on a worker."""
    from ..ingest import Chunker, load_file
    from ..nlp import Analyzer

    try:
        docs = load_file(path, doc_id, config.ingest)
    except IngestError as exc:
        return LoadFailure(exc.path, exc.reason)
    if entry is not None:
        for doc in docs:
            entry.apply(doc)
    chunker = _model(f"chunker:{config.chunking.model_dump_json()}", lambda: Chunker(config.chunking))
    analyzer = _model("analyzer", Analyzer)
    units = [u for doc in docs for u in chunker.chunk(doc)]
    return docs, units, [analyzer.terms(u.embedding_text) for u in units]


def _embed_task(config: EmbeddingConfig, texts: list[str]) -> np.ndarray:
    from ..embed import create_embedder

    embedder = _model(f"embedder:{config.model_dump_json()}", lambda: create_embedder(config))
    return embedder.embed_passages(texts)


def _phrases_task(texts: list[str], named_entities: bool) -> list[dict[str, str]]:
    from ..nlp.noun_phrases import NounPhraseExtractor

    return _model(f"phrases:{named_entities}", lambda: NounPhraseExtractor(named_entities=named_entities)).extract(texts)


def _call_task(fn: Callable, args: tuple) -> Any:
    return fn(*args)


def check_executor(config: MonjyuConfig, executor: str, address: str | None) -> None:
    """Where a build runs, "local" or "ray" (a cluster): settings that contradict the choice are
    refused by name."""
    if executor not in ("local", "ray"):
        raise MonjyuError(f"unknown executor '{executor}'; use local or ray")
    if address and executor != "ray":
        raise MonjyuError("an address applies to --executor ray only")
    local_workers = [k for k, v in (("ingest.processes", config.ingest.processes),
                                    ("graph.processes", config.graph.processes)) if v]
    if executor == "ray" and local_workers:
        raise MonjyuError(f"{' and '.join(local_workers)} set this machine's worker processes; with --executor ray "
                          "the cluster's workers load the files and extract noun phrases: leave them at 0")


class RayExecutor:
    """Runs tasks on the Ray cluster at `address` ("auto": the one this machine belongs to), or on
    a local one started with one CPU per core when no address is given and none is running."""

    def __init__(self, address: str | None = None):
        try:
            import ray
        except ImportError:
            raise MonjyuError("--executor ray needs Ray: pip install 'monjyu[ray]'") from None
        self._ray = ray
        self._started = False
        if not ray.is_initialized():
            try:
                if address:
                    ray.init(address=address, log_to_driver=False)
                else:
                    ray.init(num_cpus=cpu_cores(), include_dashboard=False, log_to_driver=False)
            except (ConnectionError, RuntimeError, ValueError) as exc:
                raise MonjyuError(f"cannot reach the Ray cluster at {address or 'a new local one'}: {exc}; start it "
                                  "with `ray start --head`, or give its address with --address") from None
            self._started = True
        self._remote = ray.remote(max_retries=TASK_RETRIES, retry_exceptions=False)(_call_task)

    def map(self, fn: Callable, calls: list[tuple], progress: Callable[[int], None] | None = None) -> list[Any]:
        """fn(*args) for each args tuple on the cluster; results in the order given; progress(1)
        as each one finishes."""
        refs = [self._remote.remote(fn, args) for args in calls]
        position = {ref: i for i, ref in enumerate(refs)}
        results: list[Any] = [None] * len(refs)
        pending = list(refs)
        try:
            while pending:
                done, pending = self._ray.wait(pending, num_returns=1)
                for ref in done:
                    results[position[ref]] = self._ray.get(ref)
                    if progress:
                        progress(1)
        except self._ray.exceptions.RayError as exc:
            for ref in pending:
                self._ray.cancel(ref, force=True)
            raise MonjyuError(f"a build task failed on the Ray cluster (a task whose worker dies is run up to "
                              f"{TASK_RETRIES} more times): {exc}") from None
        return results

    def close(self) -> None:
        if self._started:
            self._ray.shutdown()


class ClusterEmbedder:
    """The configured embedder's passages computed on the cluster, EMBED_BATCH per task; its id
    and queries are the local embedder's (the same model and weights)."""

    def __init__(self, local, config: EmbeddingConfig, executor: RayExecutor):
        self._local, self._config, self._executor = local, config, executor
        self.id = local.id

    @property
    def dim(self) -> int:
        return self._local.dim

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        batches = [(self._config, texts[i:i + EMBED_BATCH]) for i in range(0, len(texts), EMBED_BATCH)]
        parts = self._executor.map(_embed_task, batches)
        return np.vstack(parts).astype(np.float32) if parts else np.zeros((0, self.dim), np.float32)

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return self._local.embed_queries(texts)


class ClusterPhraseExtractor:
    """NounPhraseExtractor.extract on the cluster, PHRASE_BATCH texts per task."""

    def __init__(self, executor: RayExecutor, named_entities: bool = False):
        self._executor = executor
        self.named_entities = named_entities
        from ..nlp.noun_phrases import extraction_id

        self.id = extraction_id(named_entities)  # the local extractor's cache keys

    def extract(self, texts: list[str]) -> list[dict[str, str]]:
        batches = [(texts[i:i + PHRASE_BATCH], self.named_entities) for i in range(0, len(texts), PHRASE_BATCH)]
        return [p for part in self._executor.map(_phrases_task, batches) for p in part]


def run_all(executor: RayExecutor | None, fn: Callable, calls: list[tuple], progress: Callable[[int], None],
            processes: int = 1, sizes: list[int] | None = None) -> list[Any]:
    """fn(*args) for each call, results in call order: on the cluster at once, in this process
    beside `processes` - 1 spawned worker processes on this machine (this process runs calls too,
    while the workers start and after), or in this process one after another; progress(1) as each
    one finishes. Given each call's size, the largest are taken first, so that no large file is
    left to one process at the end."""
    if executor is not None:
        return executor.map(fn, calls, progress)
    out: list[Any] = [None] * len(calls)
    done = [False] * len(calls)
    if processes > 1 and len(calls) > 1:
        order = sorted(range(len(calls)), key=lambda i: -sizes[i]) if sizes else list(range(len(calls)))
        try:
            _run_beside_workers(fn, calls, progress, min(processes - 1, len(calls) - 1), order, out, done)
        except BrokenProcessPool:  # workers could not start (a script without a __main__ guard) or died
            log.warning("build worker processes stopped; the remaining %d calls run in this process",
                        done.count(False))
    for i, args in enumerate(calls):
        if not done[i]:
            out[i] = fn(*args)
            progress(1)
    return out


def _run_beside_workers(fn: Callable, calls: list[tuple], progress: Callable[[int], None], workers: int,
                        order: list[int], out: list[Any], done: list[bool]) -> None:
    """Calls in `order`, each taken by whichever is free first: one of `workers` spawned processes
    (never forked: a fork would copy the locks of LanceDB's and the embedder's threads) or this
    process. Results and progress are handled here, between this process's own calls; a call
    that could not be sent to a worker is left undone (run_all runs it here)."""
    pending = deque(order)
    lock = threading.Lock()
    finished: queue.SimpleQueue = queue.SimpleQueue()  # (call, future) as workers finish them
    in_flight = 0

    def take() -> int | None:
        with lock:
            return pending.popleft() if pending else None

    def collect(wait: bool) -> None:
        """The workers' results that are in (with `wait`, at least one)."""
        nonlocal in_flight
        while True:
            try:
                i, future = finished.get(block=wait)
            except queue.Empty:
                return
            with lock:
                in_flight -= 1
            out[i], done[i] = future.result(), True  # a worker's exception is raised here
            progress(1)
            wait = False

    context = multiprocessing.get_context("spawn")
    logs = WorkerLogs(context)
    try:
        with ProcessPoolExecutor(workers, mp_context=context, initializer=forward_logs,
                                 initargs=logs.initargs) as pool:
            def feed(_: object = None) -> None:
                """The next call to a worker (at the start, and as each worker finishes one)."""
                nonlocal in_flight
                i = take()
                if i is None:
                    return
                try:
                    future = pool.submit(fn, *calls[i])
                except (BrokenProcessPool, RuntimeError):  # the pool broke or is shutting down
                    return
                with lock:
                    in_flight += 1
                future.add_done_callback(lambda f, i=i: (finished.put((i, f)), feed()))

            for _ in range(workers):
                feed()
            while (i := take()) is not None:
                out[i], done[i] = fn(*calls[i]), True
                progress(1)
                collect(wait=False)
            while in_flight:  # nothing is left to take: only the workers' last calls
                collect(wait=True)
    finally:
        logs.close()
