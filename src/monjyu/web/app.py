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
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from ..api import Monjyu
from ..config import LAZY_PRESETS
from ..errors import IndexNotFoundError, MonjyuError
from ..retrieval import SearchFilters
from ..types import LazySearchResult

STATIC = Path(__file__).parent / "static"
UI_MODES = ("auto", "hybrid", "lazy", "hybridrag")
# The search form's filter fields: the CLI's --filter keys, so one parser reads both.
FILTER_KEYS = ("type", "author", "year", "path", "from", "to")
TRACE_FIELDS = ("communities_visited", "budget_used", "budget_total", "assessor", "stop_reason", "subqueries",
                "relevant_sentences", "claims", "coverage", "themes")
# Scripts only from this server (query text is never executed even if shown wrongly); the map's
# SVG uses inline styles; page images are same-origin.
SECURITY_HEADERS = {"Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
                    "img-src 'self'; frame-ancestors 'self'; base-uri 'none'; form-action 'self'",
                    "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"}


def result_view(result: Any) -> dict[str, Any]:
    """What the page shows of any engine's result: answer, passages, cost, and lazy's trace."""
    view = {"mode": result.mode, "answer": result.answer.to_dict() if result.answer else None,
            "hits": [h.to_dict() for h in result.hits], "total_count": result.total_count,
            "usage": result.usage, "timings_ms": result.timings_ms}
    if isinstance(result, LazySearchResult):
        full = result.to_dict()
        view["trace"] = {k: full[k] for k in TRACE_FIELDS}
    return view


def _error(exc: Exception, status: int = 400) -> JSONResponse:
    return JSONResponse({"error": str(exc)}, status_code=status)


def _not_found(request: Request, exc: MonjyuError) -> JSONResponse:
    """What a facade refusal becomes (unknown document, not a PDF, no such community, bad parameter)."""
    return _error(exc, 404)


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


def _int(request: Request, name: str, default: int | None = None) -> int:
    value = request.query_params.get(name)
    if value is None:
        if default is None:
            raise MonjyuError(f"the request needs the parameter '{name}'")
        return default
    try:
        return int(value)
    except ValueError:
        raise MonjyuError(f"'{name}' must be a whole number, not {value!r}") from None


def search_options(body: dict[str, Any]) -> tuple[str, str, dict[str, Any]]:
    """The search form as `ask` arguments; anything the form cannot send is refused by name."""
    unknown = set(body) - {"query", "mode", "preset", "filters", "top_k"}
    if unknown:
        raise MonjyuError(f"unknown search fields: {', '.join(sorted(unknown))}")
    mode = body.get("mode") or "auto"
    if mode not in UI_MODES:
        raise MonjyuError(f"mode must be one of {', '.join(UI_MODES)}")
    filters = body.get("filters") or {}
    if not isinstance(filters, dict) or set(filters) - set(FILTER_KEYS):
        raise MonjyuError(f"filters take the keys {', '.join(FILTER_KEYS)}")
    options: dict[str, Any] = {}
    expressions = [f"{k}={str(v).strip()}" for k, v in filters.items() if str(v or "").strip()]
    if expressions:
        options["filters"] = SearchFilters.parse(expressions)
    if body.get("preset"):
        options["preset"] = body["preset"]
    if body.get("top_k"):
        options["top_k"] = int(body["top_k"])
    return str(body.get("query") or ""), mode, options


def create_app(monjyu: Monjyu, allowed_hosts: list[str] | None = None) -> Starlette:
    """The app over one facade. `allowed_hosts` guards against DNS rebinding (a page elsewhere
    resolving its own name to 127.0.0.1): only these Host headers are served."""
    map_cache: dict[str, str] = {}
    # Plain `def` routes run in Starlette's thread pool: facade calls read files and may pull a
    # generation from object storage, which must not stall the event loop that streams answers.

    def home(request: Request) -> Response:
        return FileResponse(STATIC / "index.html")

    def info(request: Request) -> Response:
        try:
            status = {"exists": True, **monjyu.status()}
        except IndexNotFoundError as exc:
            status = {"exists": False, "hint": str(exc)}
        return JSONResponse({"status": status, "modes": UI_MODES, "presets": list(LAZY_PRESETS),
                             "filters": FILTER_KEYS, "llm": monjyu.config.llm.provider})

    async def search(request: Request) -> Response:
        """NDJSON: {"token": text} lines as the answer is written, then {"result": ...} or {"error": ...}."""
        try:
            body = await request.json()
            if not isinstance(body, dict):
                raise MonjyuError("the request body must be a JSON object")
            query, mode, options = search_options(body)
        except (MonjyuError, ValueError) as exc:
            return _error(exc)

        async def lines():
            try:
                async for event in monjyu.aevents(query, mode, **options):
                    line = {"token": event} if isinstance(event, str) else {"result": result_view(event)}
                    yield json.dumps(line, ensure_ascii=False) + "\n"
            except MonjyuError as exc:
                yield json.dumps({"error": str(exc)}, ensure_ascii=False) + "\n"

        return StreamingResponse(lines(), media_type="application/x-ndjson")

    def documents(request: Request) -> Response:
        page = monjyu.list_documents(limit=_int(request, "limit", 100), offset=_int(request, "offset", 0))
        page["failures"] = monjyu.status()["failures"]
        return JSONResponse(page)

    def document(request: Request) -> Response:
        return JSONResponse(monjyu.get_document(request.query_params.get("id") or "",
                                                request.query_params.get("unit") or None,
                                                context_units=_int(request, "context", 1)))

    def page(request: Request) -> Response:
        png = monjyu.page_image(request.query_params.get("id") or "", _int(request, "page"),
                                _int(request, "start", 0), _int(request, "end", 0))
        return Response(png, media_type="image/png")

    def community(request: Request) -> Response:
        return JSONResponse(monjyu.community(_int(request, "id")))

    def community_map(request: Request) -> Response:
        """The graph picture, its communities linked to the app; drawn once per index generation."""
        try:
            generation = monjyu.manifest().generation
            if generation not in map_cache:
                with tempfile.TemporaryDirectory() as tmp:
                    path = monjyu.export_graph(Path(tmp) / "map.html", "html", community_href="/?community={id}")
                    map_cache.clear()
                    map_cache[generation] = path.read_text(encoding="utf-8")
        except MonjyuError as exc:
            return HTMLResponse(f"<p>{html.escape(str(exc))}</p>", status_code=404)
        return HTMLResponse(map_cache[generation])

    routes = [
        Route("/", home), Route("/api/info", info), Route("/api/search", search, methods=["POST"]),
        Route("/api/documents", documents), Route("/api/document", document), Route("/api/page", page),
        Route("/api/community", community), Route("/map", community_map),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    middleware = [Middleware(TrustedHostMiddleware, allowed_hosts=allowed_hosts or ["127.0.0.1", "localhost"]),
                  Middleware(SecurityHeaders)]
    return Starlette(routes=routes, middleware=middleware, exception_handlers={MonjyuError: _not_found})
