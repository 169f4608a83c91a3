"""The shipped reader model (engines/cross_encoder.py): it loads offline, reads English and
Japanese pairs, and a missing or corrupt file is a clear error naming it."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from monjyu.engines.cross_encoder import (READS_BEFORE, ReaderModel, model_dir, pair_ids, question_ids,
                                          shared_reader_model)
from monjyu.errors import ConfigError


def test_the_sentence_that_answers_scores_above_one_that_does_not():
    model = shared_reader_model()
    scores = model.scores("In what year did the Normans conquer England?", [
        "The Norman conquest of England began in 1066 with the Battle of Hastings.",
        "Normandy is a region in northern France known for its dairy farms.",
    ])
    assert scores.shape == (2,) and scores[0] > scores[1]


def test_japanese_questions_are_read_too():
    scores = shared_reader_model().scores("富士山の高さは何メートルですか？", [
        "富士山は標高3776メートルの日本最高峰の山である。",
        "京都には多くの寺院があり、観光客に人気がある。",
    ])
    assert scores[0] > scores[1]


def test_openvino_runs_the_model_the_file_holds():
    """The products' int8 rows are read in the file's order (qkv, attention output, feed-forward
    in and out per layer, then the head) and computed as the float model would, within the
    rounding of int8 activations and bf16."""
    from monjyu.engines.cross_encoder import pad_batch, reference_logits

    model = shared_reader_model()
    question = "How is the virus transmitted between people?"
    sentences = ["The virus spreads mainly through respiratory droplets when an infected person coughs.",
                 "Samples were stored at -80 °C until analysis.",
                 "Close contact with infected patients was the main route of human-to-human transmission.",
                 "ウイルスは飛沫を介して人から人へ感染する。",
                 "The authors declare no competing interests."]
    q = question_ids(model.tok, question)
    ids, mask = pad_batch([pair_ids(model.tok, q, s) for s in sentences], model.tok.eos)
    exact = reference_logits(model.weights, model.words, ids, mask)
    run = model.scores(question, sentences)
    assert np.abs(run - exact).max() < 0.25, (run, exact)
    assert list(np.argsort(-run)[:2]) == list(np.argsort(-exact)[:2])


def test_int8_rows_widened_once_read_as_the_int8_products_do():
    """The reader with its int8 rows as float constants (what a CPU with AMX runs) computes the
    model the file holds, as the int8 products do: within bf16's rounding of the float computation
    everywhere, and on a CPU with AMX the very log-odds of the int8 products."""
    from monjyu.embed.e5_openvino import products_in_int8
    from monjyu.engines.cross_encoder import pad_batch, reference_logits

    question = "How is the virus transmitted between people?"
    sentences = ["The virus spreads mainly through respiratory droplets when an infected person coughs.",
                 "Samples were stored at -80 °C until analysis.",
                 "ウイルスは飛沫を介して人から人へ感染する。"]
    int8, widened = (ReaderModel(int8=flag) for flag in (True, False))
    ids, mask = pad_batch([pair_ids(widened.tok, question_ids(widened.tok, question), s) for s in sentences],
                          widened.tok.eos)
    exact = reference_logits(widened.weights, widened.words, ids, mask)
    run = widened.scores(question, sentences)
    assert np.abs(run - exact).max() < 0.25, (run, exact)
    if not products_in_int8():
        assert np.array_equal(run, int8.scores(question, sentences))


def test_threads_reading_at_once_get_what_one_reading_alone_gets():
    """Each pair is queued on the model's streams; the web app's and MCP server's threads each
    get their own queue, so concurrent searches neither mix nor lose their scores."""
    from concurrent.futures import ThreadPoolExecutor

    model = shared_reader_model()
    asked = [(f"What did study {i} find about transmission?",
              [f"Study {i} found that transmission happened in households {j} times." for j in range(12)])
             for i in range(4)]
    alone = [model.scores(q, s) for q, s in asked]
    with ThreadPoolExecutor(4) as pool:
        together = list(pool.map(lambda qs: model.scores(*qs), asked * 3))
    for i, scores in enumerate(together):
        assert np.allclose(scores, alone[i % 4], atol=1e-5)
    assert model.scores("Why?", []).shape == (0,)


def test_long_sentences_are_cut_to_the_trained_length():
    tok = shared_reader_model().tok
    ids = pair_ids(tok, question_ids(tok, "why " * 100), "word " * 500)
    assert len(ids) == 128 and ids[0] == tok.bos and ids[-1] == tok.eos


def test_the_sentence_before_is_read_after_the_sentence_and_cut_first():
    tok = shared_reader_model().tok
    q = question_ids(tok, "When did it begin?")
    alone = pair_ids(tok, q, "It began in 1066.")
    read = pair_ids(tok, q, "It began in 1066.", "The Norman conquest of England was led by William.")
    assert read[:len(alone)] == alone and read[len(alone)] > 0 and len(read) > len(alone) + 5
    assert pair_ids(tok, q, "It began in 1066.", "word " * 500)[:len(alone)] == alone


def test_the_sentence_before_is_given_only_to_a_model_trained_with_it(tmp_path):
    """The shipped model reads the sentence alone (a model trained with the sentence before was
    measured and not kept: model card); a model whose reader.json says it reads the sentence
    before is given it."""
    question, sentence = "When did the Norman conquest of England begin?", ["It began in 1066."]
    before = ["The Norman conquest of England was led by William, Duke of Normandy."]
    shipped = shared_reader_model()
    assert not shipped.reads_before
    assert shipped.scores(question, sentence, before) == shipped.scores(question, sentence)
    for name in ("reader.int8.onnx", "reader.json"):
        shutil.copy(model_dir() / name, tmp_path / name)
    meta = json.loads((tmp_path / "reader.json").read_text())
    (tmp_path / "reader.json").write_text(json.dumps(meta | {"reads": READS_BEFORE}))
    reading = ReaderModel(tmp_path)
    assert reading.reads_before
    assert reading.scores(question, sentence) == shipped.scores(question, sentence)
    assert reading.scores(question, sentence, before) != reading.scores(question, sentence)


def test_a_head_the_newer_quantizer_transposed_reads_the_same(tmp_path):
    """onnxruntime 1.32's quantizer stores the head's Gemm weights as "pool.weight_Transposed" (the
    same [in, out] product): a model exported with it reads as one exported before it (the shipped
    file has one naming; the test writes it with the other)."""
    import onnx

    graph = onnx.load(str(model_dir() / "reader.int8.onnx"))
    renamed = {}
    for init in graph.graph.initializer:
        for name in ("pool.weight", "out.weight"):
            newer = name + "_Transposed"
            if init.name.startswith(newer + "_"):
                renamed[init.name] = init.name.replace(newer, name, 1)
            elif init.name.startswith(name + "_"):
                renamed[init.name] = init.name.replace(name, newer, 1)
            init.name = renamed.get(init.name, init.name)
    for node in graph.graph.node:
        node.input[:] = [renamed.get(x, x) for x in node.input]
    assert len(renamed) == 6
    onnx.save(graph, str(tmp_path / "reader.int8.onnx"))
    shutil.copy(model_dir() / "reader.json", tmp_path / "reader.json")
    pair = ("In what year did the Normans conquer England?", ["The Norman conquest began in 1066."])
    assert ReaderModel(tmp_path).scores(*pair) == pytest.approx(shared_reader_model().scores(*pair), abs=1e-6)


def test_a_missing_model_names_the_file(tmp_path):
    with pytest.raises(ConfigError, match="reader.int8.onnx"):
        ReaderModel(tmp_path)


def test_a_corrupt_model_names_the_file(tmp_path):
    shutil.copy(model_dir() / "reader.json", tmp_path / "reader.json")
    (tmp_path / "reader.int8.onnx").write_bytes(b"not an onnx graph")
    with pytest.raises(ConfigError, match="reader.int8.onnx.*cannot be loaded"):
        ReaderModel(tmp_path)


def test_a_model_setting_without_the_model_reader_is_refused():
    from pydantic import ValidationError

    from monjyu.config import AnswerConfig

    assert AnswerConfig(reader="model", reader_candidates=24).reader_candidates == 24
    for setting in ({"reader_candidates": 24}, {"sure_sentence_score": 5.0}):
        with pytest.raises(ValidationError, match="applies to answer.reader: model only"):
            AnswerConfig(reader="features", **setting)


def test_a_window_reaches_out_one_neighbour_before_and_one_after_in_turn():
    from monjyu.engines.cross_encoder import window

    assert window([10, 10, 10, 10, 10], 2, 30) == (1, 4)
    assert window([10, 10, 10, 10, 10], 2, 40) == (0, 4)
    assert window([10, 10, 10, 10, 10], 0, 30) == (0, 3)  # none before: the room goes after
    assert window([10, 50, 10, 10], 1, 55) == (1, 2)  # no neighbour fits
    assert window([10, 50, 10, 10], 2, 35) == (2, 4)  # the one before does not fit, the one after does


def test_a_passage_long_for_one_window_is_read_in_several():
    from monjyu.engines.cross_encoder import window_inputs

    tok = shared_reader_model().tok
    passage = [f"Sentence {i} says something about topic number {i} in about twenty words of text, "
               "which takes some room." for i in range(20)]
    other = ["A second passage.", "It has two sentences."]
    asked = [(passage, 0), (passage, 1), (passage, 19), (other, 1)]
    inputs = window_inputs(tok, question_ids(tok, "What?"), [p[i] for p, i in asked], asked)
    assert sorted(i for _, spans in inputs for i in spans) == [0, 1, 2, 3] and len(inputs) == 3
    for ids, spans in inputs:
        for i, (a, b) in spans.items():
            assert ids[a:b] == tok.content_ids(asked[i][0][asked[i][1]])


def test_window_ids_mark_each_sentence_and_cut_at_the_trained_length():
    from monjyu.engines.cross_encoder import WINDOW_TOKENS, window_ids

    ids, spans = window_ids([7, 8], [[1, 2, 3], [4, 5]], 0, 2, [9])
    assert ids == [0, 7, 8, 2, 2, 9, 1, 2, 3, 4, 5, 2] and spans == [(6, 9), (9, 11)]
    ids, spans = window_ids([7], [[1] * 300, [4, 5]], 0, 2, [9])
    assert len(ids) == WINDOW_TOKENS and spans == [(5, WINDOW_TOKENS - 1), (WINDOW_TOKENS - 1, WINDOW_TOKENS - 1)]


def test_a_window_model_reads_each_sentence_among_its_neighbours(tmp_path):
    """A model whose reader.json says it reads windows (training/reader/windows.py) is given each
    sentence with its passage's sentences around it, and a sentence's log-odds is the head's
    largest over the sentence's own tokens, as the float model computes it (the shipped weights,
    relabelled, stand in for a window model: the path is what is tested)."""
    from monjyu.engines.cross_encoder import READS_WINDOW, reference_states, window_inputs

    for name in ("reader.int8.onnx", "reader.json"):
        shutil.copy(model_dir() / name, tmp_path / name)
    meta = json.loads((tmp_path / "reader.json").read_text())
    (tmp_path / "reader.json").write_text(json.dumps(meta | {"reads": READS_WINDOW}))
    model = ReaderModel(tmp_path)
    assert model.reads_window and not shared_reader_model().reads_window
    question = "What was the case fatality rate of the outbreak?"
    passage = ["An outbreak of the virus was reported in 1995.", "It killed 35% of the children infected.",
               "Samples were stored at -80 °C."]
    run = model.scores(question, passage, passages=[(passage, i) for i in range(3)])
    q = question_ids(model.tok, question)
    inputs = window_inputs(model.tok, q, passage, [(passage, i) for i in range(3)])
    assert len(inputs) == 1  # one window reads all three
    ids, spans = inputs[0]
    states = reference_states(model.weights, model.words, np.array([ids]), np.ones((1, len(ids)), np.float32))
    for i, (a, b) in spans.items():
        assert model.tok.content_ids(passage[i]) == ids[a:b]
        assert abs(run[i] - model.weights.head(states[0, a:b]).max()) < 0.25
    assert model.scores(question, passage[1:2])[0] != run[1]  # alone, it reads otherwise
