"""Answers with citations over the real sample index: extractive (no LLM), and the pieces they
are made of (sources within a budget, citation markers)."""

from __future__ import annotations

from monjyu.engines.citations import resolve_citations
from monjyu.engines.context import Source, select_sources
from monjyu.store import LanceStore
from monjyu.types import SearchHit


def _hit(i: int, text: str) -> SearchHit:
    return SearchHit(text_unit_id=f"u{i}", document_id=f"d{i}", text=text, score=1.0 / i, rank=i,
                     document_title=f"Doc {i}", source_path=f"d{i}.md", start_char=100 * i)


def test_citation_markers_map_to_sources_and_bad_numbers_are_dropped():
    sources = [Source(1, _hit(1, "alpha")), Source(2, _hit(2, "beta"))]
    text, cites = resolve_citations("Alpha holds [2]. Beta too [1, 7]. Nothing here [9]. 全角 ［１］", sources)
    assert text == "Alpha holds [2]. Beta too [1]. Nothing here. 全角 [1]"
    assert [c.number for c in cites] == [2, 1]
    assert cites[0].text_unit_id == "u2" and cites[0].document_title == "Doc 2"


def test_sources_respect_the_token_budget():
    hits = [_hit(1, "a " * 50), _hit(2, "b " * 500), _hit(3, "c " * 50)]
    picked = select_sources(hits, budget_tokens=200, count_tokens=lambda t: len(t.split()))
    assert [s.hit.text_unit_id for s in picked] == ["u1", "u3"]  # the unit too large is skipped
    assert [s.number for s in picked] == [1, 2]


def test_extractive_answer_cites_sentences_at_their_document_offsets(sample_index):
    result = sample_index.search("Which algorithm detects hierarchical communities?", top_k=5)
    answer = result.answer
    assert answer.kind == "extractive" and answer.citations
    assert "Leiden" in answer.text
    docs = LanceStore(sample_index.generation_dir() / "lancedb").documents(["id", "text"]).to_pydict()
    doc_text = dict(zip(docs["id"], docs["text"]))
    hit_ids = {h.text_unit_id for h in result.hits}
    for c in answer.citations:
        assert c.text_unit_id in hit_ids
        assert doc_text[c.document_id][c.start_char:c.end_char] == c.snippet
        assert f"[{c.number}]" in answer.text
    assert result.usage["calls"] == 0


def test_japanese_question_gets_a_japanese_answer(sample_index):
    answer = sample_index.search("検索拡張生成とは何ですか？", top_k=5).answer
    assert answer.language == "ja" and answer.kind == "extractive"
    assert any(c.source_path.endswith("kensaku-kakucho.md") for c in answer.citations)


def test_off_topic_question_is_not_answered(sample_index):
    answer = sample_index.search("What is the boiling point of mercury in kelvin?", top_k=5).answer
    assert answer.kind == "insufficient" and not answer.citations
    assert "Not enough information" in answer.text


def test_hits_only_when_no_answer_is_asked(sample_index):
    result = sample_index.search("Leiden", mode="keyword", top_k=3, answer=False)
    assert result.answer is None and result.hits and result.to_dict()["answer"] is None
