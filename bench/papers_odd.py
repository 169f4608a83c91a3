"""Robustness on real, odd PDFs: `monjyu index DIR --level 0` as a user runs it.

    python bench/papers_odd.py [--dir ../shared/bench-data/papers-odd] [--ocr] [--timeout 3600]

Runs the real CLI in a fresh index directory (embedding cache shared through MONJYU_CACHE_DIR if
set) and reports: exit status, crashes (tracebacks) or a hang (timeout), every refused file with
its reason, and any terminal line that is neither MONJYU's own output nor a progress bar
(library warnings must go to the log file, not the terminal). --ocr sets ingest.ocr so the scanned
PDF is read with tesseract.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

OWN = re.compile(r"^(skipped |\d+ added, |\d+ file\(s\) failed|Loading|Embedding|Extracting|phrase vectors|"
                 r"Building|Writing|embedded now|.*━|\s*$)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dir", type=Path, default=Path("../shared/bench-data/papers-odd"))
    parser.add_argument("--ocr", action="store_true")
    parser.add_argument("--timeout", type=float, default=3600)
    args = parser.parse_args()
    monjyu = Path(sys.executable).with_name("monjyu")
    env = dict(os.environ, MONJYU_INGEST__OCR="true" if args.ocr else "false", COLUMNS="200")
    with tempfile.TemporaryDirectory(prefix="monjyu-odd-") as tmp:
        t0 = time.perf_counter()
        try:
            proc = subprocess.run([str(monjyu), "index", str(args.dir), "--level", "0", "--index", f"{tmp}/idx"],
                                  capture_output=True, text=True, timeout=args.timeout, env=env)
        except subprocess.TimeoutExpired:
            print(f"HANG: no result after {args.timeout:.0f} s")
            return 1
        seconds = time.perf_counter() - t0
        status = json.loads(subprocess.run([str(monjyu), "status", "--index", f"{tmp}/idx", "--json"],
                                           capture_output=True, text=True, env=env).stdout or "{}")
    terminal = (proc.stdout + proc.stderr).splitlines()
    skipped = [line for line in terminal if line.startswith("skipped ")]
    foreign = [line for line in terminal if not OWN.match(line) and not line.startswith(" ")]
    pdfs = len(list(args.dir.glob("*.pdf")))
    print(f"{pdfs} PDFs, exit status {proc.returncode}, {seconds:.0f} s, "
          f"{status.get('counts', {}).get('documents', '?')} documents, {status.get('counts', {}).get('text_units', '?')} text units")
    print(f"tracebacks: {sum('Traceback' in line for line in terminal)}; terminal bytes: {len(proc.stdout) + len(proc.stderr)}")
    print(f"refused ({len(skipped)}):")
    for line in skipped:
        print("  " + line)
    print(f"other terminal lines ({len(foreign)}):")
    for line in foreign[:20]:
        print("  " + line[:200])
    return 0 if proc.returncode in (0, 1) and not foreign else 1


if __name__ == "__main__":
    sys.exit(main())
