"""Every public door under generated input (Hypothesis), for tests/test_fuzz.py (bounded, in
`make test`) and bench/fuzz.py (long runs).

Each case is one call through a door, classified by its outcome:
- "ok": it answered;
- "refused": a clear refusal (MonjyuError, a 4xx, an MCP tool error) naming what was wrong;
- "vague": a refusal that does not name the parameter, setting, file or value at fault;
- "crash": anything else: a traceback, a 500.

A catch-all that turns every failure into one generic message shows up as "vague", not "refused".
"""

from __future__ import annotations

import asyncio
import json
import os
import string
import tempfile
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from monjyu import Monjyu
from monjyu.engines.request import ALL_MODES, OPTION_MODES
from monjyu.config import load_config
from monjyu.errors import MonjyuError
from monjyu.retrieval.filters import parse_filters

# Text users and clients send: any script, control characters, lone surrogates excluded (they
# cannot reach Python code from a file, a terminal or JSON).
TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=300)
MIXED = st.lists(st.sampled_from(["Leiden", "グラフ", "検索", "BM25", "\x00", "\u202e", "🙂", "  ", "\n", "'", '"',
                                  "[bold]", "--", "*", "%s", "../", "\\", "؟", "Ω"]), max_size=12).map("".join)
QUERY = st.one_of(TEXT, MIXED, st.just(""), st.integers(1, 4).map(lambda n: "word " * (25_000 * n)))
SMALL_INT = st.one_of(st.integers(-3, 12), st.integers(-2**63, 2**63))
FILTER_KEY = st.sampled_from(["doc", "type", "path", "from", "to", "author", "year", "kind", "entity", "min",
                              "colour", "", "Year", "type "])
FILTER_VALUE = st.one_of(TEXT, st.sampled_from(["pdf", "md", "2019", "2015-2019", "-2019", "2019-", "2020-13-40",
                                                "2021-01-01", "PERSON", "reference", "text", "0.5", "1.5", "-1",
                                                "*.pdf", "[a-z]", "NaN"]))
SECTIONS = ["search", "lazy", "store", "embedding", "llm", "graph", "hybrid", "answer", "server", "mcp", "chunking"]


@dataclass
class Tally:
    """Cases per door and kind, by outcome; the first few cases of each bad outcome kept."""

    counts: dict[tuple[str, str], Counter] = field(default_factory=lambda: defaultdict(Counter))
    examples: dict[tuple[str, str, str], list[str]] = field(default_factory=lambda: defaultdict(list))

    def add(self, door: str, kind: str, outcome: str, case: Any, message: str = "") -> None:
        self.counts[(door, kind)][outcome] += 1
        if outcome in ("crash", "vague") and len(self.examples[(door, kind, outcome)]) < 5:
            self.examples[(door, kind, outcome)].append(f"{_short(case)} -> {message[:300]}")

    def total(self, outcome: str) -> int:
        return sum(c[outcome] for c in self.counts.values())

    def table(self) -> str:
        rows = [f"{'door':8} {'kind':10} {'cases':>7} {'ok':>7} {'refused':>7} {'vague':>6} {'crash':>6}"]
        for (door, kind), c in sorted(self.counts.items()):
            rows.append(f"{door:8} {kind:10} {sum(c.values()):7d} {c['ok']:7d} {c['refused']:7d} "
                        f"{c['vague']:6d} {c['crash']:6d}")
        return "\n".join(rows)

    def report(self) -> str:
        bad = "\n".join(f"{door}/{kind} {outcome}: {case}" for (door, kind, outcome), cases in self.examples.items()
                        for case in cases)
        return self.table() + ("\n" + bad if bad else "")


def _short(case: Any) -> str:
    text = repr(case)
    return text if len(text) < 300 else text[:300] + "..."


def _names(message: str, names: list[str]) -> bool:
    lowered = message.lower()
    return any(n and n.lower() in lowered for n in names)


def classify(tally: Tally, door: str, kind: str, case: Any, call: Callable[[], Any], names: list[str]) -> None:
    """Run one case; a MonjyuError is a refusal, which must name one of `names`."""
    try:
        call()
    except MonjyuError as exc:
        tally.add(door, kind, "refused" if _names(str(exc), names) else "vague", case, str(exc))
    except Exception as exc:  # noqa: BLE001 - what the fuzz suite is looking for
        tally.add(door, kind, "crash", case, f"{type(exc).__name__}: {exc}")
    else:
        tally.add(door, kind, "ok", case)


def run(strategy: st.SearchStrategy, examples: int, check: Callable[[Any], None], derandomize: bool) -> None:
    """Hypothesis draws `examples` cases from `strategy` and hands each to `check` (which counts it
    and never raises, so nothing is shrunk: every case is counted once)."""
    @settings(max_examples=examples, deadline=None, database=None, derandomize=derandomize,
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def each(case: Any) -> None:
        check(case)

    each()


# ---------------------------------------------------------------- the API (Python)
def api_doors(m: Monjyu, tally: Tally, examples: int, derandomize: bool = True) -> None:
    def query(case: tuple[str, str]) -> None:
        text, mode = case
        classify(tally, "api", "query", case, lambda: m.ask(text, mode, answer=False, top_k=3) if mode != "lazy"
                 else m.ask(text, mode, answer=False, top_k=3, budget=5), ["query"])

    run(st.tuples(QUERY, st.sampled_from(ALL_MODES)), examples, query, derandomize)

    def answer(text: str) -> None:
        classify(tally, "api", "answer", text, lambda: m.search(text, "hybrid", top_k=3), ["query"])

    run(st.one_of(TEXT, MIXED), max(1, examples // 4), answer, derandomize)

    def filters(case: list[tuple[str, str]]) -> None:
        expressions = [f"{k}={v}" for k, v in case]
        classify(tally, "api", "filters", case,
                 lambda: m.search("communities", "hybrid", answer=False, filters=parse_filters(expressions)),
                 ["filter"] + [k for k, _ in case])

    run(st.lists(st.tuples(FILTER_KEY, FILTER_VALUE), min_size=1, max_size=3), examples, filters, derandomize)

    option_values = {
        "top_k": SMALL_INT, "offset": SMALL_INT, "threshold": st.floats(allow_nan=True, allow_infinity=True),
        "answer": st.booleans(), "spelling": st.booleans(), "expand": st.booleans(), "preset": st.sampled_from(["z100", "z500", "z9", ""]),
        "budget": SMALL_INT, "level": st.integers(-1, 5), "weights": st.dictionaries(st.sampled_from(["keyword", "semantic", "graph", "x"]),
                                                        st.floats(-1, 2), max_size=3),
        "rerank": st.booleans(), "crag": st.booleans(),
        "session": st.one_of(st.just("fuzz"), TEXT.filter(lambda s: len(s) < 80)),
    }

    def options(case: tuple[str, dict]) -> None:
        mode, chosen = case
        if mode == "lazy" and "budget" not in chosen:
            chosen = {**chosen, "budget": 5}
        classify(tally, "api", "options", case, lambda: m.ask("Leiden communities", mode, **chosen),
                 list(chosen) + ["query", "weights", "expand", "no llm", "llm.provider"])

    run(st.tuples(st.sampled_from(ALL_MODES),
                  st.fixed_dictionaries({}, optional={k: v for k, v in option_values.items() if k in OPTION_MODES})),
        examples, options, derandomize)

    def documents(case: tuple[str, str | None, int]) -> None:
        doc, unit, page = case
        classify(tally, "api", "documents", case, lambda: m.documents.get(doc, unit, context_units=2),
                 ["document", "text unit"])
        classify(tally, "api", "pages", case, lambda: m.documents.page_image(doc, page), ["document", "page", "pdf"])

    ids = st.one_of(TEXT, st.sampled_from(["abs-bm25", "abs-leiden", "../../etc/passwd", "", " ", "\x00"]))
    run(st.tuples(ids, st.one_of(st.none(), TEXT), SMALL_INT), examples, documents, derandomize)


# ---------------------------------------------------------------- settings
def settings_doors(tally: Tally, examples: int, derandomize: bool = True) -> None:
    from monjyu.config import MonjyuConfig

    sections = {name: list(type(getattr(MonjyuConfig(), name)).model_fields) for name in SECTIONS}
    key = st.sampled_from(SECTIONS).flatmap(lambda s: st.tuples(st.just(s), st.one_of(
        st.sampled_from(sections[s]), st.sampled_from(sections[s]).map(lambda k: k[:-1] or "x"), TEXT)))
    value = st.one_of(st.none(), st.booleans(), SMALL_INT, st.floats(allow_nan=True), TEXT,
                      st.lists(TEXT, max_size=3), st.dictionaries(TEXT, TEXT, max_size=2))

    def yaml_file(case: list[tuple[tuple[str, str], Any]]) -> None:
        import yaml

        data: dict[str, dict] = {}
        for (section, name), v in case:
            data.setdefault(section, {})[name] = v
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "monjyu.yaml"
            path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
            names = [str(path)] + [f"{s}.{k}" for (s, k), _ in case] + [s for (s, _), _ in case]
            classify(tally, "settings", "yaml", case, lambda: load_config(path), names)

    run(st.lists(st.tuples(key, value), min_size=1, max_size=3), examples, yaml_file, derandomize)

    def raw_file(text: str) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "monjyu.yaml"
            path.write_text(text, encoding="utf-8")
            classify(tally, "settings", "raw file", text, lambda: load_config(path), [str(path), "setting"])

    run(st.one_of(TEXT, st.sampled_from(["search: [", "- a\n- b", "search: 3", "!!python/object:os.system x",
                                          "search: {mode: {a: b}}", "\t: :"])), examples, raw_file, derandomize)

    env_name = st.one_of(key.map(lambda sk: f"MONJYU_{sk[0]}__{sk[1]}".upper()),
                         st.text(string.ascii_uppercase + "_", min_size=1, max_size=20).map(lambda s: "MONJYU_" + s))

    def variables(case: tuple[str, str]) -> None:
        name, v = case
        if "\x00" in name + v or "=" in name:  # the OS refuses these before any program sees them
            return
        saved = os.environ.get(name)
        os.environ[name] = v
        try:
            classify(tally, "settings", "variables", case, load_config,
                     [name, name.lower().replace("monjyu_", "").replace("__", ".")])
        finally:
            if saved is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = saved

    run(st.tuples(env_name, TEXT.filter(lambda s: "\x00" not in s)), examples, variables, derandomize)


# ---------------------------------------------------------------- the web app (HTTP, in process)
def web_doors(m: Monjyu, tally: Tally, examples: int, derandomize: bool = True) -> None:
    from starlette.testclient import TestClient

    from monjyu.web import create_app

    client = TestClient(create_app(m), base_url="http://127.0.0.1", raise_server_exceptions=False)
    param = st.one_of(TEXT, SMALL_INT.map(str), st.sampled_from(["", "abs-bm25", "1e3", "-0", "9" * 50]))
    routes = {"/api/document": {"id": st.sampled_from(["abs-bm25", "abs-leiden", "x"]), "context": SMALL_INT.map(str),
                                "unit": TEXT},
              "/api/page": {"id": st.sampled_from(["abs-bm25", "x"]), "page": SMALL_INT.map(str),
                            "start": SMALL_INT.map(str), "end": SMALL_INT.map(str)},
              "/api/documents": {"limit": SMALL_INT.map(str), "offset": SMALL_INT.map(str)},
              "/api/community": {"id": SMALL_INT.map(str)}}
    well_formed = st.sampled_from(sorted(routes)).flatmap(
        lambda path: st.tuples(st.just(path), st.fixed_dictionaries({}, optional=routes[path])))

    def get(case: tuple[str, dict]) -> None:
        path, params = case
        try:
            response = client.get(path, params=params)
        except Exception as exc:  # noqa: BLE001
            tally.add("web", "params", "crash", case, f"{type(exc).__name__}: {exc}")
            return
        _http_outcome(tally, "web", "params", case, response, list(params) + ["'id'", "'page'", "document", "community",
                                                                             "pdf"])

    anything = st.tuples(st.sampled_from(sorted(routes)),
                         st.dictionaries(st.sampled_from(["id", "unit", "context", "page", "start", "end", "limit",
                                                          "offset", "x"]), param, max_size=4))
    run(st.one_of(well_formed, well_formed, anything), examples, get, derandomize)

    body_value = st.one_of(st.none(), st.booleans(), SMALL_INT, st.floats(allow_nan=False, allow_infinity=False), TEXT, st.lists(TEXT, max_size=2),
                           st.dictionaries(st.sampled_from(["type", "year", "author", "path", "x"]), TEXT, max_size=2))
    body = st.one_of(st.fixed_dictionaries({"query": st.one_of(TEXT, MIXED)}, optional={
        "mode": st.sampled_from(["auto", "hybrid", "lazy", "hybridrag", "vector", ""]), "preset": body_value,
        "level": body_value, "filters": body_value, "top_k": body_value, "colour": body_value}), body_value)

    def search(case: Any) -> None:
        try:
            response = client.post("/api/search", json=case)
        except Exception as exc:  # noqa: BLE001
            tally.add("web", "search", "crash", case, f"{type(exc).__name__}: {exc}")
            return
        names = ["query", "mode", "preset", "level", "filters", "top_k", "spelling", "unknown search fields", "json"]
        if response.status_code == 200:
            last = json.loads(response.text.strip().splitlines()[-1])
            if "error" in last:
                outcome = "refused" if _names(last["error"], names) else "vague"
                tally.add("web", "search", outcome, case, last["error"])
                return
        _http_outcome(tally, "web", "search", case, response, names)

    run(body.filter(lambda b: not (isinstance(b, dict) and b.get("mode") == "lazy")), max(1, examples // 2),
        search, derandomize)


def _http_outcome(tally: Tally, door: str, kind: str, case: Any, response, names: list[str]) -> None:
    if response.status_code >= 500:
        tally.add(door, kind, "crash", case, f"{response.status_code}: {response.text[:200]}")
    elif response.status_code >= 400:
        try:
            message = response.json().get("error", "")
        except ValueError:
            message = response.text
        tally.add(door, kind, "refused" if _names(message, names) else "vague", case, message)
    else:
        tally.add(door, kind, "ok", case)


# ---------------------------------------------------------------- MCP (tools, in process)
def mcp_doors(m: Monjyu, tally: Tally, examples: int, derandomize: bool = True) -> None:
    from mcp.server.mcpserver.exceptions import ToolError

    from monjyu.mcp_server import create_server

    server = create_server(m)
    value = st.one_of(st.none(), st.booleans(), SMALL_INT, st.floats(allow_nan=False, allow_infinity=False), TEXT,
                      st.lists(TEXT, max_size=2),
                      st.dictionaries(st.sampled_from(["file_types", "kinds", "year_range", "authors", "x"]),
                                      st.one_of(TEXT, st.lists(TEXT, max_size=2)), max_size=2))
    tools = {"search": ["query", "mode", "limit", "offset", "filters", "answer", "threshold", "preset", "budget",
                        "level", "weights", "rerank", "crag"],
             "lazy_search": ["query", "preset", "budget", "level"], "get_document": ["document_id", "text_unit_id",
                                                                             "context_units", "max_chars"],
             "list_documents": ["limit", "offset"], "index_status": [], "index": ["paths"],
             "converse": ["query", "session", "preset", "budget", "level"]}
    loop = asyncio.new_event_loop()

    def call(case: tuple[str, dict]) -> None:
        tool, arguments = case
        if tool in ("lazy_search", "converse") or (tool == "search" and arguments.get("mode") == "lazy"):
            arguments = {**arguments, "budget": 5}
        try:
            loop.run_until_complete(server.call_tool(tool, arguments))
        except ToolError as exc:
            names = list(arguments) + tools[tool] + [tool]
            tally.add("mcp", "tools", "refused" if _names(str(exc), names) else "vague", case, str(exc))
        except Exception as exc:  # noqa: BLE001
            tally.add("mcp", "tools", "crash", case, f"{type(exc).__name__}: {exc}")
        else:
            tally.add("mcp", "tools", "ok", case)

    # Mostly well-typed arguments (so that the tools' own checks and the engines behind them run),
    # then anything under any name.
    typed = {"query": st.one_of(TEXT, MIXED), "mode": st.sampled_from([*ALL_MODES, "x"]), "limit": SMALL_INT,
             "offset": SMALL_INT, "answer": st.booleans(), "threshold": st.floats(-2, 2),
             "preset": st.sampled_from(["z100", "z9"]), "budget": st.integers(-1, 8), "level": st.integers(0, 5),
             "rerank": st.booleans(),
             "crag": st.booleans(), "weights": st.fixed_dictionaries({"keyword": st.floats(0, 1),
                                                                      "semantic": st.floats(0, 1),
                                                                      "graph": st.floats(0, 1)}),
             "filters": st.fixed_dictionaries({}, optional={"file_types": st.lists(st.sampled_from(["pdf", "md", "x"])),
                                                            "kinds": st.lists(st.sampled_from(["text", "x"]))}),
             "document_id": st.sampled_from(["abs-bm25", "abs-leiden", "nope", ""]), "text_unit_id": TEXT,
             "context_units": SMALL_INT, "max_chars": SMALL_INT, "session": st.sampled_from(["fuzz", "../x", ""]),
             "paths": st.lists(TEXT, max_size=2)}
    well_typed = st.sampled_from(sorted(tools)).flatmap(lambda tool: st.tuples(st.just(tool), st.fixed_dictionaries(
        {"query": typed["query"]} if "query" in tools[tool] else {},
        optional={a: typed[a] for a in tools[tool] if a != "query"})))
    anything = st.sampled_from(sorted(tools)).flatmap(lambda tool: st.tuples(st.just(tool), st.dictionaries(
        st.one_of(st.sampled_from(tools[tool] or ["x"]), st.sampled_from(["colour", "session"])), value, max_size=4)))
    strategy = st.one_of(well_typed, well_typed, anything)
    try:
        run(strategy, examples, call, derandomize)
    finally:
        loop.close()
