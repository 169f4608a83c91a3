"""The plain-RAG reference of bench-data/covidqa-dev, scored by monjyu.eval.qa (the engine's own QA scoring).

    python bench/qa_reference.py                       # bm25s, e5, RRF
    python bench/qa_reference.py --no-dense --json     # bm25s only, JSON out
    python bench/qa_reference.py --monjyu hybrid,keyword   # and MONJYU's modes, in the same run

Every docs/*.txt is cut as is into fixed windows of 200 whitespace words overlapping by 50 (a new
window starts every 150 words until one reaches the end of the paper: 1,211 windows), ranked by
(a) bm25s with the English PyStemmer stemmer and English stop words, (b) multilingual-e5-small
(the project's e5numpy embedder) exact cosine, (c) RRF (k = 60) of the top 50 of each, equal scores
kept in bm25s order. Those two RRF details reproduce the README's row exactly; they matter: fusing
the full rankings gives ans@1 0.543 (not 0.558), and ties broken e5-first give ans@1 0.532, since
windows ranked (1, 2) and (2, 1) score the same and ties at rank 1 are common. Window
and query vectors are cached by content hash in ~/.cache/monjyu-bench/embeddings.sqlite, so only
the first dense run embeds (~1,200 windows, a few minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from monjyu.eval.qa import QADataset, evaluate_qa

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "bench-data" / "covidqa-dev"
CACHE = Path.home() / ".cache" / "monjyu-bench" / "embeddings.sqlite"
KEYS = ["doc@1", "doc@5", "ans@1", "ans@5", "ans@10", "mean_unit_words", "latency_ms_p50"]


def windows(text: str, size: int, overlap: int) -> list[str]:
    """Fixed word windows; the last one ends at the paper's end (no window lies wholly inside the
    previous one's overlap)."""
    words = text.split()
    step = size - overlap
    out, start = [], 0
    while True:
        out.append(" ".join(words[start:start + size]))
        if start + size >= len(words):
            return out
        start += step


def load_windows(docs_dir: Path, size: int, overlap: int) -> tuple[list[str], list[str]]:
    files = sorted(docs_dir.glob("*.txt"))
    if not files:
        sys.exit(f"no docs/*.txt under {docs_dir}")
    doc_ids, texts = [], []
    for f in files:
        for w in windows(f.read_text(encoding="utf-8"), size, overlap):
            doc_ids.append(f.name)
            texts.append(w)
    return doc_ids, texts


class Bm25:
    def __init__(self, texts: list[str]):
        import bm25s
        import Stemmer

        self._bm25s = bm25s
        self.stemmer = Stemmer.Stemmer("english")
        self.retriever = bm25s.BM25()
        self.retriever.index(bm25s.tokenize(texts, stopwords="en", stemmer=self.stemmer, show_progress=False),
                             show_progress=False)
        self.n = len(texts)

    def rank(self, question: str, k: int) -> list[int]:
        tokens = self._bm25s.tokenize([question], stopwords="en", stemmer=self.stemmer, show_progress=False)
        docs, _ = self.retriever.retrieve(tokens, k=min(k, self.n), show_progress=False)
        return [int(i) for i in docs[0]]


class Dense:
    """Exact cosine over e5 window vectors; query vectors embedded up front (and cached), so the
    per-question latency is the scoring only."""

    def __init__(self, texts: list[str], questions: list[str]):
        from monjyu.config import EmbeddingConfig
        from monjyu.embed import CachedEmbedder, EmbeddingCache, create_embedder

        CACHE.parent.mkdir(parents=True, exist_ok=True)
        self.cache = EmbeddingCache(CACHE)
        inner = create_embedder(EmbeddingConfig(provider="e5numpy"))
        emb = CachedEmbedder(inner, self.cache)
        t0 = time.perf_counter()
        done = [0]

        def tick(n: int) -> None:
            done[0] += n
            print(f"\r  embedding windows {done[0]}/{len(texts)}", end="", file=sys.stderr, flush=True)

        self.matrix = emb.embed_passages(texts, progress=tick)
        print(f"\n  windows: {emb.hits} cached, {emb.misses} embedded in {time.perf_counter() - t0:.0f} s",
              file=sys.stderr)
        self.queries = self._embed_queries(inner, questions)

    def _embed_queries(self, inner, questions: list[str]) -> dict[str, np.ndarray]:
        """CachedEmbedder caches passages only; queries go through the same cache with role "query"."""
        from monjyu.embed import EmbeddingCache

        unique = list(dict.fromkeys(questions))
        keys = [EmbeddingCache.key(inner.id, "query", q) for q in unique]
        found = self.cache.get_many(keys)
        todo = [i for i, k in enumerate(keys) if k not in found]
        t0 = time.perf_counter()
        for s in range(0, len(todo), 64):
            idx = todo[s:s + 64]
            vecs = inner.embed_queries([unique[i] for i in idx])
            self.cache.put_many([(keys[i], v) for i, v in zip(idx, vecs)])
            found.update({keys[i]: v for i, v in zip(idx, vecs)})
        print(f"  queries: {len(unique) - len(todo)} cached, {len(todo)} embedded in "
              f"{time.perf_counter() - t0:.0f} s", file=sys.stderr)
        return {q: found[k] for q, k in zip(unique, keys)}

    def rank(self, question: str, k: int) -> list[int]:
        scores = self.matrix @ self.queries[question]
        order = np.argsort(-scores, kind="stable")
        return [int(i) for i in order[:k]]


def rrf(rankings: list[list[int]], k: int, rrf_k: int = 60) -> list[int]:
    """Reciprocal rank fusion; equal scores keep first-seen order (the first list's ranking first)."""
    scores: dict[int, float] = {}
    for ranking in rankings:
        for r, i in enumerate(ranking, 1):
            scores[i] = scores.get(i, 0.0) + 1.0 / (rrf_k + r)
    return sorted(scores, key=lambda i: -scores[i])[:k]  # stable sort: ties stay in insertion order


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="QA folder: questions.jsonl and docs/*.txt")
    ap.add_argument("--window", type=int, default=200, help="words per window")
    ap.add_argument("--overlap", type=int, default=50, help="words shared by consecutive windows")
    ap.add_argument("--candidates", type=int, default=50, help="hits taken from each ranking for RRF")
    ap.add_argument("--no-dense", action="store_true", help="bm25s only (no embeddings, no RRF)")
    ap.add_argument("--monjyu", default="", help="also run `monjyu eval --qa` with these comma-separated modes")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if not 0 <= args.overlap < args.window:
        sys.exit("--overlap must be at least 0 and less than --window")

    dataset = QADataset.load(args.data)
    doc_ids, texts = load_windows(dataset.docs_dir, args.window, args.overlap)
    n = len(texts)
    rankers = {"bm25s": Bm25(texts)}
    if not args.no_dense:
        rankers["e5"] = Dense(texts, [q.question for q in dataset.questions])

    def search(question: str, mode: str, k: int) -> list[tuple[str, str]]:
        if mode == "rrf":  # bm25s listed first: it wins ties
            c = max(args.candidates, k)
            order = rrf([rankers["bm25s"].rank(question, c), rankers["e5"].rank(question, c)], k)
        else:
            order = rankers[mode].rank(question, k)
        return [(doc_ids[i], texts[i]) for i in order]

    modes = list(rankers) + ([] if args.no_dense else ["rrf"])
    results = evaluate_qa(dataset, search, modes)
    if args.monjyu:  # the engine through its own CLI, in the same run as the reference
        import subprocess

        monjyu = Path(sys.executable).with_name("monjyu")
        out = subprocess.run([str(monjyu), "eval", "--qa", str(dataset.path), "--docs", str(dataset.docs_dir),
                              "--mode", args.monjyu, "--json"], capture_output=True, text=True, check=True).stdout
        results.update({f"monjyu {k}": v for k, v in json.loads(out).items()})
    summary = {"data": str(args.data), "windows": n, "window": args.window, "overlap": args.overlap,
               "rrf_candidates": None if args.no_dense else args.candidates,
               "mean_window_words": sum(len(t.split()) for t in texts) / n, "results": results}
    if args.json:
        print(json.dumps(summary, indent=2))
        return
    print(f"{args.data}: {len(dataset.questions)} questions, {n} windows of {args.window} words "
          f"(overlap {args.overlap}), mean {summary['mean_window_words']:.1f} words per window")
    print(f"{'ranking':<16}" + "".join(f"{k:>16}" for k in KEYS))
    for mode, m in results.items():
        print(f"{mode:<16}" + "".join(f"{m[k]:>16.3f}" if k != "latency_ms_p50" and k != "mean_unit_words"
                                     else f"{m[k]:>16.1f}" for k in KEYS))


if __name__ == "__main__":
    main()
