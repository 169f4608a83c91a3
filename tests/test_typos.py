"""A query's misspelt words are searched as the index spells them (nlp/typos.py, search.spelling)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from monjyu.cli import app
from monjyu.nlp.analyzer import Analyzer
from rapidfuzz.distance import OSA

from monjyu.nlp.typos import corrected, unheard_names

# A stand-in for an index's terms: how many texts hold each stem.
HELD = {"recombin": 97, "virion": 25, "asian": 3, "genotyp": 12, "empyema": 1, "emphysema": 1, "widthe": 2,
        "structur": 40, "particl": 30, "water": 9, "quick": 3, "sort": 2, "schrödinger": 4,
        "ergänzungsschulen": 2, "redistribut": 1}
_analyzer = Analyzer()


def indexed(word: str) -> tuple[str, int]:
    terms = _analyzer.terms(word)
    return (terms[0], HELD.get(terms[0], 0)) if len(terms) == 1 else (word, 0)


def test_a_word_one_edit_from_an_indexed_word_is_corrected():
    text, found = corrected("What is the structure of a recombiant viral particle?", indexed)
    assert text == "What is the structure of a recombinant viral particle?"
    assert found == {"recombiant": "recombinant"}
    assert corrected("What is the filamentous phage varion made of?", indexed)[1] == {"varion": "virion"}


def test_a_space_missing_after_a_function_word_is_put_back():
    # "widthe" is one edit away and some text holds it, but no English word is: "did the" is.
    assert corrected("When didthe Asian genotype diverge?", indexed) == \
        ("When did the Asian genotype diverge?", {"didthe": "did the"})
    assert corrected("the proximity ofwater bodies", indexed)[1] == {"ofwater": "of water"}


def test_what_is_not_clearly_a_typo_stays_as_written():
    for question in ("What is emphyema?",  # "empyema" and "emphysema" are held by as many texts
                     "Who was wearing masks?",  # an English word, though no text holds it
                     "Is Recombiant X a vaccine?",  # capitalised: it may be a name
                     "Which vrus is it?",  # shorter than five letters: too many real neighbours
                     "How slow is quicksort?",  # a compound, though the index holds "quick" and "sort"
                     "What is the structure of a recombiantt?"):  # two edits away
        assert corrected(question, indexed) == (question, {}), question


def near(term: str) -> bool:
    return any(OSA.distance(term, held) <= 2 for held in HELD)


def test_a_name_no_indexed_text_mentions_is_unheard_and_a_likely_misspelling_is_not():
    assert unheard_names("How does DetectGPT decide whether a text was machine-generated?", indexed, near) == \
        ["DetectGPT"]
    assert unheard_names("DetectGPTはどのように機械生成の文章を見分けますか？", indexed, near) == ["DetectGPT"]
    assert unheard_names("How do I size a pembrolizumab infusion for a Kubernetes autoscaler?", indexed, near) == \
        ["pembrolizumab", "Kubernetes", "autoscaler"]
    for question in ("What is emphyema?",  # one edit from "empyema", which the index holds
                     "Is Recombinat a vaccine?",  # its term two edits from "recombin"
                     "Who was wearing masks?",  # an English word
                     "Is SARS-CoV-2 a virion?",  # a hyphenated name is not read as words
                     "Which vrus is it?",  # shorter than five letters
                     "What did the Schrodinger equation replace?",  # "Schrödinger" without its accent
                     "How are ergänzungsschulen funded?",  # a word with an accented letter is one word
                     "Where does the water redsitrubute?",  # two letters swapped and one changed
                     "What do the rivers discharge throguh?"):  # a misspelt function word
        assert unheard_names(question, indexed, near) == [], question


def test_a_question_about_what_no_document_mentions_is_not_answered(sample_index):
    """The passages retrieved for its other words are about something else: the answer says which
    name no indexed text mentions, in every mode that answers from passages and in Japanese, and a
    name two edits from an indexed word (a likely misspelling) is answered."""
    for mode in ("hybrid", "hybridrag", "lazy", "auto"):
        answer = sample_index.ask("How does DetectGPT decide whether a text was machine-generated?", mode,
                                  top_k=3).answer
        assert answer.kind == "insufficient" and "None of them mentions “DetectGPT”." in answer.text, mode
    answer = sample_index.ask("DetectGPTはどのように機械生成の文章を見分けますか？", "hybrid", top_k=3).answer
    assert answer.kind == "insufficient" and "「DetectGPT」はどの文書にも出てきません。" in answer.text
    answer = sample_index.ask("Which algorithm detects hierarchical comunities?", "hybrid", top_k=3,
                              spelling=False).answer
    assert answer.kind == "extractive", answer.text
    answer = sample_index.ask("Which algorithm detects communities throguh the concept graph?", "hybrid",
                              top_k=3).answer
    assert answer.kind == "extractive", answer.text  # a misspelt function word names nothing


def test_a_misspelt_query_is_searched_as_the_index_spells_it(sample_index, cache_dir):
    asked = "Which algorithm detects comunities in the concept graph?"
    right = sample_index.ask("Which algorithm detects communities in the concept graph?", "hybrid", top_k=3)
    for mode in ("hybrid", "hybridrag", "lazy", "auto"):
        result = sample_index.ask(asked, mode, top_k=3)
        assert result.spelling == {"comunities": "communities"}, mode
        assert result.query == "Which algorithm detects communities in the concept graph?", mode
        assert result.to_dict()["spelling"] == {"comunities": "communities"}, mode
    hybrid = sample_index.ask(asked, "hybrid", top_k=3)
    assert [h.text_unit_id for h in hybrid.hits] == [h.text_unit_id for h in right.hits]
    # `route` names the engine `auto` runs: it reads the corrected question too
    assert sample_index.route(asked) == sample_index.route("Which algorithm detects communities in the concept graph?")
    as_written = sample_index.ask(asked, "hybrid", top_k=3, spelling=False)
    assert as_written.spelling == {} and as_written.query == asked

    shown = CliRunner().invoke(app, ["search", asked, "--index", str(sample_index.index_dir)],
                               env={"MONJYU_CACHE_DIR": str(cache_dir), "COLUMNS": "200"})
    assert shown.exit_code == 0, shown.output
    assert "searched for: Which algorithm detects communities in the concept graph? (comunities -> communities" \
        in shown.output
    raw = CliRunner().invoke(app, ["search", asked, "--index", str(sample_index.index_dir), "--no-spelling", "--json"],
                             env={"MONJYU_CACHE_DIR": str(cache_dir)})
    assert raw.exit_code == 0 and json.loads(raw.stdout)["spelling"] == {}


def test_the_web_app_shows_the_query_searched_and_searches_as_written_on_request(sample_index):
    from starlette.testclient import TestClient

    from monjyu.web import create_app

    web = TestClient(create_app(sample_index, allowed_hosts=["testserver"]))

    def result(body: dict) -> dict:
        response = web.post("/api/search", json=body)
        assert response.status_code == 200, response.text
        return json.loads(response.text.strip().splitlines()[-1])["result"]

    asked = {"query": "Which algorithm detects comunities in the concept graph?", "mode": "hybrid"}
    shown = result(asked)
    assert shown["spelling"] == {"comunities": "communities"} and "communities" in shown["query"]
    assert result({**asked, "spelling": False})["spelling"] == {}
    refused = web.post("/api/search", json={**asked, "spelling": "no"})
    assert refused.status_code == 400 and "'spelling' must be true or false" in refused.json()["error"]
