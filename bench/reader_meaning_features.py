"""What sentence vectors buy the reader beside its trained model (issue 59: sentence vectors are
a quarter of a first build; the trained reader might not need them).

Two of the reader's features read sentence vectors: `semantic` (the sentence's e5 cosine to the
question) and `semantic_context` (with its neighbours). From `bench/reader_fit.py --cache`'s
covidqa-dev candidates, the features' weights are refitted on the fit half with and without those
two, the model reads each question's 10 best by each set of weights (as the reader does), its one
weight is fitted on the held quarter, and the best sentence is scored on every half. Today's
weights (reader.py) are shown beside them.

    python bench/reader_meaning_features.py --covidqa ../shared/bench-data/covidqa-dev --cache W/candidates.pkl
"""

from __future__ import annotations

import argparse
import pickle
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "training" / "reader"))
from data import covidqa_validation  # noqa: E402
from reader_fit import first_holds, fit_features, fit_model_scale  # noqa: E402

from monjyu.engines.cross_encoder import shared_reader_model  # noqa: E402
from monjyu.engines.reader import FEATURES, WEIGHTS, model_column  # noqa: E402

MEANING = ("semantic", "semantic_context")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--covidqa", type=Path, required=True)
    ap.add_argument("--cache", type=Path, required=True, help="bench/reader_fit.py --cache's pickle (fit and test)")
    ap.add_argument("--candidates", type=int, default=10, help="the sentences the model reads per question")
    ap.add_argument("--l2", type=float, default=1e-3)
    args = ap.parse_args()
    rows = pickle.loads(args.cache.read_bytes())
    held = covidqa_validation(args.covidqa)
    rows["held"] = [r for r in rows["fit"] if r["doc"] in held]
    model = shared_reader_model()
    width = len(FEATURES)

    def read(weights: np.ndarray, mask: np.ndarray) -> tuple[float, dict[str, tuple[float, float]]]:
        """The model's weight fitted on the held quarter; per half, the best sentence holds the
        gold: (features alone, features and model)."""
        halves = {}
        for half in ("fit", "held", "test"):
            halves[half] = []
            for r in rows[half]:
                x = r["X"][:, :width] * mask
                column = model_column(model, r["question"], r["quotes"], x @ weights, args.candidates)
                halves[half].append(dict(r, X=np.hstack([x, column[:, None]])))
        scale = fit_model_scale(weights, halves["held"], args.l2)
        both, alone = np.append(weights, scale), np.append(weights, 0.0)
        return scale, {h: (first_holds(alone, rs, len(rs)), first_holds(both, rs, len(rs)))
                                 for h, rs in halves.items()}

    def refit(mask: np.ndarray) -> np.ndarray:
        return fit_features([dict(r, X=r["X"][:, :width] * mask) for r in rows["fit"]], args.l2)

    every = np.ones(width)
    without = np.array([0.0 if name in MEANING else 1.0 for name in FEATURES])
    print(f"{len(rows['fit'])} fit-half questions ({len(rows['held'])} held), {len(rows['test'])} test-half; "
          f"best sentence holds the gold, features alone / with the model")
    for label, weights, mask in (("reader.py's weights", WEIGHTS, every), ("refitted, every feature", refit(every), every),
                                 ("refitted, without sentence vectors", refit(without), without)):
        scale, figures = read(weights, mask)
        print(f"{label:36s} model weight {scale:.3f}  " + "  ".join(
            f"{h} {a:.3f} / {b:.3f}" for h, (a, b) in figures.items()))


if __name__ == "__main__":
    main()
