"""A local HTTP server that answers the Azure AI Search REST calls MONJYU's backend makes, for the
tests only (no emulator of the service exists). It checks each request against the documented
shapes (api-key header, api-version, index definition, document batches, search bodies) and
records it, so tests can assert on what the real SDK sent. Search is simple and exact: cosine
over the stored vectors, and a term-overlap score over the searchable fields; filters of the
forms the backend writes (`search.in(field, 'a,b', ',')` joined by `and`) are applied, any other
filter is refused with 400 as the service would refuse what it cannot parse."""

from __future__ import annotations

import re
import threading
import time

import numpy as np
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

API_KEY = "test-admin-key"
_SEARCH_IN = re.compile(r"search\.in\((\w+), '((?:[^']|'')*)', ','\)")


class FakeSearchService:
    def __init__(self):
        self.indexes: dict[str, dict] = {}  # name -> {"definition": ..., "docs": {key: doc}}
        self.requests: list[tuple[str, str, dict | None]] = []  # (method, path, json body)
        self.throttle_next_upload = 0  # documents of the next upload answered 429 (the client must resend them)

    def app(self) -> Starlette:
        return Starlette(routes=[
            Route("/indexes", self.list_indexes, methods=["GET"]),
            Route("/indexes('{name}')", self.index, methods=["PUT", "DELETE", "GET"]),
            Route("/indexes('{name}')/docs/search.index", self.upload, methods=["POST"]),
            Route("/indexes('{name}')/docs/search.post.search", self.search, methods=["POST"]),
        ])

    async def _check(self, request: Request) -> dict | None:
        assert request.headers.get("api-key") == API_KEY, "every call carries the admin key"
        assert request.query_params.get("api-version"), "every call names an api-version"
        body = await request.json() if request.method in ("PUT", "POST") else None
        self.requests.append((request.method, request.url.path, body))
        return body

    async def list_indexes(self, request: Request) -> Response:
        await self._check(request)
        return JSONResponse({"value": [{"name": n} for n in self.indexes]})

    async def index(self, request: Request) -> Response:
        body = await self._check(request)
        name = request.path_params["name"]
        if request.method in ("DELETE", "GET") and name not in self.indexes:
            return JSONResponse({"error": {"code": "", "message": f"No index with the name '{name}'"}}, 404)
        if request.method == "DELETE":
            del self.indexes[name]
            return Response(status_code=204)
        if request.method == "GET":
            return JSONResponse(self.indexes[name]["definition"])
        fields = body["fields"]
        assert body["name"] == name and sum(bool(f.get("key")) for f in fields) == 1
        profiles = {p["name"]: p for p in body["vectorSearch"]["profiles"]}
        algorithms = {a["name"]: a for a in body["vectorSearch"]["algorithms"]}
        for f in fields:
            if f["type"] == "Collection(Edm.Single)":
                assert f["dimensions"] > 0 and f["searchable"]
                assert algorithms[profiles[f["vectorSearchProfile"]]["algorithm"]]["kind"] == "hnsw"
        self.indexes[name] = {"definition": body, "docs": {}}
        return JSONResponse(body, status_code=201)

    async def upload(self, request: Request) -> Response:
        body = await self._check(request)
        index = self.indexes[request.path_params["name"]]
        key = next(f["name"] for f in index["definition"]["fields"] if f.get("key"))
        names = {f["name"] for f in index["definition"]["fields"]}
        results = []
        for doc in body["value"]:
            assert doc["@search.action"] == "upload" and set(doc) - {"@search.action"} <= names
            if self.throttle_next_upload:
                self.throttle_next_upload -= 1
                results.append({"key": doc[key], "status": False, "errorMessage": "throttled", "statusCode": 429})
                continue
            index["docs"][doc[key]] = doc
            results.append({"key": doc[key], "status": True, "errorMessage": None, "statusCode": 201})
        failed = any(not r["status"] for r in results)
        return JSONResponse({"value": results}, status_code=207 if failed else 200)

    async def search(self, request: Request) -> Response:
        body = await self._check(request)
        index = self.indexes.get(request.path_params["name"])
        if index is None:
            return JSONResponse({"error": {"code": "", "message": "index not found"}}, 404)
        docs = list(index["docs"].values())
        if body.get("filter"):
            clauses = body["filter"].split(" and ")
            parsed = [_SEARCH_IN.fullmatch(c.strip()) for c in clauses]
            if not all(parsed):
                return JSONResponse({"error": {"code": "", "message": f"Invalid expression: {body['filter']}"}}, 400)
            for m in parsed:
                allowed = set(m.group(2).replace("''", "'").split(","))
                docs = [d for d in docs if str(d.get(m.group(1))) in allowed]
        top = body.get("top", 50)
        if body.get("vectorQueries"):
            [query] = body["vectorQueries"]
            assert query["kind"] == "vector" and query["fields"] == "vector"
            q = np.asarray(query["vector"], dtype=np.float32)
            scored = [(float(np.dot(q, np.asarray(d["vector"], dtype=np.float32))), d) for d in docs]
            top = min(top, query["k"])
        else:
            words = set(re.findall(r"\w+", body.get("search", "").lower()))
            fields = body.get("searchFields", "").split(",")
            scored = []
            for d in docs:
                text = " ".join(str(d.get(f) or "") for f in fields).lower()
                score = sum(text.count(w) for w in words)
                if score:
                    scored.append((float(score), d))
        scored.sort(key=lambda x: -x[0])
        select = (body.get("select") or "").split(",")
        value = [{"@search.score": s, **{k: d.get(k) for k in select if k}} for s, d in scored[:top]]
        return JSONResponse({"value": value})


class FakeSearchServer:
    """The fake service served by uvicorn in a thread on 127.0.0.1 and a port the OS picks."""

    def __init__(self):
        self.service = FakeSearchService()
        self.server = uvicorn.Server(uvicorn.Config(self.service.app(), host="127.0.0.1", port=0, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> "FakeSearchServer":
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            assert time.monotonic() < deadline, "the fake search service did not start"
            time.sleep(0.05)
        self.url = f"http://127.0.0.1:{self.server.servers[0].sockets[0].getsockname()[1]}"
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
