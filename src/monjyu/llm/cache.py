"""On-disk response cache: the same request to the same model returns the stored reply.

Evaluation runs ask the same questions many times; with temperature 0 a stored reply is as good
as a new one and costs nothing.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ..kv import SqliteKV


class ResponseCache:
    def __init__(self, path: str | Path):
        self._kv = SqliteKV(path, "llm_responses")

    @staticmethod
    def key(model_id: str, messages: list[dict[str, str]], parameters: dict[str, Any],
            schema: type[BaseModel] | None) -> str:
        """sha256 of everything that changes the reply: model, messages, parameters (the call's
        max_tokens, temperature and json_schema), schema."""
        request = {
            "model": model_id,
            "messages": messages,
            "max_tokens": parameters["max_tokens"],
            "temperature": parameters["temperature"],
            "schema": schema.__name__ if schema else None,
            "json_schema": parameters.get("json_schema"),
        }
        return hashlib.sha256(json.dumps(request, sort_keys=True, ensure_ascii=False).encode()).hexdigest()

    def get(self, key: str) -> dict[str, Any] | None:
        raw = self._kv.get_many([key]).get(key)
        return json.loads(raw) if raw is not None else None

    def put(self, key: str, value: dict[str, Any]) -> None:
        self._kv.put_many([(key, json.dumps(value, ensure_ascii=False).encode())])

    def close(self) -> None:
        self._kv.close()
