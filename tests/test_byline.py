"""Who wrote a paper and when it was published, answered from the byline the index keeps for it
(engines/byline.py), through the real index: plain-text papers with a CORD-19 export's header, and
real arXiv PDFs."""

from __future__ import annotations

import pytest

from monjyu import Monjyu
from monjyu.nlp.byline_questions import asks_byline
from tests.llm_server import llm_server  # noqa: F401  (fixture)

ZEBRAS = ("Grazing Patterns of Plains Zebras\n\nAuthors: Grevy, Anna; Burchell, William\nDate: 2018-06-02\n\n"
          "Abstract: Plains zebras graze in herds on short grass.\n\nText: Zebras move between water and grass "
          "every day. The herds graze at dawn and at dusk, and rest in the shade at noon. Lions follow the herds "
          "to the water.\n")
LIONS = ("Hunting Success of Lions\n\nAuthors: Packer, Craig\nDate: 2011-03-15\n\nAbstract: Lions hunt at night "
         "in prides.\n\nText: Lions hunt large prey together. A pride of lions takes buffalo and wildebeest, and "
         "the success of a hunt grows with the size of the pride.\n\nCraig Packer Field counts of hunts by prides "
         "of lions, the hunting success analysis and the writing.\n")


HYENAS = ("Hyenas as Hunters\n\nAuthors: Kruuk, Hans; Packer, Craig\nDate: 2015-09-01\n\nAbstract: Spotted hyenas "
          "hunt more than they scavenge.\n\nText: Hyenas hunt in clans at night and chase wildebeest over long "
          "distances. Lions often take the kill from them.\n")


@pytest.mark.parametrize("question, asked", [
    ("Who wrote the ZeRO paper?", "authors"),
    ("Who are the authors of MuZero?", "authors"),
    ("Which researchers wrote the paper on STaR?", "authors"),
    ("Name the authors of the deep residual learning paper.", "authors"),
    ("ViTの論文の著者は誰ですか？", "authors"),
    ("ResNetの論文を書いたのは誰ですか？", "authors"),
    ("When was the FlashAttention paper published?", "year"),
    ("PonderNetの論文は何年に発表されましたか？", "year"),
    # what the authors say, did or found is asked of the body text
    ("According to the ZeRO authors, what are the trade-offs of data parallelism?", None),
    ("RWKVの著者たちは、このモデルの限界としてどのような点を挙げていますか？", None),
    ("Who conducted the study?", None),
    ("When was the virus first identified?", None),
])
def test_a_question_asks_for_the_byline_only_when_it_asks_who_wrote_or_when_published(question, asked):
    assert asks_byline(question) == asked


@pytest.fixture(scope="module")
def savanna(tmp_path_factory, cache_dir) -> Monjyu:
    from monjyu.config import MonjyuConfig

    root = tmp_path_factory.mktemp("savanna")
    (root / "papers").mkdir()
    (root / "papers" / "zebras.txt").write_text(ZEBRAS, encoding="utf-8")
    (root / "papers" / "lions.txt").write_text(LIONS, encoding="utf-8")
    (root / "papers" / "hyenas.txt").write_text(HYENAS, encoding="utf-8")
    m = Monjyu(root / ".monjyu", MonjyuConfig(cache_dir=str(cache_dir)))
    assert not m.index([root / "papers"]).failures
    return m


def test_who_wrote_a_paper_is_answered_from_its_byline(savanna):
    answer = savanna.search("Who wrote the paper on zebra grazing?", top_k=5).answer
    assert answer.text == "“Grazing Patterns of Plains Zebras” (2018) is by Anna Grevy and William Burchell. [1]"
    assert [c.source_path.rsplit("/", 1)[-1] for c in answer.citations] == ["zebras.txt"]
    assert answer.kind == "extractive" and "byline" in answer.note
    ja = savanna.search("ライオンの狩りの論文の著者は誰ですか？", top_k=5).answer
    assert ja.text.startswith("「Hunting Success of Lions」（2011年）の著者はCraig Packerです。[")
    year = savanna.search("When was the paper on the hunting success of lions published?", top_k=5).answer
    assert year.text == "“Hunting Success of Lions” by Craig Packer was published in 2011. [1]"


def test_a_byline_is_cited_to_body_text_not_to_a_caption(tmp_path, cache_dir):
    """A caption may match the question's words best ("Figure 1: Grazing patterns of plains zebras
    ..."); it says nothing of who wrote the paper: the byline is cited to a passage of body text."""
    from monjyu.config import MonjyuConfig

    (tmp_path / "papers").mkdir()
    paper = ("Grazing Patterns of Plains Zebras\n\nAuthors: Grevy, Anna; Burchell, William\nDate: 2018-06-02\n\n"
             "Abstract: Herds move between water and short grass every day.\n\n"
             "Figure 1: Grazing patterns of plains zebras: the herds at dawn.\n\n"
             "They rest in the shade at noon, and lions follow them to the water.\n")
    (tmp_path / "papers" / "zebras.txt").write_text(paper, encoding="utf-8")
    (tmp_path / "papers" / "lions.txt").write_text(LIONS, encoding="utf-8")
    m = Monjyu(tmp_path / ".monjyu", MonjyuConfig(cache_dir=str(cache_dir)))
    assert not m.index([tmp_path / "papers"]).failures
    result = m.search("Who wrote the paper on grazing patterns of plains zebras?", top_k=5)
    assert result.hits[0].kind == "caption", [h.text for h in result.hits]
    assert result.answer.text.startswith("“Grazing Patterns of Plains Zebras” (2018) is by Anna Grevy and William Burchell.")
    assert [c.kind for c in result.answer.citations] == ["text"], result.answer.citations


def test_what_the_authors_found_is_still_read_from_the_text(savanna):
    answer = savanna.search("According to the authors, what do lions follow?", top_k=5).answer
    assert "byline" not in answer.note and "Lions follow the herds to the water." in answer.text


def test_a_sentence_opening_with_an_author_of_its_own_paper_is_not_quoted(savanna):
    """Who did what in a paper ("Craig Packer Field counts of hunts ..."), as its contributions list it,
    answers no question about its subject."""
    answer = savanna.search("How was the hunting success of prides of lions counted?", top_k=5).answer
    assert answer.kind == "extractive" and "Craig Packer Field" not in answer.text, answer.text


def test_lazy_search_answers_from_the_bylines_too(savanna):
    answer = savanna.lazy_search("Who wrote the paper on zebra grazing?").answer
    assert answer.text.startswith("“Grazing Patterns of Plains Zebras” (2018) is by Anna Grevy and William Burchell. [")
    listed = savanna.lazy_search("Which papers did Craig Packer write?").answer
    assert listed.text.startswith("Craig Packer is an author of 2 of the indexed papers: ")
    assert sorted(c.source_path.rsplit("/", 1)[-1] for c in listed.citations) == ["hyenas.txt", "lions.txt"]


def test_a_byline_answer_costs_no_llm_call(savanna, make_config, llm_server):  # noqa: F811
    m = Monjyu(savanna.index_dir, make_config(llm=llm_server.config()))
    result = m.search("Who are the authors of the lion hunting paper?", top_k=5)
    assert result.answer.text.endswith("is by Craig Packer. [1]") and llm_server.requests == []


def test_which_papers_an_author_wrote_are_listed_from_the_bylines_each_cited():
    from monjyu.engines.byline import Authors, Paper

    authors = Authors([(Paper("a", "Attention", 2017), ["Ashish Vaswani", "Noam Shazeer"]),
                       (Paper("p", "Primer", 2021), ["David R. So", "Noam Shazeer"]),
                       (Paper("d", "Distilling", 2015), ["Geoffrey Hinton", "Jeff Dean"]),
                       (Paper("s", "STaR", 2022), ["Noah D. Goodman"])])
    asked = authors.asked("Which papers did Noam Shazeer write?")
    assert asked.name == "Noam Shazeer" and [p.title for p in asked.papers] == ["Attention", "Primer"]
    assert authors.asked("Papers by Noah Goodman").name == "Noah D. Goodman"  # initials aside
    assert authors.asked("which papers did noam shazeer write").name == "Noam Shazeer"  # as typed
    assert authors.asked("papers by geoffrey x y hinton") is None and authors.asked("what did he write?") is None
    assert authors.asked("What does Hinton's paper say about temperature?").rest == \
        "What does paper say about temperature?"  # a surname only one author has
    assert authors.asked("Kaiming Heの論文はどれですか？") is None  # no such author here
    assert authors.asked("Jeff Deanが書いた論文は？").name == "Jeff Dean"
    for other in ("Which papers cite Noam Shazeer?", "According to Hinton, what is distillation?",
                  "Who wrote the Primer paper?", "What did the dean say?"):
        assert authors.asked(other) is None, other


def test_an_author_s_papers_through_the_index(savanna):
    answer = savanna.search("Which papers did Craig Packer write?", top_k=5).answer
    assert answer.text.startswith("Craig Packer is an author of 2 of the indexed papers: ")
    assert "“Hunting Success of Lions” (2011) [" in answer.text and "“Hyenas as Hunters” (2015) [" in answer.text
    assert sorted(c.source_path.rsplit("/", 1)[-1] for c in answer.citations) == ["hyenas.txt", "lions.txt"]
    ja = savanna.search("Craig Packerの論文はどれですか？", top_k=5).answer
    assert ja.text.startswith("Craig Packerが著者に名を連ねる論文は2本です：")
    # a question about something in an author's paper searches their papers alone, read without the name
    result = savanna.search("What does the paper by Grevy say about lions?", top_k=5)
    assert {h.source_path.rsplit("/", 1)[-1] for h in result.hits} == {"zebras.txt"}
    assert "Lions follow the herds to the water." in result.answer.text


def test_the_authors_of_a_real_pdf_are_its_first_page_s(cited_papers):
    answer = cited_papers.search("Who wrote PonderNet?", top_k=5).answer
    assert answer.text == "“PonderNet: Learning to Ponder” (2021) is by Andrea Banino, Jan Balaguer and Charles Blundell. [1]"
    ja = cited_papers.search("ResNetの論文を書いたのは誰ですか？", top_k=5).answer
    assert "Kaiming He、Xiangyu Zhang、Shaoqing Ren、Jian Sun" in ja.text
    assert ja.citations[0].source_path.endswith("resnet.pdf")


def test_a_byline_question_is_searched_by_what_names_the_paper(cited_papers):
    """"Who wrote the ResNet paper?": ViT's passages say "paper" and name ResNet, which it cites;
    the keyword search leaves the asking words out ("paper", "wrote"; 論文 and its gloss), so the
    paper named is ResNet's, in English as in Japanese."""
    from monjyu.query import Query

    searcher = cited_papers.workspace.current().searcher
    assert searcher.keyword.terms(Query.of("Who wrote the ResNet paper?")) == ["resnet"]
    assert "paper" in searcher.keyword.terms(Query.of("What does the ResNet paper say about depth?"))
    for question in ("Who wrote the ResNet paper?", "ResNetの論文を書いたのは誰ですか？"):
        answer = cited_papers.search(question, top_k=5).answer
        assert answer.citations[0].source_path.endswith("resnet.pdf"), (question, answer.text)
