"""The question as the stages read it, analysed once where it comes in.

A door (the API, and through it the CLI, MCP and the web app) checks the text and makes one
`Query`; every stage it goes through reads its language from it instead of detecting it again,
and the analyses a stage makes of it (its index terms, noun phrases, graph seeds, vector) are
kept on it as named views, so the next stage that needs one reads it instead of working it out
again. A rewrite, a sub-question or a topic is a `derive`d Query of its own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from .nlp.lang import detect_language

T = TypeVar("T")


@dataclass(frozen=True)
class Query:
    text: str
    language: str  # "en" or "ja", by script (nlp.lang.detect_language)
    _views: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def of(cls, text: str) -> Query:
        """A query of checked text (facade.workspace.Workspace.query: Unicode, not empty, within
        search.max_query_chars)."""
        return cls(text, detect_language(text))

    def derive(self, text: str) -> Query:
        """Another question made from this one (a rewrite, a sub-question, a topic, the names it
        asks about): the same query when the text is the same, else one analysed anew."""
        return self if text == self.text else Query.of(text)

    def view(self, name: str, compute: Callable[[], T]) -> T:
        """The named analysis of this query (keyword terms, noun phrases, graph seeds, vector),
        computed by the first stage that needs it and read by the others. A query lives for one
        search of one index generation, the scope of every view."""
        if name not in self._views:
            self._views[name] = compute()
        return self._views[name]

    def known(self, name: str) -> Any:
        """The named view where a stage has computed it, else None: for a view only one stage can
        compute (the passages its meaning finds first, known once the search has run)."""
        return self._views.get(name)
