"""What one search asks for besides its question, declared once: the mode, the page, the filters
and each engine's options.

Every door fills a `SearchRequest` (the API's keyword arguments, the CLI's flags, the MCP tools'
arguments, the web app's body), `Monjyu` checks it once, and the engine that runs it reads it
(`Engine.run(query, request)`). Which modes take an option is said beside the option, so the
refusal of an option a mode cannot apply, and the tests of every door, read one table.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from typing import Any

from ..errors import MonjyuError
from ..schemas import SearchFilters

MODES = ("vector", "keyword", "hybrid", "graph")  # the retrieval modes of baseline RAG (`search`)
ALL_MODES = MODES + ("hybridrag", "lazy", "auto")  # what `ask` runs (auto routes by the question's type)
LAZY, HYBRIDRAG = ("lazy",), ("hybridrag",)


def _option(default: Any, modes: tuple[str, ...], doc: str) -> Any:
    return field(default=default, metadata={"modes": modes, "doc": doc})


def _runtime(modes: tuple[str, ...], doc: str) -> Any:
    """What a caller hands the engine (a callback, a conversation) rather than a search option;
    still refused by a mode that would not use it."""
    return field(default=None, compare=False, metadata={"modes": modes, "doc": doc, "runtime": True})


@dataclass(frozen=True)
class SearchRequest:
    """One search's options; a field left at its default was not given."""

    mode: str | None = None  # one of ALL_MODES; None: search.mode
    top_k: int | None = _option(None, ALL_MODES, "how many units or passages; default search.top_k")
    offset: int = _option(0, ALL_MODES, "units or passages to skip (paging)")
    filters: SearchFilters | None = _option(None, ALL_MODES, "metadata filters bounding every unit searched")
    threshold: float | None = _option(None, ALL_MODES, "keep only units whose cosine similarity to the query reaches it")
    answer: bool = _option(True, ALL_MODES, "False returns the ranked units only")
    spelling: bool | None = _option(None, ALL_MODES, "correct the query's misspelt words to words the index holds; "
                                    "default search.spelling")
    expand: bool = _option(False, MODES, "also search LLM rewrites of the query (needs an LLM)")
    preset: str | None = _option(None, LAZY, "z100, z500 or z1500: relevance-test budgets; default lazy.preset")
    budget: int | None = _option(None, LAZY, "an explicit number of sentence relevance tests")
    level: int | None = _option(None, LAZY, "the highest index level it may build and use (1-4); 2-4 need an LLM")
    session: str | None = _option(None, LAZY, "a conversation kept in the index directory")
    weights: dict[str, float] | None = _option(None, HYBRIDRAG, "the fusion's weights (keyword, semantic, graph)")
    rerank: bool | None = _option(None, HYBRIDRAG, "rerank the fused list; default rerank.provider")
    crag: bool | None = _option(None, HYBRIDRAG, "grade the passages and answer only when they suffice")
    on_token: Callable[[str], None] | None = _runtime(ALL_MODES, "receives the answer text as it is written")
    on_phase: Callable[[str, dict], None] | None = _runtime(LAZY, "called as each phase runs")
    conversation: Any = _runtime(LAZY, "the LazyConversation a follow-up is asked in (the API's own object)")
    public: Any = _runtime(HYBRIDRAG, "the schemas.SearchQuery it came as (its type, embedding and echo)")

    def given(self) -> list[str]:
        """The options set to other than their defaults (what `check` holds against the mode)."""
        return [f.name for f in fields(self) if "modes" in f.metadata and getattr(self, f.name) != f.default]

    def check(self, names: dict[str, str] | None = None) -> None:
        """Refuse an unknown mode, and an option the mode cannot apply, naming the modes that
        take it; `names` gives the door's own spelling of each option (CLI flags, MCP arguments)."""
        if self.mode not in ALL_MODES:
            raise MonjyuError(f"unknown search mode '{self.mode}'; choose one of {', '.join(ALL_MODES)}")
        for option in self.given():
            modes = SearchRequest.__dataclass_fields__[option].metadata["modes"]
            if self.mode not in modes:
                name = (names or {}).get(option, option)
                why = " (auto picks the engine per question; choose the mode)" if self.mode == "auto" else ""
                raise MonjyuError(f"{name} does not apply to mode {self.mode}{why}: it is taken by mode(s) "
                                  f"{', '.join(modes)}")

    def to(self, mode: str) -> SearchRequest:
        """The same request for the engine `auto` chose."""
        return replace(self, mode=mode)


# The modes that apply each option: an option given to any other mode is refused with these names,
# never dropped; under auto only the options every engine applies are taken.
OPTION_MODES: dict[str, tuple[str, ...]] = {f.name: f.metadata["modes"] for f in fields(SearchRequest)
                                            if "modes" in f.metadata and not f.metadata.get("runtime")}

# What `monjyu eval` and the benches can measure: a mode of `ask`, with options fixed.
EVAL_MODES: dict[str, tuple[str, dict[str, Any]]] = {
    **{mode: (mode, {}) for mode in MODES},
    "hybridrag": ("hybridrag", {}), "hybridrag-norerank": ("hybridrag", {"rerank": False}),
    "hybridrag-crag": ("hybridrag", {"crag": True}), "lazy": ("lazy", {}), "auto": ("auto", {}),
}


def eval_mode(name: str) -> tuple[str, dict[str, Any]]:
    """The mode of `ask` and the fixed options one of EVAL_MODES stands for."""
    if name not in EVAL_MODES:
        raise MonjyuError(f"unknown evaluation mode '{name}'; choose among {', '.join(EVAL_MODES)}")
    return EVAL_MODES[name]
