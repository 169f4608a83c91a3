"""The hybrid feedback round reaches the second hop of a multi-hop question."""

from __future__ import annotations

import json
from pathlib import Path

from monjyu import Monjyu

FILMS = [
    ("f1", "The Quiet Harbour", "The Quiet Harbour is a 1987 drama film directed by Mirela Vantongeren."),
    ("f2", "Salt and Iron", "Salt and Iron is a 1992 war film directed by Oskar Lindqvist."),
    ("f3", "Paper Lanterns", "Paper Lanterns is a 2004 animated film directed by Hana Oyelaran."),
    ("p1", "Mirela Vantongeren", "Mirela Vantongeren (1941-2010) was a screenwriter and director born in Utrecht."),
    ("p2", "Oskar Lindqvist", "Oskar Lindqvist was a cinematographer and director born in Malmo in 1950."),
    ("p3", "Hana Oyelaran", "Hana Oyelaran is an illustrator and director born in Lagos in 1975."),
    ("x1", "Birthplaces of film directors", "Many film directors were born in capital cities; a study of birthplaces of directors of drama films."),
    ("x2", "Harbour drama", "A drama about a harbour town and the quiet lives of its fishermen, not a film."),
    ("x3", "Directors born in 1941", "A list of film directors born in 1941 and the films they directed."),
]


def films(folder: Path) -> Path:
    corpus = folder / "films.jsonl"
    corpus.write_text("\n".join(json.dumps({"_id": i, "title": t, "text": x}) for i, t, x in FILMS))
    return corpus


def test_feedback_lifts_the_bridge_passage(tmp_path, make_config):
    corpus = films(tmp_path)
    question = "Where was the director of the film The Quiet Harbour born?"
    plain = Monjyu(tmp_path / "idx", make_config(search={"feedback": False}))
    plain.index([corpus])
    # the feedback round alone (the link evidence round after it may rank the bridge above the film)
    with_fb = Monjyu(tmp_path / "idx", make_config(search={"feedback": True, "feedback_keep": 1, "link_evidence": False}))

    def rank_of(m, doc):
        ids = [h.document_id for h in m.search(question, mode="hybrid", top_k=9).hits]
        return ids.index(doc)

    assert rank_of(with_fb, "f1") == 0  # the kept first-round hit stays on top
    assert rank_of(with_fb, "p1") < rank_of(plain, "p1")
    assert rank_of(with_fb, "p1") <= 2
    result = with_fb.search(question, mode="hybrid", top_k=9)
    scores = [h.score for h in result.hits]
    assert scores == sorted(scores, reverse=True) and "feedback_ms" in result.timings_ms


def test_link_evidence_brings_both_second_hops_of_a_comparison(tmp_path, make_config):
    """"Which film's director was born first, A or B?" needs both films and both directors: the
    directors share no word with the question, and each inherits the evidence of the sentence
    that links to it ("directed by ...")."""
    corpus = films(tmp_path)
    question = "Which film has the director who was born first, The Quiet Harbour or Salt and Iron?"
    with_links = Monjyu(tmp_path / "idx", make_config())
    with_links.index([corpus])
    without = Monjyu(tmp_path / "idx", make_config(search={"link_evidence": False}))
    top = [h.document_id for h in with_links.search(question, mode="hybrid", top_k=4).hits]
    assert {"f1", "f2", "p1", "p2"} == set(top)
    ranks = [h.document_id for h in without.search(question, mode="hybrid", top_k=9).hits]
    assert max(ranks.index("p1"), ranks.index("p2")) >= max(top.index("p1"), top.index("p2"))
    scores = [h.score for h in with_links.search(question, mode="hybrid", top_k=9).hits]
    assert scores == sorted(scores, reverse=True)


def test_graph_mode_chains_a_second_walk_from_the_bridge(tmp_path, make_config):
    """The chained walk (search.graph_hops 2) reaches the director's page from the film's page."""
    corpus = films(tmp_path)
    question = "Where was the director of the film Paper Lanterns born?"
    two = Monjyu(tmp_path / "idx", make_config())
    two.index([corpus])
    one = Monjyu(tmp_path / "idx", make_config(search={"graph_hops": 1}))

    def rank_of(m, doc):
        return [h.document_id for h in m.search(question, mode="graph", top_k=9).hits].index(doc)

    assert rank_of(two, "p3") <= min(2, rank_of(one, "p3"))  # bench/graph_modes.py measures the gain at scale


def test_lazy_search_follows_a_relevant_sentence_to_the_page_it_names(tmp_path, make_config):
    """Offline lazy search: the film's sentence "directed by Mirela Vantongeren" passes the
    relevance test; the director's own page shares few words with the question and is kept as
    the second hop of the evidence (lazy.follow_links)."""
    corpus = films(tmp_path)
    question = "Where was the director of the film The Quiet Harbour born?"
    # keep_matched 0: the matched head (which holds the director's page too) is not kept regardless
    follow = Monjyu(tmp_path / "idx", make_config(lazy={"keep_matched": 0}))
    follow.index([corpus])
    # and no bridges: joined to the film's sentence, the question finds the director's page too
    plain = Monjyu(tmp_path / "idx", make_config(lazy={"follow_links": False, "keep_matched": 0, "max_bridges": 0}))

    def kept(m):
        r = m.lazy_search(question)
        return {h.document_id for h in r.hits}, r

    with_links, result = kept(follow)
    assert {"f1", "p1"} <= with_links
    linked = next(s for s in result.relevant_sentences if s.document_id == "p1")
    assert linked.text.startswith("Mirela Vantongeren") and linked.score >= 4.0
    assert "p1" not in kept(plain)[0]  # the relevance test alone rejects the second hop
