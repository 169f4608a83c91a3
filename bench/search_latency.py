"""Search latency through the facade, this tree against an earlier commit, in one run.

Each version runs in its own process on the same index (`Monjyu.ask`, every question once
untimed, then timed), the versions taking turns set by set, so both see the same machine. Beside
p50 and p95 per mode, each version's manifest reads and engine constructions per search are
counted (spies on `read_manifest` and on the engines' constructors), which is what building the
engines once per generation and reading the manifest once per search save.

    python bench/search_latency.py --baseline 61b0e03 --index 2wiki=IDX --index covidqa-dev=IDX

(an index of each set, as `monjyu eval` builds it; both versions read the same one).
"""

from __future__ import annotations

import argparse
import json
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


def worker(index: str, questions: list[str], modes: list[str]) -> dict:
    """In the version's own process: each mode's latencies (ms), manifest reads and engines built."""
    import time

    import monjyu
    from monjyu import Monjyu
    from monjyu.index import manifest as manifest_module

    counts = {"manifest": 0, "engines": 0}
    real = manifest_module.read_manifest

    def counted(*args, **kwargs):
        counts["manifest"] += 1
        return real(*args, **kwargs)

    m = Monjyu(index)
    m.ask(questions[0], modes[0])  # every module imported, the index loaded
    for module in list(sys.modules.values()):
        if getattr(module, "__name__", "").startswith("monjyu") and getattr(module, "read_manifest", None) is real:
            module.read_manifest = counted
    for name in ("monjyu.engines.hybrid.engine:HybridRAGEngine", "monjyu.engines.lazy:LazySearchEngine",
                 "monjyu.engines.answer:AnswerEngine", "monjyu.engines.baseline:BaselineRAG"):
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
    out = {"version": getattr(monjyu, "__file__", "")}
    for mode in modes:
        for q in questions:  # warm: vectors, sentence embeddings and engines as a running service has them
            m.ask(q, mode)
        counts.update(manifest=0, engines=0)
        times = []
        for q in questions:
            t0 = time.perf_counter()
            m.ask(q, mode)
            times.append((time.perf_counter() - t0) * 1000)
        times.sort()
        out[mode] = {"p50": times[len(times) // 2], "p95": times[int(len(times) * 0.95)],
                     "manifest_reads": counts["manifest"] / len(questions),
                     "engines_built": counts["engines"] / len(questions)}
    return out


def run(src: Path, index: str, questions: list[str], modes: list[str]) -> dict:
    spec = json.dumps({"index": index, "questions": questions, "modes": modes})
    proc = subprocess.run([sys.executable, __file__, "--worker", spec], env=environment(src), capture_output=True,
                          text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline", default="61b0e03", help="the commit to time against")
    ap.add_argument("--index", action="append", default=[], help="SET=DIR, for 2wiki and covidqa-dev")
    ap.add_argument("--queries", type=int, default=60)
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        spec = json.loads(args.worker)
        print(json.dumps(worker(spec["index"], spec["questions"], spec["modes"])))
        return
    if not args.index:
        ap.error("give --index 2wiki=DIR and/or --index covidqa-dev=DIR")
    modes = args.modes.split(",")
    this = Path(__file__).resolve().parents[1] / "src"
    with tempfile.TemporaryDirectory() as tmp, checkout(args.baseline, Path(tmp) / "baseline") as before:
        for name, index in (spec.split("=", 1) for spec in args.index):
            path, field = SETS[name]
            lines = path.read_text(encoding="utf-8").splitlines()[:args.queries]
            questions = [json.loads(line)[field] for line in lines]
            figures = {args.baseline: run(before, index, questions, modes), "this tree": run(this, index, questions, modes)}
            print(f"{name}: {len(questions)} questions, ms per search (p50 / p95), manifest reads and engines built "
                  "per search")
            for mode in modes:
                cells = [f"{v}: {f[mode]['p50']:7.1f} / {f[mode]['p95']:7.1f} ms, {f[mode]['manifest_reads']:.1f} reads, "
                         f"{f[mode]['engines_built']:.1f} built" for v, f in figures.items()]
                print(f"  {mode:10} " + " | ".join(cells))


if __name__ == "__main__":
    main()
