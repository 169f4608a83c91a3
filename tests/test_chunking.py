"""Sentence splitting and chunking edge cases: offsets, overlap, Japanese, one giant sentence."""

from __future__ import annotations

import pytest

from monjyu.config import ChunkingConfig
from monjyu.ingest import Chunker
from monjyu.ingest.sentences import split_sentences
from monjyu.types import Document


def doc(text: str, **kw) -> Document:
    return Document(id="d", title="T", text=text, source_path="x.txt", file_type="txt", **kw)


def test_english_sentences_respect_abbreviations():
    text = "Dr. Smith met Prof. Lee at 3 p.m. on Jan. 5. They discussed BM25. It went well!"
    spans = [text[s:e] for s, e in split_sentences(text)]
    assert spans == ["Dr. Smith met Prof. Lee at 3 p.m. on Jan. 5.", "They discussed BM25.", "It went well!"]


def test_a_stop_before_a_comma_a_lower_case_word_or_a_closing_bracket_ends_an_abbreviation():
    """pysbd ends a sentence at abbreviations it does not know; what follows says it went on (three
    covidqa-dev papers' sentences and the end of one of papers-pdf's). Enumerations and words like
    "mRNA" still start sentences."""
    text = ("In Asia, the disease is vectored by Ae. aegypti and Ae. albopictus [11] . In addition, a field "
            "method for the evaluation of reduced anticoccidial efficacy (ACE) in ovine Eimeria spp., the faecal "
            "oocyst count reduction test (FOCRT), has recently been developed. mRNA was isolated. a) The bats "
            "were divided into four compartments. We use the configuration of Raffel et al. [5] applied to "
            "language modeling. The normalized RP model fitted well to the reported SARS-CoV-2 cases data (R 2 = "
            "0.512, P < 0.001) (Fig. 2) . It did.")
    assert [text[s:e] for s, e in split_sentences(text)] == [
        "In Asia, the disease is vectored by Ae. aegypti and Ae. albopictus [11] .",
        "In addition, a field method for the evaluation of reduced anticoccidial efficacy (ACE) in ovine Eimeria "
        "spp., the faecal oocyst count reduction test (FOCRT), has recently been developed.",
        "mRNA was isolated.", "a) The bats were divided into four compartments.",
        "We use the configuration of Raffel et al. [5] applied to language modeling.",
        "The normalized RP model fitted well to the reported SARS-CoV-2 cases data (R 2 = 0.512, P < 0.001) (Fig. 2) .",
        "It did."]


def test_a_number_pysbd_cut_off_the_end_of_a_sentence_ends_it():
    """pysbd takes "6." after "on day" for a list item's number and starts a sentence with it (a
    covidqa-dev paper's text, Chen et al., 2020, CC BY): the number ends the sentence before. An item
    after a stop, or on a line of its own, still starts one."""
    text = ("Patient 5 (Figure 3(C) ) was admitted on illness day 4 and his blood sample was virus-positive (Ct = 38 + "
            "Neg) on day 6. Her disease progressed rapidly to a severe stage within the next 3 days. Patient 6 ( Figure "
            "3 (D)) with a clear history of virus infection was confirmed to be infected on infection day 7. Viral RNA "
            "was detected in his blood sample on day 9, one day ahead of his transfer into ICU.")
    assert [text[s:e] for s, e in split_sentences(text)] == [
        "Patient 5 (Figure 3(C) ) was admitted on illness day 4 and his blood sample was virus-positive (Ct = 38 + "
        "Neg) on day 6.", "Her disease progressed rapidly to a severe stage within the next 3 days.",
        "Patient 6 ( Figure 3 (D)) with a clear history of virus infection was confirmed to be infected on infection "
        "day 7.", "Viral RNA was detected in his blood sample on day 9, one day ahead of his transfer into ICU."]
    items = "Our contributions:\n1. We propose a model. 2. We show it works.\n3. We release it."
    assert [items[s:e] for s, e in split_sentences(items)] == [
        "Our contributions:", "1. We propose a model.", "2. We show it works.", "3. We release it."]


def test_a_list_written_inside_a_sentence_stays_one_sentence():
    """pysbd starts a sentence at each item of a list a sentence writes inline (a covidqa-dev paper's
    text, CC BY): the answer to "What are the existing practices in detecting genetic material of
    viruses?" was quoted as "... MERS-CoV include"; a citation after an abbreviation's stop does not end
    it either. An item after a stop, or on a line of its own, still starts one."""
    text = ("The existing practices in detecting genetic material of coronaviruses such as SARS-CoV and MERS-CoV "
            "include (a) reverse transcription-polymerase chain reaction (RT-PCR), (b) real-time RT-PCR (rRT-PCR) "
            "and (c) real-time RT-LAMP [104] . We used three methods: i) dropout, ii) weight decay. The results "
            "are shown. (a) The first panel shows the cells. We tested: 1) peri-urban areas, as defined by "
            "Saksena et al. [9] , 2) land-use diversity.")
    assert [text[s:e] for s, e in split_sentences(text)] == [
        "The existing practices in detecting genetic material of coronaviruses such as SARS-CoV and MERS-CoV include "
        "(a) reverse transcription-polymerase chain reaction (RT-PCR), (b) real-time RT-PCR (rRT-PCR) and (c) "
        "real-time RT-LAMP [104] .", "We used three methods: i) dropout, ii) weight decay.", "The results are shown.",
        "(a) The first panel shows the cells.",
        "We tested: 1) peri-urban areas, as defined by Saksena et al. [9] , 2) land-use diversity."]
    steps = "Steps:\n1) cut the tissue;\n2) stain it."
    assert [steps[s:e] for s, e in split_sentences(steps)] == ["Steps:", "1) cut the tissue;", "2) stain it."]


@pytest.mark.parametrize("text", [
    "Yes. Yes. Yes. No.", "aa. aa. aa.", "It rose.\u00a0\u2003It fell.  It rose.\u3000", "A (i) b. A (i) b.\n",
    "Dr. Smith met Prof. Lee at 3 p.m. on Jan. 5. They discussed BM25. It went well!",
    "検索拡張生成は有効である。グラフも使える！本当か？はい。はい。",
])
def test_sentences_are_found_back_as_pysbd_finds_them(text):
    """The segmenter finds each sentence back with str.find: the same spans as pysbd's own regex
    search, repeated sentences and Unicode spaces included."""
    import pysbd

    from monjyu.ingest.sentences import _segmenter
    for lang in ("en", "ja"):
        ours = _segmenter(lang)
        theirs = pysbd.Segmenter(language=lang, clean=False, char_span=False)
        assert ours.segment(text) == theirs.segment(text)
        ours.segment(text)
        assert [(s.sent, s.start, s.end) for s in ours.sentences_with_char_spans(ours.processor(text).process())] == \
            [(s.sent, s.start, s.end) for s in theirs.sentences_with_char_spans(theirs.processor(text).process())]


def test_japanese_sentences():
    text = "検索拡張生成は有効である。グラフも使える！本当か？はい。"
    spans = [text[s:e] for s, e in split_sentences(text)]
    assert spans == ["検索拡張生成は有効である。", "グラフも使える！", "本当か？", "はい。"]


def test_units_point_back_into_the_document_and_overlap():
    sentences = [f"Sentence number {i} talks about retrieval and ranking of passages." for i in range(40)]
    d = doc(" ".join(sentences))
    units = Chunker(ChunkingConfig(size=60, overlap=15)).chunk(d)
    assert len(units) > 3
    for i, u in enumerate(units):
        assert u.chunk_index == i and u.document_id == "d"
        assert d.text[u.start_char:u.end_char] == u.text
        assert u.n_tokens <= 60 + 5  # sentence sums are counted; joining may add a token or two
    for a, b in zip(units, units[1:]):
        assert b.start_char < a.end_char  # overlap
        assert b.end_char > a.end_char  # and progress
    assert units[-1].end_char == len(d.text)


def test_empty_document_gives_no_units():
    assert Chunker(ChunkingConfig()).chunk(doc("")) == []


def test_one_giant_sentence_is_cut_under_the_size():
    d = doc("word " * 2000 + "end")
    units = Chunker(ChunkingConfig(size=100, overlap=10)).chunk(d)
    assert len(units) >= 15
    assert all(u.n_tokens <= 100 for u in units)
    assert units[-1].text.endswith("end")


def test_giant_japanese_sentence_without_punctuation():
    d = doc("大規模言語モデル" * 400)
    units = Chunker(ChunkingConfig(size=80, overlap=0)).chunk(d)
    assert len(units) > 5 and all(u.n_tokens <= 80 for u in units)
    assert "".join(u.text for u in units) == d.text


def test_pdf_units_carry_their_page():
    text = ("The first page opens with a sentence about retrieval. The first page goes on with ranking.\n\n"
            "The second page closes with a sentence about evaluation.")
    d = doc(text, page_starts=[(0, 1), (text.index("The second"), 2)])
    units = Chunker(ChunkingConfig(size=16, overlap=0)).chunk(d)
    assert len(units) == 3 and [u.page for u in units] == [1, 1, 2]  # the page where a unit starts
