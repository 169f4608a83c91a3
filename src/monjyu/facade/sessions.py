"""Conversations kept in the index directory (and mirrored to the store): follow-up questions."""

from __future__ import annotations

import json
import re
from pathlib import Path

from ..engines.lazy import LazyConversation
from ..errors import MonjyuError
from ..index.manifest import read_manifest
from ..store.mirror import atomic_write
from .workspace import Workspace

_SESSION_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


class Conversations:
    """Named conversations: read before a follow-up, written atomically after each turn
    (`m.conversations`)."""

    def __init__(self, workspace: Workspace):
        self.workspace = workspace

    def _path(self, name: str) -> Path:
        if not _SESSION_NAME.fullmatch(name or ""):
            raise MonjyuError(f"session name {name!r}: use 1-64 letters, digits, '-' or '_'")
        return self.workspace.index_dir / "sessions" / f"{name}.json"

    def get(self, name: str) -> LazyConversation:
        """The conversation kept under `name` in the index directory (a new one if none is).

        Args:
            name: 1-64 letters, digits, '-' or '_'.
        """
        path = self._path(name)
        if self.workspace.remote:
            self.workspace.remote.pull_session(name)
        if not path.exists():
            return LazyConversation()
        try:
            return LazyConversation.from_dict(json.loads(path.read_text(encoding="utf-8")))
        except (ValueError, KeyError, TypeError) as exc:
            raise MonjyuError(f"session {name!r} ({path}) cannot be read ({exc}); delete the file to start it anew") from None

    def save(self, name: str, conversation: LazyConversation) -> None:
        """Keep a conversation under `name`, atomically: a killed process leaves the previous turn
        readable.

        Args:
            name: 1-64 letters, digits, '-' or '_'.
            conversation: the conversation after its latest turn.
        """
        path = self._path(name)
        if not self.workspace.remote:
            read_manifest(self.workspace.index_dir)  # no index here: say so, and create nothing
        atomic_write(path, json.dumps(conversation.to_dict(), ensure_ascii=False).encode("utf-8"))
        if self.workspace.remote:
            self.workspace.remote.push_session(name)

