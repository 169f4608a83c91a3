"""The fuzz suite's doors (tests/fuzz_doors.py) for a long run: 100,000 generated cases and more
through the Python API, settings files and variables, the web app and the MCP tools, over an
index of the sample documents. Prints cases per door and kind by outcome (ok, refused, vague,
crash) and the first cases of each bad outcome; exits 1 when any case crashed or got a vague
refusal.

    python bench/fuzz.py --cases 100000            # split over the doors as CASES_SHARE says
    python bench/fuzz.py --cases 2000 --doors web,mcp --index /tmp/samples-idx
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from monjyu import Monjyu  # noqa: E402
from tests import fuzz_doors  # noqa: E402
from tests.fuzz_doors import Tally  # noqa: E402

# Share of the cases per door: the API's cases embed a query and search (the slowest), settings'
# only parse, so they take more of the count.
CASES_SHARE = {"api": 0.2, "settings": 0.3, "web": 0.3, "mcp": 0.2}
# Within the API and settings doors the harness draws several kinds; these divide the door's share.
KINDS_PER_DOOR = {"api": 4, "settings": 3, "web": 1.5, "mcp": 1}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=100_000, help="cases in all (about)")
    parser.add_argument("--doors", default="api,settings,web,mcp")
    parser.add_argument("--index", type=Path, help="an index of samples/ (built here when missing)")
    args = parser.parse_args()
    doors = args.doors.split(",")
    index = args.index or Path(tempfile.mkdtemp(prefix="monjyu-fuzz-")) / ".monjyu"
    m = Monjyu(index)
    if not (index / "manifest.json").exists():
        print(f"indexing {ROOT / 'samples'} into {index} ...", flush=True)
        m.index([ROOT / "samples"])
    os.chdir(tempfile.mkdtemp(prefix="monjyu-fuzz-cwd-"))  # settings cases read ./monjyu.yaml: none here
    tally = Tally()
    for door in doors:
        share = CASES_SHARE[door] / sum(CASES_SHARE[d] for d in doors)
        examples = max(1, round(args.cases * share / KINDS_PER_DOOR[door]))
        t0 = time.perf_counter()
        if door == "settings":
            fuzz_doors.settings_doors(tally, examples, derandomize=False)
        else:
            getattr(fuzz_doors, f"{door}_doors")(m, tally, examples, derandomize=False)
        cases = sum(sum(c.values()) for (d, _), c in tally.counts.items() if d == door)
        print(f"{door}: {cases} cases in {time.perf_counter() - t0:.0f} s", flush=True)
    print(tally.report())
    total = sum(sum(c.values()) for c in tally.counts.values())
    print(f"\n{total} cases; {tally.total('crash')} crashes, {tally.total('vague')} vague refusals")
    return 1 if tally.total("crash") or tally.total("vague") else 0


if __name__ == "__main__":
    sys.exit(main())
