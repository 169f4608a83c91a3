"""`monjyu papers` and `monjyu graph`: the collection's papers, their citations, and the concept graph."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.table import Table

from ..api import DEFAULT_INDEX_DIR
from ..errors import MonjyuError
from .shell import app, out, IndexOpt, ConfigOpt, JsonOpt, _facade, _fail


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
            works = m.papers.missing_works(limit=limit)
            if fmt == "bibtex":
                print(m.papers.bibtex(works=works), end="")
            elif as_json:
                print(json.dumps(works, ensure_ascii=False, indent=1))
            else:
                _print_works(works)
            return
        if document is not None:
            paper = m.papers.get(document)
            if fmt == "bibtex":
                print(m.papers.bibtex([document]), end="")
            elif as_json:
                print(json.dumps(paper, ensure_ascii=False, indent=1))
            else:
                _print_paper(paper)
            return
        listing = m.papers.list(cites=cites, cited_by=cited_by, limit=limit)
    except MonjyuError as exc:
        _fail(exc)
        return
    if fmt == "bibtex":
        print(m.papers.bibtex([p["id"] for p in listing["papers"]]), end="")
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
        stats = _facade(index, config).graph.stats()
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
        rows = _facade(index, config).graph.neighbours(text, hops, limit)
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
        rows = _facade(index, config).graph.search_communities(query, top_k, level)
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
        path = _facade(index, config).graph.export(output, fmt)
    except MonjyuError as exc:
        _fail(exc)
        return
    out.print(f"wrote {path}")
