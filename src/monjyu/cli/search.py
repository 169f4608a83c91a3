"""`monjyu search`: one question through `Monjyu.ask`, its answer and passages printed."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.markup import escape
from rich.table import Table

from ..api import DEFAULT_INDEX_DIR, Monjyu
from ..errors import MonjyuError
from ..retrieval.filters import parse_filters
from ..types import ANNOTATION
from .shell import app, out, IndexOpt, ConfigOpt, JsonOpt, _facade, _fail


@app.command()
def search(
    query: Annotated[str, typer.Argument(help="the question or keywords; - reads it from standard input (a pasted abstract)")],
    mode: Annotated[Optional[str], typer.Option(help="vector | keyword | hybrid | graph | lazy | hybridrag | auto (routes by question type)")] = None,
    top_k: Annotated[Optional[int], typer.Option("--top-k", help="hits to return")] = None,
    offset: Annotated[int, typer.Option(help="skip this many hits (pagination)")] = 0,
    threshold: Annotated[Optional[float], typer.Option(help="minimum cosine similarity for vector hits")] = None,
    filter_: Annotated[Optional[list[str]], typer.Option("--filter", help="doc=ID, type=pdf, path=GLOB, from=DATE, to=DATE, author=NAME, year=2015-2019, kind=reference, entity=PERSON, cites=DOC, cited-by=DOC, min=0.5 (share of the best score)")] = None,
    answer: Annotated[bool, typer.Option("--answer/--no-answer", help="answer with citations, or list hits only")] = True,
    spelling: Annotated[Optional[bool], typer.Option("--spelling/--no-spelling", help="correct misspelt words of the query to words the index holds (default search.spelling: on)")] = None,
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
        filters = parse_filters(filter_ or [])
        m = _facade(index, config)
        if trace and (mode or m.config.search.mode) != "lazy":
            raise MonjyuError("--trace shows lazy search's path: it is taken by mode lazy")
        result = m.ask(query, mode, top_k=top_k, offset=offset, filters=filters if filter_ else None,
                       threshold=threshold, answer=answer, spelling=spelling, expand=expand, preset=preset, budget=budget, level=level,
                       weights=_weights(weights), rerank=rerank, crag=crag, session=session,
                       on_token=on_token if streamed else None,
                       option_names=CLI_OPTION_NAMES)
        engine = result.mode
        if fmt == "bibtex":
            cited = [c.document_id for c in result.answer.citations] if result.answer and result.answer.citations \
                else [h.document_id for h in result.hits]
            print(m.papers.bibtex(list(dict.fromkeys(cited))) if cited else "", end="")
            return
    except MonjyuError as exc:
        _fail(exc)
        return
    if as_json:
        print(json.dumps({**result.to_dict(), "engine": engine}, ensure_ascii=False, indent=1))
        return
    if result.spelling:
        out.print(f"[dim]searched for: {escape(result.query)} ("
                  + ", ".join(f"{escape(w)} -> {escape(c)}" for w, c in result.spelling.items())
                  + "; --no-spelling searches as written)[/]", highlight=False, markup=True)
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
                    "answer": "--no-answer", "spelling": "--spelling/--no-spelling", "expand": "--expand", "preset": "--preset", "budget": "--budget",
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
