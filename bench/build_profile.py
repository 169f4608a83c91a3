"""Where a first index's time goes: one cold build of a folder, each stage's seconds and share.

    python bench/build_profile.py --docs ../shared/bench-data/papers-pdf
    python bench/build_profile.py --docs ../shared/bench-data/papers-pdf --sentences both --baseline 04b74d6

Each build is `monjyu index DIR` in a fresh process with empty embedding and phrase caches
(`MONJYU_CACHE_DIR` in a fresh folder); the stages are the build's own (the manifest's
build_seconds: load_chunk, embed, embed_sentences, write, citations, ann_index, bm25, the Level 1
stages level1_*, commit). `--sentences both` builds with and without sentence vectors
(embedding.sentences), the share of the build they take. `--baseline` builds an earlier commit too,
in the same run, for a stage-by-stage comparison. Prints the machine's CPU and the worker
counts. Nothing else should run on the machine meanwhile.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
from pathlib import Path

from worktree import ROOT, checkout, cold_build


def cpu() -> str:
    """The CPU model and the instruction-set extensions the embedders can use."""
    try:
        info = Path("/proc/cpuinfo").read_text(encoding="utf-8")
    except OSError:
        return platform.processor() or "unknown CPU"
    model = next((line.split(":", 1)[1].strip() for line in info.splitlines() if line.startswith("model name")), "?")
    flags = set(next((line.split(":", 1)[1].split() for line in info.splitlines() if line.startswith("flags")), []))
    wanted = [f for f in ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_tile", "amx_int8", "amx_bf16") if f in flags]
    return f"{model}, {os.cpu_count()} logical cores, {' '.join(wanted) or 'no AVX2'}"


def table(runs: dict[str, dict]) -> str:
    """Each stage's seconds and share of the build, one column per run."""
    stages = list(dict.fromkeys(k for r in runs.values() for k in r["stages"] if k != "total"))
    lines = [f"{'stage':24}" + "".join(f"{name:>26}" for name in runs)]
    for stage in stages + ["total", "wall clock"]:
        cells = []
        for r in runs.values():
            total = r["stages"].get("total") or r["seconds"]
            value = r["seconds"] if stage == "wall clock" else r["stages"].get(stage)
            cells.append(f"{'-':>26}" if value is None else f"{value:9.1f} s {100 * value / total:6.1f} %".rjust(26))
        lines.append(f"{stage:24}" + "".join(cells))
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", required=True, type=Path)
    ap.add_argument("--sentences", choices=["on", "off", "both"], default="on",
                    help="sentence vectors (embedding.sentences): as configured by default, off, or both builds")
    ap.add_argument("--baseline", help="an earlier commit built the same way in the same run")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    docs = args.docs.resolve()
    variants = {"on": {}, "off": {"MONJYU_EMBEDDING__SENTENCES": "false"}}
    chosen = ["on", "off"] if args.sentences == "both" else [args.sentences]
    runs: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="build-profile-") as tmp:
        tmp = Path(tmp)
        if args.baseline:
            with checkout(args.baseline, tmp / "baseline") as src:
                for v in chosen:
                    runs[f"{args.baseline} sentences {v}"] = cold_build(src, docs, tmp / f"before-{v}", variants[v],
                                                                        skipped_ok=True)
        for v in chosen:
            runs[f"this tree sentences {v}"] = cold_build(ROOT / "src", docs, tmp / f"after-{v}", variants[v],
                                                          skipped_ok=True)
    if args.json:
        print(json.dumps({"cpu": cpu(), "runs": runs}, indent=1))
        return
    first = next(iter(runs.values()))
    print(f"{docs.name}: {first['documents']} documents ({first['failed']} files skipped), {first['text_units']} "
          f"text units; {cpu()}; "
          f"workers: ingest.processes and graph.processes as configured (MONJYU_* unset)")
    print(table(runs))


if __name__ == "__main__":
    main()
