"""Train a reader that reads each sentence among its neighbours (cross_encoder.READS_WINDOW).

    python training/reader/train.py pack --windows --work W        # W/windows.npz (no candidates needed)
    python training/reader/train.py train --windows --work W --layers 8 --device cuda --bf16 \
        --pairs 250000 --batch 48 --eval-pairs 25000
    python training/reader/train.py export --windows --work W --layers 8

Why: the pair model reads one sentence alone, so "It was 35%" cannot say what "it" is; a model
given the sentence before credited the sentence after an answer with it (the model card). Here the
model reads a window of consecutive sentences (`cross_encoder.window_ids`) and gives a log-odds at
every token; a sentence's is the largest over its own tokens. Every sentence of a window is
labelled, and the listwise loss runs over all the sentences of a question's windows, so the one
that holds the answer must outscore the ones around it that only share its context.

Windows are cut as the reader cuts them at run time (`cross_encoder.window`: a sentence and its
neighbours, one before and one after in turn, to `pack --window-tokens`), around a sentence a little off
the centred one in training (so the answer is not always in the middle). `--pairs`, `--batch` and
`--eval-pairs` count windows here.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn

from train import SHARED, CrossEncoder, Pack, loss_of, pack_base, run_schedule, validation_figures

from monjyu.engines.cross_encoder import READS_WINDOW, pad_batch, question_ids, window, window_ids, window_room

SHIFT = 2  # training windows are built around a sentence up to this many off the labelled centre


def pack_windows(args: argparse.Namespace) -> None:
    from data import build_windows

    from monjyu.embed.e5_numpy import default_model_path, shared_tokenizer

    t0 = time.time()
    rng = random.Random(args.seed)
    groups = build_windows(SHARED / "reader-data", SHARED / "bench-data" / "covidqa-dev", seed=args.seed)
    tok = shared_tokenizer(default_model_path())
    prefix = tok.content_ids("passage:")
    index: dict[str, int] = {}
    sequences: list[list[int]] = []

    def text(value: str, question: bool = False) -> int:
        key = ("q " if question else "s ") + value
        if key not in index:
            index[key] = len(sequences)
            sequences.append(question_ids(tok, value) if question else tok.content_ids(value))
        return index[key]

    arrays: dict[str, np.ndarray] = {}
    sources = sorted({g["source"] for gs in groups.values() for g in gs})
    for split, gs in groups.items():
        question, per_group, per_window, sentence, label, target, source = [], [0], [0], [], [], [], []
        for g in gs:
            q = text(g["question"], True)
            room = window_room(sequences[q], prefix, args.window_tokens)
            spans = set()
            for passage, labels, centres in g["passages"]:
                ids = [text(s) for s in passage]
                lengths = [len(sequences[i]) for i in ids]
                cuts = []  # (first sentence, past the last, the one scored or -1 for all)
                if centres is None:  # cover the passage
                    at = 0
                    while at < len(ids):
                        a, b = _from(lengths, at, room)
                        cuts.append((a, b, -1))
                        at = b
                else:
                    cuts = [_around(lengths, c, room, rng if split == "train" else None, g.get("targets"))
                            for c in centres]
                for a, b, t in cuts:
                    if (id(passage), a, b, t) in spans:
                        continue
                    spans.add((id(passage), a, b, t))
                    sentence += ids[a:b]
                    label += labels[a:b]
                    target.append(t)
                    per_window.append(len(sentence))
            question.append(q)
            per_group.append(len(per_window) - 1)
            source.append(sources.index(g["source"]))
        arrays.update({f"{split}.question": np.array(question, np.int32),
                       f"{split}.group_offsets": np.array(per_group, np.int64),
                       f"{split}.window_offsets": np.array(per_window, np.int64),
                       f"{split}.sentence": np.array(sentence, np.int32), f"{split}.label": np.array(label, np.int8),
                       f"{split}.target": np.array(target, np.int16), f"{split}.source": np.array(source, np.int8)})
        print(f"{split}: {len(gs)} groups, {len(per_window) - 1} windows, {len(sentence)} sentences", flush=True)
    meta = pack_base(arrays, sequences, tok, args.pack_layers, extra=prefix)
    meta.update(prefix=prefix, sources=sources, seed=args.seed, reads=READS_WINDOW, window_tokens=args.window_tokens)
    arrays["meta"] = np.array(json.dumps(meta))
    work = Path(args.work).expanduser()
    work.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(work / "windows.npz", **arrays)
    print(f"{len(sequences)} texts, {len(arrays['tokens'])} tokens, {len(arrays['vocab'])} word rows; "
          f"{(work / 'windows.npz').stat().st_size / 1e6:.1f} MB ({time.time() - t0:.0f} s)")


def _from(lengths: list[int], at: int, room: int) -> tuple[int, int]:
    """The window that starts at sentence `at` (covering a passage in turn)."""
    b, used = at + 1, lengths[at]
    while b < len(lengths) and used + lengths[b] <= room:
        used += lengths[b]
        b += 1
    return at, b


def _around(lengths: list[int], centre: int, room: int, rng: random.Random | None,
            target: bool | None) -> tuple[int, int, int]:
    """(a, b, the centre's place in the window or -1): the window the reader would read a sentence
    near `centre` in (`rng`: a little off it, keeping it in)."""
    near = centre
    if rng is not None:
        near = min(len(lengths) - 1, max(0, centre + rng.randint(-SHIFT, SHIFT)))
    a, b = window(lengths, near, room)
    if not a <= centre < b:
        a, b = window(lengths, centre, room)
    return a, b, (centre - a if target else -1)


class WindowPack(Pack):
    """windows.npz read back: a group is a question with its windows, each a list of sentences
    (token ids, labels) and the one sentence scored (`target`, -1: all of them)."""

    def groups(self, split: str, sentence_only: bool = False) -> list[dict]:
        a, m = self.arrays, self.meta
        question, per_group, per_window = a[f"{split}.question"], a[f"{split}.group_offsets"], a[f"{split}.window_offsets"]
        sentence, label, target, source = a[f"{split}.sentence"], a[f"{split}.label"], a[f"{split}.target"], a[f"{split}.source"]
        out = []
        for g in range(len(question)):
            q = self.texts[question[g]]
            windows = []
            for w in range(per_group[g], per_group[g + 1]):
                items = range(per_window[w], per_window[w + 1])
                ids, spans = window_ids(q, [self.texts[sentence[i]] for i in items], m["bos"], m["eos"], m["prefix"],
                                        m["window_tokens"])
                windows.append({"ids": ids, "spans": spans, "labels": [int(label[i]) for i in items],
                                "target": int(target[w])})
            out.append({"windows": windows, "source": m["sources"][source[g]]})
        return out


def token_logits(model: CrossEncoder, embeddings: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The head at every token: [B, L] log-odds (export keeps the head at <s> only: the runtime
    applies it to every token in numpy)."""
    return model.head(model.states(embeddings, mask))


def sentence_logits(model: CrossEncoder, rows: nn.Module, windows: list[dict], pad: int,
                    device: torch.device) -> tuple[torch.Tensor, list[tuple[int, int]]]:
    """Each window sentence's log-odds (the largest over its tokens), in window order, and the
    (window, sentence) each is."""
    ids, mask = pad_batch([w["ids"] for w in windows], pad)
    ids, mask = torch.from_numpy(ids).to(device), torch.from_numpy(mask).to(device)
    logits = token_logits(model, rows(ids), mask)
    owner = torch.full(ids.shape, -1, dtype=torch.long)
    which = []
    for i, w in enumerate(windows):
        for j, (a, b) in enumerate(w["spans"]):
            if b > a:
                owner[i, a:b] = len(which)
                which.append((i, j))
    owner = owner.to(device).reshape(-1)
    keep = owner >= 0
    out = torch.full((len(which),), -1e4, device=device, dtype=logits.dtype)
    out = out.scatter_reduce(0, owner[keep], logits.reshape(-1)[keep], "amax")
    return out, which


def batch_loss(model: CrossEncoder, rows: nn.Module, batch: list[dict], pad: int, device: torch.device) -> torch.Tensor:
    windows = [w for g in batch for w in g["windows"]]
    group_of = [i for i, g in enumerate(batch) for _ in g["windows"]]
    logits, which = sentence_logits(model, rows, windows, pad, device)
    labels = torch.tensor([windows[i]["labels"][j] for i, j in which], dtype=torch.float32, device=device)
    group = torch.tensor([group_of[i] for i, _ in which], device=device)
    return loss_of(logits, labels, group, len(batch))


@torch.no_grad()
def validate_windows(model: CrossEncoder, rows: nn.Module, groups: list[dict], pad: int, device: torch.device) -> dict:
    """As train.validate: the best sentence of each answerable question (a sentence read in two
    windows counts at its best; a window with a target counts its target only), and the AUC of the
    best score of answerable questions against unanswerable ones."""
    model.eval()
    top, best_answerable, best_not = [], [], []
    for start in range(0, len(groups), 64):
        part = groups[start:start + 64]
        windows = [w for g in part for w in g["windows"]]
        logits, which = sentence_logits(model, rows, windows, pad, device)
        scores = logits.float().cpu().numpy()
        first = np.cumsum([0] + [len(g["windows"]) for g in part])
        by_group: list[dict] = [{} for _ in part]
        for (i, j), z in zip(which, scores):
            g = int(np.searchsorted(first, i, side="right") - 1)
            w = windows[i]
            if w["target"] >= 0 and j != w["target"]:
                continue
            key = (tuple(w["ids"][w["spans"][j][0]:w["spans"][j][1]]), w["labels"][j])
            by_group[g][key] = max(z, by_group[g].get(key, -1e9))
        for seen in by_group:
            if not seen:
                continue
            (_, y), z = max(seen.items(), key=lambda kv: kv[1])
            if any(lab for _, lab in seen):
                top.append(y)
                best_answerable.append(z)
            else:
                best_not.append(z)
    model.train()
    return validation_figures(top, best_answerable, best_not)


def train_windows(args: argparse.Namespace) -> None:
    pk = WindowPack(Path(args.work).expanduser() / "windows.npz")
    size = lambda g: len(g["windows"])  # noqa: E731  (windows, the unit a batch and the schedule count)
    length = lambda g: max(len(w["ids"]) for w in g["windows"])  # noqa: E731
    run_schedule(args, pk, size, length, batch_loss, validate_windows, suffix="-windows")
