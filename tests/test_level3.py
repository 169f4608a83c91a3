"""Level 3: entities the LLM extracted, merged across passages by a stated rule (an abbreviation
and its expansion are one entity; names that carry different numbers are not) and clustered; a
passage that names the entity under another name is reached by lazy search's deepening and by
the graph walks of graph mode and HybridRAG; a removed document leaves it; nothing offline."""

from __future__ import annotations

import json

import numpy as np
import pytest

from monjyu import Monjyu
from monjyu.config import GraphConfig
from monjyu.levels.entity_graph import build_entity_graph, merge_names, same_entity
from monjyu.levels.extract import Extraction
from monjyu.query import Query
from tests.llm_server import LLMTestServer
from tests.test_levels import scripted

DOCS = {
    "outbreak.txt": "Venezuelan equine encephalitis virus spread among horses in Colombia in 1995.",
    "strain.txt": "The attenuated TC-83 strain was derived from VEEV at Fort Detrick.",
    "birds.txt": "Eastern equine encephalitis virus killed many birds in Florida.",
    "bread.txt": "Sourdough bread rises slowly because of wild yeast.",
}
QUESTION = "Which attenuated strain was derived from the virus that spread among horses in Colombia?"
EXTRACTIONS = {  # the "LLM"'s extraction of each passage, by a word of it
    "Colombia": {"entities": [{"name": "Venezuelan equine encephalitis virus", "type": "virus"},
                              {"name": "Colombia", "type": "place"}],
                 "relations": [{"source": "Venezuelan equine encephalitis virus", "target": "Colombia",
                                "description": "spread among horses in Colombia"}]},
    "TC-83": {"entities": [{"name": "VEEV", "type": "virus"}, {"name": "TC-83", "type": "strain"},
                           {"name": "Fort Detrick", "type": "place"}],
              "relations": [{"source": "TC-83", "target": "VEEV", "description": "TC-83 was derived from VEEV"}]},
    "Florida": {"entities": [{"name": "Eastern equine encephalitis virus", "type": "virus"},
                             {"name": "EEEV", "type": "virus"}], "relations": []},
}


responder = scripted(EXTRACTIONS, "Colombia|TC-83")  # relevant: a sentence naming Colombia or the strain


@pytest.fixture
def server():
    with LLMTestServer(responder) as s:
        yield s


@pytest.fixture
def folder(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in DOCS.items():
        (docs / name).write_text(text, encoding="utf-8")
    return docs


@pytest.fixture
def built(tmp_path, folder, server, make_config):
    """The index, Level 3 built for the whole collection (every passage extracted); lazy search
    wants two relevant sentences, so one test that finds one deepens."""
    Monjyu(tmp_path / "idx", make_config()).index([folder])
    m = Monjyu(tmp_path / "idx", make_config(llm=server.config(), lazy={"sufficient_relevant": 2}))
    done = m.levels.build(3)
    assert done["sent"] == len(DOCS) and done["failed"] == 0
    return m


def unit_of(m: Monjyu, start: str) -> str:
    columns = m.workspace.current().searcher.index.columns
    return next(u for u, text in zip(columns["id"], columns["text"]) if text.startswith(start))


def test_the_merge_rule_joins_an_abbreviation_and_keeps_near_names_apart():
    assert same_entity("VEEV", "Venezuelan equine encephalitis virus")
    assert same_entity("Vero cells", "vero cell") and same_entity("Aretha Franklin", "Aretha Louise Franklin")
    assert not same_entity("SARS-CoV", "SARS-CoV-2") and not same_entity("VEEV", "Eastern equine encephalitis virus")
    numbers = merge_names([("SARS-CoV", "virus"), ("SARS-CoV-2", "virus"), ("sars-cov", ""), ("SARS-CoV", "disease")])
    assert numbers[0] == numbers[2] and len({numbers[0], numbers[1], numbers[3]}) == 3


def test_level3_merges_entities_across_passages_and_clusters_them(built):
    entities = built.workspace.current().level_three()
    veev = entities.entity_of("VEEV")
    assert veev == entities.entity_of("venezuelan equine encephalitis virus")
    assert entities.entity_of("EEEV") == entities.entity_of("Eastern equine encephalitis virus") != veev
    rows = entities.units[veev].tolist()
    texts = built.workspace.current().searcher.index.columns["text"]
    assert sorted(texts[r][:12] for r in rows) == ["The attenuat", "Venezuelan e"]
    status = built.levels.status()["3"]
    assert status["entities"] == len(entities) and status["merged"] == 2 and status["communities"] >= 1
    assert status["units_extracted"] == len(DOCS)


def test_lazy_search_at_level_three_reaches_the_passage_naming_the_entity_otherwise(built):
    strain = unit_of(built, "The attenuated")
    two = built.lazy_search(QUESTION, budget=1, level=2)
    three = built.lazy_search(QUESTION, budget=1, level=3)
    assert two.level2["level"] == 2 and strain not in two.kept_text_unit_ids
    assert three.levels_reached == [0, 1, 2, 3] and three.level2["level"] == 3
    assert strain in three.kept_text_unit_ids and three.level2["relevant"] >= 1


def test_graph_walks_go_through_level_three_entities(built, make_config):
    strain = unit_of(built, "The attenuated")
    searcher = built.workspace.current().searcher
    outbreak = searcher.row_of(unit_of(built, "Venezuelan"))
    graph = searcher.index.graph
    seeds = {n: 1.0 for n in graph.match("horses in Colombia", searcher.graph.phrases(Query.of("horses in Colombia")))}
    offline = Monjyu(built.index_dir, make_config())  # no LLM: no Level 3
    plain = offline.workspace.current().searcher.index.graph.personalized_pagerank(seeds)
    assert plain[searcher.row_of(strain)] == 0  # no noun phrase links the two passages
    built.search(QUESTION, mode="graph")  # the search links Level 3's entities into the walk
    walked = graph.personalized_pagerank(seeds)
    assert walked[searcher.row_of(strain)] > 0 and walked[outbreak] > walked[searcher.row_of(strain)]
    assert strain in [h.text_unit_id for h in built.search("horses in Colombia", mode="graph", top_k=3).hits]


def test_graph_search_says_a_passage_came_through_a_level_three_entity(built, server, make_config):
    strain = unit_of(built, "The attenuated")
    m = Monjyu(built.index_dir, make_config(llm=server.config(), search=NO_VECTORS))
    hits = m.search("horses in Colombia", mode="graph", top_k=4, answer=False).hits
    levels = {h.text_unit_id: h.level for h in hits}
    assert levels[strain] == 3 and levels[unit_of(built, "Venezuelan")] == 1
    offline = Monjyu(built.index_dir, make_config(search=NO_VECTORS)).search("horses in Colombia", mode="graph",
                                                                            top_k=4, answer=False).hits
    assert strain not in [h.text_unit_id for h in offline] and {h.level for h in offline} == {1}


# Keyword search and the graph walk only, the walk seeded by the question's phrases alone (vector
# search finds every passage of four): the strain passage holds no word of the question, so only
# the walk through VEEV reaches it.
NO_VECTORS = {"graph_dense_seeds": 0}
ASKED = "How is the virus that spread among horses in Colombia related to what came from it?"


def relation_request():
    from monjyu.schemas import SearchOptions, SearchQuery

    return SearchQuery(text=ASKED, type="relationship", options=SearchOptions(
        limit=4, rerank_enabled=False, weights={"keyword": 0.5, "semantic": 0.0, "graph": 0.5}))


def test_hybridrag_reaches_the_passage_through_a_level_three_entity_and_says_so(built, server, make_config):
    strain = unit_of(built, "The attenuated")
    offline = Monjyu(built.index_dir, make_config(search=NO_VECTORS)).hybrid_search(relation_request(), answer=False)
    assert strain not in [h.text_unit_id for h in offline.hits]
    m = Monjyu(built.index_dir, make_config(llm=server.config(), search=NO_VECTORS))
    result = m.hybrid_search(relation_request(), answer=False)
    item = next(i for i in result.items if i.hit.text_unit_id == strain)
    assert item.hit.level == 3 and item.scores["graph"] is not None and item.scores["keyword"] is None
    assert {i.hit.level for i in result.items if i.hit.text_unit_id != strain} <= {0, 1}
    public = next(r for r in result.response.results if r.id == strain)
    assert public.sources.level == 3
    assert result.level3["units_sent"] == 0 and not result.level3["searched_again"]  # all extracted before


def test_a_hybridrag_relationship_question_deepens_to_level_two_within_its_units(tmp_path, folder, server, make_config):
    Monjyu(tmp_path / "idx", make_config()).index([folder])
    m = Monjyu(tmp_path / "idx", make_config(llm=server.config(), hybrid={"deepen_units": 2}, search=NO_VECTORS))
    first = m.hybrid_search(relation_request(), answer=False)
    assert first.level3["units_sent"] == 2 and first.level3["searched_again"] and first.level3["entities"] >= 1
    assert m.levels.status()["2"]["units_extracted"] == 2
    again = m.hybrid_search(relation_request(), answer=False)
    assert again.level3["units_sent"] == 0 and again.level3["units_reused"] == 2 and not again.level3["searched_again"]
    local = m.hybrid_search(QUESTION, answer=False)  # not a relationship question: nothing extracted
    assert local.classification["type"] == "local" and not local.level3


def test_removing_a_document_removes_its_entities_from_level_three(built, folder):
    strain = unit_of(built, "The attenuated")
    (folder / "strain.txt").unlink()
    built.index([folder])
    entities = built.workspace.current().level_three()
    assert entities.entity_of("TC-83") is None and entities.entity_of("VEEV") is None
    assert entities.extracted_units == len(DOCS) - 1
    result = built.lazy_search(QUESTION, budget=1, level=3)
    assert strain not in result.kept_text_unit_ids and all(h.text_unit_id != strain for h in result.hits)


def test_offline_nothing_of_level_three_is_built_or_walked(tmp_path, folder, make_config):
    m = Monjyu(tmp_path / "idx", make_config())
    m.index([folder])
    assert m.workspace.current().level_three() is None and "3" not in m.levels.status()
    assert not m.workspace.current().searcher.index.graph._extra_nodes


def test_build_entity_graph_links_noun_phrase_units_and_relations():
    extractions = {k: Extraction.model_validate(v) for k, v in EXTRACTIONS.items()}
    rows = {"Colombia": [0], "TC-83": [1], "Florida": [2]}
    graph = build_entity_graph(extractions, rows, lambda name: np.array([0, 3]) if name == "colombia" else None,
                               GraphConfig())
    colombia = graph.entity_of("Colombia")
    assert graph.units[colombia].tolist() == [0, 3]  # its extraction's unit and a noun phrase's
    assert {(graph.names[a][0], graph.names[b][0]) for a, b, _ in graph.relations} == {
        ("Venezuelan equine encephalitis virus", "Colombia"), ("TC-83", "Venezuelan equine encephalitis virus")}


def test_monjyu_index_level_3_estimates_first_then_builds_and_status_shows_it(tmp_path, folder, server, cache_dir):
    from typer.testing import CliRunner

    from monjyu.cli import app
    from tests.test_levels import llm_yaml

    config, idx = llm_yaml(tmp_path, server, cache_dir), str(tmp_path / "idx")
    first = CliRunner().invoke(app, ["index", str(folder), "--index", idx, "--level", "3", "--config", config])
    assert first.exit_code == 0, first.output
    assert f"{len(DOCS)} passages to write" in first.output and "--yes" in first.output
    done = CliRunner().invoke(app, ["index", str(folder), "--index", idx, "--level", "3", "--yes", "--config", config])
    assert done.exit_code == 0, done.output
    assert "level 3: 5 entities (2 known under several names)" in done.output
    status = json.loads(CliRunner().invoke(app, ["status", "--index", idx, "--config", config, "--json"]).stdout)
    assert status["levels"]["3"]["entities"] == 5 and status["levels"]["3"]["units_extracted"] == len(DOCS)
