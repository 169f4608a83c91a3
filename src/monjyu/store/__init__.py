"""Storage backends. LanceDB (embedded) is the store of record by default."""

from .lancedb_store import LanceStore

__all__ = ["LanceStore"]
