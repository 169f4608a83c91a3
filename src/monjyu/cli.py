"""`monjyu` command line: a thin typer shell over the Monjyu facade."""

from __future__ import annotations

import hashlib
import json
import re
import socket
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, ProgressColumn, TextColumn, TimeElapsedColumn,
                           TimeRemainingColumn)
from rich.text import Text
from rich.table import Table

from .access import WILDCARDS, access_token, bound_names
from .api import DEFAULT_INDEX_DIR, EVAL_MODES, Monjyu
from .config import load_config
from .errors import MonjyuError
from .ingest.zotero import default_data_dir as default_zotero_dir
from .retrieval import SearchFilters
from .types import ANNOTATION

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="MONJYU: index a folder of papers and search it, offline.")
# Literal by default: error and user text (titles, paths, phrases, "monjyu[postgres]") is never
# read as markup; the few styled lines ask for markup and escape what they quote.
out = Console(markup=False, highlight=False)
err = Console(stderr=True, markup=False, highlight=False)

IndexOpt = Annotated[Path, typer.Option("--index", help="index directory")]
ConfigOpt = Annotated[Optional[Path], typer.Option("--config", help="monjyu.yaml (default: ./monjyu.yaml if present)")]
JsonOpt = Annotated[bool, typer.Option("--json", help="print one JSON object for scripts")]

STAGES = {"load": "Loading and chunking files", "embed": "Embedding text units", "sentences": "Embedding sentences",
          "phrases": "Extracting noun phrases", "ann": "Building the vector (ANN) index", "bm25": "Building the BM25 index",
          "graph": "Graph and communities", "phrase vectors": "Embedding phrases and communities",
          "entities": "Extracting entities and relations (level 2)", "reports": "Writing community reports (level 4)"}


def _facade(index: Path, config: Optional[Path]) -> Monjyu:
    return Monjyu(index, load_config(config))


class RateColumn(ProgressColumn):
    """Items per second of a build stage (files, units, sentences, phrases)."""

    def render(self, task) -> Text:
        return Text(f"{task.speed:,.1f}/s" if task.speed else "", style="progress.data.speed")


@contextmanager
def _progress(enabled: bool):
    """Rich progress bars on stderr, one per build stage."""
    if not enabled:
        yield None
        return
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), RateColumn(),
                  TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn(), console=err, transient=False) as bar:
        tasks: dict[str, int] = {}

        def update(stage: str, advance: int, total: int | None) -> None:
            if stage not in tasks:
                tasks[stage] = bar.add_task(STAGES.get(stage, stage), total=total)
            elif total is not None:
                bar.update(tasks[stage], total=total)
            if advance:
                bar.advance(tasks[stage], advance)

        yield update


@contextmanager
def _build_log(index_dir: Path, verbose: bool):
    """Library chatter (warnings of PDF, NLP and storage libraries) goes to <index>/logs/build.log,
    and to the terminal only with --verbose: the user sees progress, a summary and named failures."""
    import logging
    from logging.handlers import RotatingFileHandler

    log_dir = index_dir / "logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    handlers: list[logging.Handler] = [RotatingFileHandler(log_dir / "build.log", maxBytes=5_000_000, backupCount=2,
                                                           encoding="utf-8")]
    handlers[0].setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    if verbose:
        handlers.append(logging.StreamHandler())
    root = logging.getLogger()
    saved = (root.level, list(root.handlers))
    root.handlers = handlers
    root.setLevel(logging.INFO)
    logging.captureWarnings(True)
    try:
        yield log_dir / "build.log"
    finally:
        logging.captureWarnings(False)
        for h in handlers:
            h.close()
        root.setLevel(saved[0])
        root.handlers = saved[1]


def _fail(exc: MonjyuError) -> None:
    err.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False, markup=True, soft_wrap=True)
    raise typer.Exit(2)


@app.command()
def index(
    paths: Annotated[Optional[list[Path]], typer.Argument(help="files and folders to index")] = None,
    index: IndexOpt = Path(DEFAULT_INDEX_DIR),
    zotero: Annotated[Optional[Path], typer.Option(
        "--zotero", metavar="[DIR]",
        help="also index a Zotero library: the PDFs of the items in its data directory (alone, or before "
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
        if level >= 2 and m._level_two() is None:  # no LLM: say so before building anything
            m._require_level(level)
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
    estimate = m.level_estimate(level)
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
        done = m.build_level(level, progress=lambda k: progress and progress(stage, k, None))
    if not as_json:
        out.print(f"level {level}: {done['sent'] - done['failed']} {what} written, {done['failed']} failed (run again "
                  f"to retry them), {done['usage'].get('total_tokens', 0):,} tokens")
        if "level3" in done:
            g = done["level3"]
            out.print(f"level 3: {g['entities']} entities ({g['merged']} known under several names), "
                      f"{g['relations']} relations, {g['communities']} communities")
    return {"estimate": estimate, **done}


@app.command()
def search(
    query: Annotated[str, typer.Argument(help="the question or keywords; - reads it from standard input (a pasted abstract)")],
    mode: Annotated[Optional[str], typer.Option(help="vector | keyword | hybrid | graph | lazy | hybridrag | auto (routes by question type)")] = None,
    top_k: Annotated[Optional[int], typer.Option("--top-k", help="hits to return")] = None,
    offset: Annotated[int, typer.Option(help="skip this many hits (pagination)")] = 0,
    threshold: Annotated[Optional[float], typer.Option(help="minimum cosine similarity for vector hits")] = None,
    filter_: Annotated[Optional[list[str]], typer.Option("--filter", help="doc=ID, type=pdf, path=GLOB, from=DATE, to=DATE, author=NAME, year=2015-2019, kind=reference, entity=PERSON, cites=DOC, cited-by=DOC, min=0.5 (share of the best score)")] = None,
    answer: Annotated[bool, typer.Option("--answer/--no-answer", help="answer with citations, or list hits only")] = True,
    stream: Annotated[bool, typer.Option("--stream", help="print the answer as it is generated")] = False,
    expand: Annotated[bool, typer.Option("--expand", help="also search LLM rewrites of the query")] = False,
    preset: Annotated[Optional[str], typer.Option(help="lazy: z100 | z500 | z1500")] = None,
    level: Annotated[Optional[int], typer.Option(help="lazy: the highest index level it may build and use (2: entities and relations an LLM extracts; 3: also the entity graph, one entity under all its names; 4: community reports for global questions; kept in the index; each needs an LLM)")] = None,
    budget: Annotated[Optional[int], typer.Option(help="lazy: relevance tests (sentences) to spend")] = None,
    trace: Annotated[bool, typer.Option("--trace", help="lazy: show the path through the communities")] = False,
    session: Annotated[Optional[str], typer.Option(help="lazy: a conversation kept in the index directory; a follow-up question sees the earlier turns")] = None,
    weights: Annotated[Optional[str], typer.Option(help="hybridrag: keyword,semantic,graph weights summing to 1, e.g. 0.2,0.3,0.5")] = None,
    rerank: Annotated[Optional[bool], typer.Option("--rerank/--no-rerank", help="hybridrag: rerank stage on/off")] = None,
    crag: Annotated[Optional[bool], typer.Option("--crag/--no-crag", help="hybridrag: grade results, abstain when the context is insufficient")] = None,
    fmt: Annotated[str, typer.Option("--format", help="text, or bibtex: the BibTeX of the papers the answer cites (of the hits without an answer)")] = "text",
    index: IndexOpt = Path(DEFAULT_INDEX_DIR),
    config: ConfigOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Search the index: an answer citing its sources (LLM, or extractive without one), then the
    ranked passages. --mode lazy runs LazyGraphRAG search, --mode hybridrag the HybridRAG pipeline,
    --mode auto picks by the question's type."""
    if fmt not in ("text", "bibtex"):
        _fail(MonjyuError(f"--format {fmt!r} is not known; use text or bibtex"))
    if fmt == "bibtex" and (as_json or stream or trace):
        _fail(MonjyuError("--format bibtex prints BibTeX only: it takes no --json, --stream or --trace"))
    streamed = stream and answer and not as_json

    def on_token(delta: str) -> None:
        out.print(delta, end="", highlight=False, markup=False, soft_wrap=True)

    if query == "-":
        query = sys.stdin.read()
    try:
        filters = SearchFilters.parse(filter_ or [])
        m = _facade(index, config)
        if trace and (mode or m.config.search.mode) != "lazy":
            raise MonjyuError("--trace shows lazy search's path: it is taken by mode lazy")
        result = m.ask(query, mode, top_k=top_k, offset=offset, filters=filters if filter_ else None,
                       threshold=threshold, answer=answer, expand=expand, preset=preset, budget=budget, level=level,
                       weights=_weights(weights), rerank=rerank, crag=crag, session=session,
                       on_token=on_token if streamed else None,
                       option_names=CLI_OPTION_NAMES)
        engine = result.mode
        if fmt == "bibtex":
            cited = [c.document_id for c in result.answer.citations] if result.answer and result.answer.citations \
                else [h.document_id for h in result.hits]
            print(m.bibtex(list(dict.fromkeys(cited))) if cited else "", end="")
            return
    except MonjyuError as exc:
        _fail(exc)
        return
    if as_json:
        print(json.dumps({**result.to_dict(), "engine": engine}, ensure_ascii=False, indent=1))
        return
    if engine == "lazy":
        _print_lazy(result, streamed, trace)
        return
    if engine == "hybridrag":
        _print_hybrid(result, streamed)
        return
    if result.answer:
        _print_answer(result, streamed)
    if not _print_hits(result.hits):
        return
    t = result.timings_ms
    out.print(f"[dim]{len(result.hits)} of {result.total_count} candidates, {result.mode}, retrieval "
              f"{t.get('retrieval_ms', 0):.0f} ms, answer {t.get('answer_ms', 0):.0f} ms, "
              f"LLM calls {result.usage.get('calls', 0)}, tokens {result.usage.get('total_tokens', 0)}[/]", markup=True)


# The CLI's spelling of each option of Monjyu.ask, for its refusals.
CLI_OPTION_NAMES = {"filters": "--filter", "top_k": "--top-k", "offset": "--offset", "threshold": "--threshold",
                    "answer": "--no-answer", "expand": "--expand", "preset": "--preset", "budget": "--budget",
                    "level": "--level", "weights": "--weights", "rerank": "--rerank/--no-rerank", "crag": "--crag/--no-crag",
                    "session": "--session"}


def _weights(text: str | None) -> dict[str, float] | None:
    if text is None:
        return None
    try:
        k, s, g = (float(x) for x in text.split(","))
    except ValueError:
        raise MonjyuError(f"--weights takes three numbers keyword,semantic,graph (e.g. 0.2,0.3,0.5), not {text!r}") from None
    return {"keyword": k, "semantic": s, "graph": g}


def _print_hits(hits) -> bool:
    """The ranked passages; False when there are none."""
    if not hits:
        out.print("no results")
        return False
    out.print("[bold]Passages[/]", markup=True)
    for h in hits:
        out.print(f"[bold]{h.rank}.[/] [cyan]{escape(h.document_title)}[/] ({escape(_where(h))}) score={h.score:.4f}", highlight=False, markup=True)
        out.print(f"   {_flowing(h.text)}", highlight=False, markup=False)
    return True


def _flowing(text: str, limit: int = 400) -> str:
    """A passage as flowing text for the terminal, cut at `limit` characters: the line breaks of a
    hard-wrapped source inside a paragraph become spaces (the terminal wraps it again), and
    paragraphs stay apart."""
    paragraphs = [" ".join(line.strip() for line in block.splitlines() if line.strip())
                  for block in re.split(r"\n\s*\n", text)]
    flowing = "\n   ".join(p for p in paragraphs if p)
    return flowing if len(flowing) <= limit else flowing[:limit] + "…"


def _print_hybrid(result, streamed: bool) -> None:
    if result.answer:
        _print_answer(result, streamed)
    c = result.classification
    out.print(f"[dim]query type {escape(c['type'])} ({escape(c['method'])}, confidence {c['confidence']:.2f}), weights "
              + ", ".join(f"{k} {v:.2f}" for k, v in result.weights.items())
              + f"; reranker {escape(result.reranker or 'off')}"
              + (f"; CRAG {escape(str(result.crag['grades']))}" if result.crag else "") + "[/]", highlight=False, markup=True)
    for item in result.items:
        h = item.hit
        grade = f" [{item.grade}]" if item.grade else ""
        out.print(f"[bold]{h.rank}.[/] [cyan]{escape(h.document_title)}[/] ({escape(_where(h))}){escape(grade)} "
                  f"combined={item.scores['combined']:.4f}", highlight=False, markup=True)
        text = " … ".join(item.strips) if item.strips else h.text
        out.print("   " + _flowing(text), highlight=False, markup=False)


def _print_lazy(result, streamed: bool, trace: bool) -> None:
    if result.answer:
        _print_answer(result, streamed)
    else:
        _print_hits(result.hits)
    if trace:
        table = Table("depth", "community", "level", "title", "units", "sentences", "relevant", title="Path through the communities")
        for v in result.communities_visited:
            table.add_row(str(v["depth"]), str(v["id"]), str(v["level"]), v["title"][:60],
                          str(v["units_tested"]), str(v["sentences_tested"]), str(v["relevant"]))
        out.print(table)
        if len(result.subqueries) > 1:
            out.print("subqueries: " + " | ".join(result.subqueries), highlight=False, markup=False)
    u, t = result.usage, result.timings_ms
    out.print(f"[dim]lazy ({escape(result.assessor)} relevance tests): budget {result.budget_used}/{result.budget_total}, "
              f"{len(result.relevant_sentences)} relevant sentences, {len(result.claims)} claims, stop: {escape(result.stop_reason)}; "
              f"LLM calls {u.get('calls', 0)}, prompt tokens {u.get('prompt_tokens', 0)}, output tokens "
              f"{u.get('completion_tokens', 0)}; {t.get('total_ms', 0):.0f} ms[/]", highlight=False, markup=True)
    if result.level4:
        d, spent = result.level4, result.usage_by_level.get("4", {})
        out.print(f"[dim]level 4: {d['communities']} communities, {d['reports_written']} reports written now, "
                  f"{d['reports_read']} read from the index; {d['claims_relevant']} of {d['claims']} claims relevant; "
                  f"{spent.get('total_tokens', 0)} tokens[/]", highlight=False, markup=True)
    if result.level2:
        d, spent = result.level2, result.usage_by_level.get("2", {})
        out.print(f"[dim]level {d.get('level', 2)}: {d['units_sent']} passages sent to entity extraction, {d['units_reused']} read from the "
                  f"index; {d['entities']} entities linked {d['units_linked']} passages, {d['relevant']} relevant "
                  f"sentences more; {spent.get('total_tokens', 0)} tokens[/]", highlight=False, markup=True)


def _where(hit) -> str:
    if getattr(hit, "kind", "") == ANNOTATION:  # "Your highlight on p. 4": the page is in it
        return f"{hit.source_path} {hit.section}"
    section = f" §{hit.section.rsplit(' > ', 1)[-1]}" if getattr(hit, "section", "") else ""
    return f"{hit.source_path}{section}" + (f" p.{hit.page}" if hit.page else "")


def _print_answer(result, streamed: bool) -> None:
    a = result.answer
    label = {"llm": "Answer", "extractive": "Answer (extractive: sentences from the sources, no LLM)",
             "insufficient": "No answer"}.get(a.kind, "Answer")
    if streamed:
        out.print()
    else:
        out.print(f"[bold green]{label}[/]", markup=True)
        out.print(a.text, highlight=False, markup=False)
    if a.notice:
        out.print(f"[yellow]{escape(a.notice)}[/]", highlight=False, markup=True)
    if a.note and a.kind != "extractive":
        out.print(f"[dim]{escape(a.note)}[/]", highlight=False, markup=True)
    for c in a.citations:
        out.print(f"  \\[{c.number}] [cyan]{escape(c.label)}[/] ({escape(c.source_path)}, "
                  f"chars {c.start_char}-{c.end_char})", highlight=False, markup=True)
    out.print()


@app.command()
def init(
    path: Annotated[Path, typer.Argument(help="file to write")] = Path("monjyu.yaml"),
    force: Annotated[bool, typer.Option("--force", help="overwrite an existing file")] = False,
) -> None:
    """Write a commented monjyu.yaml: every provider (Ollama, OpenAI, Azure, llama.cpp) ready to uncomment."""
    if path.exists() and not force:
        _fail(MonjyuError(f"{path} exists; use --force to overwrite it"))
    path.write_text((Path(__file__).parent / "monjyu.example.yaml").read_text(encoding="utf-8"), encoding="utf-8")
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
    from .eval import BeirDataset, QADataset, evaluate_beir, evaluate_qa

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

        def hits_of(query: str, mode: str, n: int) -> list:
            result = m.eval_search(query, mode, n, **fixed(mode))
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
                result = m.eval_search(question, mode, 10, answer=True, **fixed(mode))
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
def papers(
    document: Annotated[Optional[str], typer.Argument(help="one paper's id: its metadata, references and cited-by")] = None,
    cites: Annotated[Optional[str], typer.Option("--cites", help="only the papers citing this document")] = None,
    cited_by: Annotated[Optional[str], typer.Option("--cited-by", help="only the papers this document cites")] = None,
    missing: Annotated[bool, typer.Option("--missing", help="works cited by >= 2 papers but not in the collection")] = False,
    fmt: Annotated[str, typer.Option("--format", help="table or bibtex")] = "table",
    limit: Annotated[int, typer.Option(min=1, help="papers or works to show")] = 100,
    index: IndexOpt = Path(DEFAULT_INDEX_DIR), config: ConfigOpt = None, as_json: JsonOpt = False,
) -> None:
    """The collection's papers: title, first author, year, pages, references and citations."""
    try:
        if fmt not in ("table", "bibtex"):
            raise MonjyuError(f"--format {fmt!r} is not known; use table or bibtex")
        if fmt == "bibtex" and as_json:
            raise MonjyuError("--format bibtex and --json are two outputs; choose one")
        if document is not None and (cites or cited_by or missing):
            raise MonjyuError("a DOCUMENT shows one paper; --cites, --cited-by and --missing list papers: use one or the other")
        if missing and (cites or cited_by):
            raise MonjyuError("--missing lists works outside the collection; it takes no --cites or --cited-by")
        m = _facade(index, config)
        if missing:
            works = m.missing_works(limit=limit)
            if fmt == "bibtex":
                print(m.bibtex(works=works), end="")
            elif as_json:
                print(json.dumps(works, ensure_ascii=False, indent=1))
            else:
                _print_works(works)
            return
        if document is not None:
            paper = m.paper(document)
            if fmt == "bibtex":
                print(m.bibtex([document]), end="")
            elif as_json:
                print(json.dumps(paper, ensure_ascii=False, indent=1))
            else:
                _print_paper(paper)
            return
        listing = m.papers(cites=cites, cited_by=cited_by, limit=limit)
    except MonjyuError as exc:
        _fail(exc)
        return
    if fmt == "bibtex":
        print(m.bibtex([p["id"] for p in listing["papers"]]), end="")
    elif as_json:
        print(json.dumps(listing, ensure_ascii=False, indent=1))
    else:
        out.print(_papers_table(listing["papers"], out.width))
        out.print(f"{listing['total']} papers")


def _papers_table(papers: list[dict], width: int) -> Table:
    """One line a paper in a terminal `width` columns wide: the id (what --cites and doc= take) is
    never cut; the other columns come in order of use while they fit beside a title of at least
    20 characters, which takes the rest; the first author and the title are cut with an ellipsis."""
    authors = [p["authors"][0] if p["authors"] else "" for p in papers]
    cells = {"year": lambda p, a: str(p["year"] or ""), "first author": lambda p, a: a,
             "cited by": lambda p, a: str(len(p["cited_by"])), "cites": lambda p, a: str(len(p["cites"])),
             "refs": lambda p, a: str(p["references"]), "pages": lambda p, a: str(p["pages"] or "")}
    widths = {"id": max((len(p["id"]) for p in papers), default=2)}
    for name in cells:  # in order of use; two spaces between columns
        need = max(12, min(20, max((len(a) for a in authors), default=0))) if name == "first author" else max(4, len(name))
        if sum(widths.values()) + need + 20 + 2 * (len(widths) + 1) <= width:
            widths[name] = need
    widths["title"] = max(20, width - sum(widths.values()) - 2 * len(widths) - 1)
    order = [n for n in ("id", "year", "first author", "title", "pages", "refs", "cites", "cited by") if n in widths]
    table = Table(box=None, padding=(0, 1), pad_edge=False, header_style="bold underline")
    for name in order:
        table.add_column(name, width=widths[name], no_wrap=True, overflow="ellipsis",
                         justify="right" if name in ("pages", "refs", "cites", "cited by") else "left")
    for p, author in zip(papers, authors):
        table.add_row(*(p["id"] if n == "id" else p["title"] if n == "title" else cells[n](p, author) for n in order))
    return table


def _print_works(works: list[dict]) -> None:
    table = Table("cited by", "title", "first author", "year", "citing papers")
    for w in works:
        table.add_row(str(w["count"]), w["title"], w["authors"][0] if w["authors"] else "", str(w["year"] or ""),
                      ", ".join(Path(d).name for d in w["cited_by"]))
    out.print(table)


def _print_paper(paper: dict) -> None:
    out.print(paper["title"], style="bold")
    out.print(", ".join(paper["authors"]) or "(authors unknown)")
    facts = [f"{k}: {paper[k]}" for k in ("year", "pages", "doi", "arxiv_id") if paper.get(k)]
    out.print(" · ".join(facts + [f"id: {paper['id']}"]))
    out.print(f"\nReferences ({paper['references']}):", style="bold")
    for e in paper["reference_list"]:
        link = f"  -> {e['document_id']}" if e["document_id"] else ""
        out.print(f"  {e['index']:>3}. {e['text'][:150]}{link}", soft_wrap=True)
    out.print(f"\nCited by in the collection ({len(paper['cited_by'])}):", style="bold")
    for c in paper["cited_by_contexts"]:
        out.print(f"  {c['document_id']} p.{c['page'] or '?'}: {c['sentence'][:300]}", soft_wrap=True)


graph_app = typer.Typer(help="Level 1 concept graph: statistics and exports.", no_args_is_help=True)
app.add_typer(graph_app, name="graph")


@graph_app.command("stats")
def graph_stats(index: IndexOpt = Path(DEFAULT_INDEX_DIR), config: ConfigOpt = None, as_json: JsonOpt = False) -> None:
    """Phrases, edges, communities per level and the most connected phrases."""
    try:
        stats = _facade(index, config).graph_stats()
    except MonjyuError as exc:
        _fail(exc)
        return
    _print_mapping(stats, as_json)


def _print_rows(rows: list[dict], as_json: bool, columns: list[str]) -> None:
    if as_json:
        print(json.dumps(rows, ensure_ascii=False, indent=1))
        return
    table = Table(*columns)
    for row in rows:
        table.add_row(*(f"{row[c]:.4f}" if isinstance(row[c], float) else str(row[c]) for c in columns))
    out.print(table)


@graph_app.command("neighbours")
def graph_neighbours(
    text: Annotated[str, typer.Argument(help="a phrase, or text naming phrases")],
    hops: Annotated[int, typer.Option(min=1, max=5, help="co-occurrence steps")] = 1,
    limit: Annotated[int, typer.Option(min=1, help="phrases to show")] = 30,
    index: IndexOpt = Path(DEFAULT_INDEX_DIR), config: ConfigOpt = None, as_json: JsonOpt = False,
) -> None:
    """Phrases within N hops of the phrases named in TEXT."""
    try:
        rows = _facade(index, config).graph_neighbours(text, hops, limit)
    except MonjyuError as exc:
        _fail(exc)
        return
    _print_rows(rows, as_json, ["phrase", "hop", "strength", "units"])


@graph_app.command("communities")
def graph_communities(
    query: Annotated[str, typer.Argument(help="the question")],
    top_k: Annotated[int, typer.Option("--top-k", min=1)] = 10,
    level: Annotated[Optional[int], typer.Option(min=0, help="one level of the hierarchy (0 = coarsest)")] = None,
    index: IndexOpt = Path(DEFAULT_INDEX_DIR), config: ConfigOpt = None, as_json: JsonOpt = False,
) -> None:
    """Communities ranked by how many of the query's best text units they hold."""
    try:
        rows = _facade(index, config).search_communities(query, top_k, level)
    except MonjyuError as exc:
        _fail(exc)
        return
    _print_rows(rows, as_json, ["id", "level", "title", "score", "matched_units", "text_units"])


@graph_app.command("export")
def graph_export(
    output: Annotated[Path, typer.Argument(help="file to write")],
    fmt: Annotated[str, typer.Option("--format", help="html | graphml")] = "html",
    index: IndexOpt = Path(DEFAULT_INDEX_DIR),
    config: ConfigOpt = None,
) -> None:
    """Write the graph as GraphML, or as an HTML picture of communities and phrases."""
    try:
        path = _facade(index, config).export_graph(output, fmt)
    except MonjyuError as exc:
        _fail(exc)
        return
    out.print(f"wrote {path}")


@app.command()
def serve(
    index: IndexOpt = Path(DEFAULT_INDEX_DIR),
    config: ConfigOpt = None,
    transport: Annotated[str, typer.Option(help="stdio (the client starts the server) | http (streamable HTTP at /mcp)")] = "stdio",
    host: Annotated[str, typer.Option(help="http: address to listen on")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="http: port")] = 8765,
) -> None:
    """Run the MCP server (tools: search, lazy_search, converse, get_document, list_documents, index_status, index)."""
    from .mcp_server import serve as run_server

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

    from .web import create_app

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


if __name__ == "__main__":
    main()
