"""A question that asks about a paper by the name citing papers give it is answered from that paper,
on three real arXiv PDFs (ViT and PonderNet cite ResNet as "ResNet")."""

from __future__ import annotations

from monjyu import Monjyu


def test_a_question_about_resnet_by_its_name_is_answered_from_the_resnet_paper(cited_papers: Monjyu):
    """ViT's passages, which train ResNets too ("... apply a high weight decay of 0.1"), are the
    first the question's words find; the ResNet paper states its own."""
    for question in ("What weight decay and momentum did ResNet use?", "ResNetの学習に使われたweight decayはいくつですか？"):
        answer = cited_papers.search(question, top_k=5).answer
        first = answer.text.splitlines()[0]
        assert "weight decay of 0.0001" in first, answer.text
        number = int(first.rsplit("[", 1)[1].rstrip("]"))
        cited = next(c for c in answer.citations if c.number == number)
        assert cited.source_path.endswith("resnet.pdf"), cited


def test_the_paper_asked_about_leaves_the_hits_as_the_search_ranks_them(cited_papers: Monjyu):
    """The answer reads the paper's passages first; the hits stay in the search's own order."""
    result = cited_papers.search("What weight decay and momentum did ResNet use?", top_k=5)
    assert result.hits[0].source_path.endswith("vit.pdf")
