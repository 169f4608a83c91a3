"""Hybrid search decides per query how much the evidence rerank trusts terms and the graph."""

from __future__ import annotations

from monjyu import Monjyu

from tests.test_feedback import films


def test_each_query_gets_its_own_evidence_weights(tmp_path, make_config):
    corpus = films(tmp_path)
    m = Monjyu(tmp_path / "idx", make_config())
    m.index([corpus])

    def decision(question: str, monjyu: Monjyu = m) -> dict:
        return monjyu.search(question, mode="hybrid", top_k=5).fusion

    # Every word of the question in one passage: the terms count in full.
    assert decision("Salt and Iron war film 1992")["lexical"] == 1.0
    # Its words split over two passages (Utrecht, Lagos): no passage holds more than part of them.
    assert 0.0 < decision("Utrecht Lagos")["lexical"] < 0.75
    # A question naming a page of the collection (a phrase that titles a unit) brings in the
    # graph's ranks; one naming none does not.
    assert decision("Where was the director of the film Paper Lanterns born?")["graph"] == 1.0
    assert decision("Which city lies by the sea?")["graph"] == 0.0
    # Both can be turned off, for ablations.
    fixed = Monjyu(tmp_path / "idx", make_config(search={"term_trust": False, "graph_evidence": False}))
    split_words = decision("Utrecht Lagos", fixed)
    assert split_words == {"lexical": 1.0, "graph": 0.0, "feedback": split_words["feedback"]}
    assert decision("Where was the director of the film Paper Lanterns born?", fixed)["graph"] == 0.0
    # Other modes decide nothing; the decision is in the JSON of a result.
    assert m.search("Utrecht", mode="vector").fusion == {}
    assert "fusion" in m.search("Utrecht Lagos", mode="hybrid").to_dict()

