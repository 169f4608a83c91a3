"""Papers as papers: reference entries and in-text citations read from the text, the collection's
citation graph, and every door to it (API, CLI, MCP, filters) over real arXiv PDFs in a real index."""

from __future__ import annotations

import asyncio
import json

import bibtexparser
import pytest
from typer.testing import CliRunner

from monjyu.cli import app
from monjyu.errors import MonjyuError
from monjyu.ingest.references import find_citations, parse_entry, parse_references
from monjyu.mcp_server import create_server
from monjyu.types import REFERENCE, Section

RESNET, PONDER, VIT = "papers/resnet.pdf", "papers/ponder_net.pdf", "papers/vit.pdf"


# ----------------------------------------------------------------------------- entries, every style
@pytest.mark.parametrize("text, surname, title, year", [
    ("[1] Jimmy Lei Ba, Jamie Ryan Kiros, and Geoffrey E Hinton. Layer normalization. arXiv preprint "
     "arXiv:1607.06450, 2016.", "Ba", "Layer normalization", 2016),
    ("[4] Y. Bengio, P. Simard, and P. Frasconi. Learning long-term dependencies with gradient descent is "
     "difficult. IEEE Transactions on Neural Networks, 5(2):157-166, 1994.", "Bengio",
     "Learning long-term dependencies with gradient descent is difficult", 1994),
    ("Jacob Devlin, Ming-Wei Chang, Kenton Lee, and Kristina Toutanova. 2019. BERT: Pre-training of deep "
     "bidirectional transformers for language understanding. In NAACL.", "Devlin",
     "BERT: Pre-training of deep bidirectional transformers for language understanding", 2019),
    ("Abid, A., Farooqi, M., and Zou, J. Persistent anti-muslim bias in large language models. CoRR, "
     "abs/2101.05783, 2021.", "Abid", "Persistent anti-muslim bias in large language models", 2021),
    ("Hinton, G., Vinyals, O., and Dean, J. (2015). Distilling the knowledge in a neural network. "
     "arXiv:1503.02531.", "Hinton", "Distilling the knowledge in a neural network", 2015),
    ("12. Silver, D. et al. Mastering the game of Go without human knowledge. Nature 550, 354-359 (2017).",
     "Silver", "Mastering the game of Go without human knowledge", 2017),
    ('[3] K. He, X. Zhang, S. Ren, and J. Sun, "Deep residual learning for image recognition," in CVPR, 2016.',
     "He", "Deep residual learning for image recognition", 2016),
    ("Łukasz Kaiser and Samy Bengio. Can active memory replace attention? In NIPS, 2016.", "Kaiser",
     "Can active memory replace attention?", 2016),
    ("William James, Frederick Burkhardt, and Ignas K Skrupskelis. The principles of psychology, volume 1. "
     "Macmillan London, 1890.", "James", "The principles of psychology", 1890),
    ("R. Schwartz, J. Dodge, N. A. Smith, and O. Etzioni. Green AI. Communications of the ACM, 63(12), 2020.",
     "Schwartz", "Green AI", 2020),
])
def test_an_entry_gives_its_first_author_title_and_year_in_every_style(text, surname, title, year):
    ref = parse_entry(text)
    assert ref.first_surname == surname
    assert ref.title == title
    assert ref.year == year


def test_identifiers_and_labels_are_read_out_of_an_entry():
    ref = parse_entry("[12] A. Author. A title. In Venue, 2020. doi:10.1145/3292500.3330701 arXiv:2005.14165v2")
    assert (ref.label, ref.doi, ref.arxiv_id, ref.year) == ("12", "10.1145/3292500.3330701", "2005.14165", 2020)


def _paper(body: str, refs: list[str]) -> tuple[str, list[Section]]:
    ref_text = "References\n\n" + "\n\n".join(refs)
    text = body + "\n\n" + ref_text
    return text, [Section(0, len(body), "1 Introduction"), Section(len(body) + 2, len(text), "References", REFERENCE)]


def test_numbered_citations_with_ranges_and_lists_point_at_their_entries():
    text, sections = _paper("Transformers [1] replaced recurrence [2-4], see also [2, 4]. The vocabulary is [9].",
                            [f"[{i}] A. Author{i}. Title number {i}. In Venue, 20{10 + i}." for i in range(1, 5)])
    refs = parse_references(text, sections)
    assert [r.label for r in refs] == ["1", "2", "3", "4"]
    marks = find_citations(text, sections, refs)
    assert [m.entries for m in marks] == [[1], [2, 3, 4], [2, 4]]  # [9] names no entry: not a citation


def test_author_year_citations_in_parentheses_and_in_the_sentence():
    entries = ["Jacob Devlin, Ming-Wei Chang, and Kenton Lee. 2019. BERT: Pre-training. In NAACL.",
               "Yinhan Liu and Myle Ott. 2019a. RoBERTa: A robustly optimized approach. arXiv.",
               "Yinhan Liu and Myle Ott. 2019b. Another paper of theirs. arXiv.",
               "Noam Smith and Kim Jones. 2020. A two-author study. In ACL."]
    text, sections = _paper("Pre-training (Devlin et al., 2019; Liu et al., 2019b) works. Devlin et al. (2019) "
                            "showed it, as did Smith and Jones (2020) and (Liu et al., 2019a).", entries)
    refs = parse_references(text, sections)
    assert [(r.first_surname, r.year, r.year_suffix) for r in refs] == \
        [("Devlin", 2019, ""), ("Liu", 2019, "a"), ("Liu", 2019, "b"), ("Smith", 2020, "")]
    marks = find_citations(text, sections, refs)
    assert [m.entries for m in marks] == [[1, 3], [1], [4], [2]]


def test_an_entry_broken_across_columns_is_joined_and_a_table_after_the_list_is_no_entry():
    text, sections = _paper("Body [1] [2].", ["[1] N. Heess and G. Wayne. Learning continuous control. In "
                                              "Proceedings of NIPS, pages 2944-2952, Cambridge, MA, USA,",
                                              "2015. MIT Press.", "[2] A. Author. A title. In Venue, 2019.",
                                              "Table 3: 0.1 0.2 0.3 0.4 4096 10 300 0.03 0.1 2019"])
    refs = parse_references(text, sections)
    assert len(refs) == 2 and refs[0].year == 2015 and refs[0].text.endswith("MIT Press.")


# ----------------------------------------------------------------------------- the graph, every door
def test_the_collection_knows_who_cites_whom(cited_papers):
    listing = {p["id"]: p for p in cited_papers.papers.list()["papers"]}
    assert listing[RESNET]["cited_by"] == [PONDER, VIT]
    assert listing[PONDER]["cites"] == [RESNET] and listing[VIT]["cites"] == [RESNET]
    assert listing[RESNET]["references"] == 50 and listing[PONDER]["references"] == 16
    assert listing[VIT]["authors"][0] == "Alexey Dosovitskiy" and listing[VIT]["year"] == 2020
    assert [p["id"] for p in cited_papers.papers.list(cites=RESNET)["papers"]] == [PONDER, VIT]
    assert [p["id"] for p in cited_papers.papers.list(cited_by=PONDER)["papers"]] == [RESNET]

    paper = cited_papers.papers.get(PONDER)
    linked = [e for e in paper["reference_list"] if e["document_id"]]
    assert [(e["document_id"], e["title"]) for e in linked] == [(RESNET, "Deep residual learning for image recognition")]
    assert len(paper["reference_list"]) == 16


def test_what_other_papers_say_about_a_paper_are_their_citing_sentences(cited_papers):
    contexts = cited_papers.papers.citation_contexts(RESNET)
    assert {c["document_id"] for c in contexts} == {PONDER, VIT}
    for c in contexts:
        assert "He et al., 2016" in c["sentence"] or "(He et al." in c["sentence"], c
        assert c["text_unit_id"] and c["page"]
        unit = cited_papers.documents.get(c["document_id"], c["text_unit_id"], context_units=0)["context"]
        assert c["sentence"] in unit["text"].replace("\n", " ") or c["sentence"][:60] in unit["text"]


def test_works_cited_by_several_papers_but_missing_and_bibtex(cited_papers):
    missing = cited_papers.papers.missing_works()
    attention = next(w for w in missing if w["title"].lower() == "attention is all you need")
    assert attention["count"] == 2 and attention["cited_by"] == [PONDER, VIT]
    library = bibtexparser.parse_string(cited_papers.papers.bibtex([VIT, RESNET], missing[:3]))
    assert len(library.entries) == 5 and not library.failed_blocks
    vit = library.entries[0]
    assert vit["eprint"] == "2010.11929" and vit["author"].startswith("Alexey Dosovitskiy and Lucas Beyer")
    with pytest.raises(MonjyuError, match="no document with id"):
        cited_papers.papers.get("papers/absent.pdf")


@pytest.mark.parametrize("mode", ["vector", "keyword", "hybrid", "graph", "hybridrag", "lazy"])
def test_cites_and_cited_by_filters_hold_in_every_mode(cited_papers, mode):
    from monjyu.retrieval.filters import parse_filters

    options = {} if mode == "lazy" else {"top_k": 5}
    cites = cited_papers.ask("residual networks for image recognition", mode, **options,
                             filters=parse_filters([f"cites={RESNET}"]))
    assert cites.hits and {h.document_id for h in cites.hits} <= {PONDER, VIT}
    cited = cited_papers.ask("residual networks for image recognition", mode, **options,
                             filters=parse_filters([f"cited-by={PONDER}"]))
    assert cited.hits and {h.document_id for h in cited.hits} == {RESNET}
    with pytest.raises(MonjyuError, match="no document with id 'nope'"):
        cited_papers.ask("x", mode, filters=parse_filters(["cites=nope"]))


def test_papers_on_the_command_line(cited_papers):
    runner = CliRunner()
    index = ["--index", str(cited_papers.index_dir)]
    listing = runner.invoke(app, ["papers", *index, "--json"])
    assert listing.exit_code == 0, listing.output
    assert {p["id"] for p in json.loads(listing.stdout)["papers"]} == {RESNET, PONDER, VIT}
    cited_by = json.loads(runner.invoke(app, ["papers", "--cites", RESNET, *index, "--json"]).stdout)
    assert [p["id"] for p in cited_by["papers"]] == [PONDER, VIT]
    one = runner.invoke(app, ["papers", PONDER, *index])
    assert "Deep residual learning for image recognition" in one.stdout and f"-> {RESNET}" in one.stdout
    missing = runner.invoke(app, ["papers", "--missing", *index, "--format", "bibtex"])
    assert missing.exit_code == 0 and "@" in missing.stdout
    assert bibtexparser.parse_string(missing.stdout).entries
    cited = runner.invoke(app, ["search", "What do other papers say about ResNet?", *index, "--format", "bibtex"])
    keys = {e.key for e in bibtexparser.parse_string(cited.stdout).entries}
    assert cited.exit_code == 0 and keys == {"banino2021pondernet", "dosovitskiy2020image"}, cited.stdout
    refused = runner.invoke(app, ["search", "x", *index, "--format", "bibtex", "--json"])
    assert refused.exit_code == 2 and "BibTeX only" in refused.output
    refused = runner.invoke(app, ["papers", PONDER, "--missing", *index])
    assert refused.exit_code == 2 and "one or the other" in refused.output
    refused = runner.invoke(app, ["papers", *index, "--format", "ris"])
    assert refused.exit_code == 2 and "table or bibtex" in refused.output


def test_papers_through_mcp(cited_papers):
    server = create_server(cited_papers)

    async def run():
        listing = await server.call_tool("papers", {"cites": RESNET})
        paper = await server.call_tool("paper", {"document_id": RESNET})
        missing = await server.call_tool("missing_works", {})
        bib = await server.call_tool("bibtex", {"document_ids": [VIT]})
        return listing, paper, missing, bib

    listing, paper, missing, bib = asyncio.run(run())

    def payload(result):
        assert not result.is_error, result.content[0].text
        return json.loads(result.content[0].text)

    assert [p["id"] for p in payload(listing)["papers"]] == [PONDER, VIT]
    assert {c["document_id"] for c in payload(paper)["cited_by_contexts"]} == {PONDER, VIT}
    assert any(w["count"] == 2 for w in payload(missing)["works"])
    assert "2010.11929" in bib.content[0].text


def test_what_other_papers_say_is_answered_from_their_citing_sentences(cited_papers):
    assert cited_papers.papers.asked_about("What do other papers say about ResNet?") == RESNET
    assert cited_papers.papers.asked_about("What is ResNet?") is None  # a question about the paper itself
    contexts = {(c["document_id"], " ".join(c["sentence"].split())) for c in cited_papers.papers.citation_contexts(RESNET)}
    for question in ("What do other papers say about ResNet?", "他の論文はResNetについて何と述べていますか？",
                     "Which papers cite Deep Residual Learning for Image Recognition?"):
        result = cited_papers.search(question)
        assert result.answer.kind == "extractive" and "cite" in result.answer.note
        quoted = [(c.document_id, " ".join(c.snippet.split())) for c in result.answer.citations]
        assert quoted and set(quoted) <= contexts, question
        assert {d for d, _ in quoted} == {PONDER, VIT}
        assert {h.document_id for h in result.hits} == {PONDER, VIT}


def test_citation_links_join_the_graph_walk_when_asked(cited_papers):
    """search.citation_links (off by default): the walk from a citing passage reaches the cited
    paper's opening units through the citation, with no phrase in common needed."""
    from monjyu.index.builder import generation_dir
    from monjyu.retrieval.loaded import LoadedIndex

    m = cited_papers.workspace.manifest()
    gen = generation_dir(cited_papers.index_dir, m.generation)
    plain = LoadedIndex.load(gen, m.embedder_dim)
    linked = LoadedIndex.load(gen, m.embedder_dim, citation_links=5.0)
    assert linked.graph.walk_nodes > plain.graph.walk_nodes == plain.graph.incidence.shape[1]
    c = plain.columns
    context = cited_papers.papers.citation_contexts(RESNET)[0]
    seed = list(c["id"]).index(context["text_unit_id"])
    opening = [r for r, (d, i) in enumerate(zip(c["document_id"], c["chunk_index"])) if d == RESNET and i < 3]
    before = plain.graph.personalized_pagerank({}, {seed: 1.0})[opening].sum()
    after = linked.graph.personalized_pagerank({}, {seed: 1.0})[opening].sum()
    assert after > 2 * before
