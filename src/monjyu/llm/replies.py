"""The one way to ask the LLM for a structured reply, with a fallback when it fails.

Every LLM step of the engines (query rewrites, subqueries, classification, relevance tests,
claims, CRAG grades, sufficiency) has an answer it can give without the LLM; a service error
must lead there, never to a traceback."""

from __future__ import annotations

from string import Template
from typing import TypeVar

from pydantic import BaseModel

from ..errors import ServiceError
from .base import LLM, Message
from .prompts import load_prompt

Reply = TypeVar("Reply", bound=BaseModel)


async def structured_reply(llm: LLM, prompt: str, language: str, user: str, schema: type[Reply],
                           prompts_dir: str | None = None, **values: object) -> Reply | None:
    """The reply to prompt file `prompt` (in `language`, its `$placeholders` filled from `values`)
    and the `user` message, parsed into `schema`; None when the service fails after the client's
    retries and its one repair call, so that the caller falls back."""
    system = Template(load_prompt(prompt, language, prompts_dir)).safe_substitute(**values)
    try:
        result = await llm.achat([Message("system", system), Message("user", user)], schema=schema)
    except ServiceError:
        return None
    return result.parsed
