"""A build on a Ray cluster of several nodes started on this machine against a local build of the
same files, cold caches, in the same run: wall time and per-stage time of each, the stages'
throughput, and whether the two indexes are the same.

    python bench/ray_build.py --docs ../shared/bench-data/covidqa-dev/docs [--nodes 2] [--workers 2]

The cluster is real: `--nodes` raylets (ray.cluster_utils.Cluster: a head node and more nodes,
each with its own CPUs, `--workers` split among them, and an object store capped at
`--object-store-mb`), joined by the build as a remote cluster would be (`ray.init(address=...)`).
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
    ap.add_argument("--workers", type=int, default=2, help="CPUs of the cluster, split among its nodes")
    ap.add_argument("--nodes", type=int, default=2)
    ap.add_argument("--object-store-mb", type=int, default=300, help="each node's object store")
    args = ap.parse_args()
    if args.workers < args.nodes:
        raise SystemExit("--workers must be at least --nodes (each node needs a CPU)")
    os.environ.pop("MONJYU_CACHE_DIR", None)  # the environment would beat cache_dir: the caches must be these
    import ray

    from monjyu import Monjyu, MonjyuConfig

    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        t0 = time.perf_counter()
        local = Monjyu(work / "local", MonjyuConfig(cache_dir=str(work / "cache-local"))).index([args.docs])
        local_s = time.perf_counter() - t0
        print(f"local build: {local_s:.1f} s ({local.text_units} units, {local.embedded} embedded)", flush=True)

        from ray.cluster_utils import Cluster

        t0 = time.perf_counter()
        cpus = [args.workers // args.nodes + (i < args.workers % args.nodes) for i in range(args.nodes)]
        store = args.object_store_mb << 20
        cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": cpus[0], "object_store_memory": store,
                                                                 "include_dashboard": False})
        for n in cpus[1:]:
            cluster.add_node(num_cpus=n, object_store_memory=store)
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, log_to_driver=False)
        nodes = [n for n in ray.nodes() if n["Alive"]]
        started_s = time.perf_counter() - t0
        t1 = time.perf_counter()
        remote = Monjyu(work / "ray", MonjyuConfig(cache_dir=str(work / "cache-ray"))).index([args.docs], executor="ray")
        ray_s = time.perf_counter() - t1
        ray.shutdown()
        cluster.shutdown()
        print(f"ray build ({len(nodes)} nodes, CPUs {cpus}, object stores {args.object_store_mb} MB): {ray_s:.1f} s, "
              f"plus {started_s:.1f} s to start the cluster ({remote.text_units} units, {remote.embedded} embedded)")
        for name, report in (("local", local), ("ray", remote)):
            print(f"stages {name}:", {k: round(v, 1) for k, v in report.seconds.items()})
            print(f"  throughput {name}: " + ", ".join(
                f"{k} {report.text_units / v:.1f} units/s" for k, v in report.seconds.items() if v > 0.05))

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
