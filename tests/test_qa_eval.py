"""QA scoring (answer matching, doc@k / ans@k) on tiny hand-checked cases."""

import json

import pytest

from monjyu.errors import MonjyuError
from monjyu.eval.qa import QADataset, answer_words, evaluate_qa, holds_answer

LONG = "mother to child transmission is the main cause of hiv infection in children worldwide"


def test_answer_words_lowercase_alphanumeric_nfkc():
    assert answer_words("Mother-to-Child (MTCT), 90%!") == ["mother", "to", "child", "mtct", "90"]
    assert answer_words("ﬁbrosis ＣＤ４ under_score") == ["fibrosis", "cd4", "under", "score"]
    assert answer_words("  ,;  ") == []


def test_whole_short_answer_ignoring_case_and_punctuation():
    passage = "Results: the R0 was 2.2 (95% CI), as reported."
    assert holds_answer(passage, ["R0 was 2.2"])
    assert holds_answer(passage, ["r0 WAS 2-2"])  # punctuation only separates words
    assert not holds_answer(passage, ["R0 was 3.2"])
    assert holds_answer(passage, ["nothing here", "95% CI"])  # any answer counts


def test_no_match_inside_words():
    assert not holds_answer("we concatenate the strings", ["cat"])
    assert not holds_answer("scattered cats", ["cat"])
    assert holds_answer("the cat sat", ["cat"])


def test_long_answer_matches_on_any_8_word_window():
    words = LONG.split()
    assert len(words) > 8
    tail8 = " ".join(words[-8:])
    assert holds_answer(f"Some context. {tail8.upper()}. More text.", [LONG])
    assert holds_answer(" ".join(words[3:11]), [LONG])
    assert not holds_answer(" ".join(words[3:10]), [LONG])  # 7 words: too short
    # 8 words in order but not contiguous in the passage
    assert not holds_answer(" ".join(words[:4]) + " extra " + " ".join(words[4:8]), [LONG])


def _dataset(tmp_path, records):
    f = tmp_path / "questions.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return f


def test_loader_reads_folder_and_reports_bad_line(tmp_path):
    good = {"id": 1, "question": "Q?", "answers": ["the cat"], "doc": "a.txt"}
    ds = QADataset.load(_dataset(tmp_path, [good]).parent)
    assert ds.questions[0].id == "1" and ds.questions[0].answers == ["the cat"]
    assert ds.docs_dir == tmp_path / "docs"

    f = _dataset(tmp_path, [good, {"id": 2, "question": "Q?", "answers": "the cat", "doc": "a.txt"}])
    with pytest.raises(MonjyuError, match=r"questions\.jsonl, line 2: answers"):
        QADataset.load(f)
    f.write_text(json.dumps(good) + "\n\n{not json\n", encoding="utf-8")
    with pytest.raises(MonjyuError, match=r"line 3: not valid JSON"):
        QADataset.load(f)
    f.write_text(json.dumps({"id": 1, "question": "Q?"}) + "\n", encoding="utf-8")
    with pytest.raises(MonjyuError, match=r"line 1: missing answers, doc"):
        QADataset.load(f)
    with pytest.raises(MonjyuError, match="not found"):
        QADataset.load(tmp_path / "nope.jsonl")


def test_evaluate_qa_with_fake_search(tmp_path):
    ds = QADataset.load(_dataset(tmp_path, [
        {"id": "1", "question": "q1", "answers": ["the cat sat"], "doc": "a.txt"},
        {"id": "2", "question": "q2", "answers": ["blue sky"], "doc": "b.txt"},
    ]))
    results = {
        # q1: gold doc at rank 1 (full path form) but the answer only at rank 2, from another doc
        "q1": [("/data/docs/a.txt", "one two"), ("c.txt", "The cat sat down.")],
        # q2: answer never found; gold doc at rank 3 as a relative id
        "q2": [("x.txt", "red sky"), ("y.txt", "blue seas"), ("docs/b.txt", "grey sky four five")],
    }
    calls = []

    def search(question, mode, k):
        calls.append((question, mode, k))
        return results[question]

    def cite(question, mode):
        return ["the cat sat"] if question == "q1" else None

    ticks = []
    out = evaluate_qa(ds, search, ["m"], ks=(1, 2, 10), progress=ticks.append, cite=cite)["m"]
    assert calls == [("q1", "m", 10), ("q2", "m", 10)]
    assert ticks == [1, 1]
    assert out["doc@1"] == 0.5 and out["doc@2"] == 0.5 and out["doc@10"] == 1.0
    assert out["ans@1"] == 0.0 and out["ans@2"] == 0.5 and out["ans@10"] == 0.5
    assert out["answer_cites_answer"] == 0.5
    assert out["questions"] == 2
    assert out["mean_unit_words"] == pytest.approx((2 + 4 + 2 + 2 + 4) / 5)
    assert out["latency_ms_p50"] >= 0


def test_evaluate_qa_without_cite_has_no_cite_metric(tmp_path):
    ds = QADataset.load(_dataset(tmp_path, [{"id": "1", "question": "q", "answers": ["x"], "doc": "a.txt"}]))
    out = evaluate_qa(ds, lambda q, m, k: [], ["a", "b"])
    assert set(out) == {"a", "b"}
    assert "answer_cites_answer" not in out["a"]
    assert out["a"]["doc@1"] == 0.0 and out["a"]["mean_unit_words"] == 0.0


def test_evaluate_qa_by_a_field_and_per_query(tmp_path):
    ds = QADataset.load(_dataset(tmp_path, [
        {"id": "1", "question": "q1", "answers": ["the cat sat"], "doc": "a.txt", "type": "what"},
        {"id": "2", "question": "q2", "answers": ["blue sky"], "doc": "b.txt", "metadata": {"type": "why"}},
        {"id": "3", "question": "q3", "answers": ["green tea"], "doc": "c.txt", "type": "what"},
    ]))
    results = {"q1": [("a.txt", "The cat sat down.")], "q2": [("x.txt", "nothing")], "q3": [("y.txt", "hot green tea")]}
    records: list[dict] = []
    out = evaluate_qa(ds, lambda q, m, k: results[q], ["m"], ks=(1, 5), by="type", per_query=records)["m"]
    assert out["ans@1"] == pytest.approx(2 / 3)
    assert out["by"]["what"] == {"doc@1": 0.5, "doc@5": 0.5, "ans@1": 1.0, "ans@5": 1.0, "questions": 2}
    assert out["by"]["why"]["ans@1"] == 0.0 and out["by"]["why"]["questions"] == 1
    assert records[1] == {"id": "2", "question": "q2", "doc": "b.txt", "type": "why",
                          "modes": {"m": {"doc_rank": None, "answer_rank": None}}}
    with pytest.raises(MonjyuError, match="no query .* has the field 'kind'; its queries have: type"):
        evaluate_qa(ds, lambda q, m, k: results[q], ["m"], by="kind")
