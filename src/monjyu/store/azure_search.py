"""Text units in Azure AI Search (store.backend: azure-search); everything else in a companion store.

Azure AI Search holds each generation's units in a search index of its own (`<index_prefix>-<generation>`):
the row, the unit id, its kind, its text in a field analysed for its language (`body_en` with the
`en.lucene` analyzer, `body_ja` with `ja.lucene`) and its vector under an HNSW profile (cosine).
The manifest, the generation's files (LanceDB tables, BM25, graph, communities), the
conversations and what an LLM wrote for the index (Levels 2 and 4) live in the companion store
(`store.companion_url`: s3:// or postgresql://), whose manifest switch stays the commit: a build
uploads its units to a new search index first, then publishes the generation to the companion;
a build killed before that leaves the previous generation (and its search index) in use, and the
next build deletes the search index it left.

Searches: vector candidates of large generations from the HNSW index (as with LanceDB's ANN
index), and with `store.keyword: fulltext` keyword ranking by the service (BM25 over the
language-analysed fields). MONJYU fuses the lists itself (weighted RRF with the graph, then the
evidence rerank), so it asks for the text and the vector lists separately rather than for the
service's own fused hybrid list. A filter reaches the service as the rows it allows, by the
string key field (`search.in(key, '3,17,42', ',')`: `search.in` takes string fields only), so no
filter value is ever written into the OData string; the constant parts (unit kinds) go through
`odata_literal`, which escapes quotes. Query text goes to the simple query parser with its
operator characters escaped (`simple_query_text`): a user's "C++" or "-" is text, not syntax.

Uploads go in batches of UPLOAD_BATCH; the SDK retries throttled and failed requests, and
documents the service rejects one by one (429, 503) are sent again, with backoff (tenacity).

The official `azure-search-documents` SDK does the HTTP. It has been run only against the local
protocol server in the tests (tests/azure_search_server.py), never against the live service.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import numpy as np

from ..errors import MonjyuError, ServiceError
from ..nlp.lang import detect_language
from ..types import DEFAULT_KINDS
from .base import IndexStore, LevelRecords
from .lancedb_store import LanceStore

UPLOAD_BATCH = 500
VECTOR_PROFILE = "monjyu-hnsw"
ANALYZERS = {"en": "en.lucene", "ja": "ja.lucene"}  # language -> field analyzer (field body_<language>)
_GENERATION = re.compile(r"-(g\d{6})$")


def odata_literal(value: str) -> str:
    """A string literal for an OData filter: quoted, inner quotes doubled."""
    return "'" + str(value).replace("'", "''") + "'"


# Operator characters of the simple query syntax (and the full Lucene syntax's, a superset), each
# escaped with a backslash to be read as text:
# https://learn.microsoft.com/en-us/azure/search/query-simple-syntax#escaping-search-operators
# https://learn.microsoft.com/en-us/azure/search/query-lucene-syntax#escaping-special-characters
_QUERY_OPERATORS = re.compile(r'([+\-&|!(){}\[\]^"~*?:\\/\'])')


def simple_query_text(text: str) -> str:
    """User text for the `search` parameter with every operator character escaped."""
    return _QUERY_OPERATORS.sub(r"\\\1", text)


def odata_rows(rows: np.ndarray | None) -> str:
    """The filter for a search over the units where `rows` (a mask) is true, on the string key
    field (the row number as text); the default unit kinds when no mask is given."""
    if rows is None:
        return f"search.in(kind, {odata_literal(','.join(DEFAULT_KINDS))}, ',')"
    return f"search.in(key, '{','.join(str(int(r)) for r in np.flatnonzero(rows))}', ',')"


class AzureSearchIndex:
    """Units in the search service at `endpoint`; manifest and files in `companion`."""

    def __init__(self, endpoint: str, index_prefix: str, api_key_env: str, companion: IndexStore,
                 local_dir: Path):
        try:
            from azure.core.credentials import AzureKeyCredential
        except ImportError:
            raise MonjyuError("store.backend azure-search needs the SDK: pip install 'monjyu[azure]'") from None
        key = os.environ.get(api_key_env)
        if not key:
            raise MonjyuError(f"store.api_key_env names {api_key_env or '(nothing)'}, which is not set: export it with "
                              "the search service's admin key")
        self.url = endpoint
        self.prefix = index_prefix
        self.companion = companion
        self.local_dir = Path(local_dir)
        self._credential = AzureKeyCredential(key)
        self._base: str | None = None  # the generation current when the build began

    def index_name(self, generation: str) -> str:
        return f"{self.prefix}-{generation}"

    def _index_client(self):
        from azure.search.documents.indexes import SearchIndexClient

        return SearchIndexClient(self.url, self._credential)

    def _client(self, generation: str):
        from azure.search.documents import SearchClient

        return SearchClient(self.url, self.index_name(generation), self._credential)

    # -- the companion holds the index state --------------------------------------------
    def pull(self, force: bool = False) -> None:
        self.companion.pull(force)
        manifest = self.local_dir / "manifest.json"
        if force:  # before a build: remember what it builds on
            self._base = json.loads(manifest.read_bytes())["generation"] if manifest.exists() else None

    def pull_session(self, name: str) -> None:
        self.companion.pull_session(name)

    def push_session(self, name: str) -> None:
        self.companion.push_session(name)

    def level_records(self) -> LevelRecords:
        """The LLM levels live beside the graph files, in the companion store."""
        return self.companion.level_records()

    # -- publishing ------------------------------------------------------------------------
    def push(self) -> None:
        """The generation's units into a new search index, then the generation to the companion
        (the commit), then the search indexes of generations older than the previous removed."""
        from azure.core.exceptions import AzureError

        manifest = json.loads((self.local_dir / "manifest.json").read_bytes())
        generation = manifest["generation"]
        previous = self._base
        try:
            self._create_index(generation, int(manifest["embedder_dim"]))
            self._upload(generation)
        except AzureError as exc:
            raise ServiceError(f"Azure AI Search at {self.url} refused the upload of {generation}: "
                                     f"{_reason(exc)}; the previous generation stays in use: index again") from None
        self.companion.push()
        self._base = generation
        keep = {self.index_name(g) for g in (generation, previous) if g}
        try:
            client = self._index_client()
            for name in client.list_index_names():
                if name.startswith(f"{self.prefix}-") and _GENERATION.search(name) and name not in keep:
                    client.delete_index(name)
        except AzureError:
            pass  # an old search index left behind costs space only; the next build tries again

    def _create_index(self, generation: str, dim: int) -> None:
        from azure.search.documents.indexes.models import (HnswAlgorithmConfiguration, HnswParameters, SearchField,
                                                           SearchFieldDataType, SearchIndex, SearchableField,
                                                           SimpleField, VectorSearch, VectorSearchProfile)

        fields = [
            SimpleField(name="key", type=SearchFieldDataType.String, key=True, filterable=True),
            SimpleField(name="row", type=SearchFieldDataType.Int32),
            SimpleField(name="id", type=SearchFieldDataType.String),
            SimpleField(name="kind", type=SearchFieldDataType.String, filterable=True),
            *[SearchableField(name=f"body_{lang}", type=SearchFieldDataType.String, analyzer_name=analyzer)
              for lang, analyzer in ANALYZERS.items()],
            SearchField(name="vector", type=SearchFieldDataType.Collection(SearchFieldDataType.Single),
                        searchable=True, vector_search_dimensions=dim, vector_search_profile_name=VECTOR_PROFILE),
        ]
        vector_search = VectorSearch(
            algorithms=[HnswAlgorithmConfiguration(name="hnsw", parameters=HnswParameters(metric="cosine"))],
            profiles=[VectorSearchProfile(name=VECTOR_PROFILE, algorithm_configuration_name="hnsw")])
        from azure.core.exceptions import ResourceNotFoundError

        client = self._index_client()
        try:  # what a killed build of the same generation left there
            client.delete_index(self.index_name(generation))
        except ResourceNotFoundError:
            pass
        client.create_or_update_index(SearchIndex(name=self.index_name(generation), fields=fields,
                                                  vector_search=vector_search))

    def _upload(self, generation: str) -> None:
        units = LanceStore(self.local_dir / "generations" / generation / "lancedb").units(
            ["id", "title", "text", "kind", "vector"])
        client = self._client(generation)
        ids, titles, texts, kinds = (units[c].to_pylist() for c in ("id", "title", "text", "kind"))
        vectors = units["vector"].combine_chunks().flatten().to_numpy(zero_copy_only=False).reshape(len(ids), -1)
        for start in range(0, len(ids), UPLOAD_BATCH):
            batch = []
            for row in range(start, min(start + UPLOAD_BATCH, len(ids))):
                language = detect_language(texts[row])
                body = f"{titles[row]}\n{texts[row]}" if titles[row] else texts[row]
                batch.append({"key": str(row), "row": row, "id": ids[row], "kind": kinds[row] or "text",
                              f"body_{language if language in ANALYZERS else 'en'}": body,
                              "vector": vectors[row].tolist()})
            _upload_batch(client, batch)

    # -- searching in the service -------------------------------------------------------------
    def vector_search(self, generation: str) -> "AzureVectorCandidates":
        return AzureVectorCandidates(self, generation)

    def keyword_search(self, generation: str) -> "AzureFullText":
        return AzureFullText(self, generation)

    def search(self, generation: str, **request) -> list[dict]:
        from azure.core.exceptions import AzureError

        try:
            return list(self._client(generation).search(**request))
        except AzureError as exc:
            raise ServiceError(f"search in Azure AI Search at {self.url} failed: {_reason(exc)}") from None


def _reason(exc: Exception) -> str:
    return str(getattr(exc, "message", None) or exc).strip().splitlines()[0]


def _upload_batch(client, batch: list[dict]) -> None:
    """Upload, sending again (with backoff) the documents the service rejected as throttled or
    unavailable; any other rejection is an error naming the first one."""
    from tenacity import retry, retry_if_exception_type, stop_after_attempt, wait_exponential

    class Throttled(Exception):
        pass

    pending = {doc["key"]: doc for doc in batch}

    @retry(retry=retry_if_exception_type(Throttled), stop=stop_after_attempt(5),
           wait=wait_exponential(multiplier=0.5, max=20), reraise=True)
    def send() -> None:
        results = client.upload_documents(documents=list(pending.values()))
        again = []
        for result in results:
            if result.succeeded:
                pending.pop(result.key, None)
            elif result.status_code in (429, 503):
                again.append(result.key)
            else:
                raise MonjyuError(f"Azure AI Search rejected unit row {result.key}: {result.error_message}")
        if again:
            raise Throttled(f"{len(again)} documents throttled")

    try:
        send()
    except Throttled:
        raise ServiceError(f"Azure AI Search kept throttling {len(pending)} documents after 5 attempts; "
                                 "index again later or raise the service's capacity") from None


class AzureVectorCandidates:
    def __init__(self, store: AzureSearchIndex, generation: str):
        self._store, self._generation = store, generation

    def candidates(self, vector: np.ndarray, n: int, nprobes: int) -> list[str]:
        from azure.search.documents.models import VectorizedQuery

        query = VectorizedQuery(vector=np.asarray(vector, dtype=np.float32).tolist(), k_nearest_neighbors=n,
                                fields="vector")
        found = self._store.search(self._generation, search_text=None, vector_queries=[query], select=["id"],
                                   filter=odata_rows(None), top=n)
        return [doc["id"] for doc in found]


class AzureFullText:
    def __init__(self, store: AzureSearchIndex, generation: str):
        self._store, self._generation = store, generation

    def ranking(self, text: str, terms: list[str], language: str, n: int,
                rows: np.ndarray | None) -> list[tuple[int, float]]:
        """The service's BM25 over the language-analysed fields; any query word may match."""
        found = self._store.search(self._generation, search_text=simple_query_text(text), search_mode="any",
                                   query_type="simple",
                                   search_fields=[f"body_{lang}" for lang in ANALYZERS], select=["row"],
                                   filter=odata_rows(rows), top=n)
        return [(int(doc["row"]), float(doc["@search.score"])) for doc in found]
