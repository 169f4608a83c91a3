"""Incremental Level 1 against a full clustering of the same graph, on two kinds of collection.

    python bench/incremental_level1.py [--data ../shared/bench-data] [--caches DIR] [--work DIR]
        [--only covidqa-dev,2wiki] [--json]

- covidqa-dev: an index of its first 29 papers (by file name), then the last 20 added one at a
  time, each add a build of its own (`Monjyu.index`);
- 2wiki: an index of its passages but 100, then those 100 added one at a time (a file of one
  passage each). The 100 are the gold passages of its first questions, so that what is added is
  what the questions need.

After the adds the index is measured as it stands (communities updated where the graph changed,
or clustered from scratch whenever the drift bound fired), then `recluster=True` clusters the
same graph from scratch and the same figures are measured again in the same run: lazy search
(z100, offline; the mode communities steer), hybrid (no communities: equal by construction, a
check), and for covidqa-dev the global questions' themes (bench/global_questions.py). Printed per
add: how the communities were built, the drift, the phrases re-clustered and the seconds of the
clustering and of the whole build; how often the bound fired.

--caches DIR shares DIR/<set>/cache (vectors and noun phrases by content hash) with earlier
indexes, so nothing is embedded again.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

from monjyu import Monjyu
from monjyu.engines.request import eval_mode
from monjyu.eval import BeirDataset, QADataset, evaluate_beir, evaluate_qa

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "bench-data"
ADDS = {"covidqa-dev": 20, "2wiki": 100}
MODES = ["lazy", "hybrid"]


def facade(index: Path, cache: Path | None) -> Monjyu:
    m = Monjyu(index)
    if cache is not None:
        m.config.cache_dir = str(cache)
    return m


def covidqa_files(data: Path, work: Path) -> tuple[Path, list[Path]]:
    """The folder the index reads (its first 29 papers) and the papers to add, in order."""
    papers = sorted((data / "covidqa-dev" / "docs").iterdir())
    folder = work / "docs"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for p in papers[:-ADDS["covidqa-dev"]]:
        shutil.copy(p, folder / p.name)
    return folder, papers[-ADDS["covidqa-dev"]:]


def wiki_files(data: Path, work: Path) -> tuple[Path, list[Path]]:
    """2wiki's corpus less 100 gold passages in one file, and those passages one file each."""
    dataset = BeirDataset.load(data / "2wiki")
    adds: list[str] = []
    for qid in dataset.qrels:
        for doc in dataset.qrels[qid]:
            if doc not in adds and len(adds) < ADDS["2wiki"]:
                adds.append(doc)
    rows = {json.loads(line)["_id"]: line for line in dataset.corpus.read_text(encoding="utf-8").splitlines() if line}
    folder, extra = work / "docs", work / "adds"
    for d in (folder, extra):
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir(parents=True)
    (folder / "corpus.jsonl").write_text("".join(rows[k] + "\n" for k in rows if k not in set(adds)), encoding="utf-8")
    files = []
    for n, doc in enumerate(adds):
        path = extra / f"add-{n:03d}.jsonl"
        path.write_text(rows[doc] + "\n", encoding="utf-8")
        files.append(path)
    return folder, files


def figures(name: str, m: Monjyu, data: Path, docs: Path) -> dict[str, dict[str, float]]:
    def hits(query: str, mode: str, n: int):
        name, options = eval_mode(mode)
        return m.ask(query, name, top_k=n, answer=False, **options).hits

    if name == "2wiki":
        dataset = BeirDataset.load(data / "2wiki")
        result = evaluate_beir(dataset, lambda q, mode, n: [h.document_id for h in hits(q, mode, n)], MODES)
        keys = ("recall@5", "recall@10", "complete@8")
    else:
        dataset = QADataset.load(data / "covidqa-dev" / "questions.jsonl")
        result = evaluate_qa(dataset, lambda q, mode, k: [(h.source_path, h.text) for h in hits(q, mode, k)], MODES)
        keys = ("ans@1", "ans@5", "ans@10")
    out = {mode: {k: round(result[mode][k], 4) for k in keys} for mode in MODES}
    if name == "covidqa-dev":
        out["global questions"] = global_questions(m.index_dir, docs)
    return out


def global_questions(index: Path, docs: Path) -> dict[str, float]:
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "global_questions.py"), "--index", str(index),
                           "--docs", str(docs), "--json"], capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"global_questions.py failed:\n{proc.stderr[-2000:]}")
    summary = json.loads(proc.stdout.strip().splitlines()[-1])  # its last line
    return {k: v for k, v in summary.items() if isinstance(v, (int, float)) and k != "p50 ms"}


def run_set(name: str, data: Path, work: Path, cache: Path | None) -> dict:
    work.mkdir(parents=True, exist_ok=True)
    folder, adds = (wiki_files if name == "2wiki" else covidqa_files)(data, work)
    index = work / "index"
    shutil.rmtree(index, ignore_errors=True)
    m = facade(index, cache)
    base = m.index([folder])
    print(f"{name}: base {base.text_units} units, {base.level1.get('communities')} communities", file=sys.stderr)
    steps = []
    for path in adds:
        shutil.copy(path, folder / path.name)
        t0 = time.perf_counter()
        report = m.index([folder])
        c = report.clustering
        steps.append({"file": path.name, "mode": c["mode"], "drift": c["drift"], "changed": c["changed"],
                      "reclustered": c["reclustered"], "modularity": c["modularity"],
                      "clustering_s": round(report.seconds.get("level1_leiden", 0.0), 3),
                      "build_s": round(time.perf_counter() - t0, 2)})
        print(f"  + {path.name}: {c['mode']}, drift {c['drift']:.3f}, {c['changed']} phrases changed, "
              f"{c['reclustered']} re-clustered, {steps[-1]['clustering_s']} s clustering, "
              f"{steps[-1]['build_s']} s build", file=sys.stderr)
    updated = figures(name, m, data, folder)
    modularity_updated = steps[-1]["modularity"]
    full = m.index([folder], recluster=True)
    return {"adds": len(steps), "bound_fired": sum(s["mode"] == "full" for s in steps), "steps": steps,
            "updated": updated, "full": figures(name, m, data, folder),
            "modularity": {"updated": modularity_updated, "full": full.clustering["modularity"]}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--caches", type=Path, help="DIR/<set>/cache: vector and phrase caches to share")
    ap.add_argument("--work", type=Path, default=ROOT / ".monjyu-eval" / "incremental")
    ap.add_argument("--only", default="covidqa-dev,2wiki")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    results = {}
    for name in args.only.split(","):
        cache = args.caches / ("covidqa" if name == "covidqa-dev" else name) / "cache" if args.caches else None
        results[name] = run_set(name, args.data, args.work / name, cache)
    if args.json:
        print(json.dumps(results, indent=1))
        return
    for name, r in results.items():
        print(f"\n{name}: {r['adds']} adds, the drift bound fired {r['bound_fired']} times; modularity of the top "
              f"level updated {r['modularity']['updated']:.4f}, full {r['modularity']['full']:.4f}")
        for part in r["updated"]:
            u, f = r["updated"][part], r["full"][part]
            print(f"  {part:18}" + "  ".join(f"{k} {u[k]:.3f} / {f[k]:.3f} ({u[k] - f[k]:+.3f})" for k in u))
        secs = sorted(s["build_s"] for s in r["steps"])
        print(f"  build per add: median {secs[len(secs) // 2]:.2f} s, max {secs[-1]:.2f} s")


if __name__ == "__main__":
    main()
