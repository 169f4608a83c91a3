"""An index kept in object storage (s3://bucket/prefix), mirrored in a local cache directory.

The store holds every piece of index state, in the same layout as a local index: `manifest.json`,
`generations/<g>/...` (LanceDB tables, BM25, graph arrays, vectors) and `sessions/*.json`. A build
runs in the local directory and is then pushed: the generation's files first, the manifest last.
Replacing the manifest object is the commit, so a build killed at any point leaves the previous
generation readable. A reader pulls the generation the store's manifest names into its cache
once, then searches locally; it looks for a newer one every `store.refresh_s` seconds.

One writer at a time (as for a local index): a push removes the generations its manifest no
longer names, including an unfinished one a killed build left behind. What an LLM wrote for the
index (Level 2 extractions, Level 4 reports) is kept under `levels/`, one object per record
(`ObjectLevelRecords`), shared by every process that searches the index. pyarrow's S3 filesystem
does the I/O; credentials and endpoint come from the AWS environment variables.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import BinaryIO

from ..errors import MonjyuError
from .mirror import (GENERATIONS, MANIFEST, SESSIONS, atomic_write, generation_files, has_generation,
                     install_generation, mark_complete, use_generation)

LEVELS = "levels"
NAMES = "names"  # levels/names/<model>/<name>/<key>: an object per name an extraction holds


def _filesystem(url: str):
    import pyarrow.fs as pafs

    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
    bucket_prefix = url[len("s3://"):].strip("/")
    if not bucket_prefix:
        raise MonjyuError(f"store.url {url!r} names no bucket: use s3://bucket/prefix")
    options = {}
    if endpoint:
        scheme, _, host = endpoint.partition("://")
        options = {"endpoint_override": host or endpoint, "scheme": scheme if host else "https"}
    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    if region:
        options["region"] = region
    return pafs.S3FileSystem(**options), bucket_prefix


class ObjectStoreIndex:
    """The index at `url`, mirrored in `local_dir`."""

    def __init__(self, url: str, local_dir: Path, refresh_s: float = 5.0):
        self.url = url
        self.local_dir = Path(local_dir)
        self.refresh_s = refresh_s
        self.fs, self.root = _filesystem(url)
        self._checked = 0.0
        self._lock = threading.Lock()  # searches in several threads pull one generation once

    # -- paths ---------------------------------------------------------------------------
    def _remote(self, *parts: str) -> str:
        return "/".join((self.root,) + parts)

    def _read(self, *parts: str) -> bytes | None:
        import pyarrow as pa

        try:
            with self.fs.open_input_stream(self._remote(*parts)) as fh:
                return fh.read()
        except FileNotFoundError:
            return None
        except (OSError, pa.ArrowException) as exc:
            raise MonjyuError(f"cannot read {self.url}/{'/'.join(parts)}: {exc}; check store.url, the AWS_* "
                              "credentials and AWS_ENDPOINT_URL") from None

    def _write(self, src: BinaryIO, *parts: str) -> None:
        try:
            with self.fs.open_output_stream(self._remote(*parts)) as out:
                shutil.copyfileobj(src, out, 1 << 20)
        except OSError as exc:
            raise MonjyuError(f"cannot write {self.url}/{'/'.join(parts)}: {exc}; check store.url, the AWS_* "
                              "credentials and AWS_ENDPOINT_URL") from None

    # -- reading -------------------------------------------------------------------------
    def pull(self, force: bool = False) -> None:
        """Bring the local cache to the store's current generation (at most every refresh_s)."""
        with self._lock:
            self._pull(force)

    def _pull(self, force: bool) -> None:
        now = time.monotonic()
        if not force and now - self._checked < self.refresh_s and (self.local_dir / MANIFEST).exists():
            return
        self._checked = now
        data = self._read(MANIFEST)
        if data is None:  # nothing built there yet
            (self.local_dir / MANIFEST).unlink(missing_ok=True)
            return
        generation = json.loads(data)["generation"]
        if not has_generation(self.local_dir, generation):
            self._download(generation)
        use_generation(self.local_dir, generation, data)

    def _download(self, generation: str) -> None:
        import pyarrow.fs as pafs

        prefix = self._remote(GENERATIONS, generation)

        def fill(tmp: Path) -> None:
            for info in self.fs.get_file_info(pafs.FileSelector(prefix, recursive=True)):
                if info.type != pafs.FileType.File:
                    continue
                dest = tmp / info.path[len(prefix) + 1:]
                dest.parent.mkdir(parents=True, exist_ok=True)
                with self.fs.open_input_stream(info.path) as src, open(dest, "wb") as out:
                    shutil.copyfileobj(src, out, 1 << 20)

        try:
            install_generation(self.local_dir, generation, fill)
        except OSError as exc:
            raise MonjyuError(f"cannot read generation {generation} from {self.url}: {exc}; check the network, the "
                              "AWS_* credentials and AWS_ENDPOINT_URL (the local cache is unchanged)") from None

    def pull_session(self, name: str) -> None:
        data = self._read(SESSIONS, f"{name}.json")
        if data is not None:
            atomic_write(self.local_dir / SESSIONS / f"{name}.json", data)

    # -- writing -------------------------------------------------------------------------
    def push(self) -> None:
        """The local generation into the store, then its manifest (the commit), then the store's
        other generations removed."""
        import pyarrow.fs as pafs

        data = (self.local_dir / MANIFEST).read_bytes()
        generation = json.loads(data)["generation"]
        try:
            for relative, path in generation_files(self.local_dir, generation):
                with open(path, "rb") as src:
                    self._write(src, GENERATIONS, generation, *relative.split("/"))
        except MonjyuError as exc:
            raise MonjyuError(f"{exc}; the store still holds the previous generation: index again") from None
        self._write(io.BytesIO(data), MANIFEST)
        mark_complete(self.local_dir, generation)
        for info in self.fs.get_file_info(pafs.FileSelector(self._remote(GENERATIONS), allow_not_found=True)):
            if info.base_name != generation:
                self.fs.delete_dir(info.path)
        self._checked = time.monotonic()

    def vector_search(self, generation: str) -> None:
        return None  # the generation's own LanceDB index, pulled with it, serves

    def keyword_search(self, generation: str) -> None:
        return None

    def push_session(self, name: str) -> None:
        if self._read(MANIFEST) is None:  # only `monjyu index` creates a prefix
            raise MonjyuError(f"no index at {self.url} to keep session {name!r} in; build one there with "
                              "`monjyu index` or fix store.url")
        with open(self.local_dir / SESSIONS / f"{name}.json", "rb") as src:
            self._write(src, SESSIONS, f"{name}.json")


    def level_records(self) -> "ObjectLevelRecords":
        return ObjectLevelRecords(self)

    def listing(self, *parts: str) -> list[str]:
        """Paths (relative to `parts`) of the objects under a prefix; none when it does not exist."""
        import pyarrow.fs as pafs

        base = self._remote(*parts)
        try:
            infos = self.fs.get_file_info(pafs.FileSelector(base, recursive=True, allow_not_found=True))
        except OSError as exc:
            raise MonjyuError(f"cannot list {self.url}/{'/'.join(parts)}: {exc}; check store.url, the AWS_* "
                              "credentials and AWS_ENDPOINT_URL") from None
        return [info.path[len(base) + 1:] for info in infos if info.type == pafs.FileType.File]


def _hashed(text: str) -> str:
    """A model id or an entity name as one path segment."""
    return hashlib.sha256(text.encode()).hexdigest()[:32]


class ObjectLevelRecords:
    """Level records (store.base.LevelRecords) as objects: `levels/<kind>/<model>/<key>` holds a
    record (an object appears whole, so a reader never sees half of one), and an extraction's
    entity names are small objects `levels/names/<model>/<name>/<key>`, written before the record
    (a process killed between them leaves names that the record, written next time, completes). A key is written only
    when its object is not there yet; two processes writing the same key at the same moment leave
    one object, the later one's. Reading lists a prefix once and fetches only what exists."""

    def __init__(self, index: ObjectStoreIndex):
        self.index = index
        self.url = f"{index.url}/{LEVELS}"

    def get(self, kind: str, model: str, keys: list[str]) -> dict[str, bytes]:
        wanted = set(keys)
        if not wanted:
            return {}
        present = [k for k in self.index.listing(LEVELS, kind, _hashed(model)) if k in wanted]
        found = {k: self.index._read(LEVELS, kind, _hashed(model), k) for k in present}
        return {k: v for k, v in found.items() if v is not None}

    def put_new(self, kind: str, model: str, key: str, record: bytes, names: Iterable[str] = ()) -> bool:
        if self.index._read(LEVELS, kind, _hashed(model), key) is not None:
            return False
        if self.index._read(MANIFEST) is None:  # only `monjyu index` creates a prefix
            raise MonjyuError(f"no index at {self.index.url} to keep its {kind} in; build one there with "
                              "`monjyu index` or fix store.url")
        for name in sorted(set(names)):
            self.index._write(io.BytesIO(name.encode()), LEVELS, NAMES, _hashed(model), _hashed(name), key)
        self.index._write(io.BytesIO(record), LEVELS, kind, _hashed(model), key)  # last: the record commits it
        return True

    def count(self, kind: str, model: str) -> int:
        return len(self.index.listing(LEVELS, kind, _hashed(model)))

    def naming(self, model: str, names: Iterable[str]) -> dict[str, set[str]]:
        found: dict[str, set[str]] = {}
        for name in sorted(set(names)):
            keys = set(self.index.listing(LEVELS, NAMES, _hashed(model), _hashed(name)))
            if keys:
                found[name] = keys
        return found

    def keys(self, kind: str) -> set[str]:
        return {path.rsplit("/", 1)[-1] for path in self.index.listing(LEVELS, kind)}

    def remove(self, kind: str, keys: Iterable[str]) -> None:
        gone = set(keys)
        doomed = [(kind, path) for path in self.index.listing(LEVELS, kind) if path.rsplit("/", 1)[-1] in gone]
        if kind == "extractions":
            doomed += [(NAMES, path) for path in self.index.listing(LEVELS, NAMES) if path.rsplit("/", 1)[-1] in gone]
        for where, path in doomed:
            try:
                self.index.fs.delete_file(self.index._remote(LEVELS, where, *path.split("/")))
            except FileNotFoundError:
                pass  # another process removed it
