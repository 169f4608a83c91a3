"""A conversation across lazy searches, kept by the facade under a name (`m.conversations`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ...types import Claim


@dataclass
class LazyConversation:
    """Carries a conversation across lazy searches: a follow-up question is refined with the earlier
    turns in view, starts from the communities that paid before, and keeps the earlier claims
    (ranked below its own)."""

    turns: list[tuple[str, str]] = field(default_factory=list)  # (question, answer)
    claims: list[Claim] = field(default_factory=list)
    productive_communities: list[int] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"turns": [list(t) for t in self.turns], "productive_communities": self.productive_communities,
                "claims": [{"statement": c.statement, "score": c.score, "text_unit_ids": c.text_unit_ids,
                            "sentences": c.sentences} for c in self.claims]}

    def follow(self, has_unit: Callable[[str], bool], has_community: Callable[[int], bool]) -> None:
        """Forget what the index no longer holds: earlier claims citing a removed document's units,
        and communities a later build re-clustered away (their ids are not reused)."""
        self.claims = [c for c in self.claims if all(map(has_unit, c.text_unit_ids))]
        self.productive_communities = [c for c in self.productive_communities if has_community(c)]

    @classmethod
    def from_dict(cls, data: dict) -> "LazyConversation":
        return cls(turns=[(q, a) for q, a in data.get("turns", [])],
                   claims=[Claim(c["statement"], c["score"], list(c["text_unit_ids"]), list(c.get("sentences", [])))
                           for c in data.get("claims", [])],
                   productive_communities=list(data.get("productive_communities", [])))
