"""The index manifest: which generation is current, how it was built, and what sources it holds.

The manifest is replaced atomically (write to a temp file, fsync, rename), and it is written
only after a generation is complete; that single rename is the commit of a build.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from ..errors import IndexNotFoundError, MonjyuError

FORMAT_VERSION = 2  # 2: unit kind/section/authors/year, document structure
MANIFEST = "manifest.json"
GENERATIONS = "generations"  # a folder per build generation, beside the manifest


@dataclass
class SourceRecord:
    sha256: str
    size: int
    documents: list[str]
    # The file's modification time when it was hashed: a file whose size and mtime are those of
    # its record is not read again to hash it (as git and rsync decide; 0: always hash).
    mtime_ns: int = 0


@dataclass
class Manifest:
    generation: str
    embedder_id: str
    embedder_dim: int
    config_hash: str
    token_counter: str
    counts: dict[str, int] = field(default_factory=dict)
    built_at: str = ""
    build_seconds: dict[str, float] = field(default_factory=dict)
    sources: dict[str, SourceRecord] = field(default_factory=dict)
    levels: list[int] = field(default_factory=lambda: [0])
    failures: list[dict[str, str]] = field(default_factory=list)  # files the build skipped: path, reason
    # graph.named_entities of the build: queries are parsed the way the units were. Indexes from
    # before the setting existed were built with the full pipeline.
    named_entities: bool = True
    graph_hash: str = ""  # MonjyuConfig.graph_hash() of the build's Level 1 ("" before it was recorded)
    # How the communities were built: mode (full / update), drift since the last full clustering,
    # links_at_full, changed_since_full, modularity (index/communities.py)
    clustering: dict[str, Any] = field(default_factory=dict)
    format_version: int = FORMAT_VERSION

    def to_json(self) -> dict[str, Any]:
        """Shallow, where `asdict` would copy every document id of every source (a million at a
        million passages) one call each."""
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["sources"] = {key: vars(record) for key, record in self.sources.items()}
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Manifest":
        data = dict(data)
        data["sources"] = {k: SourceRecord(**v) for k, v in data.get("sources", {}).items()}
        return cls(**data)


def manifest_path(index_dir: Path) -> Path:
    return Path(index_dir) / MANIFEST


def is_index_dir(path: Path) -> bool:
    """Whether `path` is a MONJYU index (its manifest and its generations): a folder being indexed
    may hold one, whose files are not papers."""
    return manifest_path(path).is_file() and (Path(path) / GENERATIONS).is_dir()


def read_manifest(index_dir: Path) -> Manifest:
    path = manifest_path(index_dir)
    if not path.exists():
        raise IndexNotFoundError(f"no index at {index_dir}: run `monjyu index PATH --index {index_dir}` first")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise MonjyuError(f"{path} is unreadable ({exc}); rebuild the index with `monjyu index`") from exc
    if data.get("format_version") != FORMAT_VERSION:
        raise MonjyuError(f"{path} has format {data.get('format_version')}, this MONJYU reads {FORMAT_VERSION}; "
                          "rebuild the index into a new directory")
    return Manifest.from_json(data)


def write_manifest(index_dir: Path, manifest: Manifest) -> None:
    path = manifest_path(index_dir)
    tmp = path.with_suffix(".json.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        # Unindented: the C encoder (indenting takes the pure-Python one, seconds at a million ids).
        f.write(json.dumps(manifest.to_json(), ensure_ascii=False))
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fsync_dir(path.parent)


def fsync_dir(path: Path) -> None:
    fd = os.open(str(path), os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_tree(path: Path) -> None:
    """Flush every file and folder of a finished generation before it is committed."""
    for root, _dirs, files in os.walk(path):
        for name in files:
            fd = os.open(os.path.join(root, name), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        fsync_dir(Path(root))
