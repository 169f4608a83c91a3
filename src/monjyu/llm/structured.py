"""Structured output: ask for JSON that fits a pydantic schema, parse replies tolerantly.

Small and local models wrap JSON in code fences or prose, leave trailing commas, use single
quotes; json-repair undoes those before pydantic validates.
"""

from __future__ import annotations

import json
import re
from string import Template
from typing import Any

import json_repair
from pydantic import BaseModel, ValidationError

from .prompts import load_prompt

_JAPANESE = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]")


def language_of(messages: list[dict[str, str]]) -> str:
    """"ja" when the conversation contains Japanese, so our added instructions match it."""
    return "ja" if any(_JAPANESE.search(m["content"]) for m in messages) else "en"


def with_schema_instruction(messages: list[dict[str, str]], schema: dict[str, Any], lang: str) -> list[dict[str, str]]:
    """State the JSON schema in the system message (added in front when there is none)."""
    instruction = Template(load_prompt("json_output", lang)).substitute(
        schema=json.dumps(schema, ensure_ascii=False))
    if messages and messages[0]["role"] == "system":
        first = {"role": "system", "content": messages[0]["content"].rstrip() + "\n\n" + instruction}
        return [first, *messages[1:]]
    return [{"role": "system", "content": instruction}, *messages]


def repair_messages(messages: list[dict[str, str]], bad_output: str, error: str, lang: str) -> list[dict[str, str]]:
    """The conversation again, plus the bad reply and a request to correct it."""
    request = Template(load_prompt("json_repair", lang)).substitute(error=error)
    return [*messages, {"role": "assistant", "content": bad_output}, {"role": "user", "content": request}]


def parse(text: str, schema: type[BaseModel]) -> BaseModel:
    """The reply as a `schema` instance; ValueError saying what is wrong otherwise."""
    data = json_repair.loads(text)
    if not isinstance(data, (dict, list)):
        raise ValueError("the reply contains no JSON object")
    try:
        return schema.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}"
                             for e in exc.errors()[:5])
        raise ValueError(f"the JSON does not match the schema: {problems}") from None
