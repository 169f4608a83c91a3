"""The command line's shared parts: the app, its consoles, the options every command takes,
build progress and the build log, and how an error is printed."""

from __future__ import annotations

import json
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, ProgressColumn, TextColumn, TimeElapsedColumn,
                           TimeRemainingColumn)
from rich.text import Text

from ..api import Monjyu
from ..config import load_config
from ..errors import MonjyuError


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
