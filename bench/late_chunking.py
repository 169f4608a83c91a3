"""Sentence vectors pooled from their unit's own pass ("late chunking") instead of a pass of their
own: what retrieval makes of them (issue 59: the sentence pass is a quarter of a first build).

Each default-kind unit of the index is run through the default embedder's encoder once more, as
the build ran it (its stored vector is checked against the mean of the token states); a sentence's
late vector is the mean of its own tokens' states there (averaged over the units that hold it,
since units overlap). `monjyu eval --mode hybrid` then runs twice on the same index: with the
sentence vectors the build made, and with the late ones in their place (the evidence rerank and the
reader read them through the embedding cache).

    python bench/late_chunking.py --index IDX --qa ../shared/bench-data/covidqa-dev/questions.jsonl
    python bench/late_chunking.py --index IDX --beir ../shared/bench-data/2wiki
"""

from __future__ import annotations

import argparse
import json
import pickle
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np


def late_vectors(index: Path) -> dict[str, np.ndarray]:
    import lancedb

    from monjyu.embed.e5_openvino import E5OpenVinoModel
    from monjyu.ingest.sentences import statement_spans
    from monjyu.types import DEFAULT_KINDS

    generation = sorted((index / "generations").glob("g*"))[-1]
    table = lancedb.connect(str(generation / "lancedb")).open_table("text_units").to_arrow()
    model = E5OpenVinoModel()
    tok, request = model.tok, model._compiled.create_infer_request()

    def tokens(text: str) -> int:
        return len(tok.role_ids(text, False))

    units = []  # (content ids, [(sentence, first token, end token)], stored vector)
    for text, title, section, kind, flat, vector in zip(*(table[k].to_pylist() for k in (
            "text", "title", "section", "kind", "sentences", "vector"))):
        head = "\n".join(p for p in (title, section) if p)
        prefix = head + "\n" if head else ""
        content = tok.role_ids(prefix + text, False)
        if kind not in DEFAULT_KINDS or len(content) > model.w.MAXP - 2:
            continue
        spans = statement_spans(text, list(zip(flat[0::2], flat[1::2])) if flat else None)
        marks = [(text[a:b], tokens(prefix + text[:a].rstrip()), tokens(prefix + text[:b].rstrip())) for a, b in spans]
        units.append((content, [m for m in marks if m[2] > m[1]], np.asarray(vector, dtype=np.float32)))
    units.sort(key=lambda u: len(u[0]))
    late: dict[str, list[np.ndarray]] = {}
    agreement = []
    for start in range(0, len(units), 8):
        batch = units[start:start + 8]
        length = max(len(c) for c, _, _ in batch) + 2
        ids = np.full((len(batch), length), model.w.pad, dtype=np.int64)
        lengths = np.array([len(c) + 2 for c, _, _ in batch])
        for r, (content, _, _) in enumerate(batch):
            ids[r, :len(content) + 2] = [tok.bos, *content, tok.eos]
        x, mask, _ = model._encoder_input(ids, lengths)
        hidden = request.infer({"x": x, "mask": mask})[0]
        for r, (_, marks, stored) in enumerate(batch):
            pooled = hidden[r, :lengths[r]].mean(axis=0)
            agreement.append(float(pooled @ stored / np.linalg.norm(pooled)))
            for sentence, a, b in marks:
                v = hidden[r, 1 + a:1 + b].mean(axis=0)
                late.setdefault(sentence, []).append(v / np.linalg.norm(v))
    print(f"{len(units)} units run again (their vectors' cosine to the stored ones: min {min(agreement):.5f}); "
          f"{len(late)} sentences", flush=True)
    return {s: (np.mean(vs, axis=0) / np.linalg.norm(np.mean(vs, axis=0))).astype(np.float32) for s, vs in late.items()}


def serve_eval(vectors: str, argv: list[str]) -> None:
    """In a process of its own: `monjyu eval`, the cached embedder answering sentences from
    `vectors` (a pickle; "": as built)."""
    from monjyu.cli import main
    from monjyu.embed import cache

    late = pickle.loads(Path(vectors).read_bytes()) if vectors else {}
    cached = cache.CachedEmbedder.embed_passages

    def embed_passages(self, texts, progress=None):
        out = cached(self, texts, progress)
        for i, text in enumerate(texts):
            if text in late:
                out[i] = late[text]
        return out

    cache.CachedEmbedder.embed_passages = embed_passages
    sys.argv = ["monjyu", "eval", *argv]
    main()


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--serve-eval":
        serve_eval(sys.argv[2], sys.argv[3:])
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--index", type=Path, required=True)
    ap.add_argument("--qa", help="covidqa-style questions (monjyu eval --qa)")
    ap.add_argument("--beir", help="a BEIR folder (monjyu eval --beir)")
    args = ap.parse_args()
    argv = ["--index", str(args.index), "--mode", "hybrid", "--json"] + (
        ["--qa", args.qa] if args.qa else ["--beir", args.beir, "--by", "multihop"])
    with tempfile.TemporaryDirectory() as tmp:
        vectors = Path(tmp) / "late.pkl"
        vectors.write_bytes(pickle.dumps(late_vectors(args.index)))
        for label, given in (("sentence vectors of their own", ""), ("late chunking", str(vectors))):
            out = subprocess.run([sys.executable, __file__, "--serve-eval", given, *argv], capture_output=True,
                                 text=True, check=True).stdout
            figures = json.loads(out[out.index("{"):out.rindex("}") + 1])["hybrid"]
            print(f"{label:30s}", "  ".join(f"{k} {v:.3f}" for k, v in figures.items()
                                            if k.split("@")[0] in ("ans", "doc", "recall", "complete")))


if __name__ == "__main__":
    main()
