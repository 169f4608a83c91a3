"""The reader's training data (training/reader/data.py; training itself needs torch and never runs
here): a window model's groups label every sentence of a paragraph and centre its windows on the
answer, and the windows are cut as the reader cuts them at run time; the fit papers' quarters, and
where runs on them stop (folds.py)."""

from __future__ import annotations

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "training" / "reader"))

from data import (covidqa_folds, covidqa_validation, paragraph_group, paragraph_groups, restated,  # noqa: E402
                  with_restated)
from folds import choose  # noqa: E402

RECORD = {"source": "squad11", "lang": "en", "title": "Normans", "question": "When did the conquest begin?",
          "context": "The Normans came from Normandy. The conquest of England began in 1066. "
                     "It ended with William crowned king.",
          "answers": [{"text": "1066"}]}


def test_a_paragraph_group_labels_every_sentence_and_centres_on_the_answer():
    passage = ["The Normans came from Normandy.", "The conquest of England began in 1066.",
               "It ended with William crowned king."]
    group = paragraph_group(RECORD, passage, random.Random(0), answerable=True)
    assert group["passages"] == [(passage, [0, 1, 0], [1])]
    unanswerable = paragraph_group({**RECORD, "question": "Who ended the conquest of Normandy?"}, passage,
                                   random.Random(0), answerable=False)
    assert unanswerable["passages"][0][1] == [0, 0, 0]
    assert unanswerable["passages"][0][2] == [1]  # the sentence sharing most words with the question
    assert paragraph_group({**RECORD, "answers": [{"text": "Normandy. The"}]}, passage, random.Random(0),
                           answerable=True) is None  # the answer crosses a sentence boundary


def test_another_paragraph_of_the_article_is_read_as_a_negative_and_validation_covers_each_sentence():
    other = {**RECORD, "context": "Hastings is a town in East Sussex. It is on the coast.", "question": "Where?",
             "answers": [{"text": "East Sussex"}]}
    groups = paragraph_groups([RECORD, other], random.Random(0), True, elsewhere=True)
    first = groups[0]["passages"]
    assert len(first) == 2 and first[1][1] == [0, 0] and len(first[1][2]) == 1
    covered = paragraph_groups([RECORD], random.Random(0), True, cover=True)
    assert covered[0]["passages"][0][2] is None  # windows over the whole paragraph


def test_a_question_said_back_as_a_statement_is_a_negative_of_its_group():
    """`pack --restated`: the question without its question word, as a statement, answers nothing."""
    assert restated("What is the size of bovine coronavirus?", "en") == "The size of bovine coronavirus."
    assert restated("How many cases were estimated in China?", "en") == "Cases were estimated in China."
    assert restated("東大寺の大仏の高さは何メートルですか？", "ja") == "東大寺の大仏の高さはメートル。"
    answerable = {"question": "Who wrote it?", "lang": "en", "items": [("Ann wrote it.", 1, ""), ("It rained.", 0, "")]}
    unanswerable = {"question": "Who sang it?", "lang": "en", "items": [("It rained.", 0, "")]}
    groups = with_restated([answerable, unanswerable])
    assert groups[0]["items"][-1] == ("Wrote it.", 0, "") and groups[1] == unanswerable


def test_the_fit_papers_fall_in_four_quarters_and_the_held_one_is_the_fourth(tmp_path):
    """Every other paper in name order is a fit paper; every fourth of those shares a quarter. The
    shipped model's held quarter (`covidqa_validation`'s default) is the fourth: papers 6, 14, ..."""
    docs = [f"{i:03d}.txt" for i in range(20)]
    (tmp_path / "questions.jsonl").write_text("".join(f'{{"doc": "{d}"}}\n' for d in reversed(docs)))
    folds = covidqa_folds(tmp_path)
    assert set(folds) == set(docs[0::2])  # the test half is in no quarter
    assert [folds[d] for d in docs[0::2]] == [0, 1, 2, 3, 0, 1, 2, 3, 0, 1]
    assert covidqa_validation(tmp_path) == set(docs[0::2][3::4]) == {"006.txt", "014.txt"}
    assert covidqa_validation(tmp_path, 0) == {"000.txt", "008.txt", "016.txt"}


def test_the_fold_runs_stop_where_they_read_best_together():
    """folds.py: the same validation of the four runs, by order; a quarter's top-1 counts by its questions."""
    def row(pairs, squad, covidqa, answerable):
        return {"pairs": pairs, "squad": {"top1": squad}, "covidqa": {"top1": covidqa, "answerable": answerable}}

    curves = [[row(100, 0.8, 0.5, 10), row(200, 0.8, 0.6, 10), row(300, 0.8, 0.5, 10)],
              [row(102, 0.8, 0.9, 90), row(198, 0.8, 0.7, 90)],  # shortened by its time limit
              [row(100, 0.8, 0.5, 10), row(200, 0.8, 0.6, 10), row(300, 0.8, 0.5, 10)],
              [row(100, 0.8, 0.5, 10), row(200, 0.8, 0.6, 10), row(300, 0.8, 0.5, 10)]]
    choice = choose(curves)
    assert choice["stop"] == 100  # (0.5 * 30 + 0.9 * 90) / 120 = 0.8 at the first, 0.675 at the second
    assert choice["chosen"]["covidqa_top1"] == 0.8 and len(choice["points"]) == 2
    assert choice["schedule"] == 274  # the pairs the four reached: (300 + 198 + 300 + 300) / 4
