"""A question that asks about a paper by the name citing papers give it, or by its title, is answered
from that paper, on real arXiv PDFs (ViT and PonderNet cite ResNet as "ResNet")."""

from __future__ import annotations

import shutil

import pytest

from monjyu import Monjyu, MonjyuConfig
from monjyu.types import Answer

from .conftest import BENCH_DATA


def first_quote(answer: Answer) -> tuple[str, str]:
    """The answer's first line and the path of the file it cites."""
    first = answer.text.splitlines()[0]
    number = int(first.rsplit("[", 1)[1].rstrip("]"))
    return first, next(c for c in answer.citations if c.number == number).source_path


def test_a_question_about_resnet_by_its_name_is_answered_from_the_resnet_paper(cited_papers: Monjyu):
    """ViT's passages, which train ResNets too ("... apply a high weight decay of 0.1"), are the
    first the question's words find; the ResNet paper states its own."""
    for question in ("What weight decay and momentum did ResNet use?", "ResNetの学習に使われたweight decayはいくつですか？"):
        answer = cited_papers.search(question, top_k=5).answer
        first, cited = first_quote(answer)
        assert "weight decay of 0.0001" in first, answer.text
        assert cited.endswith("resnet.pdf"), cited


def test_the_paper_asked_about_leaves_the_hits_as_the_search_ranks_them(cited_papers: Monjyu):
    """The answer reads the paper's passages first; the hits stay in the search's own order."""
    result = cited_papers.search("What weight decay and momentum did ResNet use?", top_k=5)
    assert result.hits[0].source_path.endswith("vit.pdf")


def test_a_question_that_names_the_resnet_paper_by_its_title_is_read_without_it(cited_papers: Monjyu):
    """The title's words are those of the abstracts and introductions that present the paper (and of
    ViT's, which trains ResNets too); the question is read, and searched within the paper, as asked
    of "the paper", and its first sentence states the paper's own batch size. Asked in Japanese, it is
    answered from the paper too (which of its sentences leads is a near tie of the reader's scores
    there, which CPUs of other instruction sets break differently)."""
    question = 'In "Deep Residual Learning for Image Recognition", what mini-batch size was used with SGD?'
    answer = cited_papers.search(question, top_k=5).answer
    first, cited = first_quote(answer)
    assert "mini-batch size of 256" in first, answer.text
    assert cited.endswith("resnet.pdf"), cited
    question = "「Deep Residual Learning for Image Recognition」では、SGDのミニバッチサイズはいくつですか？"
    answer = cited_papers.search(question, top_k=5).answer
    assert first_quote(answer)[1].endswith("resnet.pdf"), answer.text
    # read with its title, this one found no sentence the reader accepts
    answer = cited_papers.search('How does "An Image is Worth 16x16 Words" perform classification?', top_k=5).answer
    assert answer.kind == "extractive" and first_quote(answer)[1].endswith("vit.pdf"), answer.text



@pytest.fixture(scope="module")
def attention_papers(tmp_path_factory, cache_dir) -> Monjyu:
    """"Attention Is All You Need" and FlashAttention, whose title and text say "attention" more often."""
    source = BENCH_DATA / "papers-pdf"
    if not source.is_dir():
        pytest.skip(f"{source} not present (bench data)")
    root = tmp_path_factory.mktemp("attention-papers")
    (root / "papers").mkdir()
    for name in ("1706.03762.pdf", "2205.14135.pdf"):
        shutil.copy(source / name, root / "papers" / name)
    m = Monjyu(root / ".monjyu", MonjyuConfig(cache_dir=str(cache_dir)))
    assert not m.index([root / "papers"]).failures
    return m


def test_who_wrote_a_paper_named_by_its_title_is_answered_from_its_byline(attention_papers: Monjyu):
    """FlashAttention's passages are the first the words of "Attention Is All You Need" find (its
    byline had been answered): the byline answered is the titled paper's, in English and Japanese."""
    for question in ("Who wrote Attention Is All You Need?", "「Attention Is All You Need」の著者は誰ですか？"):
        answer = attention_papers.search(question, top_k=5).answer
        first, cited = first_quote(answer)
        assert cited.endswith("1706.03762.pdf"), (question, answer.text)
        assert "Ashish Vaswani" in first, answer.text
