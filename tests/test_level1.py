"""Level 1 on real English and Japanese paragraphs: phrases, graph, communities, graph search."""

from __future__ import annotations

import json

import pytest

import numpy as np
import scipy.sparse as sp

from monjyu import Monjyu
from monjyu.config import GraphConfig
from monjyu.errors import MonjyuError
from monjyu.index.level1 import PhraseCache, PhrasesAhead, build_level1
from monjyu.nlp.noun_phrases import NounPhraseExtractor
from monjyu.retrieval import graph as graph_module
from monjyu.retrieval.graph import PhraseGraph
from monjyu.store import LanceStore
from monjyu.kv import SqliteKV
from monjyu.store.lancedb_store import COMMUNITIES, ENTITIES, RELATIONSHIPS
from monjyu.query import Query

EN = ("Large language models are trained on web text. The Leiden algorithm detects communities in "
      "a co-occurrence graph of noun phrases. Marie Curie was born in Warsaw and worked in Paris.")
JA = "大規模言語モデルを用いた検索拡張生成の研究である。名詞句の共起グラフからコミュニティを検出する。山田太郎さんは東京都に住んでいる。"


def test_english_phrases_are_normalised_and_filtered():
    [phrases] = NounPhraseExtractor().extract([EN])
    for expected in ("large language model", "web text", "leiden algorithm", "community", "marie curie",
                     "warsaw", "paris", "noun phrase"):
        assert expected in phrases, (expected, phrases)
    assert not {"the", "it", "he"} & set(phrases)  # no determiners or pronouns
    # by part-of-speech tags (the default), proper nouns are MISC; with NER they get its labels
    assert phrases["marie curie"] == "MISC" and phrases["warsaw"] == "MISC" and phrases["web text"] == "CONCEPT"
    [named] = NounPhraseExtractor(named_entities=True).extract([EN])
    assert named["marie curie"] == "PERSON" and named["warsaw"] == "GPE" and named["web text"] == "CONCEPT"
    assert {"large language model", "marie curie", "leiden algorithm"} <= set(named)


def test_tagged_phrases_join_hyphens_and_proper_names():
    [phrases] = NounPhraseExtractor().extract(["Other methods of the University of Chicago use state-of-the-art "
                                               "retrieval-augmented models and masked language models."])
    assert phrases.get("university of chicago") == "MISC"
    assert "method" not in phrases and "other method" not in phrases  # stop words lead no phrase
    assert any(p.endswith("language model") for p in phrases)  # plural heads lemmatised


def test_japanese_noun_runs_keep_compounds():
    [phrases] = NounPhraseExtractor().extract([JA])
    for expected in ("大規模言語モデル", "検索拡張生成", "名詞句", "共起グラフ", "山田太郎", "東京都"):
        assert expected in phrases, (expected, phrases)
    assert "さん" not in phrases and "の" not in phrases
    assert phrases["山田太郎"] == "PERSON" and phrases["東京都"] == "GPE" and phrases["名詞句"] == "CONCEPT"


def test_variants_merge_into_one_node():
    a, b = NounPhraseExtractor().extract(["Language models are useful.", "A language model is useful."])
    assert "language model" in a and "language model" in b


def test_worker_processes_give_the_same_phrases_as_one_process():
    """Spawned workers (never forked) for a large batch: results equal, in order; Japanese stays here."""
    sentences = [f"Paper {i} trains large language models on graph data in Tokyo." for i in range(300)]
    texts = sentences[:150] + ["大規模言語モデルを使った検索"] + sentences[150:]  # three worker tasks
    single = NounPhraseExtractor(n_process=1).extract(texts)
    with NounPhraseExtractor(n_process=2) as parallel:
        parallel.start(wait=True)
        assert parallel.extract(texts) == single
        assert parallel._pool is not None  # the workers did run
    assert "large language model" in single[0] and "大規模言語モデル" in single[150]


def test_phrases_extracted_ahead_are_what_level1_reads(tmp_path):
    """A build's overlap: phrases extracted in a background thread while it embeds land in the
    phrase cache; finish() gives every text's phrases, extracting the ones not done ahead."""
    cache = PhraseCache(SqliteKV(tmp_path / "phrases.sqlite", "phrases"))
    extractor = NounPhraseExtractor(n_process=1)
    ahead = PhrasesAhead(cache, extractor)
    ahead.start([EN])
    assert list(ahead.finish([EN, JA])) == NounPhraseExtractor().extract([EN, JA])
    stored = cache._kv.get_many([PhraseCache.key(t, extractor.id) for t in (EN, JA)])
    assert len(stored) == 2


def test_graph_and_communities_are_deterministic():
    rng = np.random.default_rng(1)
    topics = [["neural network", "gradient descent", "loss function", "training data"],
              ["protein folding", "amino acid", "molecular dynamics", "binding site"],
              ["tokyo", "kyoto", "osaka", "nagoya"]]
    units = []
    for i in range(60):
        topic = topics[i % 3]
        units.append(list(rng.choice(topic, size=3, replace=False)) + ([topics[(i + 1) % 3][0]] if i % 10 == 0 else []))
    ids = [f"u{i}" for i in range(60)]
    a = build_level1(len(ids), units, GraphConfig(max_cluster_size=4, seed=7))
    b = build_level1(len(ids), units, GraphConfig(max_cluster_size=4, seed=7))
    assert a.communities.equals(b.communities) and a.relationships.equals(b.relationships)
    # The three topics end up in different top-level communities.
    top = [c for c in a.communities.to_pylist() if c["level"] == 0]
    title_of = dict(zip(a.entities["id"].to_pylist(), a.entities["title"].to_pylist()))
    groups = [{title_of[e] for e in c["entity_ids"]} for c in top]
    for topic in topics:
        assert any(set(topic) <= g for g in groups), (topic, groups)
    by_id = {c["id"]: c for c in a.communities.to_pylist()}
    for c in by_id.values():
        assert c["size"] == len(c["entity_ids"]) > 0
        if c["parent"] >= 0:  # hierarchy links both ways, one level apart
            parent = by_id[c["parent"]]
            assert c["id"] in parent["children"] and parent["level"] == c["level"] - 1


def test_index_builds_level1_tables_and_graph_search(sample_index):
    gen = sample_index.index_dir / "generations" / sample_index.status()["generation"] / "lancedb"
    store = LanceStore(gen)
    entities = store.read(ENTITIES)
    titles = set(entities["title"].to_pylist())
    assert {"leiden algorithm", "bm25", "大規模言語モデル"} <= titles
    assert store.read(RELATIONSHIPS).num_rows > 0 and store.read(COMMUNITIES).num_rows > 0
    result = sample_index.search("Which algorithm finds communities in the concept graph?", mode="graph", top_k=3)
    assert {"papers/community-detection.pdf", "abs-leiden", "papers/lazygraphrag.md"} & {h.document_id for h in result.hits}


def test_level0_only_build_and_incremental_graph(tmp_path, make_config):
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("\n".join(json.dumps({"_id": f"d{i}", "title": f"Doc {i}", "text": t}) for i, t in enumerate([
        "Marie Curie studied radioactivity in Paris.", "Pierre Curie worked with Marie Curie on radium.",
        "Radium glows in the dark."])))
    m0 = Monjyu(tmp_path / "idx", make_config(graph={"enabled": False}))
    assert m0.index([corpus]).level1 == {}
    m = Monjyu(tmp_path / "idx", make_config())
    first = m.index([corpus])  # no file changed, but Level 1 is now wanted
    assert first.level1["phrases"] > 0 and m.workspace.manifest().levels == [0, 1]
    more = tmp_path / "more.jsonl"
    more.write_text(json.dumps({"_id": "d9", "title": "Polonium", "text": "Marie Curie discovered polonium."}))
    second = m.index([corpus, more])
    assert second.level1["phrases"] > first.level1["phrases"]
    hits = m.search("polonium discovery", mode="graph", top_k=5).hits
    assert hits[0].document_id == "d9"


def test_graph_stats_and_exports(sample_index, tmp_path):
    import networkx as nx

    stats = sample_index.graph.stats()
    assert stats["phrases"] > 100 and stats["communities"] >= 1 and stats["top_phrases_by_degree"]
    graphml = sample_index.graph.export(tmp_path / "g.graphml", "graphml")
    g = nx.read_graphml(graphml)
    assert g.number_of_nodes() == stats["phrases"] and g.number_of_edges() == stats["edges"]
    page = sample_index.graph.export(tmp_path / "g.html", "html").read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and "<svg" in page and "leiden algorithm" in page


def test_neighbours_within_hops(sample_index):
    one = sample_index.graph.neighbours("leiden algorithm", hops=1, limit=200)
    two = sample_index.graph.neighbours("leiden algorithm", hops=2, limit=400)
    assert one and all(n["hop"] == 1 for n in one)
    assert {n["phrase"] for n in one} < {n["phrase"] for n in two}  # the second hop adds phrases
    assert "leiden algorithm" not in {n["phrase"] for n in two}
    assert any(n["hop"] == 2 for n in two)


def test_community_search_ranks_the_communities_holding_the_answers(sample_index):
    ranked = sample_index.graph.search_communities("Leiden community detection in graphs", top_k=5)
    assert ranked and ranked[0]["matched_units"] >= 1
    assert [r["score"] for r in ranked] == sorted((r["score"] for r in ranked), reverse=True)
    level0 = sample_index.graph.search_communities("Leiden community detection in graphs", top_k=50, level=0)
    assert level0 and all(r["level"] == 0 and r["parent"] == -1 for r in level0)


def test_title_links_lead_the_walk_to_the_page_about_a_phrase(tmp_path, make_config):
    """Bridge questions: the film's page names its director; the director's own page (titled by
    that phrase) should outrank other films that merely mention him."""
    records = [{"_id": "lloyd", "title": "Frank Lloyd", "text": "Frank Lloyd was a film director born in Glasgow, Scotland."},
               {"_id": "madame", "title": "Madame X (film)", "text": "Madame X is a silent drama film directed by Frank Lloyd."}]
    records += [{"_id": f"f{i}", "title": f"Film number {i}", "text": f"Film number {i} is a comedy film directed by Frank Lloyd "
                 f"with actor Person {i}."} for i in range(6)]
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("\n".join(json.dumps(r) for r in records))
    lead = {}
    for boost in (1.0, 20.0):
        m = Monjyu(tmp_path / "idx", make_config(search={"graph_title_boost": boost, "graph_dense_seeds": 0, "graph_hops": 1}))
        m.index([corpus])
        score = {h.document_id: h.score for h in m.search("Where was the director of Madame X born?", mode="graph",
                                                           top_k=8, answer=False).hits}
        lead[boost] = score["lloyd"] / max(score[f"f{i}"] for i in range(6))
    assert lead[20.0] > 3 * lead[1.0] and lead[20.0] > 3


def test_title_links_for_titles_no_phrase_holds_whole(tmp_path, make_config):
    """A title with a comma written out in full links ("daughter of Albert III, Duke of Bavaria"),
    its bare head does not (another Albert III); a title ending a longer phrase links ("son of
    king Gundobad" names the page Gundobad)."""
    records = [
        {"_id": "duke", "title": "Albert III, Duke of Bavaria", "text": "Albert III was born in Wolfratshausen to Ernest, Duke of Bavaria."},
        {"_id": "count", "title": "Albert III, Count of Habsburg", "text": "Albert III ruled the county of Habsburg in Swabia."},
        {"_id": "margaret", "title": "Margaret of Bavaria", "text": "Margaret was the daughter of Albert III, Duke of Bavaria. "
         "Her cousin also admired Albert III."},
        {"_id": "gundobad", "title": "Gundobad", "text": "Gundobad was King of the Burgundians. Gundobad issued a legal code."},
        {"_id": "godomar", "title": "Godomar II", "text": "Godomar II, son of king Gundobad, was king of Burgundy."},
        {"_id": "frederick", "title": "Frederick I, Holy Roman Emperor", "text": "Frederick Barbarossa was Holy Roman Emperor."},
        {"_id": "henry", "title": "Henry VI, Holy Roman Emperor", "text": "Henry VI was Holy Roman Emperor after his father."},
        {"_id": "otto", "title": "Otto of Burgundy", "text": "Otto was the fourth son of Frederick I, Holy Roman Emperor."},
    ]
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("\n".join(json.dumps(r) for r in records))
    m = Monjyu(tmp_path / "idx", make_config())
    m.index([corpus])
    searcher = m.workspace.current().searcher
    doc = searcher.index.columns["document_id"]
    row = {d: i for i, d in enumerate(doc)}
    links = {d: {doc[u]: phrase for u, phrase in searcher.index.graph.linked_units(row[d])}
             for d in ("margaret", "godomar", "otto")}
    assert links["margaret"].get("duke") == "albert iii, duke of bavaria" and "count" not in links["margaret"]
    assert links["godomar"].get("gundobad") == "gundobad"
    # Found through the title's second part: the tagger reads the "I" of "Frederick I" as a pronoun.
    assert links["otto"].get("frederick") == "frederick i, holy roman emperor" and "henry" not in links["otto"]


def test_query_phrases_reach_nodes_by_meaning_across_languages(sample_index):
    """The phrases that link units are embedded at build time; a Japanese query phrase that names
    no node seeds its nearest English phrase; English phrases are matched by name only."""
    searcher = sample_index.workspace.current().searcher
    graph = searcher.index.graph
    assert len(graph.vector_nodes) == int(((graph.df >= 2) & ~graph.is_hub).sum()) > 0
    query = "ライデンアルゴリズム"
    assert "leiden algorithm" not in {graph.phrases[n] for n in graph.match(query, searcher.graph.phrases(Query.of(query)))}
    assert "leiden algorithm" in {graph.phrases[n] for n in searcher.graph.seeds(Query.of(query))}
    assert sample_index.graph.neighbours(query)  # the CLI's `graph neighbours` takes such phrases too
    exact = searcher.graph.seeds(Query.of("leiden algorithm"))
    assert [graph.phrases[n] for n in exact] == ["leiden algorithm"]
    # Within one language a phrase is named or it is something else: no match by meaning.
    assert "leiden algorithm" not in {graph.phrases[n] for n in searcher.graph.seeds(Query.of("the leiden procedure"))}


def test_communities_rank_by_representative_phrases(sample_index, tmp_path, samples_copy, make_config):
    """With graph.embed_communities, community titles (representative phrases) are embedded at
    build time, and with a title weight the ranking also brings in communities about the question
    that hold none of its top units. Without them (the default) a title weight is refused."""
    assert sample_index.workspace.current().searcher.index.communities.title_vectors is None
    weighted = make_config(search={"community_title_weight": 0.3})
    with pytest.raises(MonjyuError, match="graph.embed_communities: true"):
        Monjyu(sample_index.index_dir, weighted).graph.search_communities("community detection in graphs")

    m = Monjyu(tmp_path / "idx", make_config(graph={"embed_communities": True}))
    m.index([samples_copy])
    manifest, searcher = m.workspace.current().manifest, m.workspace.current().searcher
    index = searcher.index.communities
    assert index.title_vectors is not None and len(index.title_ids) == len(index)
    scores = index.title_similarity(m.workspace.current().embed_query(Query.of("community detection in graphs")), 1.0)
    top = index.levels[0]
    assert index.rank([], level=top, title_scores=scores) == []  # weight 0: units only, and there are none
    by_title = index.rank([], level=top, title_scores=scores, title_weight=1.0)
    best = max((c for c in index.by_id.values() if c.level == top), key=lambda c: (scores[c.id], -c.id))
    assert by_title[0].community.id == best.id and all(h.matched_rows == [] for h in by_title)
    assert all(h.community.level == top for h in by_title)
    assert Monjyu(m.index_dir, make_config(graph={"embed_communities": True}, search={"community_title_weight": 0.3}))\
        .graph.search_communities("community detection in graphs")


def test_walks_on_large_graphs_run_in_row_blocks_with_the_same_scores(monkeypatch):
    """From graph.PARALLEL_NNZ links on, each walk step runs one row block per core: the same
    arithmetic, so the same scores as one product; and the walk follows one chain of steps, so
    it gives the units of the step-by-step walk (both sides updated every step) at even steps."""
    rng = np.random.default_rng(0)
    incidence = sp.random(400, 300, density=0.05, format="csr", random_state=1, dtype=np.float32)
    incidence.data[:] = 1.0
    hubs = np.zeros(300, dtype=bool)
    whole = PhraseGraph(incidence=incidence, phrases=[f"p{i}" for i in range(300)], is_hub=hubs)
    monkeypatch.setattr(graph_module, "PARALLEL_NNZ", 0)
    monkeypatch.setattr(graph_module, "cpu_cores", lambda: 3)
    blocked = PhraseGraph(incidence=incidence, phrases=[f"p{i}" for i in range(300)], is_hub=hubs)
    assert len(blocked._walk[1].blocks) == 3 and blocked._walk[1].matrix is None
    seeds = {int(i): 1.0 for i in rng.choice(300, 3, replace=False)}
    np.testing.assert_allclose(blocked.personalized_pagerank(seeds), whole.personalized_pagerank(seeds), rtol=1e-6)

    restart_p = np.zeros(300, np.float32)
    restart_p[list(seeds)] = 1 / 3
    p, u = restart_p.copy(), np.zeros(400, np.float32)
    for _ in range(6):  # both sides every step
        p, u = 0.7 * (whole._walk[0] @ u) + 0.3 * restart_p, 0.7 * (whole._walk[1] @ p)
    np.testing.assert_allclose(whole.personalized_pagerank(seeds, damping=0.7, iterations=6, tolerance=0), u,
                               rtol=1e-5, atol=1e-9)


def test_named_entities_setting_through_the_index(tmp_path, make_config):
    """graph.named_entities: true types English phrases by NER and the manifest keeps it, so
    queries are parsed alike; the default index refuses a filter on a label it cannot have."""
    from monjyu.config import GraphConfig as Graph
    from monjyu.errors import MonjyuError
    from monjyu import SearchFilters

    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "curie.md").write_text("# Radioactivity\n\nMarie Curie was born in Warsaw and studied radioactivity "
                                     "in Paris with Pierre Curie.\n", encoding="utf-8")
    (folder / "leiden.md").write_text("# Communities\n\nThe Leiden algorithm finds communities in large graphs.\n",
                                      encoding="utf-8")
    named = Monjyu(tmp_path / "named", make_config(graph=Graph(named_entities=True)))
    named.index([folder])
    assert named.workspace.manifest().named_entities
    hits = named.search("Where was Marie Curie born?", mode="graph", top_k=5, answer=False,
                        filters=SearchFilters(entity_types=["PERSON"])).hits
    assert hits and all("Curie" in h.text for h in hits)
    tagged = Monjyu(tmp_path / "tagged", make_config())
    tagged.index([folder])
    assert not tagged.workspace.manifest().named_entities
    assert tagged.search("Marie Curie", mode="graph", top_k=5, answer=False,
                         filters=SearchFilters(entity_types=["MISC"])).hits
    with pytest.raises(MonjyuError, match="graph.named_entities: true"):
        tagged.search("Marie Curie", mode="graph", top_k=5, answer=False, filters=SearchFilters(entity_types=["PERSON"]))


def test_a_bounded_walk_reads_less_and_ranks_as_the_exact_one(sample_index, make_config):
    """search.walk_epsilon: each step only from nodes whose mass reaches epsilon times their
    links; with a small epsilon the top of the ranking is the exact walk's, with a bar no node
    misses the very same scores, and graph mode takes the setting on a graph of
    search.walk_exact_links links or more (a smaller one walks exactly)."""
    searcher = sample_index.workspace.current().searcher
    assert searcher.graph.walk_epsilon() == 0.0  # the sample's graph is far under a million links
    graph = searcher.index.graph
    seeds = searcher.graph.seeds(Query.of("leiden algorithm communities"))
    other = searcher.graph.seeds(Query.of("hierarchical clustering of noun phrases"))
    assert seeds and other
    exact = graph.personalized_pagerank(seeds)
    bounded = graph.personalized_pagerank(seeds, epsilon=1e-7)
    top = np.argsort(-exact, kind="stable")[:5]
    assert set(np.argsort(-bounded, kind="stable")[:5]) == set(top)
    assert (bounded <= exact + 1e-6).all()  # mass is only ever held back, never added
    assert np.abs(graph.personalized_pagerank(seeds, epsilon=1e-15) - exact).sum() < 1e-5
    coarse = graph.personalized_pagerank(seeds, epsilon=1e-2)
    assert np.count_nonzero(coarse) < np.count_nonzero(exact)  # a coarse bar reaches fewer units
    # The scratch space a walk leaves for the next holds nothing of it.
    graph.personalized_pagerank(other, {0: 1.0}, epsilon=1e-7)
    assert np.array_equal(graph.personalized_pagerank(seeds, epsilon=1e-7), bounded)
    m = Monjyu(sample_index.index_dir, make_config(search={"walk_epsilon": 1e-7, "walk_exact_links": 0}))
    assert m.workspace.current().searcher.graph.walk_epsilon() == 1e-7
    hits = m.search("leiden algorithm communities", mode="graph", top_k=3).hits
    assert [h.text_unit_id for h in hits] == \
        [h.text_unit_id for h in sample_index.search("leiden algorithm communities", mode="graph", top_k=3).hits]
