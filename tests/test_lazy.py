"""Lazy search end to end on the real sample index: offline (local relevance scorer, extractive
answer) and through an OpenAI-compatible endpoint (the local test server), with every budget and
cap checked."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from monjyu import Monjyu
from monjyu.engines.lazy import LazyConversation
from monjyu.engines.relevance import LocalRelevanceScorer
from monjyu.query import Query
from tests.llm_server import LLMTestServer, Scripted, echo_responder

QUESTION = "Which algorithm detects hierarchical communities in the concept graph?"


def lazy_responder(request: dict) -> str:
    """Plays each lazy-search role from the prompt it is sent: subqueries, sentence scores (Leiden
    sentences score 8), claims (one per sentence), and the cited answer (echo)."""
    system = request["messages"][0]["content"]
    user = request["messages"][-1]["content"]
    numbered = re.findall(r"^(\d+)\. (.*)$", user, re.M)
    if '"subqueries"' in system:
        return json.dumps({"subqueries": [user, "Leiden algorithm"], "expanded_query": user + " Leiden"})
    if '"scores"' in system:
        return json.dumps({"scores": [8 if "Leiden" in s else 1 for _, s in numbered]})
    if '"claims"' in system:
        return json.dumps({"claims": [{"statement": s, "sources": [int(i)]} for i, s in numbered]})
    return echo_responder(request)


@pytest.fixture
def lazy_server():
    with LLMTestServer(lazy_responder) as server:
        yield server


def test_offline_lazy_search_answers_with_citations(sample_index):
    phases: list[str] = []
    result = sample_index.lazy_search(QUESTION, on_phase=lambda name, info: phases.append(name))
    assert result.assessor == "local" and result.answer.kind == "extractive"
    assert "Leiden" in result.answer.text and result.citations
    assert {c.text_unit_id for c in result.citations} <= set(result.kept_text_unit_ids)
    assert 0 < result.budget_used <= result.budget_total == 100
    assert result.communities_visited and result.communities_visited[0]["depth"] == 0
    assert result.usage["calls"] == 0 and result.llm_calls == 0
    assert phases[:2] == ["refine", "match"] and phases[-3:] == ["explore", "claims", "answer"]
    assert "visit" in phases
    assert result.to_dict()["answer"]["kind"] == "extractive"


@pytest.mark.parametrize("settings,check", [
    ({"budget": 5}, lambda r: r.budget_used <= 5 and r.stop_reason == "budget"),
    ({"sufficient_relevant": 1}, lambda r: r.stop_reason == "sufficient" and len(r.relevant_sentences) >= 1),
    ({"max_depth": 0, "budget": 1000}, lambda r: {v["depth"] for v in r.communities_visited if v["id"] is not None} == {0}),
    ({"units_per_visit": 1, "budget": 1000}, lambda r: all(v["units_tested"] == 1 for v in r.communities_visited)),
    ({"breadth_limit": 1, "max_depth": 0, "budget": 1000},
     lambda r: len([v for v in r.communities_visited if v["id"] is not None]) == 1),
    # the walk over, spare budget goes to the best matched units it never reached
    ({"max_depth": 0, "breadth_limit": 1, "budget": 1000},
     lambda r: r.communities_visited[-1]["id"] is None and r.communities_visited[-1]["depth"] is None),
    # every matched unit tested with budget in hand: the match goes deeper, in rank order
    ({"top_k_units": 2, "max_depth": 0, "breadth_limit": 1, "budget": 1000},
     lambda r: sum(v["units_tested"] for v in r.communities_visited) > 2 + 3 and r.stop_reason == "exhausted"),
    # ... and before that, the best relevant sentences are bridged from (joined to the question)
    ({"top_k_units": 2, "max_depth": 0, "breadth_limit": 1, "budget": 1000},
     lambda r: any(v["title"].startswith("(bridge: ") for v in r.communities_visited)),
    ({"top_k_units": 2, "max_depth": 0, "breadth_limit": 1, "budget": 1000, "max_bridges": 0},
     lambda r: not any(v["title"].startswith("(bridge: ") for v in r.communities_visited)),
])
def test_budgets_and_limits_are_respected(sample_index, make_config, settings, check):
    m = Monjyu(sample_index.index_dir, make_config(lazy=settings))
    result = m.lazy_search(QUESTION)
    assert check(result), (settings, result.stop_reason, result.budget_used, result.communities_visited)


def test_offline_lazy_keeps_the_best_matched_units(sample_index, make_config):
    """Without an LLM the best matched units are tested first and kept whatever the local test
    says (lazy.keep_matched): lazy keeps what hybrid search ranks highest; 0 leaves it to the test."""
    question = "Which paper compares the cost of relevance tests?"
    top = [h.text_unit_id for h in sample_index.search(question, mode="hybrid", top_k=3, answer=False).hits]
    kept = sample_index.lazy_search(question, answer=False)
    assert set(top) <= set(kept.kept_text_unit_ids)
    assert kept.communities_visited[0]["id"] is None and kept.communities_visited[0]["units_tested"] == 3
    off = Monjyu(sample_index.index_dir, make_config(lazy={"keep_matched": 0})).lazy_search(question, answer=False)
    assert off.communities_visited[0]["id"] is not None  # exploration starts at the communities


@pytest.mark.parametrize("question,topic", [
    ("What are the main themes across these papers?", ""),
    ("これらの文書の主なテーマは何ですか？", ""),
    ("What do these papers say about reranking?", "reranking"),
])
def test_global_questions_offline_are_answered_by_themes(sample_index, question, topic):
    """No LLM: themes from the community hierarchy, each labelled by phrases its cited sentences
    name, with at least two cited sentences, no label repeating another, and the coverage said."""
    from monjyu.nlp.analyzer import Analyzer

    analyzer = Analyzer()
    r = sample_index.lazy_search(question)
    assert r.assessor == "themes" and r.answer.kind == "extractive" and r.usage["calls"] == 0
    assert r.coverage["topic"] == topic and 0 < r.coverage["documents"] <= r.coverage["documents_total"] == 9
    assert 1 <= len(r.themes) <= 10 and r.coverage["communities"] == len(r.themes)
    labels = []
    for theme in r.themes:
        assert len(theme["sentences"]) >= 2
        named = set().union(*(analyzer.terms(s["text"]) for s in theme["sentences"]))
        assert all(set(analyzer.terms(p)) <= named for p in theme["label"]), theme
        assert not any(len(set(theme["label"]) & other) > len(theme["label"]) / 2 for other in labels)
        labels.append(set(theme["label"]))
    cited = {c.text_unit_id for c in r.citations}
    assert cited == {s["text_unit_id"] for t in r.themes for s in t["sentences"]}
    assert [h.text_unit_id for h in r.hits] == r.kept_text_unit_ids[:len(r.hits)]
    for n, theme in enumerate(r.themes, start=1):  # each theme is a numbered line of the answer
        assert f"{n}. {', '.join(theme['label'])}:" in r.answer.text
    # The heading is a sentence in the question's language, the same in the result's coverage.
    heading = r.answer.text.split("\n")[0]
    assert r.coverage["heading"] == heading
    if question.isascii():
        assert re.fullmatch(rf"{len(r.themes)} themes?( about {topic})? across (all 9|\d of the 9) documents:", heading)
    else:
        assert re.fullmatch(rf"9 件の文書(のうち \d 件)?にわたる {len(r.themes)} のテーマ:", heading)


@pytest.mark.parametrize("question", ["What are the main themes across these papers?",
                                      "これらの文書の主なテーマは何ですか？"])
def test_theme_labels_are_phrases_as_written_that_stand_for_their_theme(sample_index, question):
    """Each label phrase is written as the collection writes it (every word of it is a word of
    the collection's text, ignoring case: no lemma such as "specie" or "mer"; a Japanese phrase
    occurs as it is), is no stop or stock
    research word, and is far more frequent among its community's own passages than in the whole
    collection."""
    from monjyu.engines.lazy.themes import MIN_LIFT, STOCK_PHRASES
    from monjyu.nlp.analyzer import EN_STOPWORDS
    from monjyu.nlp.noun_phrases import STOP_PHRASES

    words = re.compile(r"[^\W_]+")
    searcher = sample_index.workspace.current().searcher
    texts = searcher.index.columns["text"]
    collection = {w.lower() for text in texts for w in words.findall(text)}
    r = sample_index.lazy_search(question)
    assert r.themes
    for theme in r.themes:
        assert 2 <= len(theme["label"]) <= 3 and [p["label"] for p in theme["phrases"]] == theme["label"]
        for phrase in theme["phrases"]:
            label = phrase["label"]
            if re.search(r"[\u3040-\u30ff\u4e00-\u9fff]", label):  # Japanese, written without spaces: as written
                assert any(label in text for text in texts), label
            else:
                assert all(w.lower() in collection for w in words.findall(label)), label
            assert label.lower() not in STOCK_PHRASES | EN_STOPWORDS | STOP_PHRASES, label
            assert phrase["community_share"] >= MIN_LIFT * phrase["collection_share"] > 0, phrase
        shares = [p["community_share"] for p in theme["phrases"]]
        assert shares == sorted(shares, reverse=True)  # the phrase naming most of its passages first


def test_written_form_finds_how_the_texts_spell_a_graph_phrase():
    from monjyu.nlp.spelling import written_form

    assert written_form("specie", ["Two species of bats.", "The species differ."]) == "species"
    assert written_form("mer", ["MERS spread in 2012; MERS cases rose.", "merely a mer"]) == "MERS"
    assert written_form("mers-cov", ["MERS - CoV and MERS-CoV"]) in {"MERS-CoV", "MERS - CoV"}
    assert written_form("analysis", ["Both analyses agree."]) == "analyses"
    assert written_form("language model", ["Large Language Models are ..."]) == "Language Models"
    assert written_form("mer", ["It merely merges."]) is None


@pytest.mark.parametrize("question", ["What do these papers say about volcanoes?",
                                      "これらの論文はサッカーについて何を述べていますか？"])
def test_global_questions_off_topic_say_so(sample_index, question):
    r = sample_index.lazy_search(question)
    assert r.answer.kind == "insufficient" and r.stop_reason == "not covered" and not r.citations
    assert ("does not cover" in r.answer.text) or ("扱っていません" in r.answer.text)


def test_a_topic_whose_head_noun_the_collection_never_writes_is_not_covered(sample_index):
    """"large language model volcanoes": the samples write "large language model" often, never
    "volcano"; its passages speak of language models, not of volcanoes."""
    r = sample_index.lazy_search("What do these papers say about large language model volcanoes?")
    assert r.stop_reason == "not covered" and not r.citations
    assert sample_index.lazy_search("What do these papers say about large language models?").themes


def test_a_topic_whose_level_gives_too_few_themes_reads_the_finer_communities_of_those_that_gave_none(
        tmp_path, make_config, monkeypatch):
    """A topic's themes come from the chosen level first; when it gives fewer than MAX_THEMES, the
    next finer level's communities are read, those within a community that gave a theme left out
    (they would say its topic again), ranked by the topic's passages as the coarse ones are; never
    for the whole collection. The samples clustered finely enough to have two levels, and three
    themes at most, so that the coarse level (three communities) is chosen."""
    import shutil

    from monjyu.engines.lazy import themes
    from monjyu.engines.lazy.themes import Theme, ThemeFinder
    from tests.conftest import SAMPLES

    shutil.copytree(SAMPLES, tmp_path / "papers")
    m = Monjyu(tmp_path / "idx", make_config(graph={"max_cluster_size": 4}))
    m.index([tmp_path / "papers"])
    monkeypatch.setattr(themes, "MAX_THEMES", 3)
    manifest, searcher = m.workspace.current().manifest, m.workspace.current().searcher
    communities = searcher.index.communities
    assert communities.levels == [0, 1]
    finder = ThemeFinder(searcher, m.workspace.answers().scorer, m.config.answer.min_sentence_score,
                         m.workspace.current().embed_query)
    topic, _, level, coarse = finder.plan(Query.of("What do these papers say about retrieval?"))
    assert topic == "retrieval" and level == 0
    gave = coarse[0]
    theme = Theme(community_id=gave.id, level=0, phrases=[], sentences=[], documents=0)
    finer = list(finder._finer_candidates(level, topic, [theme]))
    assert finer and all(c.level == 1 and c.parent != gave.id for c in finer)
    expected = [c for c in finder._candidates(1, finder.topic_rows.tolist()) if c.parent != gave.id]
    assert [c.id for c in finer] == [c.id for c in expected]
    assert not list(finder._finer_candidates(level, "", [theme]))  # the whole collection
    assert not list(finder._finer_candidates(1, topic, []))  # the finest level has none below
    levels = [t["level"] for t in m.lazy_search("What do these papers say about retrieval?").themes]
    assert levels and levels == sorted(levels)


def test_global_questions_across_languages_are_decided_by_the_themes(tmp_path, make_config):
    """A Japanese question over English papers: no word can match, so the themes decide, each
    cited sentence passing the relevance test against the topic; none passing, not covered."""
    import shutil

    from tests.conftest import SAMPLES

    shutil.copytree(SAMPLES, tmp_path / "papers", ignore=shutil.ignore_patterns("kensaku-kakucho.md"))
    m = Monjyu(tmp_path / "idx", make_config())
    m.index([tmp_path / "papers"])
    covered = m.lazy_search("これらの論文はグラフについて何を述べていますか？")
    assert covered.themes and covered.answer.kind == "extractive" and covered.citations
    off = m.lazy_search("これらの論文はサッカーについて何を述べていますか？")
    assert off.stop_reason == "not covered" and "扱っていません" in off.answer.text and not off.citations


def test_a_themes_quotes_leave_the_papers_own_citations_out(tmp_path, make_config):
    """A theme quotes its sentences as the reader quotes them: a paper's "[87]" would read as one of
    the answer's own markers, which number its passages."""
    import shutil

    from tests.conftest import SAMPLES

    shutil.copytree(SAMPLES, tmp_path / "papers")
    for name in ("lazygraphrag.md", "hybrid-retrieval.txt"):
        path = tmp_path / "papers" / name
        path.write_text(re.sub(r"(?<=[a-z])\.(?=\s)", " [87].", path.read_text(encoding="utf-8")), encoding="utf-8")
    m = Monjyu(tmp_path / "idx", make_config())
    m.index([tmp_path / "papers"])
    r = m.lazy_search("What are the main themes across these papers?")
    assert any("[87]" in s["text"] for t in r.themes for s in t["sentences"])  # the sentences as written
    assert "[87]" not in r.answer.text and " ." not in r.answer.text
    assert set(re.findall(r"\[(\d+)\]", r.answer.text)) <= {str(c.number) for c in r.citations}


def test_global_questions_honour_filters(sample_index):
    from monjyu.retrieval.filters import parse_filters

    r = sample_index.lazy_search("What are the main themes across these papers?",
                                 filters=parse_filters(["type=md"]))
    assert r.citations and all(c.source_path.endswith(".md") for c in r.citations)


def test_presets_set_the_budget(sample_index):
    assert sample_index.lazy_search(QUESTION, preset="z500").budget_total == 500
    assert sample_index.lazy_search(QUESTION, budget=7).budget_total == 7


def test_lazy_search_through_an_llm_endpoint(sample_index, make_config, lazy_server):
    m = Monjyu(sample_index.index_dir, make_config(llm=lazy_server.config()))
    result = m.lazy_search(QUESTION)
    assert result.assessor.startswith("llm:")
    assert "Leiden algorithm" in result.subqueries
    assert result.relevant_sentences and all("Leiden" in s.text for s in result.relevant_sentences)
    assert result.claims and result.answer.kind == "llm" and result.citations
    # cost is reported honestly: what the server saw
    assert result.usage["calls"] == len(lazy_server.requests)
    assert result.usage["prompt_tokens"] == lazy_server.prompt_tokens
    assert result.usage["completion_tokens"] == lazy_server.completion_tokens


@pytest.mark.parametrize("cap", [3, 4, 6])
def test_llm_call_cap_is_never_exceeded(sample_index, make_config, lazy_server, cap):
    m = Monjyu(sample_index.index_dir, make_config(llm=lazy_server.config(), lazy={"max_llm_calls": cap, "batch_size": 2}))
    result = m.lazy_search(QUESTION, budget=1000)
    assert len(lazy_server.requests) <= cap and result.usage["calls"] <= cap
    assert result.answer.text


def test_llm_garbage_still_gives_an_answer(sample_index, make_config, lazy_server):
    lazy_server.push(*[Scripted(content="I am not JSON at all")] * 60)
    m = Monjyu(sample_index.index_dir, make_config(llm=lazy_server.config()))
    result = m.lazy_search(QUESTION, budget=30)
    assert result.answer.text and result.answer.kind in ("llm", "insufficient", "extractive")


def test_streamed_answer_and_conversation_follow_up(sample_index, make_config, lazy_server):
    m = Monjyu(sample_index.index_dir, make_config(llm=lazy_server.config()))
    conversation = LazyConversation()
    pieces: list[str] = []
    first = m.lazy_search(QUESTION, conversation=conversation, on_token=pieces.append)
    assert len(pieces) > 1 and first.answer.kind == "llm"
    assert conversation.claims and conversation.productive_communities
    lazy_server.requests.clear()
    m.lazy_search("And who improved on the Louvain method?", conversation=conversation)
    refine_prompt = lazy_server.requests[0].body["messages"][0]["content"]
    assert QUESTION in refine_prompt  # the follow-up is refined with the earlier turn in view
    assert len(conversation.turns) == 2


def test_local_prefilter_keeps_unrelated_sentences_from_the_llm(sample_index, make_config, lazy_server):
    sent, used = {}, {}
    for floor in (0.0, 2.0):
        lazy_server.requests.clear()
        m = Monjyu(sample_index.index_dir, make_config(llm=lazy_server.config(), lazy={"prefilter": floor}))
        result = m.lazy_search(QUESTION, budget=60)
        listings = [r.body["messages"][-1]["content"] for r in lazy_server.requests
                    if '"scores"' in r.body["messages"][0]["content"]]
        sent[floor] = sum(len(re.findall(r"^\d+\. ", text, re.M)) for text in listings)
        used[floor] = result.budget_used  # every sentence tested counts, by either tier
    assert sent[0.0] == used[0.0] <= 60 and 0 < sent[2.0] < used[2.0] <= 60


def test_sessions_carry_a_conversation_through_the_cli(sample_index, cache_dir, make_config, lazy_server):
    """`--session NAME` twice: the second question is refined with the first turn in view (test
    LLM server), and offline the turns are kept in the index directory."""
    from typer.testing import CliRunner

    from monjyu.cli import app

    idx = str(sample_index.index_dir)
    offline = {"MONJYU_CACHE_DIR": str(cache_dir)}
    for question in (QUESTION, "And who improved on the Louvain method?"):
        out = CliRunner().invoke(app, ["search", question, "--mode", "lazy", "--session", "cli-offline", "--index", idx,
                                       "--json"], env=offline)
        assert out.exit_code == 0, out.output
    assert json.loads(out.stdout)["turn"] == 2
    assert len(sample_index.conversations.get("cli-offline").turns) == 2
    online = {**offline, **{f"MONJYU_LLM__{k.upper()}": str(v) for k, v in lazy_server.config().model_dump().items()}}
    for question in (QUESTION, "And who improved on the Louvain method?"):
        lazy_server.requests.clear()
        out = CliRunner().invoke(app, ["search", question, "--mode", "lazy", "--session", "cli-llm", "--index", idx,
                                       "--json"], env=online)
        assert out.exit_code == 0, out.output
    assert QUESTION in lazy_server.requests[0].body["messages"][0]["content"]  # the follow-up sees turn 1
    bad = CliRunner().invoke(app, ["search", "x", "--mode", "lazy", "--session", "../etc", "--index", idx], env=offline)
    assert bad.exit_code == 2 and "session name" in bad.output


def test_answers_stream_as_an_async_generator(sample_index, make_config, lazy_server):
    import asyncio

    m = Monjyu(sample_index.index_dir, make_config(llm=lazy_server.config()))

    async def collect() -> list[str]:
        return [chunk async for chunk in m.astream(QUESTION, "lazy")]

    chunks = asyncio.run(collect())
    assert len(chunks) >= 2 and "".join(chunks).strip()


def test_local_relevance_weights_rare_query_terms():
    """With the collection's IDF as term weights, naming a question's rare term counts for more than
    naming its common word; without weights both are half the terms. (The vectors are a stand-in:
    only the lexical share differs between the two sentences.)"""
    import numpy as np

    scorer = LocalRelevanceScorer(lambda texts: np.zeros((len(texts), 4), np.float32))
    query = Query.of("Leiden study")
    leiden, study = (scorer.query_terms(Query.of(w)) for w in ("Leiden", "study"))
    sentences = ["The Leiden algorithm refines partitions.", "This study reports results."]
    plain = scorer.score(query, np.zeros(4, np.float32), sentences)
    weighted = scorer.score(query, np.zeros(4, np.float32), sentences,
                            {**dict.fromkeys(leiden, 5.0), **dict.fromkeys(study, 0.5)})
    assert plain[0] == plain[1] > 0
    assert weighted[0] > plain[0] > weighted[1] > 0


def test_offline_bridges_from_every_statement_of_the_best_units(tmp_path, make_config):
    """The sentence naming the second hop is not the first unit's best ("She was the chief queen of
    King Dikkha"), and the second hop's page shares no word with the question, so the question's own
    test fails it; with budget left, that statement joined to the question finds and passes it."""
    records = [{"_id": "saw", "title": "Saw Thanda", "text": "Saw Thanda was queen consort to four kings of Arakan. "
                "She was the chief queen of King Dikkha. She later married King Sekkya."},
               {"_id": "dikkha", "title": "Min Dikkha", "text": "Min Dikkha was ruler of the Kingdom of Mrauk U from "
                "1554. Dikkha, the king, died in Mrauk U, where he was born."}]
    records += [{"_id": f"q{i}", "title": f"Queen {name}", "text": f"Queen {name} was a consort whose husband fought at "
                 f"war. Her husband was buried in {place}."}
                for i, (name, place) in enumerate([("Ada", "Lyon"), ("Bea", "Turin"), ("Cora", "Porto"), ("Dina", "Ghent"),
                                                   ("Eva", "Cadiz"), ("Flora", "Bonn"), ("Gita", "Pisa"), ("Hana", "Kiel")])]
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("\n".join(json.dumps(r) for r in records))
    m = Monjyu(tmp_path / "idx", make_config(lazy={"keep_matched": 1, "top_k_units": 3, "max_depth": 0, "budget": 200}))
    m.index([corpus])
    result = m.lazy_search("Where did Saw Thanda's husband die?", answer=False)
    found = [v for v in result.communities_visited if v["title"].startswith("(bridge: She was the chief queen")]
    assert found and found[0]["relevant"] >= 1
    assert "dikkha" in {s.document_id for s in result.relevant_sentences}


def test_a_large_community_ranks_only_its_units_near_the_question(sample_index, monkeypatch):
    """A community of more untested units than SIMILAR_ROWS ranks by similarity only its matched
    units and those among the question's NEAREST (a million-unit index's top themes): with NEAREST
    covering the collection the search is the same as before; with one, every unit it takes from
    a community is matched or that one."""
    from monjyu.engines.lazy import search as lazy

    question = "Which paper compares the cost of relevance tests?"
    before = sample_index.lazy_search(question, answer=False)
    taken: list[tuple[int, bool]] = []
    next_units = lazy.LazySearch._next_units

    def spy(self, rows, state, query_vectors):
        out = next_units(self, rows, state, query_vectors)
        near = state.nearest if state.nearest is not None else np.zeros(len(state.match_rank), bool)
        taken.extend((row, bool(state.match_rank[row] != state.unmatched_rank or near[row])) for row in out)
        return out

    monkeypatch.setattr(lazy.LazySearch, "_next_units", spy)
    monkeypatch.setattr(lazy, "SIMILAR_ROWS", 0)
    monkeypatch.setattr(lazy, "NEAREST", 100_000)
    same = sample_index.lazy_search(question, answer=False)
    assert same.kept_text_unit_ids == before.kept_text_unit_ids
    taken.clear()
    monkeypatch.setattr(lazy, "NEAREST", 1)
    sample_index.lazy_search(question, answer=False)
    assert taken and all(ok for _, ok in taken)
