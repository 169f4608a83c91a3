"""The OpenVINO e5 (embedding.provider: e5openvino, the default: every index test runs it end to
end): vectors close to e5numpy's, and no telemetry loaded or sent."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np

from monjyu.embed.e5_openvino import OpenVinoE5Embedder, products_in_int8

from .test_e5_onnx import LONG, TEXTS, assert_close_to_float32


def test_vectors_agree_with_float32():
    assert_close_to_float32(OpenVinoE5Embedder(), "e5openvino-int8-", min_cosine=0.99)


def test_int8_weights_widened_once_give_the_vectors_of_the_int8_products():
    """The encoder with its int8 weights as float constants (what a CPU with AMX runs) is the same
    model: close to e5numpy everywhere, and on a CPU with AMX, where the int8 products are widened
    to bf16 at every call, the very same vectors."""
    vectors = {}
    for int8 in (True, False):
        embedder = OpenVinoE5Embedder(threads=1, int8=int8)
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
            "assert OpenVinoE5Embedder().embed_queries(['hello']).shape == (1, 384)\n"
            "import openvino.tools.ovc.telemetry_utils as t, sys\n"
            "assert t.tm.__name__.endswith('telemetry_stub'), t.tm\n"
            "import openvino_telemetry\n"  # importable again afterwards, for whoever needs it
            "print('ok')\n")
    env = {**os.environ, "HOME": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]
    assert not (tmp_path / "intel").exists() and "fork" not in out.stderr

