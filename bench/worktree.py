"""An earlier commit checked out beside this tree, for benches that time it against this tree in
one run (with this environment's packages: its `src` goes first on PYTHONPATH)."""

from __future__ import annotations

import os
import subprocess
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
