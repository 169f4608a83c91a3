"""The default e5 (embedding.provider: e5openvino: every index test runs it end to end): vectors close
to e5numpy's on either of its runtimes, ONNX Runtime's integer products exact, and no OpenVINO
telemetry loaded or sent."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np

import pytest

from monjyu.embed.e5_onnx import E5TokenInt8Model, _encoder_graph, _GraphWriter, _token_int8_dense
from monjyu.embed.e5_openvino import E5OpenVinoModel, OpenVinoE5Embedder, openvino_has_int8_products, products_in_int8

from .test_e5_onnx import LONG, TEXTS, assert_close_to_float32


def test_vectors_agree_with_float32():
    assert_close_to_float32(OpenVinoE5Embedder(), "e5openvino-int8-", min_cosine=0.99)


def test_each_runtime_gives_vectors_close_to_float32_under_one_id():
    """OpenVINO where it has int8 products for the CPU, else ONNX Runtime's: one id, each close to
    e5numpy, so an index built on one CPU is searched on another."""
    default = OpenVinoE5Embedder()
    assert isinstance(default._model, E5OpenVinoModel if openvino_has_int8_products() else E5TokenInt8Model)
    ids = set()
    for runtime in ("openvino", "onnxruntime"):
        embedder = OpenVinoE5Embedder(threads=1, runtime=runtime)
        assert_close_to_float32(embedder, "e5openvino-int8-", min_cosine=0.99)
        ids.add(embedder.id)
    assert ids == {default.id}
    with pytest.raises(ValueError, match="runtime must be"):
        OpenVinoE5Embedder(runtime="cuda")
    with pytest.raises(TypeError, match="int8.*OpenVINO"):
        OpenVinoE5Embedder(runtime="onnxruntime", int8=True)


def test_token_int8_products_are_exact_integer_products():
    """Each token quantized over its own range (zero point taken out afterwards), 7-bit weights: ONNX
    Runtime's product equals the same integers multiplied exactly, extreme rows included (8-bit
    weights would overflow the int16 pair sums of CPUs without VNNI there)."""
    import onnxruntime as ort
    from onnx import TensorProto, helper

    rng = np.random.default_rng(0)
    x = (rng.standard_normal((40, 384)) * rng.uniform(0.1, 20, (40, 1))).astype(np.float32)
    x[0], x[1], x[2] = 50.0, -50.0, np.linspace(-3, 90, 384)        # one-signed rows, a skewed row
    weight = (rng.standard_normal((384, 96)) * 0.05).astype(np.float32)
    bias = rng.standard_normal(96).astype(np.float32)
    g = _GraphWriter()
    _token_int8_dense(g, "x", weight, bias, "y")
    model = helper.make_model(helper.make_graph(
        g.nodes, "dense", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["T", 384])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["T", 96])], g.inits),
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    got = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]

    hi, lo = np.maximum(x.max(1, keepdims=True), 0), np.minimum(x.min(1, keepdims=True), 0)
    step = (hi - lo) / 255
    zero = np.round(-lo / step)
    xq = np.clip(np.round(x / step) + zero, 0, 255) - zero                          # integers in [-255, 255]
    scale = np.abs(weight).max(0) / 63
    wq = np.clip(np.round(weight / scale), -63, 63)
    expected = (xq.astype(np.float64) @ wq) * step * scale + bias
    assert np.abs(got - expected).max() < 1e-4 * np.abs(expected).max()
    assert np.abs(got - (x @ weight + bias)).max() < 0.03 * np.abs(expected).max()  # and near the float product


def test_the_token_int8_encoder_is_written_with_unique_constants():
    from monjyu.embed.e5_numpy import E5Weights, default_model_path

    model = _encoder_graph(E5Weights(default_model_path()), _token_int8_dense)
    names = [i.name for i in model.graph.initializer]
    assert len(names) == len(set(names))
    assert sum(n.op_type == "MatMulIntegerToFloat" for n in model.graph.node) == 4 * 12


def test_int8_weights_widened_once_give_the_vectors_of_the_int8_products():
    """The encoder with its int8 weights as float constants (what a CPU with AMX runs) is the same
    model: close to e5numpy everywhere, and on a CPU with AMX, where the int8 products are widened
    to bf16 at every call, the very same vectors."""
    vectors = {}
    for int8 in (True, False):
        embedder = OpenVinoE5Embedder(threads=1, runtime="openvino", int8=int8)
        assert_close_to_float32(embedder, "e5openvino-int8-", min_cosine=0.99)
        vectors[int8] = embedder.embed_passages(TEXTS + [LONG])
    if not products_in_int8():
        assert np.array_equal(vectors[True], vectors[False])
    assert (vectors[True] * vectors[False]).sum(axis=1).min() > 0.99  # as each is to e5numpy


def test_openvino_loads_without_its_telemetry(tmp_path):
    """OpenVINO's package init would send an analytics event from a forked process and write a
    client id under ~/intel; through MONJYU it uses its converter's no-op stub, forks nothing and
    writes nothing."""
    code = ("import os\n"
            "def refuse(): raise SystemExit('forked')\n"
            "os.fork = refuse\n"
            "from monjyu.embed.e5_openvino import OpenVinoE5Embedder\n"
            "assert OpenVinoE5Embedder(runtime='openvino').embed_queries(['hello']).shape == (1, 384)\n"
            "import openvino.tools.ovc.telemetry_utils as t, sys\n"
            "assert t.tm.__name__.endswith('telemetry_stub'), t.tm\n"
            "import openvino_telemetry\n"  # importable again afterwards, for whoever needs it
            "print('ok')\n")
    env = {**os.environ, "HOME": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]
    assert not (tmp_path / "intel").exists() and "fork" not in out.stderr

