"""Level 4: community reports an LLM writes, the first time a question needs them, kept in the
index (`levels/level4.sqlite`) and reused.

A report (title, summary, key claims each citing the passages it rests on) is written from the
community's most central sentences, those naming most of its distinctive phrases (the offline
themes' choice). It is keyed by the community's phrases and the model, so a community an update
re-clustered gets a new report when next needed and one that kept its phrases keeps its report;
claims citing passages the index no longer holds are dropped when the report is read.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import threading
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, Field

from ..llm.replies import structured_reply
from ..llm import LLM
from ..nlp.lang import detect_language
from .store import EXTRACTION_VERSION, LEVELS_DIR, open_level_db, unit_key

REPORT_VERSION = 1  # bump when the prompt or the schema changes


def community_key(phrases: list[str]) -> str:
    """A community as its report knows it: the hash of its phrases."""
    return hashlib.sha256("\n".join(sorted(phrases)).encode()).hexdigest()


class ReportClaim(BaseModel):
    statement: str = Field(min_length=1)
    sources: list[int] = Field(default_factory=list)  # numbers of the sentences it rests on


class Report(BaseModel):
    title: str = ""
    summary: str = ""
    claims: list[ReportClaim] = Field(default_factory=list)


@dataclass
class KeptReport:
    """A report as stored: its claims cite (unit key, sentence) pairs."""

    title: str
    summary: str
    claims: list[dict]  # statement, sources: [[unit key, sentence text], ...]


class ReportStore:
    def __init__(self, index_dir: Path):
        self._db = open_level_db(index_dir, "level4.sqlite",
                                 "reports (model TEXT, community TEXT, record BLOB NOT NULL, PRIMARY KEY (model, community))")
        self._lock = threading.Lock()

    @staticmethod
    def model_key(model: str) -> str:
        return f"{model}#v{REPORT_VERSION}.{EXTRACTION_VERSION}"

    def get_many(self, model: str, communities: list[str]) -> dict[str, KeptReport]:
        found: dict[str, KeptReport] = {}
        with self._lock:
            for i in range(0, len(communities), 500):
                part = communities[i:i + 500]
                rows = self._db.execute(f"SELECT community, record FROM reports WHERE model = ? AND community IN "
                                        f"({','.join('?' * len(part))})", [self.model_key(model), *part])
                found.update((c, KeptReport(**json.loads(r))) for c, r in rows)
        return found

    def put(self, model: str, community: str, report: KeptReport) -> None:
        with self._lock, self._db:
            self._db.execute("INSERT OR REPLACE INTO reports VALUES (?, ?, ?)",
                             (self.model_key(model), community,
                              json.dumps(report.__dict__, ensure_ascii=False).encode()))

    def close(self) -> None:
        self._db.close()


class LevelFour:
    """Community reports through the store."""

    def __init__(self, llm: LLM, index_dir: Path, prompts_dir: str | None = None):
        self.llm = llm
        self.index_dir = Path(index_dir)
        self.prompts_dir = prompts_dir
        self._store: ReportStore | None = None

    @property
    def store(self) -> ReportStore:
        """Opened on first use: a search that writes no report leaves the index as it was."""
        if self._store is None:
            self._store = ReportStore(self.index_dir)
        return self._store

    @property
    def model(self) -> str:
        return self.llm.id

    def kept(self, keys: list[str]) -> dict[str, KeptReport]:
        """The reports kept for those communities (reading never creates the store)."""
        if self._store is None and not (self.index_dir / LEVELS_DIR / "level4.sqlite").exists():
            return {}
        return self.store.get_many(self.model, keys)

    async def write(self, items: list[tuple[str, str, list[str]]]) -> tuple[dict[str, KeptReport], int]:
        """Reports for (community key, label, central sentences as (unit text, sentence)) items,
        concurrently, each stored as it arrives; returns them and how many calls failed."""
        results = await asyncio.gather(*(self._one(*item) for item in items))
        written = {key: r for (key, _, _), r in zip(items, results) if r is not None}
        return written, len(items) - len(written)

    async def _one(self, key: str, label: str, sentences: list[tuple[str, str]]) -> KeptReport | None:
        listing = f"Community: {label}\n" + "\n".join(f"{i}. {s}" for i, (_, s) in enumerate(sentences))
        lang = detect_language(" ".join(s for _, s in sentences[:5]))
        reply = await structured_reply(self.llm, "report", lang, listing, Report, self.prompts_dir)
        if reply is None:
            return None
        claims = []
        for c in reply.claims:
            sources = [[unit_key(sentences[n][0]), sentences[n][1]] for n in c.sources if 0 <= n < len(sentences)]
            if sources:
                claims.append({"statement": c.statement, "sources": sources})
        report = KeptReport(reply.title or label, reply.summary, claims)
        await asyncio.to_thread(self.store.put, self.model, key, report)
        return report

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
