"""Rank fusion: weighted reciprocal rank fusion (default) and linear score interpolation."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def weighted_rrf(ranked_lists: Sequence[Sequence[int]], weights: Sequence[float], k: int = 60) -> list[tuple[int, float]]:
    """score(d) = sum_i w_i / (k + rank_i(d)), ranks from 1. Returns (item, score) best first."""
    scores: dict[int, float] = {}
    for items, w in zip(ranked_lists, weights):
        if w <= 0:
            continue
        for rank, item in enumerate(items, start=1):
            scores[item] = scores.get(item, 0.0) + w / (k + rank)
    return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))


def linear_fusion(scored_lists: Sequence[Sequence[tuple[int, float]]], weights: Sequence[float]) -> list[tuple[int, float]]:
    """sum_i w_i * minmax(score_i); an item missing from a list gets 0 there (FEAT-004's alpha)."""
    combined: dict[int, float] = {}
    for items, w in zip(scored_lists, weights):
        if not items or w <= 0:
            continue
        vals = np.array([s for _, s in items], dtype=np.float64)
        lo, hi = float(vals.min()), float(vals.max())
        span = hi - lo if hi > lo else 1.0
        for item, s in items:
            combined[item] = combined.get(item, 0.0) + w * ((s - lo) / span if hi > lo else 1.0)
    return sorted(combined.items(), key=lambda kv: (-kv[1], kv[0]))
