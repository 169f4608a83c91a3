"""Search filters, applied as a boolean mask over text units before ranking.

Filter values are compared as data (set membership, glob match, date comparison); they are never
spliced into a query string, so no value can change what the filter means.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from pathlib import PurePosixPath

import numpy as np

from ..errors import ConfigError


@dataclass
class SearchFilters:
    document_ids: list[str] = field(default_factory=list)
    file_types: list[str] = field(default_factory=list)  # "pdf", "md", ...
    path_glob: str = ""  # matched from the right: "papers/*.pdf" matches /any/where/papers/x.pdf
    date_from: str = ""  # inclusive ISO dates (YYYY-MM-DD)
    date_to: str = ""

    def __post_init__(self) -> None:
        for name in ("date_from", "date_to"):
            value = getattr(self, name)
            if value:
                try:
                    date.fromisoformat(value)
                except ValueError as exc:
                    raise ConfigError(f"filter {name}='{value}' is not an ISO date (YYYY-MM-DD)") from exc
        if self.date_from and self.date_to and self.date_from > self.date_to:
            raise ConfigError(f"filter date range is reversed: {self.date_from} > {self.date_to}")
        self.file_types = [t.lower().lstrip(".") for t in self.file_types]

    @property
    def active(self) -> bool:
        return bool(self.document_ids or self.file_types or self.path_glob or self.date_from or self.date_to)

    @classmethod
    def parse(cls, expressions: list[str]) -> "SearchFilters":
        """CLI form: doc=ID, type=pdf, path=GLOB, from=YYYY-MM-DD, to=YYYY-MM-DD (repeatable)."""
        f = cls()
        docs, types = [], []
        for expr in expressions:
            key, sep, value = expr.partition("=")
            key = key.strip().lower()
            if not sep:
                raise ConfigError(f"filter '{expr}' must look like key=value (keys: doc, type, path, from, to)")
            if key in ("doc", "document", "document_id"):
                docs.append(value)
            elif key in ("type", "file_type"):
                types.append(value)
            elif key in ("path", "glob"):
                f.path_glob = value
            elif key in ("from", "after", "date_from"):
                f.date_from = value
            elif key in ("to", "before", "date_to"):
                f.date_to = value
            else:
                raise ConfigError(f"unknown filter key '{key}' in '{expr}' (keys: doc, type, path, from, to)")
        return cls(document_ids=docs, file_types=types, path_glob=f.path_glob,
                   date_from=f.date_from, date_to=f.date_to)

    def mask(self, document_id: np.ndarray, file_type: np.ndarray, source_path: np.ndarray,
             date_col: np.ndarray) -> np.ndarray:
        keep = np.ones(len(document_id), dtype=bool)
        if self.document_ids:
            keep &= np.isin(document_id, np.array(self.document_ids, dtype=object))
        if self.file_types:
            keep &= np.isin(file_type, np.array(self.file_types, dtype=object))
        if self.path_glob:
            paths = np.unique(source_path)
            matching = [p for p in paths if PurePosixPath(p).match(self.path_glob)]
            keep &= np.isin(source_path, np.array(matching, dtype=object))
        if self.date_from or self.date_to:
            day = np.array([d[:10] for d in date_col], dtype=object)
            if self.date_from:
                keep &= day >= self.date_from
            if self.date_to:
                keep &= day <= self.date_to
        return keep
