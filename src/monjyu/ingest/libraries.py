"""What a reference manager adds to a build: the files of a Zotero library or a bibliography,
with the catalog whose metadata win over parsing, and what it could not give."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..config import IngestConfig
from ..errors import MonjyuError
from .bib import read_bibliography
from .catalog import Catalog
from .zotero import ABSTRACTS_FOLDER, library_catalog, read_library, write_abstracts


@dataclass
class LibrarySources:
    paths: list[Path]  # the files and folders to index: those given, then the library's files
    catalog: Catalog | None = None
    failures: list[tuple[str, str]] = field(default_factory=list)  # entries whose file is missing
    notes: list[str] = field(default_factory=list)


def library_sources(paths: list[Path], zotero: Path | None, bib: Path | None, cfg: IngestConfig,
                    index_dir: Path) -> LibrarySources:
    """The build's sources: `paths`, plus a Zotero library's files or a bibliography's (those not
    already under one of `paths`); the files of Zotero items read from their abstract are kept in
    `index_dir`."""
    if zotero is not None and bib is not None:
        raise MonjyuError("give a Zotero library or a bibliography, not both: a library carries its own metadata "
                          "(export it with Better BibTeX to use a .bib instead)")
    if zotero is not None:
        library = read_library(Path(zotero), annotations=cfg.annotations, suffixes=tuple(cfg.suffixes))
        from_abstract = write_abstracts(library, index_dir / ABSTRACTS_FOLDER)
        notes = []
        if from_abstract:
            count = len(from_abstract)
            notes.append(f"{count} {'item' if count == 1 else 'items'} of the Zotero library without a file MONJYU "
                         f"reads {'is' if count == 1 else 'are'} indexed from {'its' if count == 1 else 'their'} "
                         f"abstract: {_some([item.title or item.key for item in from_abstract])}")
        if library.without_file:
            count = len(library.without_file)
            notes.append(f"{count} {'item' if count == 1 else 'items'} of the Zotero library "
                         f"{'has' if count == 1 else 'have'} no file MONJYU reads (a PDF, or a snapshot, Word, "
                         f"Markdown or text file that is in the data directory) nor an abstract, not indexed: "
                         f"{_some(library.without_file)}")
        return LibrarySources(paths + [item.file for item in library.items], library_catalog(library),
                              library.missing, notes)
    if bib is None:
        return LibrarySources(paths)
    found = read_bibliography(Path(bib), cfg.suffixes)
    roots = [p.resolve() for p in paths]
    extra = [f for f in found.files if not any(f.resolve().is_relative_to(r) for r in roots)]
    notes = []
    if found.without_file:
        count = len(found.without_file)
        notes.append(f"{count} {'entry' if count == 1 else 'entries'} of {Path(bib).name} "
                     f"{'names' if count == 1 else 'name'} no file MONJYU reads, not indexed: "
                     f"{_some(found.without_file)}")
    return LibrarySources(paths + extra, found.catalog, found.missing, notes)


def _some(names: list[str], shown: int = 5) -> str:
    """The first `shown` names, and "..." where there are more."""
    return ", ".join(names[:shown]) + (", ..." if len(names) > shown else "")
