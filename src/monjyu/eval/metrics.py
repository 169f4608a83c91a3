"""Retrieval metrics per document id. Standard measures come from ir_measures (trec_eval);
complete@k (all relevant documents within the top k) is ours, as trec_eval has no such measure."""

from __future__ import annotations

import ir_measures
from ir_measures import RR, R, P, nDCG

from ..errors import MonjyuError

STANDARD = {"recall@2": R @ 2, "recall@5": R @ 5, "recall@10": R @ 10, "ndcg@10": nDCG @ 10,
            "mrr@10": RR @ 10, "precision@5": P @ 5}
COMPLETE_AT = (2, 5, 8, 10)


def field_value(metadata: dict, field: str) -> str:
    """A query's value of a metadata field, as a group name ("true", "false", "why", ...); a
    dotted field reads into nested objects. Missing: "(none)"."""
    value: object = metadata
    for part in field.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    if value is None:
        return "(none)"
    return str(value).lower() if isinstance(value, bool) else str(value)


def check_field(metadata: list[dict], field: str, where: str) -> None:
    """Refuse a --by field no query has, naming the fields they do have."""
    if any(field_value(m, field) != "(none)" for m in metadata):
        return
    names = sorted({k for m in metadata for k in m})
    raise MonjyuError(f"no query of {where} has the field {field!r}; its queries have: {', '.join(names) or 'no fields'}")


def retrieval_metrics(qrels: dict[str, dict[str, int]], rankings: dict[str, list[str]]) -> dict[str, float]:
    """`rankings`: query id -> document ids best first (unique). Queries missing from `rankings`
    count as retrieving nothing."""
    qrels = {q: {d: int(r) for d, r in docs.items() if int(r) > 0} for q, docs in qrels.items()}
    qrels = {q: docs for q, docs in qrels.items() if docs}
    run = {q: {d: float(len(docs) - i) for i, d in enumerate(docs)} for q, docs in rankings.items()
           if q in qrels and docs}
    # Mean over every judged query: a query with no ranking scores 0 (trec_eval would skip it).
    sums = {measure: 0.0 for measure in STANDARD.values()}
    for m in ir_measures.iter_calc(list(STANDARD.values()), qrels, run) if run else []:
        sums[m.measure] += m.value
    out = {name: sums[measure] / max(len(qrels), 1) for name, measure in STANDARD.items()}
    for k in COMPLETE_AT:
        done = sum(1 for q, rel in qrels.items() if set(rel) <= set(rankings.get(q, [])[:k]))
        out[f"complete@{k}"] = done / max(len(qrels), 1)
    out["queries"] = len(qrels)
    return out
