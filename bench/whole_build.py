"""A whole build (Level 0 + Level 1) of a folder, this tree against an earlier commit, in one run.

    python bench/whole_build.py --docs ../shared/bench-data/papers-pdf --baseline b4e5527

The earlier commit is checked out in a temporary `git worktree` and run with this environment's
packages (its `src` first on PYTHONPATH); each build is `monjyu index DIR --index TMP` in a fresh
process with empty embedding and phrase caches (`MONJYU_CACHE_DIR` in a fresh folder), one after
the other. Prints wall-clock seconds, text units and the build's own stage times for both, and the
speed-up. Nothing else should run on the machine meanwhile.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from worktree import ROOT, checkout, cold_build


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", required=True, type=Path)
    ap.add_argument("--baseline", required=True, help="the earlier commit (any git revision)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    docs = args.docs.resolve()
    with tempfile.TemporaryDirectory(prefix="whole-build-") as tmp:
        tmp = Path(tmp)
        with checkout(args.baseline, tmp / "baseline") as src:
            before = cold_build(src, docs, tmp / "before", {})
        after = cold_build(ROOT / "src", docs, tmp / "after", {})
    result = {"baseline": args.baseline, "before": before, "after": after,
              "speedup": before["seconds"] / after["seconds"]}
    if args.json:
        print(json.dumps(result, indent=1))
        return
    for name, r in (("before", before), (f"after", after)):
        stages = ", ".join(f"{k} {v:.0f}s" for k, v in r["stages"].items() if v >= 1 and k != "total")
        print(f"{name:7s} {r['seconds']:7.1f} s  {r['text_units']} units  {r['embedder']}  ({stages})")
    print(f"speed-up {result['speedup']:.2f}x ({args.baseline} -> this tree)")


if __name__ == "__main__":
    main()
