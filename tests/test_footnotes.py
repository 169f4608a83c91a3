"""Footnote marks and the notes that give a web address (engines/footnotes.py)."""

from monjyu.engines.footnotes import footnote_with_address, footnotes_of, marks


def test_a_mark_is_a_number_glued_to_a_word_or_after_a_stop():
    assert marks("We share ZeRO as a part of our library called Deep-Speed2 .") == ["2"]
    assert marks("We open source our models to help with reproducibility.1") == ["1"]
    assert marks("while autoregressive inference and a potential chat interface4 leverage it") == ["4"]
    # names and numbers that are no marks: a word too short, a version, a number set apart
    assert marks("We compare with T5 and an L2 penalty.") == []
    assert marks("Python v2.5 ran in 2020 on layer 2.") == []
    assert marks("SARS-CoV-2 binds to the receptor.") == []


def test_a_note_is_the_paragraph_opening_with_the_mark_that_gives_an_address():
    following = (" More text.\n\n2 Related Work\n\nThe first paragraph.\n\n"
                 "2https://github.com/microsoft/deepspeed\n\nMore.")
    assert footnote_with_address("2", following) == "https://github.com/microsoft/deepspeed"
    # a footnote of words alone, and a longer number, are no such note
    assert footnote_with_address("3", "\n\n3 We thank the reviewers.\n\n") is None
    assert footnote_with_address("2", "\n\n21 https://example.org\n\n") is None
    # a reference entry's number ("HKU1" read as a mark, then the list of references)
    assert footnote_with_address("1", "\n\n1. Benezit F et al. Infection, 2020, https://doi.org/10.1007/x\n\n") is None
    assert footnotes_of(["We used GPT2 to write the prompts."], "\n\n4 https://example.org/gpt\n\n") == []
