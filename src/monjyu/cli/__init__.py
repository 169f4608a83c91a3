"""`monjyu` command line: a thin typer shell over the Monjyu facade. Each command module
registers on the one app (`cli.shell`); this one holds indexing, status, evaluation and the servers."""

from __future__ import annotations

import hashlib
import json
import re
import socket
import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.markup import escape
from rich.table import Table

from . import papers, search  # noqa: F401  (their commands register on the app)
from ..access import WILDCARDS, access_token, bound_names
from ..api import DEFAULT_INDEX_DIR
from ..engines.request import EVAL_MODES, eval_mode
from ..errors import MonjyuError
from ..ingest.zotero import default_data_dir as default_zotero_dir
from .search import CLI_OPTION_NAMES
from .shell import app, out, err, IndexOpt, ConfigOpt, JsonOpt, _facade, _progress, _build_log, _fail


@app.command()
def index(
    paths: Annotated[Optional[list[Path]], typer.Argument(help="files and folders to index")] = None,
    index: IndexOpt = Path(DEFAULT_INDEX_DIR),
    zotero: Annotated[Optional[Path], typer.Option(
        "--zotero", metavar="[DIR]",
        help="also index a Zotero library: the PDFs (else snapshots) of the items in its data directory (alone, or before "
             f"another option: Zotero's default, {default_zotero_dir()}), with the library's titles, creators, "
             "years, DOIs, tags, collections, highlights and notes; read from a copy, never written")] = None,
    bib: Annotated[Optional[Path], typer.Option(
        "--bib", metavar="FILE",
        help="a BibTeX (.bib) or CSL-JSON (.json) export (Better BibTeX, JabRef, Zotero): each entry's title, "
             "authors, year, DOI, venue and keywords for the file its `file` field names; those files are "
             "indexed too")] = None,
    level: Annotated[int, typer.Option(help="1: chunks, vectors, BM25 and the noun-phrase graph; 0: stop before the graph; 2: also entities and relations the configured LLM extracts from every passage; 3: level 2, then the entity graph (entities merged across passages, clustered); 4: also a report on every community, written by the LLM (2 to 4: a cost estimate first, --yes to go ahead)")] = 1,
    yes: Annotated[bool, typer.Option("--yes", help="with --level 2, 3 or 4: go ahead after the cost estimate")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", help="also show library warnings (always in <index>/logs/build.log)")] = False,
    executor: Annotated[str, typer.Option(help="local, or ray: loading, embedding and noun phrases on a Ray cluster")] = "local",
    address: Annotated[Optional[str], typer.Option(help="with --executor ray: the cluster (auto, ray://host:10001); default a local one")] = None,
    recluster: Annotated[bool, typer.Option("--recluster", help="cluster the noun-phrase graph from scratch instead of updating the communities where it changed")] = False,
    config: ConfigOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Index files and folders; runs again process only added, changed and removed files."""
    try:
        m = _facade(index, config)
        if not paths and zotero is None and bib is None:
            raise MonjyuError("nothing to index: give files or folders, --zotero [DIR] for a Zotero library or "
                              "--bib FILE for a bibliography")
        if level not in (0, 1, 2, 3, 4):
            raise MonjyuError("--level must be 0, 1, 2, 3 or 4")
        if yes and level < 2:
            raise MonjyuError("--yes answers the cost estimate of --level 2, 3 or 4; other levels have none")
        if level >= 2 and m.workspace.level_two() is None:  # no LLM: say so before building anything
            m.levels.require(level)
        m.config.graph.enabled = level >= 1
        with _build_log(index, verbose), _progress(not as_json) as progress:
            report = m.index(paths or [], progress=progress, executor=executor, address=address, recluster=recluster,
                             zotero=zotero, bib=bib)
        built = _llm_level_build(m, level, yes, as_json) if level >= 2 else None
    except MonjyuError as exc:
        _fail(exc)
        return
    if as_json:
        print(json.dumps({**report.to_dict(), **({f"level{level}": built} if built else {})}, ensure_ascii=False,
                         indent=1))
    else:
        for path, reason in report.failures:
            err.print(f"[yellow]skipped[/] {escape(path)}: {escape(reason)}", highlight=False, soft_wrap=True, markup=True)
        for note in report.notes:
            err.print(f"note: {note}", highlight=False, soft_wrap=True)
        moved = f"{len(report.moved)} moved, " if report.moved else ""
        out.print(f"{len(report.added)} added, {len(report.changed)} changed, {len(report.removed)} removed, {moved}"
                  f"{report.unchanged} unchanged; {report.documents} documents, {report.text_units} text units "
                  f"({report.embedded} embedded now) in {report.seconds.get('total', 0):.1f}s -> {index}")
        if report.clustering:
            c = report.clustering
            how = ("clustered from scratch" if c["mode"] == "full" else
                   f"updated where the graph changed ({c['reclustered']} phrases re-clustered)")
            out.print(f"communities {how}; drift since the last full clustering {c['drift']:.3f} "
                      f"(bound graph.recluster_drift {m.config.graph.recluster_drift})")
        if report.failures:
            err.print(f"[bold yellow]{len(report.failures)} file(s) failed[/]; the rest is indexed", markup=True)
    if report.failures:
        raise typer.Exit(1)


def _llm_level_build(m, level: int, yes: bool, as_json: bool) -> dict:
    """--level 2 / 3 / 4: the estimate, then (with --yes) the build, each item kept as it arrives."""
    estimate = m.levels.estimate(level)
    what, n = estimate["what"], estimate["items"]
    if not as_json:
        out.print(f"level {level} with {estimate['model']}: {n} {what} to write ({estimate['already_built']} already "
                  f"there), about {estimate['prompt_tokens']:,} prompt tokens and {estimate['completion_tokens']:,} "
                  "output tokens (estimated)")
    if not yes or not n:
        if not as_json and n:
            out.print("run again with --yes to build it")
        return {"estimate": estimate}
    stage = "entities" if level in (2, 3) else "reports"
    with _progress(not as_json) as progress:
        if progress:
            progress(stage, 0, n)
        done = m.levels.build(level, progress=lambda k: progress and progress(stage, k, None))
    if not as_json:
        out.print(f"level {level}: {done['sent'] - done['failed']} {what} written, {done['failed']} failed (run again "
                  f"to retry them), {done['usage'].get('total_tokens', 0):,} tokens")
        if "level3" in done:
            g = done["level3"]
            out.print(f"level 3: {g['entities']} entities ({g['merged']} known under several names), "
                      f"{g['relations']} relations, {g['communities']} communities")
    return {"estimate": estimate, **done}



@app.command()
def init(
    path: Annotated[Path, typer.Argument(help="file to write")] = Path("monjyu.yaml"),
    force: Annotated[bool, typer.Option("--force", help="overwrite an existing file")] = False,
) -> None:
    """Write a commented monjyu.yaml: every provider (Ollama, OpenAI, Azure, llama.cpp) ready to uncomment."""
    if path.exists() and not force:
        _fail(MonjyuError(f"{path} exists; use --force to overwrite it"))
    path.write_text((Path(__file__).parents[1] / "monjyu.example.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    out.print(f"wrote {path}")


def _print_mapping(info: dict[str, Any], as_json: bool) -> None:
    """A flat mapping as JSON, or as a two-column table (nested values as JSON)."""
    if as_json:
        print(json.dumps(info, ensure_ascii=False, indent=1))
        return
    table = Table(show_header=False)
    for key, value in info.items():
        table.add_row(key, json.dumps(value, ensure_ascii=False) if isinstance(value, (dict, list)) else str(value))
    out.print(table)


@app.command()
def status(index: IndexOpt = Path(DEFAULT_INDEX_DIR), config: ConfigOpt = None, as_json: JsonOpt = False) -> None:
    """Show what the index holds and how it was built."""
    try:
        info = _facade(index, config).status()
    except MonjyuError as exc:
        _fail(exc)
        return
    _print_mapping(info, as_json)


@app.command("eval")
def eval_(
    beir: Annotated[Optional[Path], typer.Option("--beir", help="BEIR-layout dataset folder")] = None,
    qa: Annotated[Optional[Path], typer.Option("--qa", help="questions JSONL (id, question, answers, doc) over a folder of papers")] = None,
    docs: Annotated[Optional[Path], typer.Option("--docs", help="with --qa: the papers (default: docs/ beside the questions file)")] = None,
    index: Annotated[Optional[Path], typer.Option("--index", help="index directory (default ./.monjyu-eval/<dataset>-<hash of its path>)")] = None,
    mode: Annotated[str, typer.Option(help="comma-separated: vector, keyword, hybrid, graph, hybridrag, "
                                            "hybridrag-norerank, hybridrag-crag, lazy, auto")] = "vector,keyword,hybrid",
    preset: Annotated[Optional[str], typer.Option(help="lazy: z100 | z500 | z1500 (the budget its kept units are found with)")] = None,
    top_k: Annotated[int, typer.Option("--top-k", help="documents ranked per query (BEIR)")] = 10,
    split: Annotated[str, typer.Option(help="qrels split (BEIR)")] = "test",
    answers: Annotated[bool, typer.Option("--answers", help="with --qa: also answer each question and report how often the answer cites a passage holding the gold answer")] = False,
    by: Annotated[Optional[str], typer.Option("--by", help="also every figure per value of this query field (2wiki: multihop)")] = None,
    per_query: Annotated[Optional[Path], typer.Option("--per-query", help="write each query's ranks per mode to this JSONL file")] = None,
    config: ConfigOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Index a BEIR dataset or a folder of papers with QA pairs (or reuse its index) and report
    Recall, nDCG, MRR, P@5 and complete@k (BEIR), or doc@k and ans@k (QA)."""
    from ..eval import BeirDataset, QADataset, evaluate_beir, evaluate_qa

    modes = [m.strip() for m in mode.split(",") if m.strip()]
    bad = [m for m in modes if m not in EVAL_MODES]
    if bad or top_k < 10 or (beir is None) == (qa is None) or (docs is not None and qa is None) or \
            (answers and qa is None) or (preset is not None and "lazy" not in modes):
        err.print(f"[bold red]error:[/] give exactly one of --beir DIR or --qa FILE (--docs and --answers go with "
                  f"--qa); modes must be among {', '.join(EVAL_MODES)}, --top-k >= 10, --preset only with lazy", markup=True)
        raise typer.Exit(2)

    def fixed(mode: str) -> dict:  # --preset goes to lazy only
        return {"preset": preset} if preset and mode == "lazy" else {}
    records: list[dict] | None = [] if per_query is not None else None
    try:
        if beir is not None:
            dataset = BeirDataset.load(beir, split)
            sources, name = dataset.corpus, beir.resolve().name
        else:
            dataset = QADataset.load(qa)
            sources = (docs or dataset.docs_dir).resolve()
            name = sources.parent.name if sources.name == "docs" else sources.name
            if not sources.is_dir():
                raise MonjyuError(f"papers folder {sources} not found; give it with --docs")
        key = hashlib.sha256(str(Path(sources).resolve()).encode()).hexdigest()[:8]
        index = index or Path(".monjyu-eval") / f"{name}-{key}"
        m = _facade(index, config)
        with _build_log(index, False), _progress(not as_json) as progress:
            report = m.index([sources], progress=progress)
        if report.failures and beir is not None:
            raise MonjyuError(f"indexing {sources} failed: {report.failures[0][1]}")
        for path, reason in report.failures:
            err.print(f"[yellow]skipped[/] {escape(path)}: {escape(reason)}", highlight=False, soft_wrap=True, markup=True)

        taken: dict[str, dict] = {}  # the last search's per-query decision (hybrid fusion), for --per-query

        def evaluated(query: str, name: str, n: int, answer: bool = False):
            mode, options = eval_mode(name)
            return m.ask(query, mode, top_k=n, answer=answer, **options, **fixed(name))

        def hits_of(query: str, mode: str, n: int) -> list:
            result = evaluated(query, mode, n)
            taken["last"] = getattr(result, "fusion", None) or {}
            return result.hits

        def decision(query: str, mode: str) -> dict:
            return taken.pop("last", {})

        if beir is not None:
            def run(query: str, mode: str, n: int) -> list[str]:
                return [h.document_id for h in hits_of(query, mode, n)]

            results = evaluate_beir(dataset, run, modes, top_k, by=by, per_query=records, decision=decision)
        else:
            def passages(question: str, mode: str, k: int) -> list[tuple[str, str]]:
                return [(h.source_path, h.text) for h in hits_of(question, mode, k)]

            def cited(question: str, mode: str) -> list[str] | None:
                result = evaluated(question, mode, 10, answer=True)
                texts = {h.text_unit_id: h.text for h in result.hits}
                return [texts[c.text_unit_id] for c in result.citations if c.text_unit_id in texts]

            results = evaluate_qa(dataset, passages, modes, cite=cited if answers else None, by=by, per_query=records,
                                  decision=decision)
        if per_query is not None:
            per_query.parent.mkdir(parents=True, exist_ok=True)
            per_query.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    except MonjyuError as exc:
        _fail(exc)
        return
    if as_json:
        print(json.dumps(results, indent=1))
        return
    _print_eval(results, name, "queries" if beir is not None else "questions")
    for value in next(iter(results.values())).get("by", {}):
        _print_eval({m_: r["by"][value] for m_, r in results.items()}, f"{name}, {by} = {value}",
                    "queries" if beir is not None else "questions")


def _print_eval(results: dict[str, dict], title: str, unit: str) -> None:
    first = next(iter(results.values()))
    keys = [k for k in first if k not in ("queries", "questions", "by")]
    table = Table(title=f"{title}: {first.get(unit)} {unit}")
    table.add_column("metric")
    for m_ in results:
        table.add_column(m_, justify="right")
    for k in keys:
        table.add_row(k, *(f"{results[m_][k]:.3f}" for m_ in results))
    out.print(table)



@app.command()
def serve(
    index: IndexOpt = Path(DEFAULT_INDEX_DIR),
    config: ConfigOpt = None,
    transport: Annotated[str, typer.Option(help="stdio (the client starts the server) | http (streamable HTTP at /mcp)")] = "stdio",
    host: Annotated[str, typer.Option(help="http: address to listen on")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="http: port")] = 8765,
) -> None:
    """Run the MCP server (tools: search, lazy_search, converse, get_document, list_documents, index_status, index)."""
    from ..mcp_server import serve as run_server

    try:
        run_server(_facade(index, config), transport, host, port)
    except MonjyuError as exc:
        _fail(exc)
    except KeyboardInterrupt:
        pass


@app.command()
def ui(
    index: IndexOpt = Path(DEFAULT_INDEX_DIR),
    config: ConfigOpt = None,
    host: Annotated[str, typer.Option(help="address to listen on (127.0.0.1: this machine only)")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="port")] = 8766,
) -> None:
    """Open the index in a local web app: search, cited passages in their papers, the collection map."""
    import uvicorn

    from ..web import create_app

    facade = _facade(index, config)
    hosts = bound_names(host, facade.config.server)
    token, generated = access_token(host, facade.config.server)
    shown = socket.gethostname() if host in WILDCARDS else host  # an address other machines can open
    address = f"http://{f'[{shown}]' if ':' in shown else shown}:{port}/" + (f"?token={token}" if token else "")
    out.print(f"MONJYU at {address} (index {index}); Ctrl+C stops it", soft_wrap=True)
    if generated:
        out.print(f"access token (printed once; set {facade.config.server.token_env} to choose your own): {token}",
                  soft_wrap=True)
    try:
        uvicorn.run(create_app(facade, allowed_hosts=hosts, token=token), host=host, port=port, log_level="warning")
    except KeyboardInterrupt:
        pass


def serve_main() -> None:
    """`monjyu-mcp`: the same as `monjyu serve`."""
    typer.run(serve)


def with_default_zotero(args: list[str]) -> list[str]:
    """`--zotero` with no directory after it (last, or before another option) names Zotero's
    default data directory: click's options take a value or none, not an optional one."""
    args = list(args)
    for i, arg in enumerate(args):
        if arg == "--zotero" and (i + 1 == len(args) or args[i + 1].startswith("-")):
            args.insert(i + 1, str(default_zotero_dir()))
    return args


def main() -> None:
    try:
        app(args=with_default_zotero(sys.argv[1:]))
    except MonjyuError as exc:  # anything the commands did not catch themselves
        _fail(exc)


