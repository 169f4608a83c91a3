"""Fit the offline reader's sentence model (engines/reader.py: FEATURES, WEIGHTS) on half of
covidqa-dev's papers and report it on the other half.

    python bench/reader_fit.py --covidqa ../shared/bench-data/covidqa-dev --index IDX

For every question the default search runs (no answer), the answer step's sources are taken as
the answer engine takes them, and every quotable sentence gets the reader's features and a label:
it holds a piece of the gold span (its 5 first-to-last consecutive words, or the whole span when
shorter). The model is a listwise logistic one (softmax over one question's sentences, the gold
sentences sharing the target, L2 0.1), fitted on the questions of `--half fit` papers
(answer_quality.py's split). Printed: the weights to paste into reader.py, and on both halves how
often the best sentence holds the gold span (what the answer's first sentence can reach), for the
fitted weights and for the ones in reader.py now.
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
from pathlib import Path

import numpy as np
from scipy.optimize import minimize

sys.path.insert(0, str(Path(__file__).parent))
from answer_quality import covidqa_questions  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "training" / "reader"))
from data import FOLDS, covidqa_folds, covidqa_validation  # noqa: E402

from monjyu import Monjyu, load_config  # noqa: E402
from monjyu.engines.context import select_sources  # noqa: E402
from monjyu.engines.reader import FEATURES, WEIGHTS, model_column, passage_quotes  # noqa: E402
from monjyu.eval.qa import answer_words, holds_answer  # noqa: E402
from monjyu.query import Query  # noqa: E402

PIECE = 5


def label(sentence: str, answers: list[str]) -> bool:
    hay = f" {' '.join(answer_words(sentence))} "
    for a in answers:
        words = answer_words(a)
        n = min(PIECE, len(words))
        if any(f" {' '.join(words[i:i + n])} " in hay for i in range(len(words) - n + 1)):
            return True
    return False


def collect(m: Monjyu, questions: list[dict]) -> list[dict]:
    """Each question's candidates as the feature reader has them: features, quotes, labels, and the
    sentence before each and its passage (what a model that reads context is given; a passage's
    list is shared by its candidates, and the pickle keeps it once)."""
    engine = m.workspace.answers()
    cfg = m.config.answer
    manifest = m.workspace.manifest()
    rows = []
    for q in questions:
        hits = m.search(q["question"], top_k=10, answer=False).hits
        sources = select_sources(hits, cfg.context_tokens, engine.count_tokens, cfg.max_sources)
        vector = m.workspace.current().embed_query(Query.of(q["question"]))
        cands = engine.reader.candidates(Query.of(q["question"]), vector, sources)
        if not cands:
            continue
        rows.append({"question": q["question"], "doc": q["doc"], "quotes": [c.quote for c in cands],
                     "before": [c.before for c in cands],
                     "passages": passage_quotes(cands),
                     "X": np.array([c.features for c in cands]),
                     "y": np.array([label(c.quote, q["answers"]) for c in cands]),
                     "holds": np.array([holds_answer(c.quote, q["answers"]) for c in cands])})
    return rows


def add_model_column(rows: list[dict], model, candidates: int) -> None:
    """The model's log-odds as a last column, as the reader computes it (reader.model_column)."""
    for r in rows:
        features = r["X"][:, :len(FEATURES)]
        column = model_column(model, r["question"], r["quotes"], features @ WEIGHTS, candidates, r.get("before"),
                              r.get("passages"))
        r["X"] = np.hstack([features, column[:, None]])


def listwise_loss(w: np.ndarray, rows: list[dict], l2: float) -> tuple[float, np.ndarray]:
    loss, grad = l2 * float(w @ w), 2 * l2 * w
    n = 0
    for r in rows:
        if not r["y"].any():
            continue
        z = r["X"] @ w
        z = z - z.max()
        p = np.exp(z) / np.exp(z).sum()
        t = r["y"] / r["y"].sum()
        loss -= float(t @ np.log(p + 1e-12))
        grad -= r["X"].T @ (t - p)
        n += 1
    return loss / max(n, 1), grad / max(n, 1)


def fit_features(rows: list[dict], l2: float) -> np.ndarray:
    """Every column's weight (features, and the model's where `rows` hold it) by the listwise loss."""
    return minimize(listwise_loss, np.zeros(rows[0]["X"].shape[1]), args=(rows, l2), jac=True, method="L-BFGS-B").x


def fit_model_scale(weights: np.ndarray, rows: list[dict], l2: float) -> float:
    """The model column's one weight beside fixed feature `weights` (the rows' last column)."""

    def loss(a: np.ndarray) -> tuple[float, np.ndarray]:
        value, grad = listwise_loss(np.append(weights, a), rows, 0.0)
        return value + l2 * float(a @ a), grad[-1:] + 2 * l2 * a

    return float(minimize(loss, np.zeros(1), jac=True, method="L-BFGS-B").x[0])


def first_holds(w: np.ndarray, rows: list[dict], n_questions: int, k: int = 1) -> float:
    """Share of questions whose k best sentences hold the gold span."""
    return sum(bool(r["holds"][np.argsort(-(r["X"] @ w), kind="stable")[:k]].any()) for r in rows) / max(n_questions, 1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--covidqa", type=Path, required=True)
    ap.add_argument("--index", type=Path, required=True)
    ap.add_argument("--l2", type=float, default=0.1)
    ap.add_argument("--model", action="store_true", help="the trained model's log-odds as a further column "
                    "(answer.reader: model): fits MODEL_WEIGHTS and the model's 'insufficient' threshold")
    ap.add_argument("--model-dir", type=Path, help="--model: a folder with reader.int8.onnx (default: the shipped one)")
    ap.add_argument("--fold-models", type=Path, nargs=FOLDS, metavar="DIR",
                    help="--model: the four models trained each without one quarter of the fit papers (train.py "
                         "--covidqa-fold 0 1 2 3, in that order): every fit question is scored by the one that never "
                         "saw its paper, so that the weight and the threshold are fitted on all of them (--fit-on fit); "
                         "the other halves by --model-dir's")
    ap.add_argument("--candidates", type=int, default=40, help="--model: the sentences the model reads (answer.reader_candidates)")
    ap.add_argument("--halves", nargs="+", default=["fit", "test"], choices=["fit", "held", "test"],
                    help="held: the quarter of the fit half's papers the trained model never saw "
                         "(training/reader/data.py: covidqa_validation)")
    ap.add_argument("--fit-on", default="fit", choices=["fit", "held"],
                    help="the questions the weights and the threshold are fitted on: with a model trained on "
                         "the fit half, 'held' (its scores on the papers it trained on are too good)")
    ap.add_argument("--model-scale-only", action="store_true",
                    help="--model: fit only the model's weight, the features keeping reader.py's WEIGHTS")
    ap.add_argument("--cache", type=Path, help="keep the searched candidates here (a pickle) and read them on later runs")
    ap.add_argument("--false-insufficient", type=float, default=0.03,
                    help="--model: the share of fit-half questions whose candidates hold the gold that the "
                         "threshold may call insufficient")
    args = ap.parse_args()
    if args.fold_models and not args.model:
        ap.error("--fold-models are read with --model only")
    wanted = list(dict.fromkeys([*args.halves, args.fit_on]))
    searched = list(dict.fromkeys(h if h != "held" else "fit" for h in wanted))  # "held" is part of "fit"
    halves = {h: covidqa_questions(args.covidqa, h) for h in searched}
    if args.cache and args.cache.is_file():
        rows = pickle.loads(args.cache.read_bytes())
    else:
        config = load_config(None)
        config.answer.reader = "features"
        m = Monjyu(args.index, config)
        m.index([args.covidqa / "docs"])
        rows = {h: collect(m, qs) for h, qs in halves.items()}
        if args.cache:
            args.cache.write_bytes(pickle.dumps(rows))
    if args.model:
        from monjyu.engines.cross_encoder import ReaderModel

        model = ReaderModel(args.model_dir)
        folds, by_fold = covidqa_folds(args.covidqa), [ReaderModel(d) for d in args.fold_models or ()]
        for h in rows:
            if h == "fit" and by_fold:  # out of fold: no question is scored by a model that trained on its paper
                for r in rows[h]:
                    add_model_column([r], by_fold[folds[r["doc"]]], args.candidates)
            else:
                add_model_column(rows[h], model, args.candidates)
    if "held" in wanted:
        held = covidqa_validation(args.covidqa)
        halves["held"] = [q for q in halves["fit"] if q["doc"] in held]
        rows["held"] = [r for r in rows["fit"] if r["doc"] in held]
    width = len(FEATURES) + int(args.model)
    if args.model and args.model_scale_only:  # the features keep reader.py's WEIGHTS; one number is fitted
        w = np.append(WEIGHTS, fit_model_scale(WEIGHTS, rows[args.fit_on], args.l2))
    else:
        w = fit_features(rows[args.fit_on], args.l2)
    names = list(FEATURES) + (["model"] if args.model else [])
    print(json.dumps({"features": names, "weights": [round(float(x), 3) for x in w]}))
    today = np.append(WEIGHTS, np.zeros(width - len(FEATURES)))
    for h in wanted:
        n = len(halves[h])
        reachable = sum(bool(r["holds"].any()) for r in rows[h]) / n
        print(f"{h}: {n} questions; a candidate holds the gold {reachable:.3f}; best sentence holds it: "
              f"fitted {first_holds(w, rows[h], n):.3f}, reader.py features {first_holds(today, rows[h], n):.3f}, "
              f"semantic only {first_holds(np.eye(width)[0], rows[h], n):.3f}"
              + (f", model only {first_holds(np.eye(width)[-1], rows[h], n):.3f}" if args.model else "")
              + "; fitted, best 2 / 3 / 4: " + " / ".join(f"{first_holds(w, rows[h], n, k):.3f}" for k in (2, 3, 4)))
    if args.model:
        best = np.sort([r["X"][:, -1].max() for r in rows[args.fit_on] if r["holds"].any()])
        # The highest threshold that calls at most that share insufficient (a score below it is):
        # an interpolated quantile can leave one question more below it.
        allowed = int(np.floor(args.false_insufficient * len(best) + 1e-9))
        threshold = float(best[allowed])
        print(f"threshold: {threshold:.3f} ({args.fit_on}: {allowed} of {len(best)} answerable questions below it, "
              f"at most {args.false_insufficient:.0%})")


if __name__ == "__main__":
    main()
