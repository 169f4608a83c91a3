"""Train the reader on folds of covidqa-dev's fit papers in one go: one lent GPU call.

    python training/reader/train.py pack --folds --work W --candidates W/candidates.pkl   # here
    python training/reader/folds.py --work W --layers 8 --pairs 500000 --eval-pairs 50000 \
        --seconds 240 -- --device cuda --bf16 --batch 256 --lr 1e-4                       # on the GPU

Four runs side by side, each holding one quarter of the fit papers out (`train.py --covidqa-fold
0`-`3`), validate every `--eval-pairs`; the point of the schedule where they read best together (the
mean of SQuAD's held-out articles' top-1 and the top-1 over all four quarters' questions, each read
by the run that never saw its paper) is chosen. A fifth run trains on every fit paper along the same
schedule and stops there (`--covidqa-fold none --stop P --keep last`): no checkpoint is chosen on
questions it trained on. The five are exported to `W/out-0` ... `W/out-3` and `W/out-none`, and the
choice to `W/folds.json`; `bench/reader_fit.py --fold-models` then fits the weight and the threshold
here. Arguments after `--` go to every run (device, precision, batch, learning rate).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

TRAIN = Path(__file__).with_name("train.py")
QUARTERS = ("0", "1", "2", "3")


def run(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(TRAIN), *args])


def wait(processes: list[subprocess.Popen]) -> None:
    if any(p.wait() for p in processes):
        raise SystemExit("a training run failed (its output is above)")


def curve(work: Path, layers: int, quarter: str) -> list[dict]:
    """One run's validations, the starting point left out."""
    rows = [json.loads(line) for line in (work / f"curve-L{layers}-fold{quarter}.jsonl").read_text().splitlines()]
    return [r for r in rows if r["pairs"] > 0]


def choose(curves: list[list[dict]]) -> dict:
    """The validation (the same one of every run, by its order) where the runs read best together,
    and the schedule's length the runs reached (`--seconds` may have shortened it)."""
    points = []
    for i in range(min(map(len, curves))):
        rows = [c[i] for c in curves]
        right = sum(r["covidqa"]["top1"] * r["covidqa"]["answerable"] for r in rows)
        covidqa = right / sum(r["covidqa"]["answerable"] for r in rows)
        squad = sum(r["squad"]["top1"] for r in rows) / len(rows)
        points.append({"pairs": round(sum(r["pairs"] for r in rows) / len(rows)), "covidqa_top1": round(covidqa, 4),
                       "squad_top1": round(squad, 4), "mean": round((covidqa + squad) / 2, 4)})
    if not points:
        raise SystemExit("no validation after training started: lower --eval-pairs")
    best = max(points, key=lambda p: p["mean"])
    return {"stop": best["pairs"], "schedule": round(sum(c[-1]["pairs"] for c in curves) / len(curves)),
            "chosen": best, "points": points}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", required=True, type=Path, help="the folder of a pack built `train.py pack --folds`")
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--pairs", type=int, default=500_000, help="the four runs' schedule")
    ap.add_argument("--eval-pairs", type=int, default=50_000)
    ap.add_argument("--seconds", type=float, help="the four runs' time limit (their schedule is fitted to it)")
    ap.add_argument("rest", nargs="*", help="after --: arguments for every run (--device cuda --bf16 ...)")
    args = ap.parse_args()
    common = ["--work", str(args.work), "--layers", str(args.layers), *args.rest]
    limit = ["--seconds", str(args.seconds)] if args.seconds else []
    wait([run("train", *common, "--covidqa-fold", q, "--pairs", str(args.pairs), "--eval-pairs", str(args.eval_pairs),
              *limit) for q in QUARTERS])
    choice = choose([curve(args.work, args.layers, q) for q in QUARTERS])
    (args.work / "folds.json").write_text(json.dumps(choice, indent=1) + "\n")
    print("chosen", json.dumps(choice["chosen"]), "of a schedule of", choice["schedule"], flush=True)
    wait([run("train", *common, "--covidqa-fold", "none", "--keep", "last", "--pairs", str(choice["schedule"]),
              "--stop", str(choice["stop"]), "--eval-pairs", str(choice["schedule"]))])
    for q in (*QUARTERS, "none"):
        wait([run("export", "--work", str(args.work), "--layers", str(args.layers), "--covidqa-fold", q,
                  "--out", str(args.work / f"out-{q}"))])


if __name__ == "__main__":
    main()
