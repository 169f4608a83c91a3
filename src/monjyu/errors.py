"""One exception hierarchy; every message names the file, setting or service and what to do."""


class MonjyuError(Exception):
    """Base class for errors a user can act on."""


class ConfigError(MonjyuError):
    """A setting is missing or invalid."""


class IngestError(MonjyuError):
    """A file could not be read or parsed; the batch goes on without it."""

    def __init__(self, path: str, reason: str):
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


class IndexNotFoundError(MonjyuError):
    """No index exists at the given directory."""


class EmbedderMismatchError(MonjyuError):
    """The index was built with another embedder than the one configured for querying."""


class ServiceError(MonjyuError):
    """A remote service (embedding endpoint, LLM) failed or cannot be reached."""
