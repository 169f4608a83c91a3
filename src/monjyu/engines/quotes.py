"""What a retrieved sentence looks like as quoted, and whether it may be quoted at all.

An answer quotes statements of body text that read as prose: not a question, a title line, a
caption, a reference entry, a table row, a formula a PDF lost its symbols from, what a paper
declares of itself (a disclaimer, its authors' interests, who did what), nor a sentence that only
points to a table or a figure. A quote leaves out what would mislead beside the answer's own
markers (the paper's "[12]", author-year citations, footnote numbers, figure pointers) and shows a
sentence cut at a page's or a column's end as cut.
"""

from __future__ import annotations

import re

from ..ingest.sentences import FOOTNOTE_MARK, MARKDOWN_MARK, STOP_THEN_SPACE, is_debris, is_title_line
from ..nlp.analyzer import EN_STOPWORDS
from ..nlp.lang import detect_language
from ..types import ANNOTATION, TEXT
from .relevance import Sentence

_WORD = re.compile(r"[^\W_]+")
_FIGURE_TEXT = re.compile(r"^\s*(\(?[a-h]\)\s*)?(Figure|Fig\.?|Table|Tab\.|Algorithm|Listing|Eq\.|Equation|図|表)"
                          r"\s*[A-Z0-9IVX]+[.:：|]?", re.I)
# A caption a PDF's text flow put inside a body sentence ("... absolute position of the Table 1: Maximum
# path lengths, per-layer complexity ...", after a page's number: "... like Adam in 16- 2 Figure 1:
# Comparing ..."): the sentence reads on after the float, so neither half is prose. A float's label
# glued to a word ("... the log probAlgorithm 1 DetectGPT model-generated text") is one too.
_CAPTION_INSIDE = re.compile(r"[a-z,\d-] (Figure|Fig\.|Table|Algorithm|Listing) [0-9IVX]+: [A-Z]|"
                             r"[a-z](Figure|Table|Algorithm|Listing) ?[0-9]+\b")
_REFERENCE_ENTRY = re.compile(r"^\s*\[\d+\]\s|arXiv preprint|\bIn Proceedings\b|\bProc\. of\b|\bdoi:\s*10\.|"
                              r"\bvol\. \d+|\bpp\. \d+|^\s*\d{1,3}\.\s+[A-Z][a-z]+,\s+[A-Z]\.", re.I)
# A web address marks a reference entry too ("... URL http://github.com/google/jax."), unless the
# sentence says that something is there: "The code we used ... is available at https://...",
# "Code and pretrained models at https://github.com/...", which a user asks for.
_WEB_ADDRESS = re.compile(r"https?://", re.I)
_ANY_ADDRESS = re.compile(r"https?://|www\.", re.I)  # what every statement of _AVAILABLE_AT holds: a cheap test first
_AVAILABLE_AT = re.compile(r"\b(?:is|are|was|were|be|been)\s+(?:\w+\s+){0,2}?(?:available|released|found|hosted|"
                           r"accessible|downloadable|open[- ]sourced?)\b[^.]{0,40}?\b(?:at|from|on|in|via)\b:?\s*"
                           r"(?:https?://|www\.)|^\W*(?:\w+\s+){0,3}?(?:code|models?|weights|checkpoints|data(?:sets?)?|"
                           r"implementations?|software)\b[^.]{0,30}?\bat:?\s*(?:https?://|www\.)", re.I)
_INITIALS = re.compile(r"\b[A-Z]\.\s?(?:[A-Z]\.\s?)?[A-Z][a-z]+,")
_GIVEN_NAME_BEFORE = re.compile(r"(?:^|\s)[A-Z][a-z]+ $")
# What a paper says of itself, not of its subject: declarations, disclaimers and authorship ("The
# authors declare that they have no competing interests.", "The findings and conclusions in this
# report are those of the author(s) and do not necessarily represent ...", "All authors read and
# approved the final manuscript.", "KH and JS conceived and wrote the manuscript.", "Authors RLW and AG
# critically reviewed the complete article for important intellectual content."). Funding and thanks
# stay quotable: "Who funded ...?" is asked.
_DECLARATION = re.compile(r"\bthose of the author(?:s|\(s\))?\b|\bdo(?:es)? not necessarily (?:represent|reflect)\b|"
                          r"\bin collaboration between all authors\b|\bcontributed equally\b|"
                          r"\bfor important intellectual content\b|"
                          r"\b(?:wrote|drafted)(?: and (?:edited|revised))? the (?:first draft of the )?(?:manuscript|paper)\b|"
                          r"\bconceived (?:and designed )?the (?:study|work|project|experiments)\b|"
                          r"\ball authors (?:have )?(?:read|approved|contributed|agreed)\b|"
                          r"\bauthors? (?:declare|report|have)(?: that they have)? no (?:competing|conflicts?|financial)\b|"
                          r"\bno (?:competing|conflicts? of) interests?\b", re.I)
# A sentence that only says where something is shown ("Results are shown in Table 2.", "For strains
# included in these studies, see Supplementary Material Table S1.", "See Appendix A.8 for more
# hyperparameter details."): what it points to is not in the answer, so it answers nothing.
_WHERE_SHOWN = r"(?:the\s+)?(?:(?:Supplementary|Supporting|Additional)\s+)?(?:(?:Material|Information|File)s?\s+)?" \
               r"(?:Tables?|Figures?|Figs?\.?|Appendix|Section)(?![a-z])"
_POINTER_ONLY = re.compile(rf"^(?:For [^,]{{1,80}}, )?(?:please )?see {_WHERE_SHOWN}|"
                           rf"^[^,;]{{0,100}}?\b(?:is|are|was|were)\s+(?:shown|presented|listed|given|summari[sz]ed|"
                           rf"provided|depicted|illustrated|displayed|detailed|tabulated)\s+in\s+{_WHERE_SHOWN}"
                           r"\s*[\w.-]*\s*\.?$", re.I)
# A line of a reference list, whichever of its sentences is read: "[12] A. Vaswani, N. Shazeer. ..."
_ENTRY_LINE = re.compile(r"^\s*(\[\d+\]|\d{1,3}\.)\s+(?:[A-Z]\.\s?)+[A-Z][a-z]+|"
                         r"^\s*[A-Z][a-z]+,\s+(?:[A-Z]\.\s?)+(?:,|and\b)")
# In-text citations and pointers a quote drops: "[12]", "[3-5, 7]", "(Fig. 2b)", "(see Table 1)",
# "( Figure 1 )", a web address in brackets ("... under the US government-mandated pause policy
# (https://www.nih.gov/...)"); an address outside brackets marks a reference entry.
_INLINE_POINTER = re.compile(r"\s*\[\d+(?:\s*[-–,]\s*\d+)*\]|\s*\(\s*(?:see |cf\. )?(?:Fig(?:ure)?s?\.?|Tables?|Eqs?\.?|"
                             r"Sections?|Sec\.|§)\s*[\w.,\s–-]{1,20}\)|"
                             r"\s*\(\s*(?:see |available at:? )?https?://[^()]{1,200}\)", re.I)
# Citations of other papers a quote drops as it drops "[12]": author and year in brackets, every item
# of them one ("(Smith et al., 2010; Lee and Kim, 2011a)", "[Talmor et al., 2019]"; not "(ACT; Graves,
# 2016)", "(March 2006)" nor Wikipedia's spaced "published( Sweden, 2007)"), and numbers in
# parentheses where they can only cite: two or more groups in a row ("(41) (42) (43)"), or a
# sentence's one group after a word, listing numbers ("(12,20)", "(1-3)"; not years, "Huo Jun
# (177–216)") or set off from the comma or stop after it as a converted paper sets off a citation
# ("... enteroviruses (1) ."). A count stays: "... Italy (3), Spain (2).", "... were reported (2).".
_NAME = r"(?:(?:de|da|del|der|den|van|von|la|le|du|dos)\s+)*(?!(?:January|February|March|April|May|June|July|August|" \
        r"September|October|November|December)\b)[A-Z][\w'’-]+"
_AUTHOR_YEAR = (rf"(?:(?:see|e\.g\.|reviewed in|cf\.)\s*,?\s*)?{_NAME}(?:\s+et\s+al\.?,?|(?:\s+(?:and|&)\s+{_NAME})?,)"
                r"\s+(?:19|20)\d\d[a-z]?(?:\s*,\s*[a-z]\b)?")
_SPACE_BEFORE_STOP = r"(?:\s+(?=[,.;:](?:\s|$)))?"  # the space a converted paper set before the stop after it
_AUTHOR_YEAR_CITATION = re.compile(rf"\s*[(\[]{_AUTHOR_YEAR}(?:\s*[;,]\s*,?\s*{_AUTHOR_YEAR})*\s*[;,]?\s*[)\]]"
                                   + _SPACE_BEFORE_STOP)
_NUMBER_GROUP = re.compile(r"\(\s*\d{1,3}(?:\s*[,–-]\s*\d{1,3})*\s*\)")
_NUMBER_CITATIONS = re.compile(rf"\s*{_NUMBER_GROUP.pattern}(?:\s*{_NUMBER_GROUP.pattern})+{_SPACE_BEFORE_STOP}")


def clean_quote(text: str) -> str:
    """The sentence as quoted: one line, its own citations, footnote marks and figure pointers left
    out (an "[12]" of the paper would read as one of the answer's own markers; an author and a year
    say nothing of the answer), no space before a stop, and a cut shown as one (`_marked_if_cut`)."""
    return _marked_if_cut(_SPACE_BEFORE_PUNCTUATION.sub("", _without_pointers(text)))


def with_heading_set_apart(quote: str, section: str) -> str:
    """A quote that opens with its passage's heading, printed without a stop (a PDF paragraph's bold
    run-in label: "Hardware Failures We faced ..."), with the heading set apart as the bold type
    set it: "Hardware Failures: We faced ..."."""
    heading = section.rsplit(" > ", 1)[-1]
    rest = quote[len(heading) + 1:]
    if heading and quote.startswith(heading + " ") and rest[:1].isupper():
        return f"{heading}: {rest}"
    return quote


def _without_pointers(text: str) -> str:
    """One line without the citations, footnote marks and figure pointers: what the quotable tests
    read (a formula's holes, "by , our", show in its spacing)."""
    text = _NUMBER_CITATIONS.sub("", _AUTHOR_YEAR_CITATION.sub("", _INLINE_POINTER.sub("", text)))
    return _without_footnote_mark(" ".join(_without_lone_number_citation(text).split()))


# The space a converted paper left before a stop or comma where a citation was, after a word: "...
# is restricted ." (not between two stops: "Segrave, , (22 March 1366)").
_SPACE_BEFORE_PUNCTUATION = re.compile(r"(?<=[^\W_]|[)\]\"”’%])\s+(?=[,.;:!?](?:\s|$))")
_SENTENCE_END = re.compile(r"[.!?:;)\]\"”’'…。．」）]\s*$")


def _marked_if_cut(text: str) -> str:
    """A sentence cut where a page, a column or a list item ends stops at a function word with no
    stop ("... on a 400 GPU cluster with over", "... particularly in nanomaterials, and"): quoted up
    to its last word that says something, and "…", so the cut shows as one."""
    if _SENTENCE_END.search(text):
        return text
    words = text.split()
    kept = len(words)
    while kept and words[kept - 1].strip(",;:–-").lower() in EN_STOPWORDS:
        kept -= 1
    if kept == len(words) or kept == 0:
        return text
    return " ".join(words[:kept]).rstrip(",;:–- ") + "…"


# A footnote's or a reference's superscript number a PDF's text puts after the sentence's stop ("...
# trained on the Pile.2", "... in the setting of control measures.4"); not a pointer's number ("see Fig.2").
_MARK_AFTER_STOP = re.compile(r"\b([^\W\d_]*[a-z])([.!?])\d{1,2}$")
_POINTER_WORDS = frozenset({"fig", "figs", "eq", "eqs", "no", "nos", "sec", "ref", "refs", "vol", "tab", "ch",
                            "chap", "pp", "ver"})


def _without_footnote_mark(text: str) -> str:
    # a Markdown mark ("FastTrain[^2]"), and a PDF's mark put before the next sentence's first word
    text = FOOTNOTE_MARK.sub("", MARKDOWN_MARK.sub("", text))
    m = _MARK_AFTER_STOP.search(text)
    if m and len(m.group(1)) > 1 and m.group(1).lower() not in _POINTER_WORDS:
        return text[:m.end(2)]
    return text


def _without_lone_number_citation(text: str) -> str:
    """The sentence without its one group of numbers in parentheses where that can only cite: after
    a word, listing numbers below 100 ("(12,20)", not a reign's "(177–216)") or set off from the
    comma or stop after it ("(1) .")."""
    groups = list(_NUMBER_GROUP.finditer(text))
    if len(groups) != 1:
        return text
    g = groups[0]
    before, rest = text[:g.start()], text[g.end():]
    set_off = re.match(r"\s+[,.;](?:\s|$)", rest)
    numbers = re.findall(r"\d+", g.group())
    listed = len(numbers) > 1 and all(len(n) <= 2 for n in numbers)  # not years: "(177–216)"
    if re.search(r"[^\W\d_]\s*$", before) and (set_off or listed):
        return before.rstrip() + (rest.lstrip() if set_off else rest)
    return text


# Formula text a PDF lost its symbols from: "activations by , our", "Retro( , )".
_MATH_HOLES = re.compile(r"[(\[]\s*[,;)\]]|\s[,;:]\s*[,;)\]]|\b(by|of|to|and|with|where|denoting)\s+[,.;)]", re.I)


def _reads_as_prose(text: str) -> bool:
    """English prose has function words ("the", "of", "is"); a table row ("RPN ResNet-101 dense
    11.7 ...") or a label list has next to none. A short statement may have one ("Hantaan virus
    (HTNV) causes hemorrhagic fever with renal syndrome (HFRS)."): it reads as prose when it is
    written as a sentence, a capital first, a stop last and most of its words lower-case, as no
    table row or label list is. Japanese text has its particles, kana."""
    if detect_language(text) == "ja":
        return bool(re.search(r"[ぁ-ん]", text))
    if _MATH_HOLES.search(text):
        return False
    words = _WORD.findall(text)
    function_words = _function_words(words)
    if function_words >= max(2, len(words) // 10):
        return True
    written_as_sentence = bool(re.match(r"\s*[A-Z]", text)) and text.rstrip().endswith((".", "!", "?"))
    return (function_words >= 1 and written_as_sentence
            and sum(w.isalpha() and w.islower() for w in words) * 2 > len(words))


def _function_words(words: list[str]) -> int:
    """How many of `words` are function words as prose writes them: in lower case, or opening it. A
    table's labels may be function words written capitalised ("Ours-JFT Ours-I21k BiT-L ..."), which
    prose writes so only first; text written all in capitals counts them all."""
    if sum(w.isupper() for w in words) * 2 > len(words):
        return sum(w.lower() in EN_STOPWORDS for w in words)
    return sum(w.lower() in EN_STOPWORDS and (i == 0 or not w[:1].isupper()) for i, w in enumerate(words))


def _pieces_are_words(text: str) -> bool:
    """No piece between stops that may end a sentence (`STOP_THEN_SPACE`: not an abbreviation's, as
    "Ae. aegypti" or "Ramful et al. theorized") is debris (`is_debris`): no stray label ("Fig. 3"),
    number row or formula reaches the answer."""
    return not any(map(is_debris, STOP_THEN_SPACE.split(text)))


def _authors_by_initials(text: str) -> int:
    """Names written initials first, as a reference list writes its authors ("A. Vaswani, N. Shazeer,");
    a middle initial after a given name is how prose names people ("Robert A. Millikan, Arthur H.
    Compton, ..."), and does not count."""
    return sum(not _GIVEN_NAME_BEFORE.search(text, max(0, m.start() - 30), m.start()) for m in _INITIALS.finditer(text))


def quotable(sentence: Sentence) -> bool:
    """A statement of body text, or of the user's own annotations, that reads as prose, and not one
    that opens with the name of an author of its own paper: who did what ("Bo Peng Original RWKV
    idea, original code, ..."), as a contributions section lists it."""
    hit = sentence.source.hit
    a, b = sentence.start_char - hit.start_char, sentence.end_char - hit.start_char
    if hit.kind not in (TEXT, ANNOTATION) or not quotable_span(hit.text, a, b):
        return False
    opening = hit.text[a:a + 80]
    return not any(" " in name and opening.startswith(name) for name in hit.authors)


def quotable_span(text: str, a: int, b: int) -> bool:
    """The sentence text[a:b] of a passage of body text reads as prose and states something: not a
    question, a title line, a reference list entry, a caption, a name list, a table row, a formula,
    a declaration or a pointer to a table or a figure. A statement of where something is may be as
    short as a footnote's "Code at: https://...", with no stop."""
    span = text[a:b]
    available = bool(_ANY_ADDRESS.search(span) and _AVAILABLE_AT.search(span))
    if is_title_line(text, a, b) and not available:
        return False
    line_start = text.rfind("\n", 0, a) + 1
    if _ENTRY_LINE.match(text[line_start:line_start + 200]):
        return False
    quote = _without_pointers(text[a:b])
    if quote.endswith(("?", "？")):  # a question the text asks ("How does ZeRO work with MP?") answers nothing
        return False
    if (_FIGURE_TEXT.match(quote) or _CAPTION_INSIDE.search(quote) or _REFERENCE_ENTRY.search(quote)
            or _WEB_ADDRESS.search(quote) and not available or _authors_by_initials(quote) >= 2
            or _DECLARATION.search(quote) or _POINTER_ONLY.search(quote)):
        return False
    return _pieces_are_words(quote) and (_reads_as_prose(quote) or available)
