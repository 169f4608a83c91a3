"""Answers with citations over the real sample index: extractive (no LLM), and the pieces they
are made of (sources within a budget, citation markers)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from monjyu import Monjyu, MonjyuConfig, SearchFilters
from monjyu.engines.citations import resolve_citations
from monjyu.engines.context import Source, select_sources
from monjyu.query import Query
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
    docs = LanceStore(sample_index.workspace.current().generation_dir / "lancedb").documents(["id", "text"]).to_pydict()
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


# ---------------------------------------------------------------- the offline reader (engines/reader.py)

def test_question_kinds_from_their_wording():
    from monjyu.engines.question_wording import question_asks

    assert question_asks("How many GPUs trained OPT-175B?") == "number"
    assert question_asks("When was the vaccine approved?") == "date"
    assert question_asks("Why does FlashAttention run faster?") == "reason"
    assert question_asks("How does ViT differ from a ResNet?") == "compare"
    assert question_asks("How do you differentiate SARS from MERS?") == "compare"
    assert question_asks("Does Reptile differentiate through the inner loop the way MAML does?") == "choice"
    assert question_asks("What are the two pre-training tasks of BERT?") == "list"
    assert question_asks("How does DetectGPT decide whether a text was machine-generated?") == "method"
    assert question_asks("What is LazyGraphRAG?") == "definition"
    assert question_asks("ResNetの残差学習はなぜ提案されたのですか？") == "reason"
    assert question_asks("BERTの事前学習タスクを二つ挙げてください") == "list"
    assert question_asks("Which dataset was used for pre-training?") == ""
    assert question_asks("Are Christopher Nolan and Sathish Kalathil both film directors?") == "choice"
    assert question_asks("Which has more parameters, PaLM or OPT-175B?") == "choice"
    assert question_asks("Does FlashAttention reduce the number of HBM accesses?") == "choice"
    assert question_asks("In the BERT paper, are MLM and NSP both pre-training tasks?") == "choice"
    assert question_asks("このワクチンは有効ですか？") == "choice"
    # a Japanese question with no question word is a yes/no question, whatever nouns it holds
    assert question_asks("FlashAttentionは近似attention手法より速いのですか？") == "choice"
    assert question_asks("どんな方法で学習しましたか？") == "method"


def test_an_english_question_asks_a_date_a_person_or_a_place_by_the_word_that_opens_it():
    """Not by a relative pronoun or a conjunction within it, nor by the WHO; "when" and "where" also
    where an auxiliary follows them ("... and where is it expressed?")."""
    from monjyu.engines.question_wording import question_asks, question_sides

    assert question_asks("How does PonderNet decide when to stop computing?") == "method"
    assert question_asks("How did the team get OPT-175B training back on track when the loss diverged?") == "method"
    assert question_asks("What is the adopted WHO case definition?") == "definition"
    assert question_asks("What happened to the case who died?") == ""
    assert question_asks("What is the percentage of transmission, when there is no intervention?") == ""
    assert question_asks("According to the California Code of Regulations, when should a case be reported?") == "date"
    assert question_asks("Once appeared, when do the influenza like diseases occur?") == "date"
    assert question_asks("What is DC-GENR and where is it expressed?") == "place"
    assert question_asks("In California, to where are meningitis cases reported?") == "place"
    assert question_asks("For whom does SARS-CoV-2 pose a great threat?") == "person"
    assert question_asks("Who proposed layer normalization?") == "person"
    assert question_asks("Which film has the director who died first, Phalitamsha or Gladiators Seven?") == "choice"
    # an amount's "or more" offers no alternatives
    assert question_asks("What happened to three cases who were aged 65 years or over?") == ""
    assert question_sides("How do you avoid problems with forces from two or more sources?") == []


def test_the_things_a_question_weighs_from_the_words_that_join_them():
    from monjyu.engines.question_wording import question_sides

    assert question_sides("Which film was released first, Aas Ka Panchhi or Phoolwari?") == ["Aas Ka Panchhi", "Phoolwari"]
    assert question_sides("Which gene had the higher identity: the E gene or the orf1ab gene?") == \
        ["the E gene", "the orf1ab gene"]
    assert question_sides("Where was mortality lower: among the patients in Shenzhen, or in the reports from Wuhan?") == \
        ["among the patients in Shenzhen", "in the reports from Wuhan"]
    assert question_sides("Which works better: squared ReLU or the convolution after the Q, K and V projections?") == \
        ["squared ReLU", "the convolution after the Q, K and V projections"]
    assert question_sides("Are Christopher Nolan and Sathish Kalathil both film directors?") == \
        ["Christopher Nolan", "Sathish Kalathil"]
    assert question_sides("In the BERT paper, are MLM and NSP both pre-training tasks?") == ["MLM", "NSP"]
    assert question_sides("Are both magazines, the Woman's Viewpoint and Pick Me Up, British publications?") == \
        ["magazines, the Woman's Viewpoint", "Pick Me Up"]
    assert question_sides("Who was born first out of Aivar Kuusmaa and Andy Summers?") == ["Aivar Kuusmaa", "Andy Summers"]
    assert question_sides("What is the difference between SARS and MERS?") == ["SARS", "MERS"]
    assert question_sides("For inputs longer than 1K tokens, is FlashAttention faster than every approximate method?") == \
        ["is FlashAttention faster", "every approximate method"]
    # a pronoun after "than", "before" or "after" stands for the first side: each side is what follows its preposition
    assert question_sides("On the ship, did infections among crew members peak before those among passengers?") == \
        ["crew members peak", "passengers"]
    assert question_sides("Is the mortality in Wuhan higher than that in Shenzhen?") == ["Wuhan higher", "Shenzhen"]
    assert question_sides("BERTとGPTのどちらが大きいですか？") == ["BERT", "GPT"]
    assert question_sides("CNNとRNNでは、長い系列に強いのはどちらですか？") == ["CNN", "RNN"]
    assert question_sides("精度が高かったのは、BERTを使ったモデルと、GPTを使ったモデルのどちらですか？") == \
        ["BERTを使ったモデル", "GPTを使ったモデル"]
    assert question_sides("勝ったのはCNNですか、それともRNNですか？") == ["CNN", "RNN"]
    assert question_sides("LeNetとAlexNetは同じ研究室で作られましたか？") == ["LeNet", "AlexNet"]
    assert question_sides("テキストよりも画像の方が多いのですか？") == ["画像", "テキスト"]
    assert question_sides("FlashAttentionは近似attention手法より速いのですか？") == \
        ["FlashAttention 速いのですか", "近似attention手法"]
    # と as "called", "as" or "with" joins nothing
    for question in ("STaRで「rationalization」という手順を加えたのはなぜですか？", "宿主受容体との相互作用を担っているのは何ですか？",
                     "病原体が広がる原因として考えられるのは何ですか？"):
        assert question_sides(question) == [], question
    assert question_sides("What does RRF do?") == []
    assert question_sides("Where did Saw Thanda's husband die?") == []
    assert question_sides("Does FlashAttention reduce the number of HBM accesses?") == []
    assert question_sides("Did cases rise after the lockdown?") == []  # a time, not a second side


def test_figure_table_and_reference_text_is_never_quoted():
    from monjyu.engines.context import Source
    from monjyu.engines.quotes import clean_quote, quotable
    from monjyu.engines.relevance import sentences_of

    text = ("Figure 3: Accuracy of the detector on WMT16.\n\n"
            "RPN ResNet-101 1-crop 13.3 RPN ResNet-101 dense 11.7 RPN+RCNN ensemble dense ensemble 8.9\n\n"
            "[12] A. Vaswani, N. Shazeer. Attention is all you need. In Proceedings of NeurIPS, 2017.\n\n"
            "Denoting the activations by , our decoder interleaves Retro( , ) blocks with others.\n\n"
            "We must inject some information about the position of the Table 1: Maximum path lengths per layer.\n\n"
            "The detector compares the log probability of a passage with that of perturbed versions of it [4].")
    kept = [clean_quote(s.text) for s in sentences_of([Source(1, _hit(1, text))]) if quotable(s)]
    assert kept == ["The detector compares the log probability of a passage with that of perturbed versions of it."]
    # figure and table pointers are left out of a quote, spaced inside their brackets or not
    assert clean_quote("It was sequenced (accession no. MN975262) ( Table 1 ) and (see Fig. 2b) deposited.") == \
        "It was sequenced (accession no. MN975262) and deposited."
    caption = _hit(2, "The detector compares the log probability of a passage with perturbed ones.")
    caption.kind = "caption"
    assert not any(quotable(s) for s in sentences_of([Source(1, caption)]))


def test_english_demo_question_leads_with_the_answer_and_quotes_no_japanese(sample_index):
    from monjyu.nlp.lang import detect_language

    answer = sample_index.search("How does LazyGraphRAG keep indexing cheap?", top_k=3).answer
    assert answer.kind == "extractive"
    lines = answer.text.splitlines()
    assert all(detect_language(line) == "en" for line in lines)
    assert "LazyGraphRAG" in lines[0]
    assert "another language" not in answer.note


def test_japanese_demo_question_quotes_the_japanese_sentence_that_answers(sample_index):
    answer = sample_index.search("グラフを使った検索はどのように索引を作りますか？", top_k=3).answer
    first = answer.text.splitlines()[0]
    assert first.startswith("LazyGraphRAG は索引作成時に言語モデルを使わず")
    assert "作る。そのため" in first  # adjacent Japanese sentences joined as one quote, no space
    assert all(c.source_path.endswith("kensaku-kakucho.md") for c in answer.citations)


def test_a_fact_takes_at_most_two_sentences_and_quotes_only_body_text(sample_index):
    from monjyu.eval.answers import answer_sentences, is_debris

    result = sample_index.search("Which algorithm detects hierarchical communities?", top_k=5)
    sentences = answer_sentences(result.answer.text)
    assert 1 <= len(sentences) <= 2 and not any(map(is_debris, sentences))
    kinds = {h.text_unit_id: h.kind for h in result.hits}
    assert all(kinds[c.text_unit_id] == "text" for c in result.answer.citations)


def test_quotes_in_another_language_say_so(sample_index):
    """A Japanese question whose passages answer only in English: English quotes, and a note."""
    from monjyu.engines.context import Source

    engine = sample_index.workspace.answers()
    query = "リランキングはどのように順位を改善しますか？"
    hits = [h for h in sample_index.search("How does reranking improve the ranking?", top_k=5, answer=False).hits
            if h.source_path.endswith((".docx", ".txt"))]
    sources = [Source(i + 1, h) for i, h in enumerate(hits)]
    asked = Query.of(query)
    vector = sample_index.workspace.current().embed_query(asked)
    quotes, note = engine.reader.pick(asked, engine.reader.candidates(asked, vector, sources), min_relevance=0.0)
    assert quotes and "英語の文を引用" in note


def test_every_name_the_question_asks_about_is_quoted(sample_index):
    """Two things named: the answer quotes a sentence on each, though the second scores far below
    the first (2wiki's "which came first, A or B?" questions need both passages)."""
    answer = sample_index.search("What do Corrective RAG and RRF each do?", top_k=5).answer
    lines = answer.text.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("Corrective RAG grades each retrieved passage")
    assert "Reciprocal rank fusion (RRF) combines ranked lists" in lines[1]


def test_each_side_of_an_a_or_b_question_gets_a_sentence(sample_index):
    """Sides that are no capitalised names ("keyword search", "dense retrieval"): the answer
    quotes a sentence about each, not only the best-scored one."""
    answer = sample_index.search("Which finds rare acronyms better, keyword search or dense retrieval with "
                                 "sentence embeddings?", top_k=5).answer
    lines = answer.text.splitlines()
    assert answer.kind == "extractive" and len(lines) == 2
    assert any(line.startswith("Dense retrieval with sentence embeddings") for line in lines)
    assert any(line.startswith("Keyword search with BM25") for line in lines)


def _indexed(tmp_path: Path, cache_dir: Path, pages: dict[str, str]) -> Monjyu:
    """An index of `pages` (file name -> Markdown) written to a folder of their own."""
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in pages.items():
        (docs / name).write_text(text, encoding="utf-8")
    m = Monjyu(tmp_path / ".monjyu", MonjyuConfig(cache_dir=str(cache_dir)))
    m.index([docs])
    return m


def _assert_quotes(m: Monjyu, questions: tuple[str, ...], *quotes: str) -> None:
    """Each question's answer quotes every one of `quotes`."""
    for question in questions:
        answer = m.search(question, top_k=5).answer
        for quote in quotes:
            assert quote in answer.text, (question, quote, answer.text)


NAMESAKES = {  # two people of one name, their pages titled apart as an encyclopedia titles them
    "ada-marsh-botanist.md": "# Ada Marsh (botanist)\n\nAda Marsh described forty species of fern in the cloud forests "
                             "of Peru. She was born in Cardiff, Wales, in 1871 and worked at Kew for most of her life.\n",
    "ada-marsh.md": "# Ada Marsh\n\nAda Marsh is a Canadian actor and stage director. She led the Shaw Festival for two "
                    "decades and was born in Toronto in 1936.\n",
    "rolf-dahl.md": "# Rolf Dahl\n\nRolf Dahl was a Norwegian chemist who studied the decay of peat bogs. He was born in "
                    "Bergen in 1880.\n",
    "peat.md": "# Peat\n\nPeat forms where waterlogged plant matter decays slowly. Bogs in Norway and Wales hold deep "
               "layers of it.\n",
}


def test_a_side_named_by_a_page_title_is_quoted_from_that_page_not_a_namesakes(tmp_path, cache_dir):
    """"Ada Marsh (botanist)" is the title of one page: the actor's page names Ada Marsh too, but
    only the botanist's page speaks of the side the question weighs."""
    m = _indexed(tmp_path, cache_dir, NAMESAKES)
    for question in ("Are Ada Marsh (botanist) and Rolf Dahl of the same nationality?",
                     "Who was born first, Ada Marsh (botanist) or Rolf Dahl?",
                     # in Japanese, over the same English pages: the sides are read as in English
                     "Rolf DahlとAda Marsh (botanist)では、どちらが先に生まれましたか？",
                     "Ada Marsh (botanist)はRolf Dahlより先に生まれたのですか？"):
        result = m.search(question, top_k=5)
        cited = {Path(c.source_path).name for c in result.citations}
        assert {"ada-marsh-botanist.md", "rolf-dahl.md"} <= cited, (question, result.answer.text)


LETTER_GENES = {  # two genes named by one letter each, described in parallel words
    "genome-report.md": "# A bovine coronavirus genome from Normandy\n\nWe sequenced the whole genome of a bovine "
                        "coronavirus from a calf with diarrhoea. The N gene is closely related to the Ohio strain "
                        "OH-440, with a nucleotide identity of 98.2%. The spike protein holds most of the "
                        "differences from earlier strains. The E gene is closely related to the Quebec strain "
                        "QC-17, with a nucleotide identity of 100%.\n",
    "calf-care.md": "# Calf care\n\nCalves with diarrhoea are given fluids and kept warm. Most recover within a "
                    "week.\n",
}


def test_sides_named_by_one_letter_are_each_quoted(tmp_path, cache_dir):
    """"The E gene or the N gene?": the analyzer drops lone letters, so the two sides differ only by
    their letter names; each side's sentence is quoted although the two say it in the same words."""
    m = _indexed(tmp_path, cache_dir, LETTER_GENES)
    for question in ("Which gene is closer to its nearest strain: the E gene or the N gene?",
                     # in Japanese the letter is written against the noun, read through its gloss
                     "最も近い株との同一性が高いのは、E遺伝子とN遺伝子のどちらですか？"):
        answer = m.search(question, top_k=5).answer
        assert answer.kind == "extractive"
        assert "98.2%" in answer.text and "100%" in answer.text, (question, answer.text)



RESERVOIRS = {  # one reservoir's page says much that scores well; the other's says its one thing once
    "alder.md": "# The Alder reservoir\n\nDifferences in water level at the Alder reservoir reach 14 metres over a year. "
                "Differences in water level at the Alder reservoir follow snowmelt from three glacier streams each May. "
                "Differences in water level at the Alder reservoir grow when turbines run at full winter load. "
                "Differences in water level at the Alder reservoir are logged hourly by radar gauges on its dam. "
                "Differences in water level at the Alder reservoir were largest during the drought summer of 1976. "
                "Differences in water level at the Alder reservoir shrink before spring thaw, when inflow nearly stops.\n",
    "birch.md": "# The Birch reservoir\n\nThe Birch reservoir supplies drinking water to three towns. Its dam was finished "
                "in 1961. At the Birch reservoir the water level varies by no more than 3 metres over a year.\n",
    "canals.md": "# Canals\n\nCanals carry water between reservoirs and rivers. Locks raise boats between levels.\n",
}


def test_a_comparison_quotes_each_side_before_more_of_the_best(tmp_path, cache_dir):
    """"Is A larger than B?" asks for a comparison: the sentence about B comes before more of A's,
    which would otherwise fill the answer."""
    m = _indexed(tmp_path, cache_dir, RESERVOIRS)
    answer = m.search("Are the differences in water level larger at the Alder reservoir than at the Birch "
                      "reservoir?", top_k=5).answer
    assert answer.kind == "extractive"
    assert answer.text.splitlines()[1].startswith("At the Birch reservoir the water level varies"), answer.text

TRAINING_RUNS = {  # each side named twice: once with the fact the question weighs, once with another
    "translation-models.md": "# Training the translation models\n\nThe Transformer allows far more parallel "
                             "training and reaches a new state of the art after twelve hours on eight GPUs. "
                             "Checkpoints were written every ten minutes. For our base models, each training step "
                             "took about 0.4 seconds on the cluster. The big model used a dropout rate of 0.1 for "
                             "the English task, instead of 0.3. For our big models, step time "
                             "was 1.0 seconds on the cluster.\n",
    "gpu-cluster.md": "# The GPU cluster\n\nThe cluster has eight GPUs in one machine. Jobs are queued by the "
                      "scheduler overnight.\n",
}


def test_a_side_is_quoted_where_it_is_said_what_the_other_side_s_quote_says(tmp_path, cache_dir):
    """The base model's training step time is quoted; of the big model's two sentences, the one that
    says what that quote says (its step time: "step", "seconds", "cluster", words the question does
    not use) is quoted, not the one the reader scores higher (its dropout rate)."""
    m = _indexed(tmp_path, cache_dir, TRAINING_RUNS)
    answer = m.search("Which model needed more training time on the eight GPUs: the base model or the big model?",
                      top_k=5).answer
    assert answer.kind == "extractive"
    assert "step time was 1.0 seconds" in answer.text and "dropout" not in answer.text, answer.text


# Of the ship, the sentence that names it says nothing of its cases; the one with its count does not name it.
OUTBREAKS = {
    "ship.md": "# An outbreak on the cruise ship Aurora\n\nAn outbreak of the novel coronavirus occurred on the cruise "
               "ship Aurora, which then stayed at anchor near Lisbon. The first identified case was a passenger who "
               "started coughing on board and left the ship in Porto. Out of a total of 3,100 persons on board, 150 "
               "symptomatic cases had been diagnosed by the end of February. The crew was kept apart from the "
               "passengers from the fifth day on.\n",
    "region.md": "# Surveillance in the northern region\n\nBy the end of February, 40 confirmed cases of the novel "
                 "coronavirus had been reported in the northern region, and one of them had died. The region set up "
                 "testing in every hospital in January.\n",
}


def test_a_side_weighed_by_an_amount_is_quoted_where_its_amount_is_stated(tmp_path, cache_dir):
    """"More ... than" weighs the two by an amount: the ship's sentence that states its count of cases
    is quoted, not only the one that names the ship, though the reader scores that one higher. An
    amount is not a date's nor a name's digits, and "which came first" weighs by a date."""
    from monjyu.engines.question_wording import carries, weighed_by

    m = _indexed(tmp_path, cache_dir, OUTBREAKS)
    answer = m.search("By the end of February, had more symptomatic cases been diagnosed on the Aurora than confirmed "
                      "cases reported in the northern region?", top_k=5).answer
    assert "150 symptomatic cases had been diagnosed" in answer.text, answer.text
    assert "40 confirmed cases" in answer.text, answer.text
    assert weighed_by("Is A higher than B?") == "amount" and weighed_by("Which came out first, A or B?") == "date"
    assert weighed_by("Who lived longer, A or B?") == ""  # a life is longer by its dates
    assert weighed_by("致死率が高かったのはどちらの流行ですか？") == "amount"  # 高い, in the past
    assert weighed_by("先に報告されたのはAとBのどちらですか？") == "date"
    assert carries("amount", "Out of 3,100 persons, 150 were ill.")
    for no_amount in ("It began on 19 January 2020 in Hong Kong.", "COVID-19 and H1N1 spread in 2009-2020."):
        assert not carries("amount", no_amount), no_amount


BAT_VIRUSES = {  # Rh-Lun4 has two amounts: a count of differing nucleotides, and a share of its genome as Vx-Tor7's
    "origin.md": "# The origin of the Kestrel virus\n\nThe genome of the Kestrel virus was compared with those of bat "
                 "viruses sampled in the region. Going by nucleotide identity, the Kestrel virus genome is 89% identical "
                 "to that of the bat virus Vx-Tor7. The sampling of bats continued for two years.\n",
    "caves.md": "# Bat viruses of the southern caves\n\nThe bat virus Rh-Lun4 was sampled in a cave in the south. "
                "Rh-Lun4 differs from the Kestrel virus at more than 1,200 nucleotides spread over its whole genome. "
                "Rh-Lun4 shares about 96% of its genome sequence with the Kestrel virus.\n",
    "ward.md": "# A hospital ward\n\nForty patients with Kestrel virus infection were admitted to one ward in March. "
               "Most recovered within two weeks.\n",
}


def test_a_side_weighed_by_an_amount_is_quoted_where_it_is_stated_as_the_other_sides_is(tmp_path, cache_dir):
    """"Closer" weighs two viruses by an amount, and Vx-Tor7's is quoted as a percentage: of Rh-Lun4's
    sentences that state an amount, the one that states a percentage too is quoted, though the one
    that counts differing nucleotides scores higher and shares more words with Vx-Tor7's. Japanese alike."""
    from monjyu.engines.question_wording import amount_units, weighed_by

    _assert_quotes(_indexed(tmp_path, cache_dir, BAT_VIRUSES),
                   ("Going by the identity figures, which bat virus is genetically closer to the Kestrel virus: "
                    "Rh-Lun4 or Vx-Tor7?",
                    "同一性の数値からすると、Kestrelウイルスに遺伝的により近いのはRh-Lun4とVx-Tor7のどちらですか？"),
                   "89% identical to that of the bat virus Vx-Tor7", "Rh-Lun4 shares about 96% of its genome")
    assert weighed_by("Which is nearest to the coast, A or B?") == "amount"
    assert amount_units("89% identity, 1,200 nucleotides, 3.5 days or 12 hours") == {"%", "nucleotide", "day", "hour"}
    assert amount_units("12 of 40 patients on 19 January 2020 had COVID-19") == {"patient"}  # no date, no name


TWO_NETWORKS = {  # each network has two amounts of its training: the time of a step, and the whole time
    "training.md": "# Training the two networks\n\nWe trained both networks on one machine with four GPUs. For the small "
                   "network, each training step took about 0.3 seconds. We trained the small network for a total of "
                   "50,000 steps or 5 hours. For the large network, step time was 0.9 seconds. The large network was "
                   "trained for 200,000 steps (2 days).\n",
    "data.md": "# Data\n\nThe corpus holds two million sentence pairs. Sentences longer than 100 tokens were removed.\n",
    "results.md": "# Results\n\nThe large network reaches a higher score on both test sets. The small network is "
                  "faster at inference time.\n",
}


def test_of_a_sides_amounts_the_one_the_question_asks_of_it_is_quoted(tmp_path, cache_dir):
    """"Which needed more training time" weighs the networks by an amount, and each network states
    two: the model reads the question as asked of each network and quotes its whole training time,
    not the time of a step, which the features score higher."""
    _assert_quotes(_indexed(tmp_path, cache_dir, TWO_NETWORKS),
                   ("Which network needed more training time on the four GPUs: the small network or the large network?",
                    "Did the large network need more training time than the small network?"),
                   "for a total of 50,000 steps or 5 hours", "trained for 200,000 steps (2 days)")


NETWORK_CHANGES = {  # a sentence names both changes, and each change has a sentence that says how effective it is
    "network-changes.md": "# Two changes to the network\n\nOur study shows that the gains of the new network come from "
                          "two changes: squaring the ReLU activations and adding a depthwise convolution after each "
                          "projection. The training data came from a large web crawl. Squared ReLU: the most "
                          "effective change is the move from a ReLU activation to a squared ReLU activation in the "
                          "feed-forward block. Training took two days on eight GPUs. Depthwise convolution: another "
                          "effective change is adding 3x1 depthwise convolutions after each projection.\n",
    "datasets.md": "# Datasets\n\nThe web crawl was filtered for quality. Duplicates were removed before training.\n",
}


SHIP_PEAKS = {  # the opening sentence names passengers and crew alike; each group's peak has a sentence of its own
    "ship.md": "# Infections on the cruise ship Aurora\n\nThe epidemic curves of infections among the 2,200 "
               "passengers and 900 crew members of the Aurora show when each group's infections peaked. The ship "
               "stayed at anchor near Lisbon for three weeks. Infections among passengers peaked from 2 to 4 "
               "February. The crew kept serving meals and cleaning the decks. The peak of infections among crew "
               "members came from 8 to 10 February.\n",
    "region.md": "# Surveillance in the northern region\n\nBy the end of February, 40 confirmed cases of the novel "
                 "coronavirus had been reported in the northern region, and one of them had died. Cases in the "
                 "region peaked in the second week of March.\n",
    "south.md": "# The southern region\n\nIn the southern region, influenza cases peaked in January. Schools closed "
                "for a week.\n",
    "west.md": "# The western region\n\nThe western region reported its first case on 3 March. Hospital admissions "
               "peaked a month later.\n",
    "east.md": "# The eastern region\n\nTesting in the eastern region began in April. Few cases were found.\n",
}


def test_a_question_whether_one_peaked_before_those_among_others_quotes_each(tmp_path, cache_dir):
    """"Did infections among crew members peak before those among passengers?" weighs the crew against
    the passengers ("those" stands for the crew's infections), and so does its Japanese counterpart,
    which the model reads as English words: each group's peak is quoted, though the lead names both."""
    _assert_quotes(_indexed(tmp_path, cache_dir, SHIP_PEAKS),
                   ("On the Aurora, did infections among crew members peak before those among passengers?",
                    "Auroraでは、乗員の感染は乗客の感染より先にピークを迎えましたか？"),
                   "Infections among passengers peaked from 2 to 4 February",
                   "infections among crew members came from 8 to 10 February")


def test_a_side_named_only_beside_the_other_is_quoted_where_it_is_said_as_the_other_side_is(tmp_path, cache_dir):
    """The lead names both groups: each group's own sentence that says of it what the other's says of
    that one ("The epidemic peak among ... was seen for the period ...") is quoted, not the one that
    scores best for the question ("The estimated number of new infections among passengers ...")."""
    ship = ("# Infections on the cruise ship Aurora\n\nThe epidemic curves of infections among the 2,200 passengers "
            "and 900 crew members of the Aurora show when each group's infections peaked. The ship stayed at anchor "
            "near Lisbon for three weeks. The estimated number of new infections among passengers was very small "
            "from 5 February, on which the passengers were kept to their cabins. The epidemic peak among passengers "
            "was seen for the period from 2 to 4 February. The crew kept serving meals and cleaning the decks. The "
            "epidemic peak among crew members was seen for the period from 8 to 10 February.\n")
    m = _indexed(tmp_path, cache_dir, {**SHIP_PEAKS, "ship.md": ship})
    answer = m.search("Auroraでは、乗員の感染は乗客の感染より先にピークを迎えましたか？", top_k=5).answer
    assert "The epidemic peak among crew members was seen for the period from 8 to 10 February." in answer.text, \
        answer.text
    assert "The epidemic peak among passengers was seen for the period from 2 to 4 February." in answer.text, \
        answer.text


def test_a_side_named_only_beside_the_other_is_quoted_where_it_is_said_what_is_asked_of_it(tmp_path, cache_dir):
    """The lead names both changes and says neither is the most effective: the model reads the question
    as asked of each change, and the sentence that says how effective that one is comes after it."""
    m = _indexed(tmp_path, cache_dir, NETWORK_CHANGES)
    answer = m.search("Of the network's two changes, which one do the authors single out as the most effective: "
                      "squared ReLU activations or the depthwise convolution after each projection?", top_k=5).answer
    assert answer.kind == "extractive"
    assert answer.text.startswith("Our study shows that the gains"), answer.text
    assert "the most effective change is the move from a ReLU activation" in answer.text, answer.text


def test_a_question_asked_of_one_side_keeps_its_frame():
    from monjyu.engines.compose import asked_of

    assert asked_of("Which outbreak had the higher case-fatality rate, SARS-CoV in 2003 or MERS-CoV since 2012?",
                    ["MERS-CoV since 2012"]) == "Which outbreak had the higher case-fatality rate, SARS-CoV in 2003?"
    assert asked_of("Which outbreak had the higher case-fatality rate, SARS-CoV in 2003 or MERS-CoV since 2012?",
                    ["SARS-CoV in 2003"]) == "Which outbreak had the higher case-fatality rate, MERS-CoV since 2012?"
    assert asked_of("Is A larger than B?", ["B"]) == "Is A larger?"
    question = "On the ship, did infections among crew members peak before those among passengers?"
    assert asked_of(question, ["passengers"]) == "On the ship, did infections among crew members peak?"
    assert asked_of(question, ["crew members peak"]) == "On the ship, did infections among passengers?"
    assert asked_of("For inputs longer than 1K tokens, is A faster than every other method?", ["is A faster"]) == \
        "For inputs longer than 1K tokens, every other method?"
    assert asked_of("E遺伝子とorf1ab遺伝子のどちらですか？", ["orf1ab遺伝子"]) == "E遺伝子のどちらですか？"


DIRECTORS = {  # a film's page names its director, whose own page says where he was born
    "harbour-lights.md": "# Harbour Lights (film)\n\nHarbour Lights is a 1952 British drama film directed by Tomas "
                         "Verell and starring Ann Rowe. The film was shot in a fishing village in Cornwall over "
                         "one summer.\n",
    "tomas-verell.md": "# Tomas Verell\n\nTomas Verell (born 3 May 1911 in Bergen) was a Norwegian film director "
                       "and editor. He later taught editing at a film school in Oslo.\n",
    "cornwall.md": "# Cornwall\n\nCornwall is a county in the south west of England. Its fishing villages draw "
                   "painters and film crews.\n",
    "night-ferry.md": "# Night Ferry\n\nNight Ferry is a 1958 Danish thriller film directed by Ida Sorensen and "
                      "starring Karl Holm. It follows a smuggler on the crossing to Oslo.\n",
    "ida-sorensen.md": "# Ida Sorensen\n\nIda Sorensen (born 9 June 1920 in Aarhus) was a Danish film director. She "
                       "later ran a cinema in Copenhagen.\n",
}


def test_a_question_asked_through_a_named_thing_quotes_the_next_document(tmp_path, cache_dir):
    """"What is the place of birth of the director of film X?": X's sentence names the director, whose
    page (the title the sentence names and the question does not) is quoted next, by its sentence
    that names him."""
    m = _indexed(tmp_path, cache_dir, DIRECTORS)
    answer = m.search("What is the place of birth of the director of film Harbour Lights?", top_k=5).answer
    assert answer.kind == "extractive"
    assert "directed by Tomas Verell" in answer.text and "born 3 May 1911 in Bergen" in answer.text, answer.text
    # two things weighed through what they name: a step from each
    answer = m.search("Which film has the director who is older, Harbour Lights or Night Ferry?", top_k=5).answer
    assert "born 3 May 1911 in Bergen" in answer.text and "born 9 June 1920 in Aarhus" in answer.text, answer.text


LONG_FILMS = {  # two films described at length, each naming its director, whose pages say when they were born
    "the-long-harbour.md": "# The Long Harbour\n\nThe Long Harbour is a 1952 British drama film about three generations "
                           "of a fishing family on the Cornish coast, directed by Tomas Verell and starring Ann Rowe, "
                           "Peter Lane, Mary Cole and John Hart, with music by Arthur Bliss.\n",
    "the-night-crossing.md": "# The Night Crossing\n\nThe Night Crossing is a 1958 Danish thriller film about a "
                             "smuggler on the last ferry from Aarhus to Oslo, directed by Ida Sorensen and starring "
                             "Karl Holm, Bente Lund, Erik Vang and Lise Dahl, with music by Svend Erik Tarp.\n",
    "tomas-verell.md": DIRECTORS["tomas-verell.md"],
    "ida-sorensen.md": DIRECTORS["ida-sorensen.md"],
}


def test_a_comparison_asked_through_two_things_takes_a_step_from_each_whatever_their_words(tmp_path, cache_dir):
    """"Which film has the director who is older, A or B?": each film's long sentence names its
    director; both directors' pages are quoted, though the second step runs past the 100 words a
    comparison's answer otherwise keeps to."""
    m = _indexed(tmp_path, cache_dir, LONG_FILMS)
    answer = m.search("Which film has the director who is older, The Long Harbour or The Night Crossing?",
                      top_k=5).answer
    assert "directed by Tomas Verell" in answer.text and "directed by Ida Sorensen" in answer.text, answer.text
    assert "born 3 May 1911 in Bergen" in answer.text and "born 9 June 1920 in Aarhus" in answer.text, answer.text


COMPOSERS = {  # a film's page names its composer in a later sentence, whose own page says where she was born
    "salt-road.md": "# Salt Road (film)\n\nSalt Road is a 1964 Belgian road film directed by Pieter Vos and starring "
                    "Marc Dael. It was shot along the coast in one winter. Its score was written by Lena Hart.\n",
    "lena-hart.md": "# Lena Hart\n\nHelena Maria Hart (born 2 April 1930 in Ghent) was a Belgian composer of film "
                    "music and songs.\n",
    "ostend.md": "# Ostend\n\nOstend is a coastal city in the Belgian province of West Flanders. Its beach draws "
                 "film crews in winter.\n",
}


def test_a_question_asked_through_a_later_sentence_quotes_it_and_the_next_document(tmp_path, cache_dir):
    """"Where was the composer of film X born?": X's first sentence names no retrieved page, a later one
    names its composer, whose page opens with her full name ("Helena Maria Hart", the page "Lena
    Hart"): the sentence that names her links the film to her page's opening sentence, which leads."""
    m = _indexed(tmp_path, cache_dir, COMPOSERS)
    answer = m.search("Where was the composer of the film Salt Road born?", top_k=5).answer
    assert answer.kind == "extractive"
    assert "Its score was written by Lena Hart." in answer.text and "in Ghent" in answer.text, answer.text
    # the step answers, and the model is not sure the film's sentence does: the step comes first
    assert "in Ghent" in answer.text.splitlines()[0], answer.text


FILMMAKER = {  # her page answers when she was born and names her film, which has a page of its own
    "gia-lund.md": "# Gia Lund\n\nGia Lund (born 1 January 1987 in Oslo) is a Norwegian film director, best known "
                   "for Harbour Lights. She studied at the film school in Lillehammer.\n",
    "harbour-lights.md": DIRECTORS["harbour-lights.md"],
}


def test_a_question_about_one_thing_keeps_its_answer_first(tmp_path, cache_dir):
    """"When was Gia Lund born?": her sentence answers and names her film, whose page is quoted after
    it (the step), not before."""
    m = _indexed(tmp_path, cache_dir, FILMMAKER)
    answer = m.search("When was Gia Lund born?", top_k=5).answer
    assert answer.kind == "extractive"
    assert "born 1 January 1987" in answer.text.splitlines()[0], answer.text


ORCHARD = {  # the film's sentence names its director and the writer of the story it is based on
    "the-orchard.md": "# The Orchard (film)\n\nThe Orchard is a 2013 drama film written and directed by Mia Lund, "
                      "based on Karl Berg's 2010 story collection of the same name.\n",
    "mia-lund.md": "# Mia Lund\n\nMia Lund (born 4 March 1987 in Tromso) is a Norwegian screenwriter.\n",
    "karl-berg.md": "# Karl Berg\n\nKarl Berg (born 9 May 1960 in Bergen) is a Norwegian actor, writer and film "
                    "director.\n",
}


def test_the_step_is_the_name_the_quote_introduces_with_the_question_s_word(tmp_path, cache_dir):
    """"Where was the director of film The Orchard born?": of the two names the film's sentence
    gives, the step is the one it introduces as directing ("directed by Mia Lund"), not the writer
    whose page says "film director"."""
    m = _indexed(tmp_path, cache_dir, ORCHARD)
    answer = m.search("Where was the director of film The Orchard born?", top_k=5).answer
    assert "in Tromso" in answer.text and "in Bergen" not in answer.text, answer.text


GLASS_BELL = {  # the film's page names its composer; his page says where he died in a later sentence
    "the-glass-bell.md": "# The Glass Bell (film)\n\nThe Glass Bell is a 1974 Hungarian musical comedy film directed "
                         "by Pal Toth. The film's music was composed by Isak Varga.\n",
    "isak-varga.md": "# Isak Varga\n\nIsak Varga (13 May 1923 - 27 December 2009) was a Hungarian composer of film "
                     "music. He wrote the scores of more than sixty films. Varga died in Szentendre, near Budapest, "
                     "on 27 December 2009, aged 86.\n",
    "budapest.md": "# Budapest\n\nBudapest is the capital of Hungary. Its film studios made most of the country's "
                   "musical comedies.\n",
}


def test_the_step_s_page_is_read_for_the_question_asked_of_it(tmp_path, cache_dir):
    """"Where did the composer of film The Glass Bell die?": the film's sentence names the composer; of
    his page's sentences, the one that answers "Where did the composer of film Isak Varga die?" is
    quoted ("Varga died in Szentendre"), not the one that names him in full and answers nothing."""
    m = _indexed(tmp_path, cache_dir, GLASS_BELL)
    answer = m.search("Where did the composer of film The Glass Bell die?", top_k=5).answer
    assert answer.kind == "extractive"
    assert "composed by Isak Varga" in answer.text and "died in Szentendre" in answer.text, answer.text
    assert "died in Szentendre" in answer.text.splitlines()[0], answer.text


HOME_ROAD = {  # the song's page names its writer; his page opens with his dates, says where he was born later
    "back-home-road.md": "# Back Home Road\n\n\"Back Home Road\" is a song written by Walter Crane that was released "
                         "in 1961 and was a top 40 hit.\n",
    "walter-crane.md": "# Walter Crane\n\nWalter Jacob Emerson Crane (March 2, 1929 - May 9, 2015) was an American singer "
                       "and songwriter, and one of the pioneers of country rock. Nicknamed \"the Railroad Poet\", Crane "
                       "wrote songs about trains and small towns. Born into a working-class family in Lowell, "
                       "Massachusetts, Crane had an interest in music from an early age and gave his first public "
                       "performance at his high school.\n",
    "lowell.md": "# Lowell\n\nLowell is a city in Massachusetts. Its mills made most of the country's cloth.\n",
}


def test_the_step_s_sentence_carries_what_the_question_asks(tmp_path, cache_dir):
    """"Where was the composer of song Back Home Road born?": of the composer's page, a sentence that
    holds a place is quoted ("Born into a working-class family in Lowell, ..."), not his opening with
    his dates, which the model reads for a birth."""
    m = _indexed(tmp_path, cache_dir, HOME_ROAD)
    answer = m.search("Where was the composer of song Back Home Road born?", top_k=5).answer
    assert answer.kind == "extractive"
    assert "written by Walter Crane" in answer.text and "in Lowell, Massachusetts" in answer.text, answer.text


NIGHT_MAIL = {  # two films of one name but for "The", each naming its director, whose pages say where they were born
    "night-mail.md": "# Night Mail\n\nNight Mail is a 1938 American western film directed by George Wagner and "
                     "written by Norton Parks.\n",
    "the-night-mail.md": "# The Night Mail\n\nThe Night Mail is a 1926 American silent western film directed by Leo "
                         "Malone and starring Leo Malone and Joan Renner.\n",
    "leo-malone.md": "# Leo Malone\n\nLeo Malone (1888 - 1929) was an American actor and director of silent westerns. "
                     "Malone was born in Santa Rosa, California and built his own studio in the mountains.\n",
    "george-wagner.md": "# George Wagner\n\nGeorge Wagner (1894 - 1984) was an American film director and "
                        "screenwriter. Wagner was born in New York City and worked at Universal for many years.\n",
}


def test_the_document_a_question_names_by_its_whole_title_leads(tmp_path, cache_dir):
    """"Where was the director of film The Night Mail born?" is about "The Night Mail", not its namesake
    "Night Mail": the answer goes from that film's page to its director's, and says Santa Rosa first."""
    m = _indexed(tmp_path, cache_dir, NIGHT_MAIL)
    answer = m.search("Where was the director of film The Night Mail born?", top_k=5).answer
    assert answer.kind == "extractive"
    assert "directed by Leo Malone" in answer.text, answer.text
    assert "Santa Rosa" in answer.text.splitlines()[0], answer.text


def test_the_document_a_question_names_is_its_longest_title_written_as_a_name():
    from monjyu.engines.names import subject_document

    titles = {"a": "Dancing in the Rain", "b": "Dancing in the Rain (film)", "c": "Place of birth", "d": "Results",
              "e": "Big Stone Gap (film)"}
    assert subject_document("Where did the director of film Dancing In The Rain (Film) die?", titles) == "b"
    assert subject_document("映画Dancing In The Rainの監督はどこで亡くなりましたか？", titles) == "a"
    assert subject_document("What is the place of birth of the director of film Gaby?", titles) is None
    assert subject_document("What are the results?", titles) is None
    # without its qualifier where no other document has its name
    assert subject_document("Where was the director of Big Stone Gap born?", titles) == "e"


def test_the_paper_a_question_asks_about_is_the_one_it_names_as_citing_papers_do():
    """"The Transformer" is the paper citing papers call so, where the question names no other
    thing that paper does not write ("Primer", "the Vision Transformer"); a plural names a kind, a
    size suffix the same model, another suffix another model."""
    from monjyu.engines.names import paper_asked_about

    aliases = {"attention": ["Transformer", "Transformers"], "resnet": ["ResNet"], "opt": ["OPT"]}
    written = {"attention": {"english-german"}, "resnet": {"imagenet"}, "opt": {"gpus"}}

    def writes(name: str, paper: str) -> bool:
        return name.lower() in written[paper]

    assert paper_asked_about("Which optimizer was used to train the Transformer?", aliases, writes) == "attention"
    assert paper_asked_about("Transformerの学習に使われたオプティマイザは何ですか？", aliases, writes) == "attention"
    assert paper_asked_about("How large was the Transformer's English-German vocabulary?", aliases, writes) == "attention"
    assert paper_asked_about("What optimizer was used to train ResNet on ImageNet?", aliases, writes) == "resnet"
    assert paper_asked_about("How many GPUs was OPT-175B trained on?", aliases, writes) == "opt"
    assert paper_asked_about("How does Primer improve on the standard Transformer?", aliases, writes) is None
    assert paper_asked_about("How does the Vision Transformer differ from the Transformer?", aliases, writes) is None
    assert paper_asked_about("Why do Transformers struggle with long sequences?", aliases, writes) is None
    assert paper_asked_about("How does Transformer-XL extend the context?", aliases, writes) is None
    assert paper_asked_about("How does ResNet compare with the Transformer?", aliases, writes) is None


def test_a_paper_is_named_by_its_title_whole_or_by_its_subtitle_or_by_its_name_and_opening_words():
    """A question names a paper by its whole title or its subtitle in any case, by the name before the
    colon with the subtitle's first words as the title writes them, or by the side before the colon
    in quotes; not by the side before the colon unquoted, nor by the title's opening words alone
    (names a question uses for the topic), nor where two papers' titles are written as long. The
    question is then read as asked of "the paper", unless it asks nothing of the paper but itself."""
    from monjyu.engines.names import PaperTitles, asked_of_the_paper

    titles = {"palm": "PaLM: Scaling Language Modeling with Pathways", "star": "STaR: Self-Taught Reasoner Bootstrapping "
              "Reasoning With Reasoning", "attention": "Attention Is All You Need", "vit": "AN IMAGE IS WORTH 16X16 WORDS: "
              "TRANSFORMERS FOR IMAGE RECOGNITION AT SCALE", "seal": "Autoregressive Search Engines: Generating "
              "Substrings as Document Identifiers", "vsv": "Vesicular stomatitis virus with the rabies virus "
              "glycoprotein directs retrograde transsynaptic transport"}

    def read(question: str, language: str = "en") -> str | None:
        named = PaperTitles(titles).named(question)
        return named and f"{named.paper}: {asked_of_the_paper(question, named, language)}"

    assert read('In "Attention Is All You Need", what label smoothing was used?') == \
        "attention: In the paper, what label smoothing was used?"
    assert read("How many heads does attention is all you need use?") == "attention: How many heads does the paper use?"
    assert read("What vocabulary is used in Scaling Language Modeling with Pathways?") == \
        "palm: What vocabulary is used in the paper?"
    assert read('Which model did "STaR: Self-Taught Reasoner" fine-tune?') == \
        "star: Which model did the paper fine-tune?"
    assert read('How does "An Image is Worth 16x16 Words" classify?') == "vit: How does the paper classify?"
    assert read("「Attention Is All You Need」では何層ですか？", "ja") == "attention: この論文では何層ですか？"
    assert read("Which library does the paper Generating Substrings as Document Identifiers use?") == \
        "seal: Which library does the paper use?"
    assert read("What is Attention Is All You Need about?") == "attention: What is Attention Is All You Need about?"
    assert read("「Attention Is All You Need」とは何ですか？", "ja") == "attention: 「Attention Is All You Need」とは何ですか？"
    assert read("Attention Is All You Need") == "attention: Attention Is All You Need"
    assert read("Who wrote on autoregressive search engines?") is None
    assert read("How does vesicular stomatitis virus spread?") is None
    assert read("Which self-taught reasoner bootstrapping method?") is None  # opening words in another case
    assert read("Is Attention Is All You Need older than Scaling Language Modeling with Pathways?") is None


def test_a_question_is_renamed_for_the_next_step():
    """The question the step's page answers: the subject's name, in any case, becomes the step's, and
    a name runs no further than its words ("Live" is not in "Olive"; kana may follow a Latin name)."""
    from monjyu.engines.names import renamed

    assert renamed("Where did the composer of film The Straw Hat die?", "The Straw Hat", "Isaac Schwartz") == \
        "Where did the composer of film Isaac Schwartz die?"
    assert renamed("Who is the director of film Palo Alto (2013 Film)?", "palo alto", "Gia Coppola") == \
        "Who is the director of film Gia Coppola (2013 Film)?"
    assert renamed("Who wrote Olive?", "Live", "X") is None
    assert renamed("Lothair IIの母親はいつ亡くなりましたか？", "Lothair II", "Ermengarde of Tours") == \
        "Ermengarde of Toursの母親はいつ亡くなりましたか？"


def test_over_another_language_the_model_moves_a_sentence_to_the_lead_only_where_it_is_on_the_question(
        tmp_path, cache_dir):
    """The model's threshold was fitted within one language: over English pages only, a sentence it
    accepts leads a Japanese question's answer only where the relevance scale grades it on the
    question; for the English question it leads, unless the question names a document, whose page
    leads. The model's readings are set here."""
    m = _indexed(tmp_path, cache_dir, DIRECTORS)
    engine = m.workspace.answers()
    threshold, min_relevance = engine.reader.model.threshold, m.config.answer.min_sentence_score

    def quoted(question: str) -> list[str]:
        asked = Query.of(question)
        hits = m.search(question, top_k=5, answer=False).hits
        candidates = engine.reader.candidates(asked, m.workspace.current().embed_query(asked),
                                              [Source(i + 1, h) for i, h in enumerate(hits)])
        top = max(candidates, key=lambda c: c.score)
        aside = next(c for c in candidates if c.quote.startswith("Cornwall is a county"))
        assert top.quote.startswith("Harbour Lights is") and aside.relevance < min_relevance
        for c in candidates:
            c.answers = threshold - 2.0
        top.answers, aside.answers = threshold - 1.0, threshold + 1.0
        quotes, _ = engine.reader.pick(asked, candidates, min_relevance=min_relevance)
        return [c.quote for q in quotes for c in q]

    # the film's sentence leads, and its step, the director's page, comes first (the lead is unsure)
    japanese = quoted("映画Harbour Lightsの監督はどこで生まれましたか？")
    assert japanese[0].startswith("Tomas Verell (born") and japanese[1].startswith("Harbour Lights is"), japanese
    # for the English question it leads, where the question names no document as a name ...
    assert quoted("Where was the director of film harbour lights born?")[0].startswith("Cornwall is a county")
    # ... but the film's page leads where it does ("Harbour Lights (film)"), its step first
    english = quoted("Where was the director of film Harbour Lights born?")
    assert english[0].startswith("Tomas Verell (born") and english[1].startswith("Harbour Lights is"), english


def test_a_name_inside_a_longer_name_is_not_a_document_s_name():
    """"Dream Chasers Records" does not name the page "Dream" (a film), nor "the Order of the British
    Empire" the page "Empire"; "King Norodom Suramarit" names the page of the King Norodom Suramarit
    it is about."""
    from monjyu.engines.names import written_alone

    assert not written_alone("Dream", "Mill launched his own label, Dream Chasers Records.", "Dream is a 2008 film.")
    assert not written_alone("Empire", "She was made Dame Commander of the Order of the British Empire in 1965.",
                             "Empire is a 2002 gangster film.")
    assert written_alone("Norodom Suramarit", "She married King Norodom Suramarit in 1920.",
                         "Norodom Suramarit (1896-1960) was King of Cambodia.")
    assert written_alone("Jonny Greenwood", "... editor Leslie Jones, and composer Jonny Greenwood.", "")


WARDS = {  # the lead sets itself against the sentence before, which answers for the other side unnamed
    "northern-ward.md": "# Intensive care in the northern ward\n\nOur team managed forty critically ill patients "
                        "with early prone positioning and strict fluid balance. These measures have worked well so "
                        "far, as our patients had no deaths. In contrast, the mortality reported from the southern "
                        "hospitals ranged from 11 to 15%. Staff rotate between the two wards every month.\n",
    "ward-staffing.md": "# Ward staffing\n\nEach ward has two consultants and a rota of nurses. Night shifts are "
                        "covered by a registrar.\n",
}


def test_a_sentence_set_against_the_one_before_is_quoted_with_it(tmp_path, cache_dir):
    """"In contrast, the mortality ... southern hospitals ..." leads; what it is set against, the
    other side of the question ("our patients had no deaths"), is the sentence before it, which
    names neither side: the two are one quote, in the passage's order."""
    m = _indexed(tmp_path, cache_dir, WARDS)
    answer = m.search("Where was the reported mortality lower: among the patients of the northern ward team, or "
                      "in the reports from the southern hospitals?", top_k=5).answer
    assert answer.kind == "extractive"
    assert re.search(r"no deaths\. In contrast, the mortality", answer.text), answer.text


MORTALITY = {  # yc-07-ja's passages in brief: a lead that names both cities, and "On the contrary" later
    "shenzhen.md": "# Critical care of 2019-nCoV patients in Shenzhen\n\nWuhan, the epicenter of the outbreak, built "
                   "two new hospitals for nCoV patients, whereas Shenzhen reconstructed an existing hospital with 800 "
                   "beds for them. Our intensive care team managed every critically ill patient with early prone "
                   "positioning. These critical managements have worked well so far, as our 2019-nCoV patients had "
                   "zero mortality. On the contrary, the previously reported mortality of 2019-nCoV patients in Wuhan "
                   "ranged from 11 to 15%.\n",
    "wuhan.md": "# Clinical features of patients in Wuhan\n\nAmong 41 patients admitted to a designated hospital in "
                "Wuhan, 13 required intensive care and 6 died. Most patients had fever and dry cough.\n",
    "rivers.md": "# Rivers\n\nRivers carry water from the hills to the sea. Their banks flood in spring.\n",
}


def test_a_later_quote_set_against_the_one_before_is_quoted_with_it(tmp_path, cache_dir):
    """The Japanese question leads with the sentence naming both cities; Wuhan's "On the contrary,
    ..." comes later, and brings the sentence before it, Shenzhen's zero mortality, which names
    neither side in words the question's glosses give."""
    m = _indexed(tmp_path, cache_dir, MORTALITY)
    _assert_quotes(m, ("2019-nCoV患者の報告された死亡率が低かったのは、Shenzhenの集中治療チームが診た患者と、"
                       "それ以前のWuhanからの報告のどちらですか？",
                       "Which had the lower reported mortality among 2019-nCoV patients: those of the Shenzhen "
                       "intensive care team, or the earlier reports from Wuhan?"),
                   "zero mortality. On the contrary, the previously reported mortality")


VALLEY_VIRUS = {  # a sentence that names the question's subject at length, and a later one that answers
    "valley-virus.md": "# Equine encephalitis in the valley outbreak\n\nValley equine encephalitis virus (VaEEV) is "
                       "an arthropod-borne alphavirus responsible for acute and fatal encephalitis in horses and in "
                       "human hosts across the southern valley region.\n\nIn humans, the virus causes a febrile "
                       "illness with headache and vomiting. Among cases with neurological symptoms the mortality "
                       "rate reached 28% in children and 6% in adults during the outbreak.\n\nHorses are "
                       "vaccinated with a live attenuated strain every spring.\n",
    "mosquito-control.md": "# Mosquito control\n\nMosquito control programmes spray larvicide in standing water "
                           "during the wet season. Traps are checked weekly by field teams.\n",
}


def test_the_lead_is_a_sentence_the_model_reads_as_an_answer(tmp_path, cache_dir):
    """The features prefer the sentence that names the virus at length; the model reads it as no
    answer (below its threshold) and the mortality sentence as one: the answer leads with that."""
    m = _indexed(tmp_path, cache_dir, VALLEY_VIRUS)
    answer = m.search("What is the mortality rate of Valley equine encephalitis virus in children?", top_k=5).answer
    assert answer.kind == "extractive" and "28%" in answer.text.splitlines()[0], answer.text


def test_a_question_that_asks_what_a_thing_is_and_the_sentences_that_say_it():
    from monjyu.engines.definitions import NOT, SAYS, SPELLS_OUT, asked_term, defines

    assert asked_term("What is FlashAttention?") == "FlashAttention"
    assert asked_term("What is the Transformer?") == "Transformer"
    assert asked_term("What is the Vision Transformer (ViT)?") == "Vision Transformer"
    assert asked_term("What are viroporins?") == "viroporins"
    assert asked_term("What does HTS stand for?") == "HTS"
    assert asked_term("RWKVとは何ですか？") == asked_term("RWKVは何ですか？") == "RWKV"
    # asked of something else: a value, a relation, a purpose
    for question in ("What is the presumed incubation period?", "What is the advantage of AAV vectors?",
                     "What is PaLM used for?", "この研究の目的は何ですか？", "How does RWKV work?"):
        assert asked_term(question) == "", question
    says = [("Transformer", "In this work we propose the Transformer, a model architecture eschewing recurrence."),
            ("RETRO", "We present Retrieval-Enhanced Transformers (Retro), a method for modelling text."),
            ("PaLM", "..., Transformer language model, which we call Pathways Language Model PaLM."),
            ("ZeRO", "ZeRO-DP and ZeRO-R together form a system that we collectively refer to as ZeRO."),
            ("EGR1", "EGR1, also known as Zif268 and NGF1-A, is a zinc finger protein and transcription factor."),
            ("PEDV", "The causative agent PED virus (PEDV) belongs to the porcine coronaviruses (CoVs)."),
            ("clinical attack rate", "In scenarios that used clinical attack rates (the proportion of individuals "
                                     "who become ill) of 20% to 30%, ..."),
            ("distillation", "Our more general solution, called “distillation”, is to raise the temperature."),
            ("RWKV", "RWKV（Receptance Weighted Key Value）は、RNNとTransformerの利点を組み合わせたモデルである。")]
    for term, sentence in says:
        assert defines(sentence, term) == SAYS, (term, sentence)
    spelled_out = [("HTS", "HTS (high-throughput screening) of an FDA-approved compound library."),
                   ("BCoV", "We sequenced the first Bovine coronavirus (BCoV) complete genome sequence from France.")]
    for term, sentence in spelled_out:
        assert defines(sentence, term) == SPELLS_OUT, (term, sentence)
    mentions = [("PonderNet", "In other words, the prediction of PonderNet is the prediction made at the step it halts."),
                ("PaLM", "PaLM is finetuned with a learning rate of 5e-5 using the Adafactor optimizer."),
                ("PaLM", "We present the PaLM model card in Table 29."),
                ("RWKV", "One of the defining characteristics of RWKV is its parallel training."),
                ("FlashAttention", "We implement block-sparse FlashAttention, a sparse attention algorithm."),
                ("RASs", "The lack of information in relation to preexisting baseline RASs, added to the high cost "
                         "of these new drugs, are the major limiting factors."),
                ("clinical attack rate", "But even after adjusting deaths by age-specific clinical attack rates, a "
                                         "W-shaped curve remains.")]
    for term, sentence in mentions:
        assert defines(sentence, term) == NOT, (term, sentence)


QUILLON = {  # a sentence that says what Quillon is, and one that says more about what it does
    "quillon.md": "# Quillon: learning when to stop\n\n## Introduction\n\nRecurrent networks spend the same "
                  "computation on every input, however hard. To overcome this limitation we introduce Quillon, a new "
                  "algorithm that learns to adapt the amount of computation to the problem at hand.\n\n## Method\n\n"
                  "At each step Quillon outputs a prediction and the probability of halting. In other words, the "
                  "prediction of Quillon is the prediction made at the step at which it halts.\n",
    "canals.md": "# Canals\n\nCanals carry water between reservoirs and rivers. Locks raise boats between levels.\n",
}


def test_a_question_what_a_thing_is_leads_with_the_sentence_that_says_it(tmp_path, cache_dir):
    """The reader (features and model) ranks the sentence that says what Quillon's prediction is above
    the one that introduces Quillon as an algorithm; asked what Quillon is, the answer leads with the
    introduction, in English and in Japanese."""
    m = _indexed(tmp_path, cache_dir, QUILLON)
    for question in ("What is Quillon?", "Quillonとは何ですか？"):
        answer = m.search(question, top_k=5).answer
        assert answer.kind == "extractive", (question, answer.text)
        assert answer.text.splitlines()[0].startswith("To overcome this limitation we introduce Quillon"), (
            question, answer.text)


QUORRA = {  # the paper says what Quorra is in its abstract, and in a caption, which is not quoted
    "quorra.md": "# Quorra: small models that read\n\n## Abstract\n\nWe trained a 90-million parameter language model on children's "
                 "books, which we call Quorra.\n\n## Training\n\nFigure 1: Quorra is a reader of books.\n\n"
                 "Quorra saw each book twice. "
                 "Quorra's learning rate fell linearly.\n\n## Results\n\nQuorra answers 61% of the questions. "
                 "Quorra reads faster than its teacher.\n",
    "canals.md": "# Canals\n\nCanals carry water between reservoirs and rivers. Locks raise boats between levels.\n",
}


def test_a_question_what_a_thing_is_reads_the_abstract_of_its_paper_where_no_passage_says_it(tmp_path, cache_dir):
    """Where none of the passages retrieved says what the thing asked about is in a sentence the
    reader may quote (a caption says it here), the first passage of the paper (its abstract) joins
    them, in the last one's place, and the answer leads with the sentence there that says it; a
    question that asks something else keeps its sources."""
    from monjyu.engines.extractive import extractive_answer

    m = _indexed(tmp_path, cache_dir, QUORRA)
    engine = m.workspace.answers()
    for question, joins in (("What is Quorra?", True), ("How fast does Quorra read?", False)):
        hits = m.search(question, top_k=5, answer=False).hits
        sources = [Source(i + 1, h) for i, h in enumerate(h for h in hits if "which we call Quorra" not in h.text)]
        assert any(h.text.startswith("Figure 1: Quorra is") for h in hits), question
        asked = Query.of(question)
        read = engine.with_defining_passage(asked, sources)
        assert (read[-1].hit.text_unit_id != sources[-1].hit.text_unit_id) is joins, question
        if joins:
            assert "which we call Quorra" in read[-1].hit.text and read[-1].number == max(s.number for s in sources) + 1
            answer = extractive_answer(asked, m.workspace.current().embed_query(asked), read, engine.reader, "en")
            assert answer.text.splitlines()[0].startswith("We trained a 90-million parameter language model"), answer.text


TERVIL = {  # a sentence with the question's words that answers nothing, and one that answers
    "tervil-fever.md": "# Tervil fever in the river valleys\n\nTervil fever is an acute viral illness of adults in "
                       "the river valleys, fatal in some cases, spread by mosquitoes.\n\nMost patients "
                       "recover within two weeks. The case fatality rate of Tervil fever in adults was 12% during "
                       "the outbreak.\n\nCattle are vaccinated every spring.\n",
    "mosquito-control.md": VALLEY_VIRUS["mosquito-control.md"],
}


def test_a_japanese_question_over_english_sentences_is_read_in_english_words(tmp_path, cache_dir):
    """The model learnt questions over sentences of their own language: a Japanese question over
    English papers is read as its English words (nlp.glossary.english_reading: "How much Tervil
    adult case fatality rate?"), in which the model reads the answer where it reads none in the
    Japanese, and the answer leads with it as the English question's does."""
    m = _indexed(tmp_path, cache_dir, TERVIL)
    for question in ("What is the case fatality rate of Tervil fever in adults?", "Tervilの成人における致死率はどのくらいですか？"):
        answer = m.search(question, top_k=5).answer
        assert answer.kind == "extractive" and "12%" in answer.text.splitlines()[0], (question, answer.text)


PNEUMONIA = {  # the question's words in one sentence, what answers it in another
    "childhood-pneumonia.md": "# Childhood pneumonia in the last decade\n\n## Burden\n\nThe overall burden of "
                              "childhood pneumonia has been reduced substantially over the last decade, despite an "
                              "increase in the number of children worldwide. Pneumonia remains a leading cause of death "
                              "in children under five.\n\n## Causes of the decline\n\nIn the last decade, better "
                              "housing and nutrition and the conjugate vaccines against pneumococcus and Haemophilus "
                              "influenzae have led to large reductions in the incidence and severity of childhood "
                              "pneumonia.\n",
    "canals.md": "# Canals\n\nCanals carry water between reservoirs and rivers. Locks raise boats between levels.\n",
}


def test_of_the_sentences_quoted_the_one_the_model_reads_as_the_answer_comes_first(tmp_path, cache_dir):
    """The features rank the sentence that repeats the question's words first; where the model reads
    another quoted sentence as the answer by MODEL_FIRST more log-odds, that one leads, and the
    same sentences are quoted. The model's readings are set here, so the test holds for any weights."""
    from monjyu.engines.compose import MODEL_FIRST, UNSURE_LEAD

    m = _indexed(tmp_path, cache_dir, PNEUMONIA)
    question = "What reduced childhood pneumonia?"
    hits = m.search(question, top_k=5, answer=False).hits
    engine = m.workspace.answers()
    asked = Query.of(question)
    vector = m.workspace.current().embed_query(asked)
    sources = [Source(i + 1, h) for i, h in enumerate(hits)]

    def first_quoted(restates: float, answers: float) -> str:
        candidates = engine.reader.candidates(asked, vector, sources)

        def reading(start: str):
            return next(c for c in candidates if c.quote.startswith(start))

        reading("The overall burden").answers = restates
        reading("In the last decade, ").answers = answers
        assert max(candidates, key=lambda c: c.score).quote.startswith("The overall burden")  # the features' lead
        quotes, _ = engine.reader.pick(asked, candidates, min_relevance=0.0)
        quoted = [c.quote for q in quotes for c in q]
        assert any(q.startswith("In the last decade, ") for q in quoted), quoted  # sure, after an unsure lead
        return quoted[0]

    # an unsure lead, and a sentence the model reads as the answer
    assert first_quoted(UNSURE_LEAD - 1.8, UNSURE_LEAD + 1.0).startswith("In the last decade, ")
    # both read about alike: the features' order stands
    assert first_quoted(UNSURE_LEAD - 0.1, UNSURE_LEAD - 0.1 + MODEL_FIRST / 2).startswith("The overall burden")


# ---------------------------------------------------------------- the trained model as the reader (answer.reader: model)

def _read_with(sample_index: Monjyu, reader: str) -> Monjyu:
    """The sample index, its answers read with `answer.reader` set to `reader`."""
    config = sample_index.config.model_copy(deep=True)
    config.answer.reader = reader
    return Monjyu(sample_index.index_dir, config)


@pytest.fixture(scope="module")
def model_reader(sample_index) -> Monjyu:
    """The sample index read with answer.reader: model (the shipped cross-encoder)."""
    return _read_with(sample_index, "model")


@pytest.mark.parametrize("reader, refused_for", [("model", "reader model's threshold"), ("features", "for relevance")])
def test_each_reader_answers_and_refuses_what_the_passages_do_not_answer(sample_index, reader, refused_for):
    """The trained model with the features, and the hand-built features alone. The model leads with
    a sentence that names the algorithm; the features with the sentence of the Leiden abstract that
    shares most of the question's words ("Hierarchical application yields communities at several
    levels.")."""
    m = _read_with(sample_index, reader)
    answer = m.search("Which algorithm detects hierarchical communities?", top_k=5).answer
    first = answer.text.splitlines()[0]
    cited = {c.number: c.document_title for c in answer.citations}[int(re.findall(r"\[(\d+)\]", first)[-1])]
    assert answer.kind == "extractive"
    assert "Leiden" in first if reader == "model" else cited == "From Louvain to Leiden", answer.text
    assert (m.workspace.answers().reader.model is not None) == (reader == "model")
    refused = m.search("What is the boiling point of mercury in kelvin?", top_k=5).answer
    assert refused.kind == "insufficient" and refused_for in refused.note


def test_a_sentence_the_relevance_scale_is_sure_of_is_not_refused_by_the_model(model_reader):
    """The model finds no answer span it recognises in the sentence that answers (its best score is
    below its threshold), but the relevance scale grades it "correct": the question is answered."""
    reader = model_reader.workspace.answers().reader
    asked = {"query": "How are communities of phrases detected?", "mode": "hybrid", "top_k": 5,
             "filters": SearchFilters(file_types=["pdf"])}  # the sample PDF's passages alone
    answer = model_reader.search(**asked).answer
    assert answer.kind == "extractive" and "communities" in answer.text
    config = model_reader.config.model_copy(deep=True)
    config.answer.sure_sentence_score = 10.0
    refused = Monjyu(model_reader.index_dir, config).search(**asked).answer
    assert refused.kind == "insufficient" and f"threshold ({reader.model.threshold:g})" in refused.note


def test_keywords_are_answered_by_relevance_not_by_the_model(model_reader):
    """Keywords ask no question, so the model's threshold (learnt on questions) does not refuse them."""
    answer = model_reader.search("noun phrase graph without an LLM", top_k=5).answer
    assert answer.kind == "extractive" and answer.citations


SCOURS = {  # how long calves take to recover is said only in passing, in several sentences
    "calves.md": "# Scours in dairy calves\n\nCalves with diarrhoea are given fluids and kept warm. Most recover within "
                 "a week. Calves that stop drinking need fluids by tube for two or three days. A calf treated early "
                 "is usually back on milk after four days. Severe cases with fever may take a fortnight to regain "
                 "weight.\n",
    "barns.md": "# Barn hygiene\n\nPens are cleaned and limed between groups of calves. Straw bedding is changed twice "
                "a week in winter.\n",
}


def test_a_fact_whose_lead_the_model_is_unsure_of_goes_on_a_sentence_further(tmp_path, cache_dir):
    """The model reads no sentence as surely answering how long calves take to recover: the answer
    takes a third sentence, where a fact answer stopped at two. A lead it is sure of stays short."""
    from monjyu.engines.compose import UNSURE_LEAD
    from monjyu.eval.answers import answer_sentences

    m = _indexed(tmp_path, cache_dir, SCOURS)
    model = m.workspace.answers().reader.model
    unsure = "How long do calves with diarrhoea take to recover?"
    sentences = answer_sentences(m.search(unsure, top_k=5).answer.text)
    assert model.scores(unsure, sentences[:1])[0] < UNSURE_LEAD
    assert len(sentences) == 3, sentences
    sure = "How often is the straw bedding changed in winter?"
    sentences = answer_sentences(m.search(sure, top_k=5).answer.text)
    assert model.scores(sure, sentences[:1])[0] >= UNSURE_LEAD
    assert sentences == ["Straw bedding is changed twice a week in winter."], sentences


TOLTRAZURIL = {  # two paragraphs of a covidqa-dev paper (Odden et al., 2018, CC BY), whose sentences go on past "spp."
    "toltrazuril.md": "# Toltrazuril resistance in ovine Eimeria\n\nAnticoccidial resistance (ACR), which develops mainly as "
                      "a result of intensive long-term use of anticoccidial drugs, occurs widely in poultry production and "
                      "has also been identified in Cystoisospora suis in piglets [1] [2] [3] [4] [5] . In addition, a field "
                      "method for the evaluation of reduced anticoccidial efficacy (ACE) in ovine Eimeria spp., the faecal "
                      "oocyst count reduction test (FOCRT), has recently been developed and indicated that the efficacy of "
                      "toltrazuril is reduced in some Norwegian sheep flocks [6] .\n\nCONCLUSIONS: This study confirms "
                      "toltrazuril resistance in ovine Eimeria spp.; in addition, the data support the use of FOCRT as an "
                      "appropriate tool for field evaluation of anticoccidial efficacy.\n",
}


def test_an_answer_quotes_a_sentence_whole_past_an_abbreviation(tmp_path, cache_dir):
    """pysbd ends a sentence at "spp."; the answer quotes the sentence that names the test whole."""
    m = _indexed(tmp_path, cache_dir, TOLTRAZURIL)
    answer = m.search("What test can detect reduced anticoccidial efficacy in the field?", top_k=5).answer
    assert ("in ovine Eimeria spp., the faecal oocyst count reduction test (FOCRT), has recently been developed"
            in answer.text), answer.text
    assert not any(c.snippet.endswith("spp.") for c in answer.citations), answer.citations


CHIKUNGUNYA = {  # sentences of two covidqa-dev papers (Thiboutot et al., 2010; Xu-Yang et al., 2016; CC BY)
    "chikungunya.md": "# Chikungunya: a potentially emerging epidemic?\n\nIn Africa, CHIKV is maintained in a sylvatic "
                      "cycle among forest-dwelling Aedes spp. mosquitoes, wild primates, squirrels, birds, and rodents "
                      "( Figure 1 ) [10] . In Asia, the disease is vectored by Ae. aegypti and Ae. albopictus [11] . "
                      "Transmission in Asia occurs in an urban cycle whereby the mosquito spreads the disease from an "
                      "infected human to an uninfected human, following an epidemiological pattern similar to dengue "
                      "fever [12] .\n\nOf those mothers who, during the La Reunion Island epidemic, were infected long "
                      "before delivery, only three fetal deaths were reported [12, 33] . Ramful et al. theorized that "
                      "motherto-child transmission most likely happens transplacentally shortly before delivery [33] .\n",
    "hantaan.md": "# Interferon-induced transmembrane protein 3 inhibits Hantaan virus infection\n\nHantaan virus (HTNV) "
                  "causes hemorrhagic fever with renal syndrome (HFRS). Previous studies have identified "
                  "interferon-induced transmembrane proteins (IFITMs) as an interferon-stimulated gene family. However, "
                  "the role of IFITMs in HTNV infection is unclear.\n",
}


def test_a_sentence_with_an_abbreviation_inside_or_few_function_words_is_quoted(tmp_path, cache_dir):
    """"Ae. aegypti", "Ramful et al. theorized": a stop inside a sentence before a lower-case word
    ends an abbreviation, not a piece to judge alone; "Hantaan virus (HTNV) causes hemorrhagic fever
    ...": a short statement with one function word reads as prose. Each answers its question."""
    m = _indexed(tmp_path, cache_dir, CHIKUNGUNYA)
    for question, quote in (
            ("Which mosquitoes vector chikungunya in Asia?", "In Asia, the disease is vectored by Ae. aegypti and Ae. albopictus"),
            ("What did Ramful et al. theorize about mother-to-child transmission?",
             "Ramful et al. theorized that motherto-child transmission most likely happens transplacentally"),
            ("What disease does Hantaan virus cause?", "Hantaan virus (HTNV) causes hemorrhagic fever with renal syndrome")):
        answer = m.search(question, top_k=5).answer
        assert answer.kind != "insufficient" and quote in answer.text, (question, answer.text)


WIKI_INITIALS = {  # two passages of the 2wiki corpus (Wikipedia, CC BY-SA) that open with a middle initial
    "richard-w-story.md": "# Richard W. Story\n\nRichard W. Story( born 1953) is a Senior United States District "
                          "Judge of the United States District Court for the Northern District of Georgia.\n",
    "robert-north-bradbury.md": "# Robert North Bradbury\n\nRobert N. Bradbury( March 23, 1886 – November 24, 1949)"
                                "( born Ronald E. Bradbury) was an American film director and screenwriter who "
                                "directed 125 movies between 1918 and 1941. He died in Glendale, California on "
                                "November 24, 1949 at age 63.\n",
}


def test_a_sentence_that_opens_with_a_middle_initial_is_quoted(tmp_path, cache_dir):
    """"Richard W. Story( born 1953) is a ...": the stop after an initial ends no piece, so the piece
    "Richard W." is not judged (and refused) as a sentence of its own."""
    m = _indexed(tmp_path, cache_dir, WIKI_INITIALS)
    for question, quote in (("Which court is Richard W. Story a judge of?", "Richard W. Story( born 1953) is a Senior"),
                            ("How many movies did Robert N. Bradbury direct?", "who directed 125 movies between 1918")):
        answer = m.search(question, top_k=5).answer
        assert answer.kind != "insufficient" and quote in answer.text, (question, answer.text)


# A covidqa-dev paper (Liu et al., 2020, CC BY) and SQuAD's Wikipedia paragraphs (CC BY-SA; the list cut).
NAMED_AND_ADDRESSED = {
    "laboratory.md": "# No credible evidence supporting claims of the laboratory engineering of SARS-CoV-2\n\nThe emergence "
                     "and outbreak of a newly discovered acute respiratory disease in Wuhan, China, has affected greater "
                     "than 40,000 people, and killed more than 1,000 as of Feb. 10, 2020. Due to the elevated pathogenic "
                     "activity of the SHC014-MA15 chimeric virus relative to MA15 chimeric virus with the original human "
                     "SARS S gene in mice, such experiments with SL-SHC014-MA15 chimeric virus were later restricted as "
                     "gain of function (GOF) studies under the US government-mandated pause policy (https://www.nih.gov/"
                     "about-nih/who-weare/nih-director/statements/nih-lifts-funding-pausegain-function-research).\n",
    "chicago.md": "# University of Chicago\n\nNotable faculty in physics have included the speed of light calculator "
                  "A. A. Michelson, elementary charge calculator Robert A. Millikan, discoverer of the Compton Effect "
                  "Arthur H. Compton, the creator of the first nuclear reactor Enrico Fermi.\n\nA controversial aspect "
                  "of imperialism is the defense and justification of empire-building based on seemingly rational "
                  "grounds. J. A. Hobson identifies this justification on general grounds as: \"It is desirable that "
                  "the earth should be peopled, governed, and developed, as far as possible, by the races which can do "
                  "this work best, i.e. by the races of highest 'social efficiency'\".\n",
}


def test_a_sentence_citing_a_web_address_naming_people_by_initials_or_dated_feb_is_quoted(tmp_path, cache_dir):
    """A body sentence may cite a web address in brackets (dropped from the quote as "[12]" is),
    name people with a middle initial ("Robert A. Millikan, Arthur H. Compton"), open with initials
    ("J. A. Hobson identifies") or date a count "as of Feb. 10, 2020": none of these is a reference
    entry or a piece of debris. A web address outside brackets, or names written initials first,
    still mark a reference entry."""
    from monjyu.engines.quotes import quotable_span

    m = _indexed(tmp_path, cache_dir, NAMED_AND_ADDRESSED)
    for question, quote in (
            ("Why were experiments with SL-SHC014-MA15 chimeric virus later restricted?",
             "were later restricted as gain of function (GOF) studies under the US government-mandated pause policy."),
            ("How many people had the outbreak in Wuhan affected by February 2020?",
             "has affected greater than 40,000 people, and killed more than 1,000 as of Feb. 10, 2020."),
            ("Which physicist who discovered the Compton Effect taught at the University of Chicago?",
             "discoverer of the Compton Effect Arthur H. Compton"),
            ("How does J. A. Hobson justify imperialism?", "J. A. Hobson identifies this justification")):
        answer = m.search(question, top_k=5).answer
        assert answer.kind != "insufficient" and quote in answer.text, (question, answer.text)
        assert "https://" not in answer.text
    for entry in ("World Health Organization. Coronavirus disease 2019 (COVID-19) situation report 51. Available at "
                  "https://www.who.int/docs/default-source/coronaviruse/situation-reports/sitrep-51-covid-19.pdf.",
                  "A. Vaswani, N. Shazeer, N. Parmar, J. Uszkoreit, L. Jones, A. N. Gomez, and I. Polosukhin. "
                  "Attention is all you need, 2017."):
        assert not quotable_span(entry, 0, len(entry)), entry


CODE = {  # a paper that says where its code is, in a sentence and in a footnote's few words
    "quorra.md": "# Quorra: small models that read\n\n## Abstract\n\nWe trained a 90-million parameter language model on "
                 "children's books, which we call Quorra. The code we used to train and evaluate Quorra is available "
                 "at https://github.com/example/quorra.\n\n## Results\n\nQuorra answers 61% of the questions.\n\n"
                 "Model weights at: https://huggingface.co/example/quorra-90m\n",
    "canals.md": "# Canals\n\nCanals carry water between reservoirs and rivers. Locks raise boats between levels.\n",
}


def test_a_sentence_that_says_where_the_code_is_is_quoted_with_its_address(tmp_path, cache_dir):
    """A web address marks a reference entry ("... situation report 51. Available at https://..."),
    but a sentence that says something is at one ("The code ... is available at https://...",
    "Model weights at: https://...") answers "Where is the code?", and is quoted with it."""
    m = _indexed(tmp_path, cache_dir, CODE)
    for question, address in (("Where can I get the code for Quorra?", "https://github.com/example/quorra"),
                              ("Where are the Quorra model weights?", "https://huggingface.co/example/quorra-90m")):
        answer = m.search(question, top_k=5).answer
        assert answer.kind == "extractive" and address in answer.text.splitlines()[0], (question, answer.text)


def test_a_short_answer_does_not_go_on_into_the_next_paragraph(tmp_path, cache_dir):
    """A footnote of a few words ("Model weights at: https://...") is a short lead, which goes on with
    the sentence after it only within its paragraph: the body text after the footnote is another
    paragraph, not the rest of its answer (ViT's footnote had been quoted with "However, ...")."""
    text = CODE["quorra.md"].replace(
        "Model weights at: https://huggingface.co/example/quorra-90m\n",
        "Model weights at: https://huggingface.co/example/quorra-90m\n\nHowever, larger models answer "
        "more of the questions that need several steps of reasoning.\n")
    m = _indexed(tmp_path, cache_dir, {"quorra.md": text, "canals.md": CODE["canals.md"]})
    lines = m.search("Where are the Quorra model weights?", top_k=5).answer.text.splitlines()
    assert "https://huggingface.co/example/quorra-90m" in lines[0], lines
    assert not any("However, larger models" in line for line in lines), lines


FOOTNOTED = {  # a paper whose code is named in a footnote: its mark glued to the word, as a PDF's text gives it
    "orca.md": "# Orca: training with less memory\n\n## Abstract\n\nOrca partitions the optimizer states across "
               "devices so that larger models fit in memory. We share Orca as a part of our open source training "
               "library called FastTrain2. It trains models of 100B parameters on 400 devices.\n\n"
               "Memory is the main limit on the size of the models a cluster can train. Data parallelism keeps "
               "a copy of every state on each device.\n\n2 https://github.com/example/fasttrain\n\n"
               "## Related work\n\nModel parallelism splits each layer across devices. It needs fast links "
               "between them. Version 2 of the library added pipelines.\n",
    "canals.md": CODE["canals.md"],
}


def test_a_quoted_sentence_s_footnote_that_gives_an_address_is_quoted_with_it(tmp_path, cache_dir):
    """"... library called FastTrain2." marks footnote 2, which is a web address at the page's foot,
    after the paragraph below it: the answer that quotes the marked sentence shows the note beside it,
    before its citation. A number that marks nothing ("Version 2 of the library") brings no note."""
    m = _indexed(tmp_path, cache_dir, FOOTNOTED)
    lines = m.search("Is there an open-source implementation of Orca?", top_k=5).answer.text.splitlines()
    assert "library called FastTrain2" in lines[0], lines
    assert "(footnote 2: https://github.com/example/fasttrain) [1]" in lines[0], lines
    answer = m.search("What did version 2 of the library add?", top_k=5).answer.text
    assert "footnote" not in answer, answer


def test_a_where_answer_that_says_there_is_quoted_with_the_place_before_it(tmp_path, cache_dir):
    """"... will be made available there." answers a "where" question with a pronoun: the sentence
    before it, in its paragraph, says where ("The benchmark is hosted at https://..."), and is
    quoted with it, first."""
    text = ("# Orca on reading benchmarks\n\nWe evaluate Orca on a collaborative benchmark of reading tasks. "
            "The benchmark is hosted at https://github.com/example/readbench. The full evaluation results of "
            "Orca on the benchmark will be made available there.\n\nOrca answers 61% of the questions.\n")
    m = _indexed(tmp_path, cache_dir, {"orca.md": text, "canals.md": CODE["canals.md"]})
    lines = m.search("Where will the full evaluation results of Orca on the benchmark be made available?",
                     top_k=5).answer.text.splitlines()
    assert lines[0].startswith("The benchmark is hosted at https://github.com/example/readbench."), lines
    assert "will be made available there" in lines[0], lines


def test_a_passage_read_again_is_not_split_again(tmp_path, cache_dir):
    """The reader keeps each passage's sentence spans: a second question over the same passages
    reads them from memory, and answers as it would have."""
    from monjyu.engines.relevance import passage_statements
    m = _indexed(tmp_path, cache_dir, CODE)
    first = m.search("Where can I get the code for Quorra?", top_k=5).answer.text
    hits = passage_statements.cache_info().hits
    again = m.search("Where is the code for Quorra?", top_k=5).answer.text
    assert passage_statements.cache_info().hits > hits
    assert "https://github.com/example/quorra" in first.splitlines()[0]
    assert again.splitlines()[0] == first.splitlines()[0]


def test_a_markdown_footnote_that_gives_an_address_is_quoted_with_its_sentence(tmp_path, cache_dir):
    """A Markdown paper's footnote ("FastTrain[^2]", "[^2]: https://..." at the document's end): the
    quote leaves the mark out and shows the note beside it."""
    text = ("# Orca: training with less memory\n\nOrca partitions the optimizer states across devices so that "
            "larger models fit in memory. We share Orca as a part of our open source training library called "
            "FastTrain[^2]. It trains models of 100B parameters on 400 devices.\n\n## Related work\n\nModel "
            "parallelism splits each layer across devices.\n\n## Notes\n\n"
            "[^2]: https://github.com/example/fasttrain\n")
    m = _indexed(tmp_path, cache_dir, {"orca.md": text, "canals.md": CODE["canals.md"]})
    lines = m.search("Is there an open-source implementation of Orca?", top_k=5).answer.text.splitlines()
    assert "library called FastTrain. (footnote 2: https://github.com/example/fasttrain) [1]" in lines[0], lines


DAYS = {  # a paragraph of a covidqa-dev paper (Chen et al., 2020, CC BY), which pysbd cut before "6." and "7."
    "viral-rna.md": "# Detectable 2019-nCoV viral RNA in blood is a strong indicator for the further clinical "
                    "severity\n\nPatient 5 (Figure 3(C) ) was admitted on illness day 4 and his blood sample was "
                    "virus-positive (Ct = 38 + Neg) on day 6. Her disease progressed rapidly to a severe stage within the "
                    "next 3 days. Patient 6 ( Figure 3 (D)) with a clear history of virus infection was confirmed to be "
                    "infected on infection day 7. Viral RNA was detected in his blood sample on day 9, one day ahead of "
                    "his transfer into ICU. As his condition worsens, he was transferred out on day 13.\n",
}


def test_a_sentence_ending_on_a_day_number_is_quoted_with_its_number(tmp_path, cache_dir):
    """"... confirmed to be infected on infection day 7." is quoted whole, not "... on infection day"
    with "7. Viral RNA was detected ..." as the next sentence."""
    m = _indexed(tmp_path, cache_dir, DAYS)
    for question, quote in (("On which infection day was Patient 6 confirmed to be infected?",
                             "was confirmed to be infected on infection day 7. [1]"),
                            ("On which day was the blood sample of Patient 5 virus-positive?",
                             "virus-positive (Ct = 38 + Neg) on day 6.")):
        answer = m.search(question, top_k=5).answer
        assert answer.kind != "insufficient" and quote in answer.text, (question, answer.text)


ITEMS = {  # a paragraph of a covidqa-dev paper (Pang et al., 2020, CC BY), which pysbd cut before "(a)", "(b)" ...
    "diagnostics.md": "# Potential rapid diagnostics for 2019-nCoV\n\nThe existing practices in detecting genetic "
                      "material of coronaviruses such as SARS-CoV and MERS-CoV include (a) reverse transcription-"
                      "polymerase chain reaction (RT-PCR), (b) real-time RT-PCR (rRT-PCR), (c) reverse transcription "
                      "loop-mediated isothermal amplification (RT-LAMP) and (d) real-time RT-LAMP [104] . Nucleic "
                      "amplification tests (NAAT) are usually preferred as in the case of MERS-CoV diagnosis.\n",
}


def test_a_sentence_that_lists_its_items_inline_is_quoted_with_them(tmp_path, cache_dir):
    """"... include (a) RT-PCR, (b) ... and (d) real-time RT-LAMP." is quoted whole, not "... MERS-CoV
    include" with the items as sentences of their own."""
    m = _indexed(tmp_path, cache_dir, ITEMS)
    answer = m.search("What are the existing practices in detecting genetic material of viruses?", top_k=5).answer
    assert answer.kind != "insufficient"
    assert "MERS-CoV include (a) reverse transcription-polymerase chain reaction (RT-PCR), (b)" in answer.text
    assert "and (d) real-time RT-LAMP." in answer.text


CITING = {  # sentences of two covidqa-dev papers (Henry et al., 2015; Pan et al., 2019; CC BY)
    "phage.md": "# Beyond phage display\n\nThe phage particle is immunogenic without adjuvant in all species tested "
                "to date, including mice (Willis et al., 1993) , rats (Dente et al., 1994) , rabbits (de la Cruz et al., "
                "1988) , guinea pigs (Frenkel et al., 2000; Kim et al., 2004) , fish (Coull et al., 1996; Xia et al., "
                "2005) , non-human primates (Chen et al., 2001) , and humans (Roehnisch et al., 2014) .\n",
    "echovirus.md": "# Nearly complete genome sequence of an echovirus 30 strain\n\nEchoviruses were named from the "
                    "acronym enteric cytopathic human orphan virus at the time of their discovery in the 1950s but were "
                    "later found to be associated with respiratory illness, hand-foot-and-mouth disease, and aseptic "
                    "meningitis, similar to other enteroviruses (1) .\n",
}


def test_citations_of_other_papers_are_left_out_of_quotes(tmp_path, cache_dir):
    """An author and a year, or a number set off as a converted paper sets a citation, say nothing of
    the answer: quotes drop them as they drop "[12]"; counts and enumerations stay."""
    from monjyu.engines.quotes import clean_quote

    m = _indexed(tmp_path, cache_dir, CITING)
    for question, quote in (
            ("In which species is the phage particle immunogenic without adjuvant?",
             "including mice, rats, rabbits, guinea pigs, fish, non-human primates, and humans."),
            ("What diseases were echoviruses later found to be associated with?",
             "and aseptic meningitis, similar to other enteroviruses.")):
        answer = m.search(question, top_k=5).answer
        assert answer.kind != "insufficient" and quote in answer.text, (question, answer.text)
        assert " et al" not in answer.text and "(1)" not in answer.text
    assert clean_quote("We find STaR improves on CommonsenseQA [Talmor et al., 2019], as shown (Lee and Kim, "
                       "2011a) in VEEV pathogenesis (49) (50) (51) and HFRS (1, 21) , causing shock.") == \
        "We find STaR improves on CommonsenseQA, as shown in VEEV pathogenesis and HFRS, causing shock."
    for kept in ("Cases were reported in Italy (3), Russia (2) and Spain (2).", "Other symptoms were reported (2).",
                 "The aims were (1) to find the host and (2) to type it.", "It was released (March 2006) in Japan.",
                 "It halts early (ACT; Graves, 2016).", "Huo Jun (177–216) was a general.",
                 "He was the ruler of Dvin( 957–979) and later Azerbaijan.", "It was published( Sweden, 2007)."):
        assert clean_quote(kept) == kept


CUT_AND_MARKED = {  # a PDF's text: a sentence cut where its column ends, a footnote's number after a stop
    "zero.md": "# ZeRO\n\nZeRO removes the memory redundancies of data-parallel training. As shown in Figure 2, "
               "ZeRO runs 100B parameter models on a 400 GPU cluster with over\n\nThe models and the code are "
               "released as open source.2 Training throughput reached 15 Petaflops on 400 GPUs.\n",
}


def test_a_cut_sentence_shows_its_cut_and_a_footnote_mark_is_left_out(tmp_path, cache_dir):
    """"... on a 400 GPU cluster with over" stops where its column did: it is quoted up to its last
    word that says something, and "…"; "... open source.2" is quoted without the footnote's number
    ("see Fig.2" keeps its own), and "restricted ." without the space a dropped citation left."""
    from monjyu.engines.quotes import clean_quote, quotable_span

    m = _indexed(tmp_path, cache_dir, CUT_AND_MARKED)
    answer = m.search("What size of GPU cluster does ZeRO run 100B parameter models on?", top_k=5).answer
    assert "on a 400 GPU cluster…" in answer.text and "with over" not in answer.text, answer.text
    answer = m.search("Are the ZeRO models released as open source?", top_k=5).answer
    assert "released as open source. [" in answer.text and "source.2" not in answer.text, answer.text
    assert clean_quote("Fe for microorganisms is restricted .") == "Fe for microorganisms is restricted."
    for kept in ("The curve is shown in Fig.2", "It stops at step 2.", "Segrave, , (22 March 1366) was a peer.",
                 "He was the brother of Caroline Norton"):
        assert clean_quote(kept) == kept
    glued = "It needs 16 bytes per parameter in 16- 2 Figure 1: Comparing the per-device memory of model states."
    assert not quotable_span(glued, 0, len(glued))


def test_a_question_or_a_table_s_labels_in_a_body_sentence_are_not_quoted():
    """A question the text asks answers nothing; a body sentence a table's labels run into reads as
    prose only by function words written as labels ("Ours-JFT"), which prose writes in lower case."""
    from monjyu.engines.quotes import quotable_span

    for unquoted in ("How does ZeRO work with MP?", "With fewer inductive biases for vision than ResNets, how crucial "
                     "is the dataset size?", "ViTの学習にはどれだけのデータが必要か？",
                     "Interestingly, this Ours-JFT Ours-JFT Ours-I21k BiT-L Noisy Student (ViT-H/14) (ViT-L/16) "
                     "(ResNet152x4) (EfficientNet-L2)"):
        assert not quotable_span(unquoted, 0, len(unquoted)), unquoted
    for quoted in ("Our Vision Transformer (ViT) attains excellent results when pre-trained at sufficient scale.",
                   "BACKGROUND: THE PATIENTS WERE TREATED WITH REMDESIVIR IN THE WARD.",
                   "In Our Results, the model does better."):
        assert quotable_span(quoted, 0, len(quoted)), quoted


DECLARED = {  # a report's conclusion, and what the report says of itself
    "report.md": "# No evidence of a laboratory origin\n\nThere is currently no credible evidence that the virus was "
                 "engineered in a laboratory; it most likely arose in nature by recombination in an intermediate "
                 "host.\n\nThe findings and conclusions in this report are those of the authors and do not "
                 "necessarily represent the official position of the agency. The authors declare that they have no "
                 "competing interests. This work was supported by grant R01-AI123 of the national institute.\n",
}


def test_what_a_paper_declares_of_itself_is_not_quoted(tmp_path, cache_dir):
    """A disclaimer ("... are those of the authors ...") or a declaration of interests says nothing of
    the paper's subject: "What are the conclusions of this report on the origin of the virus?" quotes
    the conclusion, not the disclaimer that names "conclusions". Funding stays quotable."""
    from monjyu.engines.quotes import quotable_span

    m = _indexed(tmp_path, cache_dir, DECLARED)
    answer = m.search("What are the conclusions of this report on the origin of the virus?", top_k=5).answer
    assert "no credible evidence" in answer.text and "those of the authors" not in answer.text, answer.text
    for declared in ("All authors read and approved the final manuscript.",
                     "The author declares no conflict of interest.",
                     "This work was carried out in collaboration between all authors.",
                     # who did what (covidqa-dev's papers, arXiv bylines)
                     "KH and JS conceived and wrote the manuscript.",
                     "RC and OK wrote and revised the manuscript.",
                     "Authors RLW and AG critically reviewed the complete article for important intellectual content.",
                     "These authors contributed equally to this work."):
        assert not quotable_span(declared, 0, len(declared)), declared
    for said in ("We conceived of the model as a two-stage process.", "The reviewers critically revised the guideline."):
        assert quotable_span(said, 0, len(said)), said
    funded = "This work was supported by grant R01-AI123 of the national institute."
    assert quotable_span(funded, 0, len(funded))


POINTED = {  # a methods section whose first sentence points to a table
    "strains.md": "# Hepatitis C virus strains\n\nFor strains included in these studies, see Supplementary Material "
                  "Table S1. The strains included were 62 hepatitis C virus isolates collected from Uruguayan "
                  "patients between 2012 and 2016. Results are shown in Table 2.\n",
}


def test_a_sentence_that_only_points_to_a_table_is_not_quoted(tmp_path, cache_dir):
    """"For strains included in these studies, see Supplementary Material Table S1." names what was asked
    and answers nothing: the table it points to is not in the answer. The sentence that says which
    strains is quoted instead."""
    from monjyu.engines.quotes import quotable_span

    m = _indexed(tmp_path, cache_dir, POINTED)
    answer = m.search("Which strains were included in these studies?", top_k=5).answer
    assert "62 hepatitis C virus isolates" in answer.text and "see Supplementary" not in answer.text, answer.text
    for pointer in ("Results are shown in Table 2.", "See Appendix A.8 for more hyperparameter details.",
                    "A schematic of the HTS assay is depicted in Fig. 1B."):
        assert not quotable_span(pointer, 0, len(pointer)), pointer
    shown = "Deletion of the E gene reduced the titre tenfold, as shown in Table 2."
    assert quotable_span(shown, 0, len(shown))


ABBREVIATED = {  # a paper that names its virus once and abbreviates it after (the sentences of a VEEV paper)
    "veev.md": "# Host responses to an encephalitic alphavirus\n\nVenezuelan equine encephalitis virus (VEEV) is a "
               "previously weaponized arthropod-borne virus responsible for causing acute and fatal encephalitis in "
               "animal and human hosts. VEEV is a positive-strand RNA virus that is transmitted by mosquitoes and "
               "that is naturally present in rodent reservoirs. Venezuelan equine encephalitis virus infection of "
               "astrocytes induced the expression of many genes.\n",
}


def test_a_name_the_paper_abbreviates_is_read_in_the_question_s_form(tmp_path, cache_dir):
    """The paper writes "VEEV" after defining it; the question writes "Venezuelan equine encephalitis
    virus". The reader reads "VEEV is ... transmitted by mosquitoes" with the name spelled out, and
    leads with it rather than with a sentence that only repeats the long name."""
    from monjyu.nlp.abbreviations import defined_abbreviations, question_forms, spelled_out

    m = _indexed(tmp_path, cache_dir, ABBREVIATED)
    answer = m.search("How is Venezuelan equine encephalitis virus transmitted?", top_k=5).answer
    assert "transmitted by mosquitoes" in answer.text.splitlines()[0], answer.text
    defined = defined_abbreviations(["Eastern equine encephalitis virus (EEEV) and Middle East respiratory "
                                     "syndrome coronavirus (MERS-CoV; a betacoronavirus) spread."])
    assert defined == {"EEEV": "Eastern equine encephalitis virus",
                       "MERS-CoV": "Middle East respiratory syndrome coronavirus"}
    forms = question_forms("Where did EEEV spread?", defined)
    assert spelled_out("Eastern equine encephalitis virus spread east.", forms) \
        == "Eastern equine encephalitis virus (EEEV) spread east."
    assert spelled_out("EEEV spread east.", forms) == "EEEV spread east."
    # a Japanese question writes the abbreviation against kana
    assert spelled_out("Eastern equine encephalitis virus spread east.", question_forms("EEEVはどこに広がったか？", defined)) \
        == "Eastern equine encephalitis virus (EEEV) spread east."


CARRIER = {  # written for this test after a covidqa-dev paper's abstract
    "bacillus.txt": "Bacillus subtilis as an oral vaccine carrier\n\nCurrently, Bacillus subtilis (B. subtilis) is widely "
                    "used as a vaccine delivery system because of its unique characteristics. As a nonpathogenic "
                    "Gram-positive bacterium, B. subtilis has long been regarded as a probiotic and a food additive for "
                    "humans and animals. B. subtilis also has adjuvant activity and can deliver heterologous antigens to "
                    "the gut, adding to mucosal immunity.\n\nRecombinant B. subtilis in piglets\n\nRecombinant Bacillus "
                    "subtilis carrying a viral antigen has been used for antigen delivery and proved effective and safe. "
                    "After oral immunization, the recombinant strain increased the local mucosal immune responses of "
                    "piglets.\n",
}


def test_a_sentence_the_model_is_sure_answers_follows_a_lead_it_is_unsure_of(tmp_path, cache_dir):
    """"What is Bacillus subtilis?": the features and the model together lead with the sentence
    that names it at length ("... is widely used as a vaccine delivery system"), which the model
    doubts (log-odds about -1); the one it is sure of ("a nonpathogenic Gram-positive bacterium",
    about 3.6) ranks too far below by the features to be quoted by score, and follows the lead."""
    m = _indexed(tmp_path, cache_dir, CARRIER)
    lines = m.search("What is Bacillus subtilis?", top_k=5).answer.text.splitlines()
    assert "widely used as a vaccine delivery system" in lines[0], lines
    assert any("nonpathogenic Gram-positive bacterium" in line for line in lines), lines


ANNOUNCED = {  # written for this test after a covidqa-dev paper's paragraph: a short sentence announces
    # what the next one says
    "ndv-vector.md": "# Newcastle disease virus as a vaccine vector\n\nSeveral viruses have been adapted to carry "
                     "the antigens of other pathogens. Newcastle disease virus (NDV) has a number of appealing "
                     "qualities as a vaccine vector. As an avian virus, there is little or no pre-existing immunity "
                     "to NDV in people, and it grows to high titres in embryonated chicken eggs. Its genome is "
                     "stable and it does not recombine with the host's DNA.\n\nCandidate vaccines built on NDV "
                     "have been given to mice, ferrets and monkeys. Intranasal doses produced antibodies in the "
                     "airways as well as in the blood.\n",
}


def test_a_short_answer_goes_on_with_the_sentence_after_it(tmp_path, cache_dir):
    """"What is appealing about NDV ...?" leads with the 14 words that announce its "appealing
    qualities"; no other sentence scores near them (the next one 3 below) and the model is sure of
    none: the answer goes on with the sentence after the lead, which names them, as one quote."""
    m = _indexed(tmp_path, cache_dir, ANNOUNCED)
    lines = m.search("What is appealing about NDV as a vaccine vector?", top_k=5).answer.text.splitlines()
    assert lines[0].startswith("Newcastle disease virus (NDV) has a number of appealing qualities"), lines
    assert "little or no pre-existing immunity" in lines[0], lines


def test_a_short_answer_goes_on_whatever_kind_of_answer_the_question_asks_for(tmp_path, cache_dir):
    """A question asking for a list ("What are ...") or weighing an advantage may be answered by the
    same short sentence that announces what follows: it goes on with the sentence after it as a
    fact's answer does (it had stopped at the announcement, the list's other sentences scoring far
    below it: the sentence after does not name NDV)."""
    text = ANNOUNCED["ndv-vector.md"].replace("there is little or no pre-existing immunity to NDV in people",
                                              "it meets little or no pre-existing immunity in people")
    m = _indexed(tmp_path, cache_dir, {"ndv-vector.md": text})
    for question in ("What are the appealing qualities of NDV as a vaccine vector?",
                     "What is the advantage of NDV as a vaccine vector?"):
        lines = m.search(question, top_k=5).answer.text.splitlines()
        assert lines[0].startswith("Newcastle disease virus (NDV) has a number of appealing qualities"), lines
        assert "little or no pre-existing immunity in people" in lines[0], lines


def test_a_short_answer_goes_on_only_as_far_as_a_fact_s_words(tmp_path, cache_dir):
    """The sentence after a short lead joins it only within the fact's word bound (70): one that
    would take the answer past it is left out (it had once made a 119-word answer)."""
    long_after = ("As an avian virus, there is little or no pre-existing immunity to NDV in people, it grows to "
                  "high titres in the embryonated chicken eggs that are already produced in great numbers for "
                  "influenza vaccines, it can be given through the nose to reach the airways where many "
                  "respiratory pathogens first enter, and strains with a long record of safe use in poultry are "
                  "available to be adapted for use in people.")
    assert len(long_after.split()) > 70 - 14
    text = ANNOUNCED["ndv-vector.md"].replace(
        "As an avian virus, there is little or no pre-existing immunity to NDV in people, and it grows to high "
        "titres in embryonated chicken eggs.", long_after)
    assert long_after in text
    m = _indexed(tmp_path, cache_dir, {"ndv-vector.md": text})
    answer = m.search("What is appealing about NDV as a vaccine vector?", top_k=5).answer.text
    assert answer.startswith("Newcastle disease virus (NDV) has a number of appealing qualities"), answer
    assert "chicken eggs" not in answer, answer


HARD_WRAPPED = {  # a paper converted to plain text, its lines wrapped and words broken at their ends as
    # printed (Taubenberger and Morens, 2006, Emerging Infectious Diseases, public domain)
    "1918-influenza.txt": "The 1918 influenza pandemic\n\nThe 1918 virus genome was sequenced from archival autopsy tis-\n"
                          "sues of victims. Case-\nfatality rates were >2.5%, compared to <0.1% in other pandemics.\n"
                          "The case-fatality curve was W-\nshaped, with a peak in young adults.\n",
}


def test_a_plain_text_paper_s_words_broken_at_line_ends_are_whole_again(tmp_path, cache_dir):
    """A word a hard-wrapped text broke at a line's end ("tis-" / "sues") is found and quoted whole;
    one the text writes with a hyphen elsewhere keeps it ("case-fatality"), as does "W-shaped"."""
    m = _indexed(tmp_path, cache_dir, HARD_WRAPPED)
    answer = m.search("From which tissues was the 1918 virus genome sequenced?", top_k=5).answer
    assert "archival autopsy tissues of victims" in answer.text, answer.text
    text = m.search("case-fatality rates in 1918", top_k=1).hits[0].text
    assert "Case-fatality rates" in text and "W-shaped" in text and "tis-" not in text, text


SETTINGS = {  # a training section that gives its settings as numbers, and a footnote under it
    "transformer.md": "# Training\n\nWe trained the base models for 100,000 steps on eight GPUs. We used the Adam "
                      "optimizer [20] with β1 = 0.9, β2 = 0.98 and = 10−9 . We varied the learning rate over the "
                      "course of training.\n\n1This schedule also matches the one of our earlier models.\n",
}


def test_a_sentence_that_gives_settings_as_numbers_is_quoted(tmp_path, cache_dir):
    """A number is one word of a sentence however it is written ("0.9", "10−9"), so a sentence that
    gives its settings as numbers reads as prose (it was debris: most of its pieces digits); a
    table row stays debris. A footnote's mark before its first word is left out ("1This ...")."""
    from monjyu.engines.quotes import clean_quote, quotable_span

    m = _indexed(tmp_path, cache_dir, SETTINGS)
    answer = m.search("Which optimizer was used for training?", top_k=5).answer
    assert "We used the Adam optimizer with β1 = 0.9" in answer.text, answer.text
    for row in ("Accuracy 0.88 0.91 0.93 0.95", "BLEU 28.4 41.8 25.8 38.1 on WMT14."):
        assert not quotable_span(row, 0, len(row)), row
    assert clean_quote("1This schedule also matches the one of our earlier models.") == \
        "This schedule also matches the one of our earlier models."
    for kept in ("3D printing was used for the masks.", "5G networks were not used."):
        assert clean_quote(kept) == kept


def test_figure_numbers_and_table_rows_inside_a_sentence_are_still_debris():
    from monjyu.engines.quotes import quotable_span

    for text in ("The results are in. Fig. 3 Accuracy 0.88 0.91 0.93",  # a caption's numbers glued on
                 "4: Divide O into blocks O , . . . , O of size each, divide l into blocks l , . . . , l of size each.",
                 "RPN ResNet-101 dense 11.7 12.2 with BN."):
        assert not quotable_span(text, 0, len(text)), text
