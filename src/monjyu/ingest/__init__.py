"""Ingest: load files into Documents, clean their text, split sentences, chunk into TextUnits."""

from .chunker import Chunker
from .loaders import iter_source_files, load_file, unread_note

__all__ = ["Chunker", "iter_source_files", "load_file", "unread_note"]
