"""A build on a local 2-worker Ray cluster against a local build of the same files, cold caches,
in the same run: wall time of each, and whether the two indexes are the same.

    python bench/ray_build.py --docs ../shared/bench-data/covidqa-dev/docs [--workers 2]

Same means: the same unit ids and texts in the same order, every vector at cosine >= 0.9999 with
its local twin, the same communities (levels, members, titles).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np


def tables(index_dir: Path):
    from monjyu.index import read_manifest
    from monjyu.index.builder import generation_dir
    from monjyu.store import LanceStore
    from monjyu.store.lancedb_store import COMMUNITIES

    store = LanceStore(generation_dir(index_dir, read_manifest(index_dir).generation) / "lancedb")
    units = store.units(["id", "text", "vector"])
    return units, store.read(COMMUNITIES).drop_columns(["id"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", required=True, type=Path)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    os.environ.pop("MONJYU_CACHE_DIR", None)  # the environment would beat cache_dir: the caches must be these
    import ray

    from monjyu import Monjyu, MonjyuConfig

    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        t0 = time.perf_counter()
        local = Monjyu(work / "local", MonjyuConfig(cache_dir=str(work / "cache-local"))).index([args.docs])
        local_s = time.perf_counter() - t0
        print(f"local build: {local_s:.1f} s ({local.text_units} units, {local.embedded} embedded)", flush=True)

        t0 = time.perf_counter()
        ray.init(num_cpus=args.workers, include_dashboard=False, log_to_driver=False)
        started_s = time.perf_counter() - t0
        t1 = time.perf_counter()
        remote = Monjyu(work / "ray", MonjyuConfig(cache_dir=str(work / "cache-ray"))).index([args.docs], executor="ray")
        ray_s = time.perf_counter() - t1
        ray.shutdown()
        print(f"ray build ({args.workers} workers): {ray_s:.1f} s, plus {started_s:.1f} s to start the cluster "
              f"({remote.text_units} units, {remote.embedded} embedded)")
        print("stages local:", {k: round(v, 1) for k, v in local.seconds.items()})
        print("stages ray:  ", {k: round(v, 1) for k, v in remote.seconds.items()})

        (lu, lc), (ru, rc) = tables(work / "local"), tables(work / "ray")
        a = np.stack(lu["vector"].to_numpy(zero_copy_only=False))
        b = np.stack(ru["vector"].to_numpy(zero_copy_only=False))
        same_ids = lu["id"].to_pylist() == ru["id"].to_pylist()
        same_texts = lu["text"].to_pylist() == ru["text"].to_pylist()
        cosine = float(np.min(np.sum(a * b, axis=1))) if same_ids else float("nan")
        print(f"same unit ids: {same_ids}; same texts: {same_texts}; min cosine of vectors: {cosine:.6f}; "
              f"same communities: {lc.equals(rc)} ({lc.num_rows} communities)")


if __name__ == "__main__":
    main()
