"""Chat models behind one protocol: OpenAI-compatible HTTP, Azure OpenAI, in-process llama.cpp.

    llm = create_llm(config.llm, cache_dir)      # None when llm.provider is "none"
    result = llm.chat("question", schema=Answer)  # or: await llm.achat(...)
"""

from .base import LLM, ChatResult, Message, Usage, UsageMeter, UsageScope, run_sync
from .factory import create_llm
from .prompts import load_prompt

__all__ = ["LLM", "ChatResult", "Message", "Usage", "UsageMeter", "UsageScope", "create_llm", "load_prompt",
           "run_sync"]
