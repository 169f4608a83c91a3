"""Hybrid search ablations on three kinds of collection, in one run, through `monjyu eval`.

    python bench/fusion_ablation.py [--data ../shared/bench-data] [--only 2wiki,covid2hop]
        [--indexes DIR] [--covid2hop DIR] [--json]

--indexes DIR reuses DIR/2wiki, DIR/covidqa-dev and DIR/covid2hop as the indexes (default: monjyu
eval's own under .monjyu-eval); --covid2hop DIR the covid2hop corpus already cut.

- 2wiki: Wikipedia passages, one per entity page, multi-hop and single-hop questions apart
  (Recall@5, Recall@10, complete@8);
- covidqa-dev: full-text papers, extractive questions (ans@1, ans@5, ans@10);
- covid2hop (bench/data/covid2hop): the same papers cut into paragraphs under their paper's title,
  questions that need two papers (Recall@5, Recall@10, complete@8); its corpus is cut from
  covidqa-dev by build_corpus.py into .monjyu-eval/covid2hop-corpus when missing.

Each variant changes one setting by its MONJYU_* variable; the indexes are built once (search
settings do not change an index) and shared by content-hash caches. The single lists (vector,
keyword, graph) are measured in the same run, and "best single" is the best of them per figure:
the default should not fall below it by more than 0.01 on any set (issue 34).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "bench-data"
VARIANTS = {
    "hybrid (default)": {},
    "terms at full weight": {"MONJYU_SEARCH__TERM_TRUST": "false"},
    "no graph evidence": {"MONJYU_SEARCH__GRAPH_EVIDENCE": "false"},
    "neither (equal weights)": {"MONJYU_SEARCH__TERM_TRUST": "false", "MONJYU_SEARCH__GRAPH_EVIDENCE": "false"},
    "no evidence rerank": {"MONJYU_SEARCH__RERANK_CANDIDATES": "0"},
    "rerank 20 candidates": {"MONJYU_SEARCH__RERANK_CANDIDATES": "20"},
    "graph weight 0": {"MONJYU_SEARCH__GRAPH_WEIGHT": "0"},
    "no feedback round": {"MONJYU_SEARCH__FEEDBACK": "false"},
    "title links off (boost 1)": {"MONJYU_SEARCH__GRAPH_TITLE_BOOST": "1"},
    "no link evidence round": {"MONJYU_SEARCH__LINK_EVIDENCE": "false"},
    "graph: one walk (hops 1)": {"MONJYU_SEARCH__GRAPH_HOPS": "1"},
}
SINGLES = ("vector", "keyword", "graph")
BEIR_KEYS = ("recall@5", "recall@10", "complete@8")
QA_KEYS = ("ans@1", "ans@5", "ans@10")


def run(args: list[str], env: dict[str, str]) -> dict:
    monjyu = Path(sys.executable).with_name("monjyu")
    out = subprocess.run([str(monjyu), "eval", *args, "--json"], capture_output=True, text=True,
                         env={**os.environ, **env})
    if out.returncode != 0:
        raise SystemExit(f"monjyu eval {' '.join(args)} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout)


def covid2hop(data: Path, out: Path | None) -> Path:
    """The covid2hop BEIR folder: its queries and qrels with the corpus cut from covidqa-dev."""
    out = out or ROOT / ".monjyu-eval" / "covid2hop-corpus"
    if not (out / "corpus.jsonl").exists():
        subprocess.run([sys.executable, str(ROOT / "bench" / "data" / "covid2hop" / "build_corpus.py"),
                        "--docs", str(data / "covidqa-dev" / "docs"), "--out", str(out)], check=True)
    return out


def rows_of(name: str, result: dict, keys: tuple[str, ...]) -> dict[str, dict[str, float]]:
    """The figures of one eval run, and per value of 2wiki's multihop field as sets of their own."""
    rows = {name: {k: result[k] for k in keys}}
    for value, figures in result.get("by", {}).items():
        rows[f"{name}, {'multi-hop' if value == 'true' else 'single-hop'}"] = {k: figures[k] for k in keys}
    return rows


def decisions(per_query: Path, name: str) -> dict[str, dict[str, float]]:
    """How the default's per-query decision is spread over a set's queries (and 2wiki's parts):
    the term weight's 10th, 50th and 90th percentiles, the share of queries whose rerank counts
    the graph, and of those whose feedback round ran."""
    groups: dict[str, list[dict]] = {}
    for line in per_query.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        decision = record["modes"]["hybrid"].get("decision", {})
        groups.setdefault(name, []).append(decision)
        if "multihop" in record:
            groups.setdefault(f"{name}, {'multi-hop' if record['multihop'] == 'true' else 'single-hop'}", []).append(decision)
    out = {}
    for part, taken in groups.items():
        terms = sorted(d.get("lexical", 1.0) for d in taken)
        deciles = statistics.quantiles(terms, n=10) if len(terms) > 1 else terms * 9
        out[part] = {"queries": len(taken), "terms p10": deciles[0], "terms p50": statistics.median(terms),
                     "terms p90": deciles[-1], "graph on": sum(d.get("graph", 0) > 0 for d in taken) / len(taken),
                     "feedback ran": sum(bool(d.get("feedback")) for d in taken) / len(taken)}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--only", default="2wiki,covidqa-dev,covid2hop")
    ap.add_argument("--indexes", type=Path)
    ap.add_argument("--covid2hop", type=Path)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    only = args.only.split(",")
    sources = {"2wiki": ["--beir", str(args.data / "2wiki"), "--by", "multihop"],
               "covidqa-dev": ["--qa", str(args.data / "covidqa-dev" / "questions.jsonl")],
               "covid2hop": ["--beir", str(covid2hop(args.data, args.covid2hop))] if "covid2hop" in only else []}
    table: dict[str, dict[str, dict]] = {}  # set (and 2wiki's parts) -> row -> figures
    spread: dict[str, dict[str, float]] = {}  # set -> how the default's per-query decision is spread
    for name in (n for n in sources if n in only):
        source = sources[name] + (["--index", str(args.indexes / name)] if args.indexes else [])
        keys = QA_KEYS if name == "covidqa-dev" else BEIR_KEYS
        singles = run([*source, "--mode", ",".join(SINGLES)], {})
        for mode in SINGLES:
            for part, figures in rows_of(name, singles[mode], keys).items():
                table.setdefault(part, {})[mode] = figures
        for part in list(table):
            if part.startswith(name):
                table[part]["best single"] = {k: max(table[part][m][k] for m in SINGLES) for k in keys}
        for variant, env in VARIANTS.items():
            per_query = Path(tempfile.mkstemp(suffix=".jsonl")[1])
            result = run([*source, "--mode", "hybrid", "--per-query", str(per_query)], env)["hybrid"]
            if not env:
                spread.update(decisions(per_query, name))
            per_query.unlink()
            for part, figures in rows_of(name, result, keys).items():
                table[part][variant] = figures
            print(f"{name} {variant}: " + ", ".join(f"{k} {result[k]:.3f}" for k in keys), file=sys.stderr)
    if args.json:
        print(json.dumps({"figures": table, "decisions": spread}, indent=1))
        return
    for title, rows in [(part, rows) for part, rows in table.items()] + [("per-query decision of the default", spread)]:
        keys = next(iter(rows.values())).keys()
        print(f"\n{title}")
        print(f"{'':28}" + "".join(f"{k:>13}" for k in keys))
        for row, m in rows.items():
            print(f"{row:28}" + "".join(f"{m[k]:>13.3f}" for k in keys))


if __name__ == "__main__":
    main()
