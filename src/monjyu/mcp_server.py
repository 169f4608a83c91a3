"""MCP server: the Monjyu facade as MCP tools and resources, over stdio or streamable HTTP.

Thin like the CLI: each tool validates its arguments (with the public schemas of
`monjyu.schemas`), calls one Monjyu method (its async twin, or a worker thread for the sync-only
ones) and turns a MonjyuError into a tool error the client can act on. Clients name documents
by index id, never by file path; only the `index` tool takes paths, and only inside the roots
the config allows.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar
from urllib.parse import quote

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError, UnexpectedToolError
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import Resource, ToolAnnotations
from pydantic import Field, ValidationError

from .access import AccessGuard, access_token, bound_names
from .api import Monjyu
from .config import MonjyuConfig
from .errors import IndexNotFoundError, MonjyuError
from .ingest.loaders import iter_source_files
from .schemas import Limit, Offset, QueryText, SearchFilters, SearchWeights

SearchMode = Literal["vector", "keyword", "hybrid", "graph", "hybridrag", "lazy", "auto"]
# The MCP spelling of each option of Monjyu.ask, for its refusals.
MCP_OPTION_NAMES = {"top_k": "limit", "offset": "offset", "filters": "filters", "threshold": "threshold",
                    "answer": "answer", "spelling": "spelling", "preset": "preset", "budget": "budget", "level": "level", "weights": "weights",
                    "rerank": "rerank", "crag": "crag"}
DOCUMENT_URI = "monjyu://documents/{+document_id}"
DocumentId = Annotated[str, Field(min_length=1, max_length=2000, description="a document id from search hits, "
                                  "list_documents or papers")]
RESOURCE_LIST_LIMIT = 1000  # documents listed as resources; the rest are reached by template or list_documents
MAX_LAZY_BUDGET = 10_000
# The lazy engine's arguments, shared by the tools that run it (`search` prefixes "lazy: ").
PRESET_HELP = "effort, relevance tests of z100 < z500 < z1500"
BUDGET_HELP = "relevance tests to spend; overrides the preset"
LEVEL_HELP = ("the highest index level it may build and use (2: entities and relations an LLM extracts; "
              "3: also the entity graph, one entity under all its names; 4: community reports; kept in the "
              "index; each needs an LLM)")
Question = Annotated[QueryText, Field(description="the question, up to search.max_query_chars characters (default 100,000)")]
Preset = Annotated[Literal["z100", "z500", "z1500"] | None, Field(description=PRESET_HELP)]
Budget = Annotated[int | None, Field(ge=1, le=MAX_LAZY_BUDGET, description=BUDGET_HELP)]
Level = Annotated[int | None, Field(ge=1, le=4, description=LEVEL_HELP)]
# What each tool does to the index directory or store, for clients deciding what to confirm:
# searches read; `converse` adds a turn to a kept conversation; `index` adds and updates files.
READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)
KEEPS_A_TURN = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False,
                               open_world_hint=False)
INSTRUCTIONS = (
    "MONJYU searches the user's indexed document collection (research papers) and answers with "
    "citations. Use `search` for questions (mode hybrid by default; hybridrag for relationship "
    "questions; auto picks by the question), `lazy_search` for broad questions over the whole "
    "collection, `get_document` to read a cited passage in context, `list_documents` to browse, "
    "`papers`, `paper` and `missing_works` for the citation graph (who cites whom, what other "
    "papers say about one), `bibtex` for references.")

T = TypeVar("T")


def document_uri(document_id: str) -> str:
    return "monjyu://documents/" + quote(document_id, safe="/")


def explain(exc: ValidationError) -> str:
    """One line per rule broken, named by argument path: what the client must change."""
    parts = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error["loc"]) or "arguments"
        parts.append(f"{where}: {error['msg'].removeprefix('Value error, ')}")
    return "; ".join(parts)


async def call(fn: Callable[..., Awaitable[T]], *args: Any, **kwargs: Any) -> T:
    """Await a facade call; a MonjyuError becomes the tool's error message."""
    try:
        return await fn(*args, **kwargs)
    except MonjyuError as exc:
        raise ToolError(str(exc)) from None


def _inside(path: Path, roots: list[Path]) -> bool:
    return any(path.is_relative_to(root) for root in roots)


def allowed_paths(paths: list[str], config: MonjyuConfig) -> list[Path]:
    """The paths a client asked to index, resolved (symlinks, `..`), each checked to lie inside
    mcp.allowed_roots together with every file a folder walk would reach from it. Relative paths
    are taken from the first root."""
    if not config.mcp.allow_index:
        raise ToolError("the index tool is disabled; to let MCP clients add files set mcp.allow_index: true "
                        "and list the folders they may add under mcp.allowed_roots in monjyu.yaml")
    roots = [Path(r).expanduser().resolve() for r in config.mcp.allowed_roots]
    if not roots:
        raise ToolError("mcp.allowed_roots is empty: list the folders MCP clients may index in monjyu.yaml")
    allowed = ", ".join(str(r) for r in roots)
    resolved = []
    for raw in paths:
        try:
            path = (roots[0] / raw).resolve()  # an absolute `raw` replaces the root
        except (OSError, ValueError):
            raise ToolError(f"{raw!r} is not a valid path") from None
        if not _inside(path, roots):
            raise ToolError(f"{raw!r} is outside the folders MCP clients may index ({allowed})")
        if not path.exists():
            raise ToolError(f"{raw!r} does not exist (looked at {path})")
        for file in iter_source_files([path], config.ingest):
            if not _inside(file.resolve(), roots):
                raise ToolError(f"{file} links to a file outside the folders MCP clients may index ({allowed}); "
                                "remove the link or name the files to add one by one")
        resolved.append(path)
    return resolved


class MonjyuMCPServer(MCPServer):
    """MCPServer with short argument errors and the indexed documents listed as resources."""

    def __init__(self, monjyu: Monjyu, **kwargs: Any):
        super().__init__(**kwargs)
        self.monjyu = monjyu

    async def call_tool(self, name, arguments, context=None):
        tool = self._tool_manager.get_tool(name)
        unknown = sorted(set(arguments or {}) - set(tool.parameters.get("properties", {}))) if tool else []
        if unknown:  # refused, never silently dropped
            raise ToolError(f"invalid arguments for {name}: {', '.join(unknown)} is not an argument of {name} "
                            f"(its arguments: {', '.join(tool.parameters.get('properties', {}))})")
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError) and not isinstance(exc, UnexpectedToolError):
                raise ToolError(f"invalid arguments for {name}: {explain(exc.__cause__)}") from exc.__cause__
            raise

    async def list_resources(self) -> list[Resource]:
        resources = await super().list_resources()
        try:
            page = await asyncio.to_thread(self.monjyu.documents.list, RESOURCE_LIST_LIMIT, 0)
        except MonjyuError:  # no index yet: nothing to list
            return resources
        return resources + [
            Resource(uri=document_uri(d["id"]), name=d["id"], title=d["title"] or d["id"], mime_type="application/json",
                     description=f"{d['file_type']} document from {d['source_path']}")
            for d in page["documents"]]


def create_server(monjyu: Monjyu) -> MonjyuMCPServer:
    """The MCP server over one facade: tools search, lazy_search, converse, get_document,
    list_documents, papers, paper, missing_works, bibtex, index_status and index, and each
    document as a resource."""
    from . import __version__

    server = MonjyuMCPServer(monjyu, name="monjyu", version=__version__, instructions=INSTRUCTIONS,
                             log_level="WARNING")
    index_lock = asyncio.Lock()

    @server.tool(annotations=READ_ONLY)
    async def search(
        query: Annotated[QueryText, Field(description="the question or keywords (or a passage to find others like it), up to search.max_query_chars characters (default 100,000)")],
        mode: Annotated[SearchMode | None, Field(description="vector | keyword | hybrid (BM25 + vector + graph) | graph | "
                                                 "hybridrag (classification, fusion, rerank, CRAG) | lazy (LazyGraphRAG) | auto (picks "
                                                 "by the question's type); default: the configured mode")] = None,
        limit: Annotated[Limit, Field(description="passages to return, 1-100")] = 10,
        offset: Annotated[Offset, Field(description="skip this many passages (paging)")] = 0,
        filters: Annotated[SearchFilters | None, Field(description="document_ids, file_types (pdf, md, ...), "
                                                       "path_glob, entity_types (PERSON, ORG, GPE, ..., CONCEPT: "
                                                       "passages naming such a phrase), date_from, date_to "
                                                       "(YYYY-MM-DD), min_relevance (share of the best score, 0-1), "
                                                       "authors (name parts), year_from, year_to, kinds "
                                                       "(text, caption, reference, front, figure, table, annotation; default "
                                                       "text, caption and annotation: the user's highlights and "
                                                       "notes), cites (only papers citing these document "
                                                       "ids), cited_by (only papers these ids cite), collections, "
                                                       "tags, item_types (a Zotero library's or a bibliography's; "
                                                       "a collection includes its subcollections)")] = None,
        answer: Annotated[bool, Field(description="also write an answer citing the passages")] = True,
        spelling: Annotated[bool | None, Field(description="correct misspelt words of the query to words the "
                                               "index holds (the result's spelling names each); default "
                                               "search.spelling (on)")] = None,
        threshold: Annotated[float | None, Field(ge=-1.0, le=1.0, description="keep only passages whose cosine "
                                                 "similarity to the query reaches this")] = None,
        preset: Annotated[Literal["z100", "z500", "z1500"] | None, Field(description=f"lazy: {PRESET_HELP}")] = None,
        budget: Annotated[int | None, Field(ge=1, le=MAX_LAZY_BUDGET, description=f"lazy: {BUDGET_HELP}")] = None,
        level: Annotated[int | None, Field(ge=1, le=4, description=f"lazy: {LEVEL_HELP}")] = None,
        weights: Annotated[SearchWeights | None, Field(description="hybridrag: keyword/semantic/graph shares "
                                                       "summing to 1; default by question type")] = None,
        rerank: Annotated[bool | None, Field(description="hybridrag: rerank stage on/off")] = None,
        crag: Annotated[bool | None, Field(description="hybridrag: grade passages, drop wrong ones, "
                                           "abstain when they do not suffice")] = None,
    ) -> dict[str, Any]:
        """Search the indexed documents: ranked passages (text, document, page, offsets, scores)
        and, unless answer is false, an answer citing them by number. An argument the mode
        cannot apply is refused, naming the modes that take it. Nothing is written (a
        conversation with follow-up questions is the `converse` tool)."""
        result = await call(monjyu.aask, query, mode, top_k=limit, offset=offset, filters=filters,
                            threshold=threshold, answer=answer, spelling=spelling, preset=preset, budget=budget, level=level,
                            weights=weights.model_dump() if weights else None, rerank=rerank, crag=crag,
                            option_names=MCP_OPTION_NAMES)
        return {"engine": result.mode, **result.to_dict()}

    @server.tool(annotations=READ_ONLY)
    async def lazy_search(
        query: Question,
        preset: Preset = None,
        budget: Budget = None,
        level: Level = None,
    ) -> dict[str, Any]:
        """LazyGraphRAG for broad questions: tests sentences community by community within a
        budget, then answers from the claims found, citing them (themes from the community
        hierarchy for a global question without an LLM). With an LLM it may deepen to Level 2;
        what it extracts is kept in the index so no passage is sent twice; nothing else is
        written."""
        return (await call(monjyu.aask, query, "lazy", preset=preset, budget=budget, level=level)).to_dict()

    @server.tool(annotations=KEEPS_A_TURN)
    async def converse(
        query: Question,
        session: Annotated[str, Field(min_length=1, max_length=64, description="the conversation's name (letters, "
                                      "digits, '-', '_'); a follow-up question sees the earlier turns")],
        preset: Preset = None,
        budget: Budget = None,
        level: Level = None,
    ) -> dict[str, Any]:
        """Lazy search in a conversation kept with the index: the question is asked with the
        earlier turns of `session` in view, and this turn is saved to it."""
        return (await call(monjyu.aask, query, "lazy", preset=preset, budget=budget, session=session,
                           level=level)).to_dict()

    @server.tool(annotations=READ_ONLY)
    async def get_document(
        document_id: Annotated[str, Field(min_length=1, max_length=2000, description="a document id from "
                                          "search hits or list_documents")],
        text_unit_id: Annotated[str | None, Field(max_length=2000, description="a passage (text unit) of the "
                                                  "document to show in context")] = None,
        context_units: Annotated[int, Field(ge=0, le=20, description="passages either side of it")] = 1,
        max_chars: Annotated[int, Field(ge=1, le=200_000, description="cut the document text here")] = 20_000,
    ) -> dict[str, Any]:
        """One indexed document: metadata, text and passage offsets; with text_unit_id, that
        passage and its neighbours (a citation in context)."""
        return await call(asyncio.to_thread, monjyu.documents.get, document_id, text_unit_id, context_units, max_chars)

    @server.tool(annotations=READ_ONLY)
    async def list_documents(
        limit: Annotated[int, Field(ge=1, le=500, description="documents per page")] = 50,
        offset: Annotated[Offset, Field(description="skip this many documents")] = 0,
    ) -> dict[str, Any]:
        """One page of the indexed documents (id, title, source, type, date, passages) and the total."""
        return await call(asyncio.to_thread, monjyu.documents.list, limit, offset)

    @server.tool(annotations=READ_ONLY)
    async def papers(
        cites: Annotated[DocumentId | None, Field(description="only the papers that cite this document")] = None,
        cited_by: Annotated[DocumentId | None, Field(description="only the papers this document cites")] = None,
        limit: Annotated[int, Field(ge=1, le=500, description="papers per page")] = 100,
        offset: Annotated[Offset, Field(description="skip this many papers")] = 0,
    ) -> dict[str, Any]:
        """The collection's papers: title, authors, year, pages, reference count, and the papers of
        the collection each cites and is cited by."""
        return await call(asyncio.to_thread, monjyu.papers.list, cites, cited_by, limit, offset)

    @server.tool(annotations=READ_ONLY)
    async def paper(document_id: DocumentId) -> dict[str, Any]:
        """One paper: metadata, its reference list (entries that are papers of the collection carry
        their document_id) and the sentences of other papers that cite it."""
        return await call(asyncio.to_thread, monjyu.papers.get, document_id)

    @server.tool(annotations=READ_ONLY)
    async def missing_works(
        min_citing: Annotated[int, Field(ge=2, le=1000, description="the fewest citing papers")] = 2,
        limit: Annotated[int, Field(ge=1, le=500, description="works to return")] = 50,
    ) -> dict[str, Any]:
        """Works cited by several papers of the collection but not in it, most cited first."""
        return {"works": await call(asyncio.to_thread, monjyu.papers.missing_works, min_citing, limit)}

    @server.tool(annotations=READ_ONLY)
    async def bibtex(
        document_ids: Annotated[list[DocumentId], Field(min_length=1, max_length=1000,
                                                        description="papers of the collection")],
    ) -> str:
        """BibTeX entries for papers of the collection (e.g. the sources an answer cites)."""
        return await call(asyncio.to_thread, monjyu.papers.bibtex, document_ids)

    @server.tool(annotations=READ_ONLY)
    async def index_status() -> dict[str, Any]:
        """What the index holds and how it was built, and whether the index tool is enabled."""
        try:
            status = {"exists": True, **await asyncio.to_thread(monjyu.status)}
        except IndexNotFoundError as exc:
            status = {"exists": False, "index_dir": str(monjyu.index_dir), "hint": str(exc)}
        mcp = monjyu.config.mcp
        return {**status, "index_tool": {"enabled": mcp.allow_index, "allowed_roots": mcp.allowed_roots}}

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True,
                                             open_world_hint=False))
    async def index(
        paths: Annotated[list[str], Field(min_length=1, max_length=100, description="files or folders inside the "
                                          "allowed roots (relative paths start at the first root)")],
    ) -> dict[str, Any]:
        """Add or update files and folders in the index (only changed files are processed).
        Disabled unless the server's config sets mcp.allow_index and mcp.allowed_roots."""
        resolved = allowed_paths(paths, monjyu.config)
        async with index_lock:
            report = await call(asyncio.to_thread, monjyu.index, resolved)
        return report.to_dict()

    @server.resource(DOCUMENT_URI, name="document", mime_type="application/json",
                     description="an indexed document by id: metadata, text and passage offsets")
    async def document(document_id: str) -> str:
        try:
            doc = await asyncio.to_thread(monjyu.documents.get, document_id)
        except MonjyuError as exc:
            raise ResourceNotFoundError(str(exc)) from None
        return json.dumps(doc, ensure_ascii=False)

    return server


def serve(monjyu: Monjyu, transport: str = "stdio", host: str = "127.0.0.1", port: int = 8765) -> None:
    """Run the server until stopped: stdio for a client that starts it, http for a long-running
    streamable HTTP endpoint at http://HOST:PORT/mcp behind `access.AccessGuard` (a token off
    loopback, a Host allow-list, no cross-origin writes)."""
    server = create_server(monjyu)
    if transport == "stdio":
        server.run("stdio")
    elif transport == "http":
        import uvicorn

        hosts = bound_names(host, monjyu.config.server)
        token, generated = access_token(host, monjyu.config.server)
        print(f"MONJYU MCP server on http://{host}:{port}/mcp (index {monjyu.index_dir})", file=sys.stderr, flush=True)
        if generated:
            print(f"access token (printed once; set {monjyu.config.server.token_env} to choose your own; clients send "
                  f"'Authorization: Bearer <token>'): {token}", file=sys.stderr, flush=True)
        # The guard checks Host and Origin for every request, loopback included, so the SDK's own
        # DNS-rebinding check (loopback only) is not repeated.
        app = server.streamable_http_app(host=host, transport_security=TransportSecuritySettings(
            enable_dns_rebinding_protection=False))
        uvicorn.run(AccessGuard(app, hosts, token), host=host, port=port, log_level="warning")
    else:
        raise MonjyuError(f"unknown transport '{transport}'; choose stdio or http")
