"""An earlier commit checked out beside this tree, for benches that time it against this tree in
one run (with this environment's packages: its `src` goes first on PYTHONPATH)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@contextmanager
def checkout(revision: str, where: Path) -> Iterator[Path]:
    """A temporary `git worktree` of `revision` at `where`; yields its `src`."""
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(where), revision],
                   check=True, capture_output=True)
    try:
        yield where / "src"
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(where)], capture_output=True)


def environment(src: Path, **extra: str) -> dict[str, str]:
    """This process's environment without MONJYU_ settings, running the code under `src`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MONJYU_")}
    env.update(PYTHONPATH=str(src), **extra)
    return env


def cold_build(src: Path, docs: Path, work: Path, extra_env: dict[str, str], skipped_ok: bool = False) -> dict:
    """One cold build of `docs` (`monjyu index` in a fresh process, empty caches under `work`) with
    the code under `src`: wall-clock seconds and the manifest's counts, embedder, skipped files and
    stage seconds. Any failure stops the bench, but with `skipped_ok` a build that skipped some
    files (exit 1 with an index) counts."""
    index, cache = work / "index", work / "cache"
    env = environment(src, MONJYU_CACHE_DIR=str(cache), **extra_env)
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "monjyu.cli", "index", str(docs), "--index", str(index)],
                         env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if out.returncode != 0 and not (skipped_ok and out.returncode == 1 and (index / "manifest.json").exists()):
        sys.exit(f"build with {src} failed:\n{out.stderr[-2000:]}")
    manifest = json.loads((index / "manifest.json").read_text(encoding="utf-8"))
    return {"seconds": seconds, "documents": manifest["counts"].get("documents"),
            "text_units": manifest["counts"].get("text_units"), "embedder": manifest["embedder_id"],
            "failed": len(manifest["failures"]), "stages": manifest.get("build_seconds", {})}
