"""The local cache of an index kept elsewhere: the generation a store names is installed here
whole (downloaded into a temporary directory, marked complete, then renamed into place), so a
search never reads a half-downloaded generation and a failed download changes nothing."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

MANIFEST = "manifest.json"
GENERATIONS = "generations"
SESSIONS = "sessions"
COMPLETE = ".complete"  # marks a fully downloaded generation in the cache


def atomic_write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}-")
    with os.fdopen(fd, "wb") as out:
        out.write(data)
    os.replace(tmp, path)


def has_generation(local_dir: Path, generation: str) -> bool:
    return (Path(local_dir) / GENERATIONS / generation / COMPLETE).exists()


def install_generation(local_dir: Path, generation: str, fill: Callable[[Path], None]) -> None:
    """`fill(tmp_dir)` writes the generation's files; they become `generations/<generation>`."""
    target = Path(local_dir) / GENERATIONS / generation
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{generation}-"))
    try:
        fill(tmp)
        (tmp / COMPLETE).touch()
        if not (target / COMPLETE).exists():  # another process may have installed it meanwhile
            shutil.rmtree(target, ignore_errors=True)
            os.replace(tmp, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def use_generation(local_dir: Path, generation: str, manifest: bytes) -> None:
    """Point the cache's manifest at an installed generation and drop the cache's other ones."""
    atomic_write(Path(local_dir) / MANIFEST, manifest)
    for other in (Path(local_dir) / GENERATIONS).iterdir():
        if other.name != generation and not other.name.startswith("."):
            shutil.rmtree(other, ignore_errors=True)


def generation_files(local_dir: Path, generation: str) -> Iterator[tuple[str, Path]]:
    """(relative path with '/', file) of every file of a local generation, in a stable order."""
    source = Path(local_dir) / GENERATIONS / generation
    for path in sorted(p for p in source.rglob("*") if p.is_file() and p.name != COMPLETE):
        yield "/".join(path.relative_to(source).parts), path


def mark_complete(local_dir: Path, generation: str) -> None:
    (Path(local_dir) / GENERATIONS / generation / COMPLETE).touch()
