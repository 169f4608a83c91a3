"""The one place that picks a store backend from the configuration."""

from __future__ import annotations

from pathlib import Path

from ..config import StoreConfig
from .base import IndexStore


def open_store(config: StoreConfig, local_dir: Path) -> IndexStore | None:
    """The store holding the index, or None when the local index directory is the store."""
    if config.backend == "azure-search":
        from .azure_search import AzureSearchIndex

        companion = _state_store(config, config.companion_url, local_dir)
        return AzureSearchIndex(config.url, config.index_prefix, config.api_key_env, companion, local_dir)
    if config.backend == "postgres" or config.url:
        return _state_store(config, config.url, local_dir)
    return None


def _state_store(config: StoreConfig, url: str, local_dir: Path) -> IndexStore:
    """A store for manifest, files and sessions: PostgreSQL or object storage, by url."""
    if url.startswith(("postgresql://", "postgres://")):
        from .postgres_store import PostgresIndex

        return PostgresIndex(url, local_dir, config.refresh_s, config.namespace, config.password_env)
    from .object_store import ObjectStoreIndex

    return ObjectStoreIndex(url, local_dir, config.refresh_s)
