"""The rounds after fusion in a hybrid search, plain functions over a generation's rankers: the
evidence rerank (how much this question trusts its terms and the graph, then the head reordered
by evidence), and the feedback round (search again with the best passage, follow its title links).
"""

from __future__ import annotations

import numpy as np

from ..query import Query
from .evidence import EvidenceWeights
from .fusion import weighted_rrf
from .rankers import Rankers

LIST_TOP = 10  # each list's best that always reach the evidence rerank


def sentence_naming(text: str, phrase: str) -> str:
    """The sentence of `text` in which `phrase` (lower case) first occurs; "" when it does not."""
    at = text.lower().find(phrase)
    if at < 0:
        return ""
    end = text.find(".", at + len(phrase))
    return text[text.rfind(".", 0, at) + 1:end if end >= 0 else len(text)]


def spread(reranked: list[tuple[int, float]], head: list[tuple[int, float]],
           rest: list[tuple[int, float]]) -> list[tuple[int, float]]:
    """The reranked head, then the rest: scores spread evenly between the head's best score and the
    rest's, so they still fall with rank."""
    top, floor = head[0][1], rest[0][1] if rest else 0.0
    return [(r, floor + (top - floor) * (len(head) - i) / len(head)) for i, (r, _) in enumerate(reranked)] + rest


def evidence_weights(searcher: Rankers, query: Query, keyword_list: list[tuple[int, float]], with_graph: bool) -> EvidenceWeights:
    """This query's trust in the evidence signals, from its lists and the collection, no
    constant fitted: the term signals weigh as much as the share of the question's term
    weight that its best keyword hits hold (a paraphrased question, or one whose parts lie
    in several passages, matches no passage's words); the graph list's ranks count as much as
    the meaning signals when the question names a page of the collection (a phrase that
    titles units, whose links the walk follows), and not at all otherwise (paper titles are
    rarely phrases, so in a paper collection the graph never outvotes meaning)."""
    cfg, graph = searcher.config, searcher.index.graph
    lexical = searcher.evidence.term_coverage(searcher.keyword.terms(query), [r for r, _ in keyword_list[:LIST_TOP]]) \
        if cfg.term_trust else 1.0
    names_page = cfg.graph_evidence and with_graph and graph is not None and \
        any(node in graph.about for node in searcher.graph.seeds(query))
    return EvidenceWeights(lexical=lexical, graph=1.0 if names_page else 0.0)


def evidence_round(searcher: Rankers, query: Query, query_vector: np.ndarray, fused: list[tuple[int, float]],
                   lists: list[list[tuple[int, float]]] = (), weights: EvidenceWeights = EvidenceWeights(),
                   graph_ranks: dict[int, int] | None = None) -> list[tuple[int, float]]:
    """The fused list's best `rerank_candidates`, and every list's own top 10 (fusion never
    hides what one list is sure of), reordered by their evidence. Scores are spread evenly
    between the head's best fused score and the rest's, so they still fall with rank."""
    n = searcher.config.rerank_candidates
    wanted = {r for r, _ in fused[:n]} | {r for lst in lists for r, _ in lst[:LIST_TOP]}
    head = [(r, sc) for r, sc in fused if r in wanted]
    rest = [(r, sc) for r, sc in fused if r not in wanted]
    reranked = searcher.evidence.rerank(searcher.keyword.terms(query), query_vector, [r for r, _ in head],
                                        weights=weights, graph_ranks=graph_ranks)
    return spread(reranked, head, rest)


def link_evidence_round(searcher: Rankers, query: Query, query_vector: np.ndarray, ranked: list[tuple[int, float]],
                        mask: np.ndarray | None, weights: EvidenceWeights = EvidenceWeights(),
                        graph_ranks: dict[int, int] | None = None) -> list[tuple[int, float]]:
    """After the feedback round: the head and the units its best passages link to by title,
    reordered by evidence, a linked unit scoring at least as its linking sentence does
    (EvidenceReranker.rerank's links). Nothing to do without title links."""
    graph = searcher.index.graph
    if graph is None or not graph.about:
        return ranked
    cfg = searcher.config
    links = [(unit, seed, searcher.evidence.sentence_naming(seed, phrase))
             for seed, _ in ranked[:cfg.feedback_keep] for unit, phrase in graph.linked_units(seed)
             if mask is None or mask[unit]]
    if not links:
        return ranked
    wanted = {r for r, _ in ranked[:cfg.rerank_candidates]} | {unit for unit, _, _ in links}
    head = [(r, sc) for r, sc in ranked if r in wanted]
    rest = [(r, sc) for r, sc in ranked if r not in wanted]
    reranked = searcher.evidence.rerank(searcher.keyword.terms(query), query_vector, [r for r, _ in head], links,
                                        weights, graph_ranks)
    return spread(reranked, head, rest)


def feedback_round(searcher: Rankers, query: Query, query_vector: np.ndarray, first: list[tuple[int, float]],
                   n: int, mask: np.ndarray | None) -> list[tuple[int, float]]:
    """Search again with the best passage added to the query (vector: sum of the two unit
    vectors; keyword: both term lists) and follow the title links of the best passages; fuse
    with the first round, keeping its top hits in place. Only when those passages link to
    other units by title: without a second hop to follow, the re-search only pushes near
    copies of the best passage into the list (it lowered recall on papers)."""
    cfg = searcher.config
    linked = linked_ranking(searcher, query, [r for r, _ in first[:cfg.feedback_keep]], mask)
    if not linked:
        return first
    best = first[0][0]
    q2 = np.asarray(query_vector, dtype=np.float32) + searcher.index.vectors[best]
    q2 /= max(float(np.linalg.norm(q2)), 1e-12)
    v2, _ = searcher.vector.rank(q2, n, mask)
    c = searcher.index.columns
    passage = f"{c['title'][best]}\n{c['text'][best]}" if c["title"][best] else c["text"][best]
    k2, _ = searcher.keyword.rank(searcher.keyword.terms(query) + searcher.analyzer.terms(passage), n, mask)
    lists = [[r for r, _ in first], [r for r, _ in v2], [r for r, _ in k2]]
    weights = [1.0, cfg.feedback_weight, cfg.feedback_weight, cfg.feedback_weight]
    lists.append(linked)
    fused = weighted_rrf(lists, weights, cfg.rrf_k)
    kept = first[:cfg.feedback_keep]
    kept_rows = {r for r, _ in kept}
    rest = [(r, s) for r, s in fused if r not in kept_rows]
    if kept and rest:  # rescale so scores keep falling with rank below the kept hits
        scale = min(1.0, 0.999 * kept[-1][1] / rest[0][1])
        rest = [(r, s * scale) for r, s in rest]
    return kept + rest


def linked_ranking(searcher: Rankers, query: Query, seeds: list[int], mask: np.ndarray | None) -> list[int]:
    """Units that the best passages link to by title (a film's page names its director, whose
    own page is the second hop). A link counts more from a better passage and when the
    sentence naming it shares words with the question ("directed by" for "director")."""
    graph = searcher.index.graph
    if graph is None or not graph.about:
        return []
    q_terms = set(searcher.keyword.terms(query))
    texts = searcher.index.columns["text"]
    scores: dict[int, float] = {}
    for rank, seed in enumerate(seeds, start=1):
        text = texts[seed]
        for unit, phrase in graph.linked_units(seed):
            if mask is not None and not mask[unit]:
                continue
            shared = len(q_terms & set(searcher.analyzer.terms(sentence_naming(text, phrase))))
            scores[unit] = scores.get(unit, 0.0) + (1.0 + shared) / rank
    return sorted(scores, key=lambda u: (-scores[u], u))
