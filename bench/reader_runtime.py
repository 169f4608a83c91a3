"""The reader model on two runtimes, against the float model its file holds.

The shipped reader is one int8 ONNX file. onnxruntime reads it as it is (each product quantizes a
batch's activations to one uint8 range); OpenVINO, as the reader runs it, is given the same int8
weights and quantizes activations in groups of 128, with bf16 elsewhere where the CPU has it.
Both are compared with the float computation of the same weights (cross_encoder.reference_logits)
on the sentences the reader gives the model: each question's best `--candidates` by the features,
from the candidates `bench/reader_fit.py --cache` keeps. Prints, per runtime: the correlation of
its log-odds with the float ones over all pairs, their largest difference, how often its best
sentence is the float model's, and milliseconds per question.

    python bench/reader_runtime.py --cache W/candidates.pkl [--half test] [--questions 100]
"""

from __future__ import annotations

import argparse
import pickle
import random
import time

import numpy as np

from monjyu.engines.cross_encoder import (model_dir, pad_batch, pair_ids, question_ids, reference_logits,
                                          shared_reader_model)
from monjyu.engines.reader import FEATURES, WEIGHTS
from monjyu.runtime import cpu_cores

BATCH_PAIRS = 32


def scores_in_batches(tok, question: str, sentences: list[str], logits) -> np.ndarray:
    """Each (question, sentence) pair's log-odds from `logits(ids, mask)`, in batches of up to
    BATCH_PAIRS pairs of similar length, returned in the sentences' order (how the reader ran the
    model until 2026-11-29; it now infers each pair alone)."""
    q = question_ids(tok, question)
    rows = [pair_ids(tok, q, s) for s in sentences]
    order = sorted(range(len(rows)), key=lambda i: len(rows[i]))
    out = np.empty(len(rows), dtype=np.float32)
    for a in range(0, len(order), BATCH_PAIRS):
        part = order[a:a + BATCH_PAIRS]
        ids, mask = pad_batch([rows[i] for i in part], tok.eos)
        out[part] = logits(ids, mask)
    return out


def onnxruntime_scorer(model):
    """Scores as the reader computed them before it ran on OpenVINO: the file on onnxruntime, in
    the reader's batches."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = min(4, cpu_cores())
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(str(model_dir() / "reader.int8.onnx"), options,
                                   providers=["CPUExecutionProvider"])

    def logits(ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        embeddings = model.words.word_rows(ids).astype(np.float32)
        return session.run(None, {"embeddings": embeddings, "mask": mask})[0].reshape(-1)

    return lambda question, sentences: scores_in_batches(model.tok, question, sentences, logits)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cache", required=True, help="bench/reader_fit.py --cache's pickle")
    ap.add_argument("--half", choices=["fit", "test"], default="test")
    ap.add_argument("--questions", type=int, default=100, help="a seeded sample of the half's questions")
    ap.add_argument("--candidates", type=int, default=20, help="the sentences the model reads per question")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    with open(args.cache, "rb") as f:
        rows = pickle.load(f)[args.half]
    rows = random.Random(args.seed).sample(rows, min(args.questions, len(rows)))
    model = shared_reader_model()
    runtimes = {"openvino (the reader's)": model.scores, "onnxruntime": onnxruntime_scorer(model)}
    tasks = []
    for r in rows:
        order = np.argsort(-(r["X"][:, :len(FEATURES)] @ WEIGHTS), kind="stable")[:args.candidates]
        tasks.append((r["question"], [r["quotes"][i] for i in order]))
    exact = []
    for question, sentences in tasks:
        q = question_ids(model.tok, question)
        ids, mask = pad_batch([pair_ids(model.tok, q, s) for s in sentences], model.tok.eos)
        exact.append(reference_logits(model.weights, model.words, ids, mask))
    print(f"{len(tasks)} {args.half}-half questions, {sum(len(s) for _, s in tasks)} pairs, {cpu_cores()} cores")
    for name, scores in runtimes.items():
        scores(*tasks[0])  # compiled and warm
        t0 = time.perf_counter()
        got = [scores(question, sentences) for question, sentences in tasks]
        ms = (time.perf_counter() - t0) / len(tasks) * 1000
        a, b = np.concatenate(got), np.concatenate(exact)
        same_top = np.mean([int(np.argmax(g)) == int(np.argmax(e)) for g, e in zip(got, exact)])
        print(f"{name:24s} correlation with float {np.corrcoef(a, b)[0, 1]:.4f}  largest difference "
              f"{np.abs(a - b).max():.3f}  best sentence as float's {same_top:.3f}  {ms:.0f} ms per question")


if __name__ == "__main__":
    main()
