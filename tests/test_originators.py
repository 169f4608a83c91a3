"""Who proposed a method, or when, answered from the byline of the paper that presents it or from
the reference entry the passages cite for it (engines/originators.py), through a real index of real
arXiv PDFs."""

from __future__ import annotations

import pytest
from reportlab.lib.pagesizes import letter
from reportlab.pdfgen import canvas

from monjyu import Monjyu
from monjyu.engines.originators import method_names
from monjyu.nlp.analyzer import Analyzer
from monjyu.nlp.byline_questions import asks_originators
from tests.llm_server import llm_server  # noqa: F401  (fixture)


@pytest.mark.parametrize("question, asked", [
    ("Who proposed dropout?", ("authors", "dropout")),
    ("Which researchers developed FlashAttention?", ("authors", "FlashAttention")),
    ("Who came up with batch normalization?", ("authors", "batch normalization")),
    ("RWKVを提案したのは誰ですか？", ("authors", "RWKVを提案したのは誰ですか？")),
    ("誰がPaLMを開発しましたか？", ("authors", "誰がPaLMを開発しましたか？")),
    ("When was the Transformer introduced?", ("year", "the Transformer")),
    ("When did Finn and colleagues come up with MAML?", ("year", "MAML")),
    ("PonderNetはいつ提案されましたか？", ("year", "PonderNetはいつ提案されましたか？")),
    ("Which paper introduced the Zero Redundancy Optimizer?", ("authors", "the Zero Redundancy Optimizer")),
    ("残差学習を提案した論文はどれですか？", ("authors", "残差学習を提案した論文はどれですか？")),
    ("どの論文がSentencePieceを提案しましたか？", ("authors", "どの論文がSentencePieceを提案しましたか？")),
    ("Who is behind FlashAttention?", ("authors", "FlashAttention")),
    ("Which team is behind PaLM?", ("authors", "PaLM")),
    ("Who are the people behind PonderNet?", ("authors", "PonderNet")),
    ("What is behind the success of transformers?", None),
    # a byline question asks for the byline, whatever it asks it with
    ("Who wrote the paper that introduced the Transformer architecture?", None),
    ("When was the FlashAttention paper published?", None),
    ("What did the authors propose?", None),
    ("How was the model developed?", None),
    ("Which paper reports results on ImageNet?", None),
    ("When was the study conducted?", None),
])
def test_a_question_asks_who_proposed_a_method_or_when(question, asked):
    assert asks_originators(question) == asked


def test_the_names_a_question_gives_a_method():
    terms = Analyzer().terms

    def names(question: str) -> list[list[set[str]]]:
        return [[set(word) for word in name.words] for name in method_names(asks_originators(question)[1], terms)]

    # two names: either will do; "model" says what kind of thing it is, as "networks" does
    assert names("Who developed MAML, model-agnostic meta-learning?") == [[{"maml"}], [{"agnost"}, {"meta"}, {"learn"}]]
    assert names("Who invented residual networks?") == [[{"residu"}]]
    assert names("Who designed the model?") == []
    # the one capitalised word among lower-case ones names it alone too; two capitalised words stay one name
    assert names("Who introduced the Reptile meta-learning algorithm?") == [[{"reptil"}, {"meta"}, {"learn"}],
                                                                             [{"reptil"}]]
    assert names("Who proposed the Vision Transformer?") == [[{"vision"}, {"transform"}]]
    # a Japanese word as any English term its glosses give; the asking words left out
    residual, learning = names("残差学習を考案したのは誰ですか？")[0]
    assert "residu" in residual and {"learn", "studi"} <= learning


def test_who_proposed_a_method_a_paper_presents_is_its_byline(cited_papers):
    for question in ("Who invented residual networks?", "残差学習を考案したのは誰ですか？"):
        answer = cited_papers.search(question, top_k=5).answer
        assert "Kaiming He" in answer.text, (question, answer.text)
        assert answer.citations[0].source_path.endswith("resnet.pdf")
    for question in ("Who came up with PonderNet?", "Which paper introduced PonderNet?", "Who is behind PonderNet?"):
        pondernet = cited_papers.search(question, top_k=5).answer
        assert pondernet.text.startswith("“PonderNet: Learning to Ponder” (2021) is by Andrea Banino"), question


def test_who_proposed_a_method_the_papers_cite_is_the_entry_they_cite(cited_papers):
    """ResNet: "We adopt batch normalization (BN) [16] right after each convolution", [16] being
    Ioffe and Szegedy's paper; the answer quotes the citing sentence after the entry's byline."""
    answer = cited_papers.search("Who proposed batch normalization?", top_k=5).answer
    first, quote = answer.text.split("\n")[:2]
    assert first.startswith("“Batch normalization: Accelerating deep network training") and "Ioffe" in first
    assert "batch normalization" in quote.lower() and answer.citations[0].source_path.endswith(".pdf")
    # ViT writes "Transformers" after its title's colon and "Our Vision Transformer": neither makes it
    # the paper that presents the Transformer
    transformer = cited_papers.search("Who introduced the Transformer?", top_k=5).answer
    assert "Dosovitskiy" not in transformer.text, transformer.text


def test_when_a_method_was_proposed_is_the_year_on_that_byline(cited_papers):
    answer = cited_papers.search("In what year was PonderNet proposed?", top_k=5).answer
    assert answer.text.startswith("“PonderNet: Learning to Ponder” by Andrea Banino et al. was published in 2021. [")
    cited = cited_papers.search("When was batch normalization introduced?", top_k=5).answer
    assert "Ioffe et al., the work the passages cite for it, was published in 2015." in cited.text, cited.text


def test_a_sentence_claims_only_what_comes_before_a_clause_about_it():
    """RWKV's "we introduce the RWKV model, a novel architecture that combines the strengths of RNNs
    and Transformers" presents RWKV, not the Transformer; "Our Vision Transformer (ViT)" names ViT's own."""
    from monjyu.engines.context import Source
    from monjyu.engines.originators import presenting_paper
    from monjyu.types import SearchHit

    terms = Analyzer().terms

    def presented(question: str, text: str) -> bool:
        hit = SearchHit(text_unit_id="u", document_id="d", text=text, score=1.0, document_title="A Paper",
                        end_char=len(text), authors=["A. Author"])
        return presenting_paper(method_names(asks_originators(question)[1], terms), [Source(1, hit)], terms) is not None

    rwkv = "To tackle these challenges, we introduce the RWKV model, a novel architecture that combines RNNs and Transformers."
    assert presented("Who proposed RWKV?", rwkv) and not presented("Who proposed the Transformer?", rwkv)
    vit = "Our Vision Transformer (ViT) attains excellent results when pre-trained at sufficient scale."
    assert presented("Who developed the Vision Transformer?", vit) and presented("Who developed ViT?", vit)
    assert not presented("Who proposed the transformer decoder?", "Our transformer decoder then interleaves blocks.")
    # what the claim presents is the brief comparison; BERT comes after a preposition
    zero = "To understand the resource requirement, we present a brief comparison with Bert-Large."
    assert not presented("Who introduced BERT?", zero)
    assert presented("Who proposed the Transformer?", "We propose a new simple network architecture, the Transformer.")


def test_the_paper_presenting_a_method_is_looked_for_by_its_name_too(cited_papers):
    """"Who proposed the Vision Transformer?" retrieves ViT's passages that do not claim it (and
    others' that "propose" something); a search for the name finds "Our Vision Transformer (ViT)"."""
    answer = cited_papers.search("Who proposed the Vision Transformer?", top_k=5).answer
    assert (answer.note or "").startswith("originators") and "Alexey Dosovitskiy" in answer.text, answer.text
    assert answer.citations[0].source_path.endswith("vit.pdf")


def test_a_passage_found_by_the_name_counts_only_where_the_name_comes_first():
    """Of the passages of the sources' papers that a search for the name finds, "We introduce Reptile,
    ..." presents Reptile; "we present a brief comparison with BERT" does not present BERT, nor does
    a paper no source is from (the search reads the sources' papers only). The one cited is numbered after the
    sources."""
    from monjyu.engines.context import Source
    from monjyu.engines.originators import originators_answer
    from monjyu.types import SearchHit

    def hit(unit: str, paper: str, text: str) -> SearchHit:
        return SearchHit(text_unit_id=unit, document_id=paper, text=text, score=1.0, document_title="A Paper",
                         end_char=len(text), authors=[paper.title() + " Author"], year=2018)

    sources = [Source(1, hit("z1", "zero", "Memory is the bottleneck of training.")),
               Source(2, hit("r1", "reptile", "Meta-learning methods learn from few examples."))]
    found = [hit("z2", "zero", "To understand the cost, we present a brief comparison with BERT and GPT-2."),
             hit("r2", "reptile", "We introduce Reptile, an algorithm closely related to FOMAML."),
             hit("b1", "bert", "We introduce BERT, a new language representation model.")]

    def answer(question: str):
        return originators_answer(*asks_originators(question), sources, "en", Analyzer().terms,
                                  None, None, lambda query, papers, top_k: [h for h in found if h.document_id in papers])

    reptile = answer("Who introduced Reptile?")
    assert "Reptile Author" in reptile.text and [c.number for c in reptile.citations] == [3], reptile.text
    assert answer("Who created BERT?") is None


def test_a_method_no_paper_presents_or_cites_is_left_to_the_reader(cited_papers):
    answer = cited_papers.search("Who invented the steam engine?", top_k=5).answer
    assert not (answer.note or "").startswith("originators")


def test_the_citing_sentence_of_a_run_in_paragraph_is_quoted_with_its_label_set_apart(tmp_path, make_config):
    """A PDF paragraph that opens with a bold label ("**Residual Dropout** We apply dropout [1] ...")
    is quoted with the label set apart, as the reader quotes it: "Residual Dropout: We apply ..."."""
    (tmp_path / "papers").mkdir()
    c = canvas.Canvas(str(tmp_path / "papers" / "paper.pdf"), pagesize=letter)
    top = letter[1]
    c.setFont("Helvetica-Bold", 16)
    c.drawString(72, top - 72, "Regularising Deep Sequence Models")
    c.setFont("Helvetica", 11)
    c.drawString(72, top - 92, "Ada Lovelace and Charles Babbage")
    c.setFont("Helvetica-Bold", 12)
    c.drawString(72, top - 130, "3 Training")
    y = top - 156
    for label, text in (("Optimizer", "We train every model with plain stochastic gradient descent."),
                        ("Residual Dropout", "We apply dropout [1] to the output of each sub-layer, before it is normalized.")):
        c.setFont("Helvetica-Bold", 10)
        c.drawString(72, y, label)
        c.setFont("Helvetica", 10)
        c.drawString(72 + c.stringWidth(label + " ", "Helvetica-Bold", 10), y, text)
        c.drawString(72, y - 12, "The measured figures follow in the table below, one row for each setting.")
        y -= 40
    c.setFont("Helvetica-Bold", 12)
    c.drawString(72, y - 10, "References")
    c.setFont("Helvetica", 9)
    for label, lines, at in (("[1]", ["N. Srivastava, G. Hinton, A. Krizhevsky, I. Sutskever, and R. Salakhutdinov. Dropout: a",
                                      "simple way to prevent neural networks from overfitting. JMLR, 15(1):1929-1958, 2014."], 30),
                             ("[2]", ["D. Kingma and J. Ba. Adam: A method for stochastic optimization. In ICLR, 2015."], 55)):
        c.drawString(72, y - at, label)
        for i, line in enumerate(lines):
            c.drawString(90, y - at - 11 * i, line)
    c.showPage()
    c.save()
    m = Monjyu(tmp_path / "idx", make_config())
    assert not m.index([tmp_path / "papers"]).failures
    byline, quote = m.ask("Who proposed dropout?").answer.text.splitlines()
    assert byline.startswith("“Dropout: a simple way to prevent neural networks from overfitting” (2014) is by N. Srivastava")
    assert quote.startswith("Residual Dropout: We apply dropout [1] to the output of each sub-layer")


def test_who_proposed_a_method_costs_no_llm_call(cited_papers, make_config, llm_server):  # noqa: F811
    m = Monjyu(cited_papers.index_dir, make_config(llm=llm_server.config()))
    answer = m.search("Who came up with PonderNet?", top_k=5).answer
    assert "Andrea Banino" in answer.text and llm_server.requests == []


def test_a_cited_entry_that_names_a_paper_of_the_collection_answers_with_its_byline():
    """The citation graph links ViT's entry [12] to the collection's ResNet paper: its byline
    answers, cited to ResNet's first passage, then the sentence of ViT that cites it; and where the citing papers call a paper by
    the name asked (citations.json: "ResNet" for ResNet's), that paper's byline answers first."""
    from monjyu.engines.context import Source
    from monjyu.engines.originators import CollectionReferences, DocumentReferences, originators_answer
    from monjyu.types import SearchHit

    text = "We compare with ResNet [12] on ImageNet."
    vit = SearchHit(text_unit_id="u1", document_id="vit.pdf", text=text, score=1.0, document_title="ViT",
                    start_char=100, end_char=100 + len(text), authors=["Alexey Dosovitskiy"], year=2020)
    mark = 100 + text.index("[12]")
    refs = DocumentReferences(entries={12: {"title": "Deep residual learning for image recognition",
                                            "authors": ["K. He"], "year": 2016}},
                              marks=[(mark, mark + 4, [12])], linked={12: "resnet.pdf"})
    resnet = SearchHit(text_unit_id="u9", document_id="resnet.pdf", text="Deeper neural networks ...", score=0.0,
                       document_title="Deep Residual Learning for Image Recognition",
                       authors=["Kaiming He", "Xiangyu Zhang"], year=2015)

    def answer(names: dict[str, list[str]]):
        return originators_answer("authors", "ResNet", [Source(1, vit)], "en", Analyzer().terms,
                                  lambda: CollectionReferences({"vit.pdf": refs}, names),
                                  lambda doc: resnet if doc == "resnet.pdf" else None)

    linked = answer({})
    assert linked.text == ("“Deep Residual Learning for Image Recognition” (2015) is by Kaiming He and Xiangyu Zhang. [2]\n"
                           "We compare with ResNet [12] on ImageNet. [1]")
    assert [(c.number, c.document_id) for c in linked.citations] == [(2, "resnet.pdf"), (1, "vit.pdf")]
    called = answer({"resnet.pdf": ["ResNet"]})
    assert called.text == "“Deep Residual Learning for Image Recognition” (2015) is by Kaiming He and Xiangyu Zhang. [2]"
    assert [c.document_id for c in called.citations] == ["resnet.pdf"]


def test_the_paper_citing_papers_call_by_the_name_presents_it_whatever_another_paper_seems_to_claim():
    """"Which paper introduced the Transformer?" retrieved Primer's "we propose searching for more
    efficient alternatives to Transformer", which read as a claim (the name after a preposition
    claims nothing since); the citing papers call "Attention Is All You Need" the Transformer
    (citations.json), so its byline answers, with its own claim, found by the search for the name
    within it."""
    from monjyu.engines.context import Source
    from monjyu.engines.originators import CollectionReferences, originators_answer
    from monjyu.types import SearchHit

    def hit(unit: str, paper: str, text: str, authors: list[str]) -> SearchHit:
        return SearchHit(text_unit_id=unit, document_id=paper, text=text, score=1.0, document_title=paper.title(),
                         end_char=len(text), authors=authors, year=2017)

    primer = hit("p1", "primer", "To this end, we propose searching for more efficient alternatives to Transformer by "
                                 "modifying its TensorFlow computation graph.", ["David So"])
    attention = hit("a1", "attention", "Recurrent models preclude parallelization within training examples.",
                    ["Ashish Vaswani"])
    claim = hit("a2", "attention", "In this work we propose the Transformer, a model architecture eschewing "
                                   "recurrence.", ["Ashish Vaswani"])

    def answer(names: dict[str, list[str]]):
        return originators_answer(*asks_originators("Which paper introduced the Transformer?"),
                                  [Source(1, primer), Source(2, attention)], "en", Analyzer().terms,
                                  lambda: CollectionReferences({}, names), None,
                                  lambda query, papers, top_k: [h for h in (attention, claim) if h.document_id in papers])

    assert "Ashish Vaswani" in answer({}).text  # no name known: Primer's sentence claims no Transformer
    called = answer({"attention": ["Transformer"]})
    assert "Ashish Vaswani" in called.text and "we propose the Transformer" in called.text, called.text
