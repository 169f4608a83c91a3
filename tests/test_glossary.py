"""English glosses of a Japanese question's nouns, read from the real JMdict (jamdict-data)."""

import sys

import pytest

from monjyu.errors import MonjyuError
from monjyu.nlp.glossary import Glossary, shared_glossary, with_english_glosses
from monjyu.query import Query


def test_first_short_gloss_of_a_noun():
    glossary = shared_glossary()
    assert glossary.english("順序") == ("order",)
    assert glossary.english("損失") == ("loss",)  # "loss (of assets, profit, etc.)": the note is dropped
    assert glossary.english("スパイク") == ("spike",)
    assert glossary.english("未登録語ですよ") == ()


def test_a_gloss_loses_its_nested_notes_whole():
    # JMdict: "dog (Canis (lupus) familiaris)"; the notes were cut at the first ")" -> "dog familiaris)"
    assert shared_glossary().gloss("イヌ") == "dog"


def test_terms_of_a_question_are_its_content_nouns_glossed():
    terms = shared_glossary().terms("再帰も畳み込みも使わないモデルでは、系列中のトークンの順序をどうやって与えるのですか？")
    assert {"token", "order", "convolut", "recurr"} <= set(terms)
    # verbs, hiragana nouns and adverbial nouns (ため, 時) are not glossed
    assert shared_glossary().terms("何のために使う時") == []


def test_only_japanese_queries_get_glosses():
    assert with_english_glosses("How are tokens ordered?", ["token", "order"], "en") == ["token", "order"]
    terms = with_english_glosses("Transformerの損失", ["transform", "損失"], "ja")
    assert terms[:2] == ["transform", "損失"] and "loss" in terms[2:]


def test_a_japanese_question_read_as_english_words():
    """Its question word, its Latin words as written, its content words' first glosses, a date as
    English writes it; not the grammar (する, いる, particles)."""
    reading = shared_glossary().english_reading
    assert reading("Tervilの成人における致死率はどのくらいですか？") == "How much Tervil adult case fatality rate?"
    assert reading("EGR1は細胞内のどこに蓄積しますか？") == "Where EGR1 inside the cell accumulation?"
    assert reading("2019年12月に何が報告されましたか？").startswith("What December 2019 ")
    assert reading("なぜ2013年にMERS-CoVが広がったのですか？").startswith("Why 2013 MERS-CoV ")


def test_a_compound_the_dictionary_has_is_read_whole():
    """A term of art the analyser writes in parts (集中 + 治療, 潜伏 + 期間, 待ち + 時間) is read as the
    dictionary's one word, not as its parts' glosses ("concentration treatment"); the search's terms
    keep the parts. A suffix's gloss ("-ian" of 人) is not a noun's."""
    glossary = shared_glossary()
    assert glossary.english_reading("Shenzhenの集中治療チームが診た患者") == "Shenzhen intensive care team patient?"
    assert glossary.english_reading("潜伏期間と基本再生産数") == "incubation period basic reproduction number?"
    assert "waiting time" in glossary.english_reading("入院までの待ち時間")
    assert {"concentr", "treatment"} <= set(glossary.terms("集中治療"))
    assert glossary.terms("感染した人") == ["infect", "man"]
    assert glossary.english("化") == ()  # JMdict has it only as a suffix ("-ification")


def test_a_missing_dictionary_is_named(monkeypatch):
    monkeypatch.setitem(sys.modules, "jamdict_data", None)  # as if the package were not installed
    with pytest.raises(MonjyuError, match="jamdict-data"):
        Glossary().english("順序")


def test_the_index_searches_english_words_for_a_japanese_question(sample_index):
    """Through the real index: the searcher's terms for a Japanese question hold the English words
    of its nouns, so BM25 can match the English samples."""
    searcher = sample_index.workspace.current().searcher
    terms = searcher.keyword.terms(Query.of("グラフを使った検索はどのように索引を作りますか？"))
    assert {"graph", "index"} <= set(terms)
    assert searcher.keyword.terms(Query.of("グラフ")) == ["グラフ", "graph"]  # its own term first, the gloss after


def test_the_gloss_the_context_uses_over_the_first():
    """Of a word's short glosses, the first, unless the passages of the context lack it and hold
    another: then the other they hold most (系列: "series" first, "sequence" in sequence models)."""
    glossary = shared_glossary()
    assert glossary.english("系列") == ("seri",)
    assert glossary.english_in("系列", {"sequenc": 4, "token": 9}) == ("sequenc",)
    assert glossary.english_in("系列", {"seri": 1, "sequenc": 4}) == ("seri",)  # the first gloss is there
    assert glossary.english_in("系列", {"token": 9}) == ("seri",)  # no gloss is there
    assert glossary.english_in("系列", None) == ("seri",)
    assert glossary.gloss_in("系列", {"sequenc": 4}) == "sequence"


SEQUENCE_MODELS = {  # English papers that write "sequence" and "matrix", where JMdict's first glosses are others
    "attention.md": "# Attention over token sequences\n\nThe encoder reads the input sequence of tokens at once. "
                    "For every pair of tokens in the sequence, the attention matrix holds a weight.\n\nThe weights "
                    "of each row of the matrix sum to one.\n",
    "rivers.md": "# Rivers\n\nRivers carry water from the hills to the sea. Their banks flood in spring.\n",
}


def test_a_japanese_question_reads_the_glosses_of_the_passages_its_meaning_finds(tmp_path, cache_dir):
    """Through the real index: once the search has found passages by the question's meaning, its
    keyword terms and its English reading take the glosses those passages use (系列 "sequence",
    行列 "matrix"), where a keyword search alone, with no such passages, takes the first glosses."""
    from monjyu.nlp.glossary import GLOSS_CONTEXT

    from .test_answers import _indexed

    generation = _indexed(tmp_path, cache_dir, SEQUENCE_MODELS).workspace.current()
    question = "系列のトークンの組ごとに、アテンションの行列は何を持ちますか？"

    alone = Query.of(question)
    generation.searcher.search(alone, None, "keyword", 5)
    assert {"seri", "line"} <= set(generation.searcher.keyword.terms(alone))

    asked = Query.of(question)
    hits = generation.searcher.search(asked, generation.embed_query(asked), "hybrid", 5).hits
    assert hits[0].document_title.startswith("Attention")
    terms = set(generation.searcher.keyword.terms(asked))
    assert {"sequenc", "matrix"} <= terms and not {"seri", "line"} & terms
    reading = shared_glossary().english_reading(question, asked.known(GLOSS_CONTEXT))
    assert "sequence" in reading and "matrix" in reading, reading


def test_hybridrag_searches_a_japanese_question_with_the_glosses_its_meaning_finds(tmp_path, cache_dir):
    """HybridRAG runs its searches side by side; for a Japanese question the search by meaning runs
    first, so that its keyword search matches the English words the passages use ("sequence",
    "matrix"), which JMdict's first glosses ("series", "line") would not."""
    from .test_answers import _indexed

    m = _indexed(tmp_path, cache_dir, SEQUENCE_MODELS)
    items = m.hybrid_search("系列の行列は何を持ちますか？", top_k=2, answer=False).items
    assert items[0].hit.document_title.startswith("Attention")
    assert items[0].scores["keyword"], items[0].scores


def test_a_katakana_word_the_dictionary_lacks_is_read_as_the_words_that_write_it():
    glossary = shared_glossary()
    assert glossary.parts("ウシコロナウイルス") == ("ウシ", "コロナウイルス")
    assert glossary.parts("スワブ") == ("スワブ",)  # nothing writes it: left as it is
    assert glossary.parts("ウイルス") == ("ウイルス",)  # the dictionary has it
    assert glossary.terms("ウシコロナウイルスの宿主は何ですか？") == ["cattl", "coronavirus", "host"]



def test_a_katakana_word_is_read_with_or_without_its_final_long_vowel_mark():
    """JMdict has オプティマイザ, not オプティマイザー (technical writing drops the final mark, and
    questions keep it); エンコーダ and エンコーダー both; a word it has neither way stays unread."""
    glossary = shared_glossary()
    assert glossary.gloss("オプティマイザー") == glossary.gloss("オプティマイザ") == "optimizer"
    assert glossary.gloss("エンコーダー") == glossary.gloss("エンコーダ") == "encoder"
    assert glossary.gloss("ダイバージェンス") == ""
    assert "optimizer" in glossary.english_reading("Transformerの学習に使われたオプティマイザーは何ですか？")

BATS = {
    "bat-viruses.md": "# Coronaviruses of bats\n\nThe bat coronavirus HKU4 was found in lesser bamboo bats in "
                      "southern China.\n",
    "rivers.md": SEQUENCE_MODELS["rivers.md"],
}


def test_a_japanese_question_finds_english_passages_by_the_parts_of_a_katakana_word(tmp_path, cache_dir):
    """Through the real index: コウモリコロナウイルス, one unknown word to the analyser and absent from
    JMdict, is searched as "bat" and "coronavirus"."""
    from .test_answers import _indexed

    m = _indexed(tmp_path, cache_dir, BATS)
    asked = Query.of("コウモリコロナウイルスはどこで見つかりましたか？")
    assert {"bat", "coronavirus"} <= set(m.workspace.current().searcher.keyword.terms(asked))
    result = m.search(asked.text, top_k=2)
    assert result.hits[0].document_title.startswith("Coronaviruses of bats")
    assert result.hits[0].keyword_score


TRIALS = {  # two counts of the same words, "clinical" and "registered": a trial's, and an examination's
    "trials.md": "# Treatments under study\n\nTwelve clinical examinations have been registered for each patient "
                 "so far. Nine clinical trials of the drug have been registered so far. The hospital had 800 beds "
                 "and a laboratory of its own.\n",
    "rivers.md": SEQUENCE_MODELS["rivers.md"],
}


def test_the_model_reads_a_japanese_compound_whole_over_english_passages(tmp_path, cache_dir):
    """Through the real index and reader: 臨床試験 (two morphemes to the analyser) is read as "clinical
    trial", not as "clinical examination", the words of the other count."""
    from .test_answers import _indexed

    m = _indexed(tmp_path, cache_dir, TRIALS)
    for question in ("臨床試験はいくつ登録されていますか？", "その薬の臨床試験は何件登録されましたか？"):
        answer = m.search(question, top_k=5).answer
        assert answer.text.startswith("Nine clinical trials of the drug"), (question, answer.text)

