"""The question as the stages read it, analysed once where it comes in.

A door (the API, and through it the CLI, MCP and the web app) checks the text and makes one
`Query`; the stages it goes through read its language from it instead of detecting it again.
So far the answer engine, the reader, HybridRAG and lazy search take it; the rankers still take
its text (issue 54 moves them in later steps).
"""

from __future__ import annotations

from dataclasses import dataclass

from .nlp.lang import detect_language


@dataclass(frozen=True)
class Query:
    text: str
    language: str  # "en" or "ja", by script (nlp.lang.detect_language)

    @classmethod
    def of(cls, text: str) -> Query:
        """A query of checked text (facade.workspace.Workspace.query: Unicode, not empty, within
        search.max_query_chars)."""
        return cls(text, detect_language(text))
