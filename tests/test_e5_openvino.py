"""The OpenVINO e5 (embedding.provider: e5openvino, the default: every index test runs it end to
end): vectors close to e5numpy's, and no telemetry loaded or sent."""

from __future__ import annotations

import os
import subprocess
import sys

from monjyu.embed.e5_openvino import OpenVinoE5Embedder

from .test_e5_onnx import assert_close_to_float32


def test_vectors_agree_with_float32():
    assert_close_to_float32(OpenVinoE5Embedder(), "e5openvino-int8-", min_cosine=0.99)


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

