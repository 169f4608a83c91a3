"""The local web app's HTTP layer: each route is one facade call, translated to JSON, NDJSON or PNG.

No search logic lives here. Documents are addressed by their index id and PDF pages are read from
the file the index recorded for that id, so a request can never name a path on disk.
"""

from __future__ import annotations

import html
import json
import tempfile
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from ..access import LOOPBACK_NAMES, AccessGuard
from ..api import Monjyu
from ..config import LAZY_PRESETS
from ..errors import IndexNotFoundError, MonjyuError
from ..retrieval.filters import parse_filters
from ..types import LazySearchResult

STATIC = Path(__file__).parent / "static"
UI_MODES = ("auto", "hybrid", "lazy", "hybridrag")
LEVELS = (1, 2, 3, 4)  # lazy search's highest index level (2-4 with an LLM)
# The search form's filter fields: the CLI's --filter keys, so one parser reads both.
FILTER_KEYS = ("type", "author", "year", "path", "from", "to", "collection", "tag", "item-type", "cites", "cited-by")
TRACE_FIELDS = ("communities_visited", "budget_used", "budget_total", "assessor", "stop_reason", "subqueries",
                "relevant_sentences", "claims", "coverage", "themes", "levels_reached", "level2", "usage_by_level")
# Scripts only from this server (query text is never executed even if shown wrongly); the map's
# SVG uses inline styles; page images are same-origin.
SECURITY_HEADERS = {"Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
                    "img-src 'self'; frame-ancestors 'self'; base-uri 'none'; form-action 'self'",
                    "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"}


def result_view(result: Any) -> dict[str, Any]:
    """What the page shows of any engine's result: answer, passages, cost, and lazy's trace."""
    view = {"mode": result.mode, "query": result.query, "spelling": result.spelling,
            "answer": result.answer.to_dict() if result.answer else None,
            "hits": [h.to_dict() for h in result.hits], "total_count": result.total_count,
            "usage": result.usage, "timings_ms": result.timings_ms}
    if isinstance(result, LazySearchResult):
        full = result.to_dict()
        view["trace"] = {k: full[k] for k in TRACE_FIELDS}
    return view


def _error(exc: Exception, status: int = 400) -> JSONResponse:
    return JSONResponse({"error": str(exc)}, status_code=status)


class BadParameter(MonjyuError):
    """A request parameter that is missing, malformed or out of bounds (400, naming it)."""


def _refused(request: Request, exc: MonjyuError) -> JSONResponse:
    """A bad parameter is 400; what the facade refuses (unknown document, not a PDF, no such
    community) is 404."""
    return _error(exc, 400 if isinstance(exc, BadParameter) else 404)


class SecurityHeaders:
    """Every response, static files and streams included, carries SECURITY_HEADERS."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        async def with_headers(message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = list(message.get("headers", [])) + [(k.lower().encode(), v.encode())
                                                                         for k, v in SECURITY_HEADERS.items()]
            await send(message)

        await self.app(scope, receive, with_headers if scope["type"] == "http" else send)


def _int(request: Request, name: str, default: int | None = None, low: int = 0, high: int = 10**9) -> int:
    value = request.query_params.get(name)
    if value is None:
        if default is None:
            raise BadParameter(f"the request needs the parameter '{name}'")
        return default
    try:
        number = int(value)
    except ValueError:
        raise BadParameter(f"'{name}' must be a whole number, not {value[:40]!r}") from None
    if not low <= number <= high:
        raise BadParameter(f"'{name}' must be between {low} and {high}, not {number}")
    return number


def _only(request: Request, *names: str) -> None:
    """Refuse a query parameter the route does not take (never silently ignored)."""
    unknown = sorted(set(request.query_params) - set(names))
    if unknown:
        raise BadParameter(f"unknown parameter(s) {', '.join(repr(u[:40]) for u in unknown[:5])}; "
                           f"{request.url.path} takes {', '.join(names) or 'none'}")


def _text(request: Request, name: str, required: bool = True, limit: int = 2000) -> str | None:
    value = request.query_params.get(name)
    if not value:
        if required:
            raise BadParameter(f"the request needs the parameter '{name}'")
        return None
    if len(value) > limit:
        raise BadParameter(f"'{name}' is longer than {limit} characters")
    return value


def search_options(body: dict[str, Any], max_query_chars: int) -> tuple[str, str, dict[str, Any]]:
    """The search form as `ask` arguments, each checked here so that a bad one is a 400 naming it;
    anything the form cannot send is refused by name."""
    unknown = set(body) - {"query", "mode", "preset", "level", "filters", "top_k", "spelling"}
    if unknown:
        raise BadParameter(f"unknown search fields: {', '.join(sorted(map(str, unknown)))[:200]}")
    query = body.get("query")
    if not isinstance(query, str) or not query.strip():
        raise BadParameter("'query' must be a non-empty string")
    if len(query) > max_query_chars:
        raise BadParameter(f"'query' is {len(query):,} characters, above search.max_query_chars={max_query_chars:,}")
    mode = body.get("mode") or "auto"
    if mode not in UI_MODES:
        raise BadParameter(f"'mode' must be one of {', '.join(UI_MODES)}")
    filters = body.get("filters") or {}
    if not isinstance(filters, dict) or set(filters) - set(FILTER_KEYS):
        raise BadParameter(f"'filters' takes the keys {', '.join(FILTER_KEYS)}")
    if any(not isinstance(v, (str, int, float, type(None))) or len(str(v)) > 500 for v in filters.values()):
        raise BadParameter("'filters' values must be short strings or numbers")
    options: dict[str, Any] = {}
    expressions = [f"{k}={str(v).strip()}" for k, v in filters.items() if str(v or "").strip()]
    if expressions:
        try:
            options["filters"] = parse_filters(expressions)
        except MonjyuError as exc:
            raise BadParameter(f"'filters': {exc}") from None
    preset = body.get("preset")
    if preset:
        if not isinstance(preset, str) or preset not in LAZY_PRESETS:
            raise BadParameter(f"'preset' must be one of {', '.join(LAZY_PRESETS)}")
        options["preset"] = preset
    level = body.get("level")
    if level is not None:
        if isinstance(level, bool) or level not in LEVELS:
            raise BadParameter(f"'level' must be one of {', '.join(map(str, LEVELS))}")
        if mode != "lazy":
            raise BadParameter("'level' is lazy search's (the highest index level it may build and use): choose mode lazy")
        options["level"] = level
    spelling = body.get("spelling")
    if spelling is not None:
        if not isinstance(spelling, bool):
            raise BadParameter("'spelling' must be true or false")
        options["spelling"] = spelling
    top_k = body.get("top_k")
    if top_k is not None:
        if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= 100:
            raise BadParameter("'top_k' must be a whole number from 1 to 100")
        options["top_k"] = top_k
    return query, mode, options


def create_app(monjyu: Monjyu, allowed_hosts: list[str] | None = None, token: str | None = None) -> Starlette:
    """The app over one facade, behind `access.AccessGuard`: only the Host names in
    `allowed_hosts` are served (default: loopback; a page elsewhere resolving its own name to
    127.0.0.1 is refused), every request needs `token` when one is given, and writes must be
    same-origin JSON."""
    map_cache: dict[str, str] = {}
    max_body = 4 * monjyu.config.search.max_query_chars + 65_536  # a query of UTF-8 text and the form
    # Plain `def` routes run in Starlette's thread pool: facade calls read files and may pull a
    # generation from object storage, which must not stall the event loop that streams answers.

    def home(request: Request) -> Response:
        return FileResponse(STATIC / "index.html")

    def info(request: Request) -> Response:
        try:
            status = {"exists": True, **monjyu.status()}
        except IndexNotFoundError as exc:
            status = {"exists": False, "hint": str(exc)}
        return JSONResponse({"status": status, "modes": UI_MODES, "presets": list(LAZY_PRESETS), "levels": LEVELS,
                             "filters": FILTER_KEYS, "llm": monjyu.config.llm.provider})

    async def search(request: Request) -> Response:
        """NDJSON: {"token": text} lines as the answer is written, then {"result": ...} or {"error": ...}."""
        try:
            if int(request.headers.get("content-length") or 0) > max_body:
                raise BadParameter(f"the request body is larger than {max_body:,} bytes")
            body = await request.json()
            if not isinstance(body, dict):
                raise BadParameter("the request body must be a JSON object")
            query, mode, options = search_options(body, monjyu.config.search.max_query_chars)
        except (MonjyuError, ValueError, RecursionError) as exc:
            return _error(exc if isinstance(exc, MonjyuError) else BadParameter(f"the request body is not JSON: {exc}"))

        async def lines():
            try:
                async for event in monjyu.aevents(query, mode, **options):
                    line = {"token": event} if isinstance(event, str) else {"result": result_view(event)}
                    yield json.dumps(line, ensure_ascii=False) + "\n"
            except MonjyuError as exc:
                yield json.dumps({"error": str(exc)}, ensure_ascii=False) + "\n"

        return StreamingResponse(lines(), media_type="application/x-ndjson")

    def documents(request: Request) -> Response:
        _only(request, "limit", "offset")
        page = monjyu.documents.list(limit=_int(request, "limit", 100, 1, 1000), offset=_int(request, "offset", 0))
        page["failures"] = monjyu.status()["failures"]
        return JSONResponse(page)

    def document(request: Request) -> Response:
        _only(request, "id", "unit", "context")
        return JSONResponse(monjyu.documents.get(_text(request, "id"), _text(request, "unit", required=False),
                                                context_units=_int(request, "context", 1, 0, 20)))

    def paper(request: Request) -> Response:
        _only(request, "id")
        return JSONResponse(monjyu.papers.get(_text(request, "id")))

    def page(request: Request) -> Response:
        _only(request, "id", "page", "start", "end")
        png = monjyu.documents.page_image(_text(request, "id"), _int(request, "page", low=1, high=100_000),
                                _int(request, "start", 0), _int(request, "end", 0))
        return Response(png, media_type="image/png")

    def community(request: Request) -> Response:
        _only(request, "id")
        return JSONResponse(monjyu.graph.community(_int(request, "id")))

    def community_map(request: Request) -> Response:
        """The graph picture, its communities linked to the app; drawn once per index generation."""
        try:
            generation = monjyu.workspace.manifest().generation
            if generation not in map_cache:
                with tempfile.TemporaryDirectory() as tmp:
                    path = monjyu.graph.export(Path(tmp) / "map.html", "html", community_href="/?community={id}")
                    map_cache.clear()
                    map_cache[generation] = path.read_text(encoding="utf-8")
        except MonjyuError as exc:
            return HTMLResponse(f"<p>{html.escape(str(exc))}</p>", status_code=404)
        return HTMLResponse(map_cache[generation])

    routes = [
        Route("/", home), Route("/api/info", info), Route("/api/search", search, methods=["POST"]),
        Route("/api/documents", documents), Route("/api/document", document), Route("/api/page", page),
        Route("/api/paper", paper),
        Route("/api/community", community), Route("/map", community_map),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    middleware = [Middleware(AccessGuard, allowed_hosts=allowed_hosts or list(LOOPBACK_NAMES), token=token,
                             browser_login=True),
                  Middleware(SecurityHeaders)]
    return Starlette(routes=routes, middleware=middleware, exception_handlers={MonjyuError: _refused})
