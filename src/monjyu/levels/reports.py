"""Level 4: community reports an LLM writes, the first time a question needs them, kept in the
index's level records (local SQLite files, or the index's object store or database) and reused.

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
from dataclasses import dataclass

from pydantic import BaseModel, Field

from ..llm.replies import structured_reply
from ..llm import LLM
from ..nlp.lang import detect_language
from ..store.base import LevelRecords
from .store import EXTRACTION_VERSION, unit_key

REPORT_VERSION = 1  # bump when the prompt or the schema changes
REPORTS = "reports"


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
    def __init__(self, records: LevelRecords):
        self.kept = records

    @staticmethod
    def model_key(model: str) -> str:
        return f"{model}#v{REPORT_VERSION}.{EXTRACTION_VERSION}"

    def get_many(self, model: str, communities: list[str]) -> dict[str, KeptReport]:
        return {c: KeptReport(**json.loads(r)) for c, r in self.kept.get(REPORTS, self.model_key(model), communities).items()}

    def put(self, model: str, community: str, report: KeptReport) -> None:
        """Written once: a report another process wrote meanwhile stays."""
        self.kept.put_new(REPORTS, self.model_key(model), community,
                          json.dumps(report.__dict__, ensure_ascii=False).encode())


class LevelFour:
    """Community reports through the store."""

    def __init__(self, llm: LLM, records: LevelRecords, prompts_dir: str | None = None):
        """`records`: where the index keeps its levels (a search that writes no report leaves
        them as they were)."""
        self.llm = llm
        self.store = ReportStore(records)
        self.prompts_dir = prompts_dir

    @property
    def model(self) -> str:
        return self.llm.id

    def kept(self, keys: list[str]) -> dict[str, KeptReport]:
        """The reports kept for those communities."""
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
