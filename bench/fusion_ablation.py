"""Hybrid search ablations on two kinds of collection, in one run, through `monjyu eval`.

    python bench/fusion_ablation.py [--beir ../shared/bench-data/2wiki] [--qa ../shared/bench-data/covidqa-dev/questions.jsonl]

2wiki: Wikipedia passages, multi-hop questions (Recall@5, Recall@10, complete@8); covidqa-dev:
full-text papers, extractive questions (ans@1, ans@5, ans@10, doc@1, mean words per unit). Each
variant changes one setting by its MONJYU_* variable; the indexes are built once (reused across
variants: search settings do not change an index) and shared by content-hash caches.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "shared" / "bench-data"
VARIANTS = {
    "hybrid (default)": {},
    "no evidence rerank": {"MONJYU_SEARCH__RERANK_CANDIDATES": "0"},
    "rerank 20 candidates": {"MONJYU_SEARCH__RERANK_CANDIDATES": "20"},
    "rerank 40 candidates": {"MONJYU_SEARCH__RERANK_CANDIDATES": "40"},
    "graph weight 0": {"MONJYU_SEARCH__GRAPH_WEIGHT": "0"},
    "no feedback round": {"MONJYU_SEARCH__FEEDBACK": "false"},
    "title links off (boost 1)": {"MONJYU_SEARCH__GRAPH_TITLE_BOOST": "1"},
    "no link evidence round": {"MONJYU_SEARCH__LINK_EVIDENCE": "false"},
    "graph: one walk (hops 1)": {"MONJYU_SEARCH__GRAPH_HOPS": "1"},
}
BEIR_KEYS = ("recall@5", "recall@10", "complete@8")
QA_KEYS = ("ans@1", "ans@5", "ans@10", "doc@1", "mean_unit_words")


def run(args: list[str], env: dict[str, str]) -> dict:
    monjyu = Path(sys.executable).with_name("monjyu")
    out = subprocess.run([str(monjyu), "eval", *args, "--json"], capture_output=True, text=True,
                         env={**os.environ, **env})
    if out.returncode != 0:
        raise SystemExit(f"monjyu eval {' '.join(args)} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--beir", type=Path, default=DATA / "2wiki")
    ap.add_argument("--qa", type=Path, default=DATA / "covidqa-dev" / "questions.jsonl")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    sets = {"2wiki": (["--beir", str(args.beir)], BEIR_KEYS), "covidqa-dev": (["--qa", str(args.qa)], QA_KEYS)}
    table: dict[str, dict[str, dict]] = {name: {} for name in sets}
    for name, (source, keys) in sets.items():
        singles = run([*source, "--mode", "vector,keyword,graph,hybridrag"], {})
        table[name].update(singles)
        for variant, env in VARIANTS.items():
            table[name][variant] = run([*source, "--mode", "hybrid"], env)["hybrid"]
            print(f"{name} {variant}: " + ", ".join(f"{k} {table[name][variant][k]:.3f}" for k in keys), file=sys.stderr)
    if args.json:
        print(json.dumps(table, indent=1))
        return
    for name, (_, keys) in sets.items():
        print(f"\n{name}")
        print(f"{'':28}" + "".join(f"{k:>16}" for k in keys))
        for row, m in table[name].items():
            print(f"{row:28}" + "".join(f"{m[k]:>16.3f}" for k in keys))


if __name__ == "__main__":
    main()
