"""Metrics on a tiny set checked by hand."""

import pytest

from monjyu.eval import retrieval_metrics
from monjyu.eval.beir import rank_documents

QRELS = {"q1": {"a": 1, "b": 1}, "q2": {"c": 1}, "q3": {"d": 1}}
RUN = {
    "q1": ["x", "a", "y", "z", "b"],  # hits at ranks 2 and 5
    "q2": ["c"],  # hit at rank 1
    # q3 retrieved nothing
}


def test_hand_checked_values():
    m = retrieval_metrics(QRELS, RUN)
    assert m["recall@2"] == pytest.approx((0.5 + 1 + 0) / 3)
    assert m["recall@5"] == pytest.approx((1 + 1 + 0) / 3)
    assert m["mrr@10"] == pytest.approx((1 / 2 + 1 + 0) / 3)
    assert m["precision@5"] == pytest.approx((2 / 5 + 1 / 5 + 0) / 3)
    # q1: DCG = 1/log2(3) + 1/log2(6); IDCG = 1 + 1/log2(3)
    import math
    ndcg_q1 = (1 / math.log2(3) + 1 / math.log2(6)) / (1 + 1 / math.log2(3))
    assert m["ndcg@10"] == pytest.approx((ndcg_q1 + 1 + 0) / 3)
    assert m["complete@2"] == pytest.approx(1 / 3)  # only q2
    assert m["complete@5"] == pytest.approx(2 / 3)
    assert m["queries"] == 3


def test_units_collapse_to_documents():
    assert rank_documents(["a", "a", "b", "a", "c", "d"], 3) == ["a", "b", "c"]


def test_answer_figures_by_hand():
    from monjyu.eval.answers import answer_figures, answer_sentences

    text = ("The reproduction number was 2.5 in Wuhan [1]. It fell after the lockdown, e.g. in March [2]\n"
            "0.888 0.946 0.838 [3]")
    # a decimal point ends no sentence, nor a stop before a lower-case word ("e.g. in"); a stop
    # before a capital and a line break do
    assert answer_sentences(text) == ["The reproduction number was 2.5 in Wuhan.",
                                      "It fell after the lockdown, e.g. in March", "0.888 0.946 0.838"]
    assert answer_sentences("Guan et al. 12 studied 1099 patients (accession no. MN975262). In Asia, Ae. aegypti "
                            "spreads it.") == ["Guan et al. 12 studied 1099 patients (accession no. MN975262).",
                                               "In Asia, Ae. aegypti spreads it."]
    assert answer_sentences("We could not do it. Then we did.") == ["We could not do it.", "Then we did."]
    assert answer_sentences("Christopher J. Probst of the U.S. Army moved to St. Louis. Dr. Smith did not.") == \
        ["Christopher J. Probst of the U.S. Army moved to St. Louis.", "Dr. Smith did not."]
    f = answer_figures(text, answers=["reproduction number was 2.5"],
                       reference="The basic reproduction number in Wuhan was estimated at 2.5.")
    assert f.holds and f.first
    assert f.words == 23  # "2.5" is two words, "0.888" too
    assert f.debris == pytest.approx(1 / 3)  # the row of numbers
    # content words: answer {reproduction, number, wuhan, fell, lockdown, march, 888, 946, 838}
    # reference {basic, reproduction, number, wuhan, estimated}; shared 3
    assert f.precision == pytest.approx(3 / 9) and f.recall == pytest.approx(3 / 5)
    later = answer_figures("Cases rose quickly in January. The number was 2.5 in Wuhan.", answers=["was 2.5 in Wuhan"])
    assert later.holds and not later.first
