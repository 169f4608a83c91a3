"""A local HTTP server that answers the Azure AI Search REST calls MONJYU's backend makes, for the
tests only (no emulator of the service exists). It holds requests to what the service documents
for those calls, each rule with the page it comes from (RULES), and answers a request that breaks
one with the 400 the service would give, so that a client mistake fails here as it would there:

- `search.in` takes a string field; a filter names filterable fields only;
- `searchFields` are searchable fields, `select` retrievable ones;
- uploaded values have their field's type (a vector its dimensions), keys their allowed characters;
- `search` text is read by the simple query parser (operators, backslash escapes), and scored by
  BM25 (k1 1.2, b 0.75) over each field's analyzed terms.

What it does not reproduce: vector queries are answered exactly (the service's HNSW index is
approximate; MONJYU re-scores its candidates exactly, so only their recall could differ), and the
analyzers are stand-ins (en.lucene: lower case, English stop words, Snowball stemming; ja.lucene:
character bigrams where the service uses Kuromoji)."""

from __future__ import annotations

import math
import re
import threading
import time
from collections import Counter

import numpy as np
import Stemmer
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

API_KEY = "test-admin-key"
RULES = {
    "search.in": "https://learn.microsoft.com/en-us/azure/search/search-query-odata-search-in-function",
    "filterable": "https://learn.microsoft.com/en-us/azure/search/search-filters",
    "attributes": "https://learn.microsoft.com/en-us/rest/api/searchservice/indexes/create",
    "search": "https://learn.microsoft.com/en-us/rest/api/searchservice/documents/search-post",
    "types": "https://learn.microsoft.com/en-us/rest/api/searchservice/supported-data-types",
    "keys": "https://learn.microsoft.com/en-us/rest/api/searchservice/naming-rules",
    "simple": "https://learn.microsoft.com/en-us/azure/search/query-simple-syntax",
    "bm25": "https://learn.microsoft.com/en-us/azure/search/index-similarity-and-scoring",
}
_SEARCH_IN = re.compile(r"search\.in\((\w+), '((?:[^']|'')*)'(?:, '((?:[^']|'')*)')?\)")
_KEY = re.compile(r"[A-Za-z0-9_\-=]+")
# Lucene's English stop words (what en.lucene removes)
_STOP = set("a an and are as at be but by for if in into is it no not of on or such that the their then there "
            "these they this to was will with".split())
_STEM = Stemmer.Stemmer("english")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff]+")
K1, B = 1.2, 0.75


class Refused(Exception):
    """A request the service documents as invalid: 400, the rule's page in the message."""

    def __init__(self, rule: str, message: str):
        super().__init__(f"{message} (see {RULES[rule]})")


def analyze(text: str, analyzer: str | None) -> list[str]:
    """The field's terms: ja.lucene as character bigrams of Japanese runs, the rest as en.lucene."""
    if analyzer == "ja.lucene":
        terms = [w.lower() for w in re.findall(r"[A-Za-z0-9]+", text)]
        for run in _CJK.findall(text):
            terms += [run[i:i + 2] for i in range(max(1, len(run) - 1))]
        return terms
    return _STEM.stemWords([w for w in re.findall(r"\w+", text.lower()) if w not in _STOP])


def parse_simple_query(text: str) -> list[tuple[str, str, bool]]:
    """The simple query syntax as clauses (kind, text, prefix): kind "should", "must" (+),
    "not" (-) or "phrase" ("..."); a backslash makes the next character text."""
    clauses, i, n = [], 0, len(text)
    while i < n:
        while i < n and text[i] in " \t\n|()":
            i += 1
        if i >= n:
            break
        kind = "should"
        if text[i] in "+-":
            kind = "must" if text[i] == "+" else "not"
            i += 1
        if i < n and text[i] == '"':
            j = text.find('"', i + 1)
            j = n if j == -1 else j
            clauses.append(("phrase" if kind != "not" else "not", text[i + 1:j], False))
            i = j + 1
            continue
        word, escaped = [], False
        while i < n and text[i] not in " \t\n|()\"":
            escaped = text[i] == "\\" and i + 1 < n
            word.append(text[i + 1] if escaped else text[i])
            i += 2 if escaped else 1
        token = "".join(word)
        prefix = token.endswith("*") and not escaped
        clauses.append((kind, token[:-1] if prefix else token, prefix))
    return [c for c in clauses if c[1]]


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
        ], exception_handlers={Refused: lambda request, exc: JSONResponse(
            {"error": {"code": "InvalidRequestParameter", "message": str(exc)}}, 400)})

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
        assert body["name"] == name
        keys = [f for f in fields if f.get("key")]
        if len(keys) != 1 or keys[0]["type"] != "Edm.String":
            raise Refused("attributes", "an index needs exactly one key field, of type Edm.String")
        profiles = {p["name"]: p for p in body["vectorSearch"]["profiles"]}
        algorithms = {a["name"]: a for a in body["vectorSearch"]["algorithms"]}
        for f in fields:
            if f["type"] == "Collection(Edm.Single)":
                if not (f.get("dimensions", 0) > 0 and f.get("searchable")):
                    raise Refused("attributes", f"vector field {f['name']} needs dimensions and searchable")
                assert algorithms[profiles[f["vectorSearchProfile"]]["algorithm"]]["kind"] == "hnsw"
            elif f.get("searchable") and f["type"] != "Edm.String":
                raise Refused("attributes", f"field {f['name']}: only string fields are searchable")
        self.indexes[name] = {"definition": body, "docs": {}}
        return JSONResponse(body, status_code=201)

    async def upload(self, request: Request) -> Response:
        body = await self._check(request)
        index = self.indexes[request.path_params["name"]]
        fields = {f["name"]: f for f in index["definition"]["fields"]}
        key = next(name for name, f in fields.items() if f.get("key"))
        results = []
        for doc in body["value"]:
            assert doc["@search.action"] == "upload"
            for name, value in doc.items():
                if name != "@search.action":
                    _check_value(fields, name, value)
            if not _KEY.fullmatch(str(doc.get(key, ""))):
                raise Refused("keys", f"document key {doc.get(key)!r}: letters, digits, '_', '-' and '=' only")
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
        fields = {f["name"]: f for f in index["definition"]["fields"]}
        docs = _filtered(list(index["docs"].values()), body.get("filter"), fields)
        select = [s for s in (body.get("select") or "").split(",") if s]
        for name in select:
            if name not in fields or fields[name].get("retrievable") is False:
                raise Refused("search", f"select names {name}, which is not a retrievable field")
        top = body.get("top", 50)
        if body.get("vectorQueries"):
            [query] = body["vectorQueries"]
            assert query["kind"] == "vector" and query["fields"] == "vector"
            q = np.asarray(query["vector"], dtype=np.float32)
            scored = [(float(np.dot(q, np.asarray(d["vector"], dtype=np.float32))), d) for d in docs]
            top = min(top, query["k"])
        else:
            searched = [f for f in (body.get("searchFields") or "").split(",") if f] or \
                [n for n, f in fields.items() if f.get("searchable") and f["type"] == "Edm.String"]
            for name in searched:
                if name not in fields or not fields[name].get("searchable") or fields[name]["type"] != "Edm.String":
                    raise Refused("search", f"searchFields names {name}, which is not a searchable string field")
            scored = _bm25(docs, body.get("search") or "", [fields[n] for n in searched],
                           list(index["docs"].values()), body.get("searchMode", "any"))
        scored.sort(key=lambda x: -x[0])
        value = [{"@search.score": s, **{k: d.get(k) for k in select}} for s, d in scored[:top]]
        return JSONResponse({"value": value})


def _check_value(fields: dict, name: str, value) -> None:
    """A document's value has its field's type: Edm.String a string, Edm.Int32 a 32-bit integer,
    Collection(Edm.Single) as many numbers as the field's dimensions."""
    field = fields.get(name)
    if field is None:
        raise Refused("types", f"the document has a field {name!r} the index does not define")
    kind = field["type"]
    if value is None:
        return
    ok = {"Edm.String": isinstance(value, str),
          "Edm.Int32": isinstance(value, int) and not isinstance(value, bool) and -2**31 <= value < 2**31,
          "Collection(Edm.Single)": isinstance(value, list) and len(value) == field.get("dimensions")
          and all(isinstance(v, (int, float)) for v in value)}.get(kind, True)
    if not ok:
        raise Refused("types", f"field {name} is {kind}; the document gives {type(value).__name__} {str(value)[:40]}")


def _filtered(docs: list[dict], expression: str | None, fields: dict) -> list[dict]:
    """`search.in(field, 'values', 'delimiters')` clauses joined by `and`: the only filter form
    MONJYU writes; anything else is refused as the service refuses what it cannot parse."""
    if not expression:
        return docs
    for clause in expression.split(" and "):
        m = _SEARCH_IN.fullmatch(clause.strip())
        if m is None:
            raise Refused("search", f"Invalid expression: {expression[:200]}")
        name, values, delimiters = m.group(1), m.group(2).replace("''", "'"), (m.group(3) or " ,").replace("''", "'")
        field = fields.get(name)
        if field is None:
            raise Refused("search", f"Invalid expression: could not find a field named '{name}'")
        if field["type"] not in ("Edm.String", "Collection(Edm.String)"):
            raise Refused("search.in", f"search.in takes a string field; '{name}' is {field['type']}")
        if field.get("filterable") is False:
            raise Refused("filterable", f"the field '{name}' is not filterable")
        allowed = set(v for v in re.split("[" + re.escape(delimiters) + "]", values) if v)
        docs = [d for d in docs if d.get(name) in allowed]
    return docs


def _bm25(docs: list[dict], text: str, searched: list[dict], everything: list[dict],
          mode: str) -> list[tuple[float, dict]]:
    """BM25 (k1 1.2, b 0.75, Lucene's idf) summed over the searched fields, for the query's
    clauses: `not` clauses exclude, `must` ones are required, and searchMode all requires every
    clause."""
    clauses = parse_simple_query(text)
    scored = []
    stats = {}
    for field in searched:
        lengths = [len(analyze(str(d.get(field["name"]) or ""), field.get("analyzer"))) for d in everything]
        df = Counter(t for d in everything for t in set(analyze(str(d.get(field["name"]) or ""), field.get("analyzer"))))
        stats[field["name"]] = (max(1, len(everything)), (sum(lengths) / len(lengths)) if lengths else 1.0, df)
    for doc in docs:
        score, matched, excluded = 0.0, [], False
        for kind, words, prefix in clauses:
            hit = False
            for field in searched:
                terms = analyze(str(doc.get(field["name"]) or ""), field.get("analyzer"))
                query = analyze(words, field.get("analyzer"))
                if not query:
                    continue
                n, avgdl, df = stats[field["name"]]
                if kind == "phrase":
                    found = any(terms[i:i + len(query)] == query for i in range(len(terms)))
                else:
                    found = any(t.startswith(q) if prefix else t == q for q in query for t in terms)
                if not found:
                    continue
                hit = True
                for q in query:
                    tf = sum(1 for t in terms if (t.startswith(q) if prefix else t == q))
                    idf = math.log(1 + (n - df.get(q, 0) + 0.5) / (df.get(q, 0) + 0.5))
                    score += idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * len(terms) / avgdl))
            if kind == "not" and hit:
                excluded = True
            matched.append((kind, hit))
        required = [hit for kind, hit in matched if kind in ("must", "phrase") or (mode == "all" and kind != "not")]
        if excluded or not all(required) or not any(hit for kind, hit in matched if kind != "not"):
            continue
        scored.append((score, doc))
    return scored


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
