"""Where the default embedder's time goes, and how far it is from e5numpy, on real paper units.

    python bench/embedder_profile.py --docs papers-pdf=../shared/bench-data/papers-pdf \
        --docs covidqa-dev=../shared/bench-data/covidqa-dev/docs [--sample 300]

Each folder is loaded and chunked as a build does it; `--sample` of its units (seeded) are
embedded from scratch (no cache) by e5numpy and by the default embedder (e5openvino; on a CPU
with AMX also with the int8 products it runs elsewhere; on a CPU where OpenVINO has no int8
products, so that the default runs ONNX Runtime's, also on OpenVINO), best of two runs each, on
every core: passages/s, tokens/s, the ratio, and the cosine between the two embedders' vectors.
Then the default encoder's operators on one thread over the same units in the embedder's own
batches, as its runtime times them (OpenVINO's PERF_COUNT, ONNX Runtime's profiler): the share of
the weight products (int8, or widened once where the CPU has AMX), of attention (OpenVINO: the fused
subgraph of its products and softmax; ONNX Runtime: its products, softmax and transposes) and of
the rest.
Nothing else should run on the machine meanwhile.
"""

from __future__ import annotations

import argparse
import collections
import sys
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from build_profile import cpu  # noqa: E402


def sample_units(folder: Path, n: int) -> list[str]:
    """What a build embeds for the folder's units (every kind), `n` of them drawn with seed 0."""
    from monjyu.config import MonjyuConfig
    from monjyu.index.distributed import LoadFailure, load_source

    config, texts = MonjyuConfig(), []
    for path in sorted(p for p in folder.iterdir() if p.is_file()):
        loaded = load_source(path, path.name, config)
        if not isinstance(loaded, LoadFailure):
            texts += [u.embedding_text for u in loaded[1]]
    picked = np.random.default_rng(0).choice(len(texts), min(n, len(texts)), replace=False)
    return [texts[i] for i in picked]


def speed(embedder, texts: list[str]) -> tuple[float, np.ndarray]:
    embedder.embed_passages(texts[:8])  # warm-up: lazy loads, thread pools
    best, vectors = float("inf"), None
    for _ in range(2):
        t0 = time.perf_counter()
        vectors = embedder.embed_passages(texts)
        best = min(best, time.perf_counter() - t0)
    return best, vectors


def token_windows(model, texts: list[str]) -> list[tuple[int, list[int]]]:
    """The windows the embedder runs for `texts` (as `E5NumpyModel.embed` cuts them)."""
    wmax, windows = model.w.MAXP - 2, []
    for i, text in enumerate(texts):
        content = model.tok.role_ids(text, False)
        windows += [(i, content[a * wmax:(a + 1) * wmax]) for a in range(max(1, -(-len(content) // wmax)))]
    return windows


def onnxruntime_shares(texts: list[str]) -> dict[str, float]:
    """Seconds per operator kind over the units: ONNX Runtime's integer-product encoder on one thread,
    profiled, run on the embedder's own windows and batches."""
    import json
    import tempfile

    import onnxruntime as ort

    from monjyu.embed.e5_numpy import default_model_path
    from monjyu.embed.e5_onnx import E5TokenInt8Model

    model = E5TokenInt8Model(threads=1)
    options = ort.SessionOptions()
    options.intra_op_num_threads, options.enable_profiling, options.log_severity_level = 1, True, 3
    options.profile_file_prefix = str(Path(tempfile.mkdtemp()) / "encoder")
    model._session = ort.InferenceSession(model._encoder(default_model_path()), options,
                                          providers=["CPUExecutionProvider"])
    windows = token_windows(model, texts)
    for batch in model._plan(windows):
        model._run_batch([windows[j] for j in batch])
    kinds = {"MatMulIntegerToFloat": "weight products", "MatMul": "attention (products, softmax)",
             "FusedMatMul": "attention (products, softmax)", "Softmax": "attention (products, softmax)",
             "Transpose": "attention (products, softmax)"}
    totals: collections.Counter = collections.Counter()
    for event in json.load(open(model._session.end_profiling(), encoding="utf-8")):
        if event.get("cat") == "Node" and event["name"].endswith("_kernel_time"):
            totals[kinds.get(event["args"]["op_name"], "other")] += event["dur"] / 1e6
    return dict(totals)


def operator_shares(texts: list[str]) -> dict[str, float]:
    """Seconds per operator kind over the units: the default embedder's encoder on one thread,
    compiled with OpenVINO's counters, run on the embedder's own windows and batches."""
    from monjyu.embed.e5_openvino import ACTIVATION_GROUP, E5OpenVinoModel, encoder_model, import_openvino

    model = E5OpenVinoModel(threads=1)
    core = import_openvino().Core()
    bf16 = "BF16" in core.get_property("CPU", "OPTIMIZATION_CAPABILITIES")
    model._compiled = core.compile_model(encoder_model(model.w), "CPU", {  # the embedder's settings, counted
        "NUM_STREAMS": "1", "INFERENCE_NUM_THREADS": "1", "INFERENCE_PRECISION_HINT": "bf16" if bf16 else "f32",
        "DYNAMIC_QUANTIZATION_GROUP_SIZE": str(ACTIVATION_GROUP), "PERF_COUNT": "YES"})
    model._requests = threading.local()
    windows = token_windows(model, texts)
    totals: collections.Counter = collections.Counter()
    for batch in model._plan(windows):
        model._run_batch([windows[j] for j in batch])
        for op in model._requests.request.get_profiling_info():
            kind = {"FullyConnectedCompressed": "weight products", "FullyConnected": "weight products",
                    "Subgraph": "attention (products, softmax)"}.get(op.node_type, "other")
            totals[kind] += op.real_time.total_seconds()
    return dict(totals)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", action="append", required=True, help="NAME=FOLDER, repeatable")
    ap.add_argument("--sample", type=int, default=300)
    args = ap.parse_args()
    from monjyu.embed.e5_numpy import NumpyE5Embedder
    from monjyu.embed.e5_openvino import OpenVinoE5Embedder, openvino_has_int8_products, products_in_int8

    print(cpu())
    embedders = {"e5numpy": NumpyE5Embedder(), "e5openvino (default)": OpenVinoE5Embedder()}
    on_openvino = openvino_has_int8_products()
    print("the default's runtime here:", "OpenVINO" if on_openvino else "ONNX Runtime (OpenVINO has no int8 products)")
    if not products_in_int8():  # a CPU with AMX: the int8 products it runs elsewhere, beside
        embedders["e5openvino, int8 products"] = OpenVinoE5Embedder(int8=True)
    if not on_openvino:  # what OpenVINO gives on this CPU, beside
        embedders["e5openvino on OpenVINO"] = OpenVinoE5Embedder(runtime="openvino")
    w = embedders["e5numpy"]._model.w
    weights = w.NL * (4 * w.H * w.H + 2 * w.H * w.FF)  # the encoder's weight products, multiply-adds a token
    for spec in args.docs:
        name, _, folder = spec.partition("=")
        texts = sample_units(Path(folder), args.sample)
        tokens = sum(embedders["e5numpy"].token_count(t) for t in texts)
        runs = {label: speed(e, texts) for label, e in embedders.items()}
        (base_s, base_v), (ours_s, ours_v) = runs["e5numpy"], runs["e5openvino (default)"]
        cosine = np.sum(base_v * ours_v, axis=1)
        print(f"\n{name}: {len(texts)} units, {tokens / len(texts):.0f} tokens on average")
        for label, (seconds, _) in runs.items():
            print(f"  {label:22} {len(texts) / seconds:7.1f} passages/s {tokens / seconds:8.0f} tokens/s")
        print(f"  ratio {base_s / ours_s:.2f}x; cosine to e5numpy mean {cosine.mean():.5f}, min {cosine.min():.5f}")
        if "e5openvino on OpenVINO" in runs:
            other = np.sum(base_v * runs["e5openvino on OpenVINO"][1], axis=1)
            print(f"  on OpenVINO: cosine to e5numpy mean {other.mean():.5f}, min {other.min():.5f}")
        if "e5openvino, int8 products" in runs:
            int8_s, int8_v = runs["e5openvino, int8 products"]
            print(f"  the default against the int8 products: {int8_s / ours_s:.2f}x, the same vectors: "
                  f"{np.array_equal(int8_v, ours_v)} (largest difference {np.abs(int8_v - ours_v).max():.2g})")
        shares = operator_shares(texts) if on_openvino else onnxruntime_shares(texts)
        total = sum(shares.values())
        runtime = "OpenVINO" if on_openvino else "ONNX Runtime"
        print(f"  one thread, operators as {runtime} times them ({total:.2f} s, {tokens / total:.0f} tokens/s):")
        for kind, seconds in sorted(shares.items(), key=lambda kv: -kv[1]):
            print(f"    {kind:30} {seconds:6.2f} s {100 * seconds / total:5.1f} %")
        products = 2 * weights * tokens / shares["weight products"] / 1e9
        print(f"  the weight products at {products:.0f} GOP/s on one core; without attention and the rest, "
              f"{tokens / shares['weight products']:.0f} tokens/s a thread at most")


if __name__ == "__main__":
    main()
