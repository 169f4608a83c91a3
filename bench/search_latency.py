"""Search latency through the facade, this tree against an earlier commit, in one run.

    python bench/search_latency.py --baseline 61b0e03 --index 2wiki=IDX --index covidqa-dev=IDX2

(an index of each set, as `monjyu eval` builds it; both versions read the same one). Each version
runs in a process of its own that stays up for the whole set: both warm up on 20 other questions
of the set in every mode, then each timed question is asked of one version and right after of
the other (which goes first alternates), mode after mode, so the machine's drift from one minute
to the next (a tenth on this 2-core machine) falls on both alike. A question is asked once per
mode, so the next mode finds its vector in the process's memory in both versions. Each process
starts from its own copy of the index's embedding cache (<index>/cache) as the bench found it.
Beside p50 and p95 per mode, each version's manifest reads and engine constructions per search
are counted (spies on `read_manifest` and on the engines' constructors): what building the
engines once per generation and reading the manifest once per search save.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from worktree import checkout, environment  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "shared" / "bench-data"
SETS = {"2wiki": (DATA / "2wiki" / "queries.jsonl", "text"),
        "covidqa-dev": (DATA / "covidqa-dev" / "questions.jsonl", "question")}
MODES = ("hybrid", "hybridrag", "lazy", "auto")
ENGINES = ("monjyu.engines.hybrid.engine:HybridRAGEngine", "monjyu.engines.lazy:LazySearchEngine",
           "monjyu.engines.answer:AnswerEngine", "monjyu.engines.baseline:BaselineRAG")


def serve(index: str) -> None:
    """In the version's own process: answer one JSON request per line of stdin ({"question",
    "mode"}) with the search's milliseconds and the manifest reads and engines built during it."""
    import time

    from monjyu import Monjyu
    from monjyu.index import manifest as manifest_module

    counts = {"manifest": 0, "engines": 0}
    real = manifest_module.read_manifest

    def counted(*args, **kwargs):
        counts["manifest"] += 1
        return real(*args, **kwargs)

    m = Monjyu(index)
    first = json.loads(sys.stdin.readline())
    m.ask(first["question"], first["mode"])  # every module imported, the index loaded
    for module in list(sys.modules.values()):
        if getattr(module, "__name__", "").startswith("monjyu") and getattr(module, "read_manifest", None) is real:
            module.read_manifest = counted
    for name in ENGINES:
        module_name, cls_name = name.split(":")
        try:
            cls = getattr(__import__(module_name, fromlist=[cls_name]), cls_name)
        except (ImportError, AttributeError):
            continue  # not in this version
        init = cls.__init__

        def built(self, *args, _init=init, **kwargs):
            counts["engines"] += 1
            _init(self, *args, **kwargs)
        cls.__init__ = built
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        asked = json.loads(line)
        counts.update(manifest=0, engines=0)
        t0 = time.perf_counter()
        m.ask(asked["question"], asked["mode"])
        print(json.dumps({"ms": (time.perf_counter() - t0) * 1000, **counts}), flush=True)


class Version:
    """A resident process of one version of the code, over its own copy of the embedding cache."""

    def __init__(self, src: Path, index: str, cache: Path, first: str, mode: str):
        self._tmp = tempfile.TemporaryDirectory()
        shutil.copy(cache / "embeddings.sqlite", self._tmp.name)
        self.proc = subprocess.Popen([sys.executable, __file__, "--serve", index], text=True,
                                     env=environment(src, MONJYU_CACHE_DIR=self._tmp.name),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.proc.stdin.write(json.dumps({"question": first, "mode": mode}) + "\n")
        self.proc.stdin.flush()
        self._read()

    def _read(self) -> dict:
        line = self.proc.stdout.readline()
        if not line:
            sys.exit(f"a search process ended (exit {self.proc.wait()})")
        return json.loads(line)

    def ask(self, question: str, mode: str) -> dict:
        self.proc.stdin.write(json.dumps({"question": question, "mode": mode}) + "\n")
        self.proc.stdin.flush()
        return self._read()

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait()
        self._tmp.cleanup()


def summary(runs: list[dict]) -> str:
    times = sorted(r["ms"] for r in runs)
    reads = sum(r["manifest"] for r in runs) / len(runs)
    built = sum(r["engines"] for r in runs) / len(runs)
    return f"{times[len(times) // 2]:7.1f} / {times[int(len(times) * 0.95)]:7.1f} ms, {reads:.1f} reads, {built:.1f} built"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline", default="61b0e03", help="the commit to time against")
    ap.add_argument("--index", action="append", default=[], help="SET=DIR, for 2wiki and covidqa-dev")
    ap.add_argument("--queries", type=int, default=80)
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--serve", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve:
        serve(args.serve)
        return
    if not args.index:
        ap.error("give --index 2wiki=DIR and/or --index covidqa-dev=DIR")
    modes = args.modes.split(",")
    this = Path(__file__).resolve().parents[1] / "src"
    with tempfile.TemporaryDirectory() as tmp, checkout(args.baseline, Path(tmp) / "baseline") as before:
        for name, index in (spec.split("=", 1) for spec in args.index):
            path, field = SETS[name]
            lines = path.read_text(encoding="utf-8").splitlines()
            questions = [json.loads(line)[field] for line in lines[:args.queries]]
            warm_up = [json.loads(line)[field] for line in lines[args.queries:args.queries + 20]]
            cache = Path(tmp) / f"cache-{name}"
            cache.mkdir()
            shutil.copy(Path(index) / "cache" / "embeddings.sqlite", cache)  # as found, before any run
            versions = {args.baseline: Version(before, index, cache, warm_up[0], modes[0]),
                        "this tree": Version(this, index, cache, warm_up[0], modes[0])}
            for mode in modes:
                for q in warm_up:  # engines and models as a running service has them
                    for v in versions.values():
                        v.ask(q, mode)
            timed: dict[str, dict[str, list[dict]]] = {v: {mode: [] for mode in modes} for v in versions}
            for mode in modes:
                for i, q in enumerate(questions):
                    order = list(versions) if i % 2 == 0 else list(reversed(versions))
                    for v in order:
                        timed[v][mode].append(versions[v].ask(q, mode))
            for v in versions.values():
                v.close()
            print(f"{name}: {len(questions)} questions, ms per search (p50 / p95), manifest reads and engines "
                  "built per search")
            for mode in modes:
                print(f"  {mode:10} " + " | ".join(f"{v}: {summary(timed[v][mode])}" for v in versions))


if __name__ == "__main__":
    main()
