"""A question that asks what a thing is ("What is FlashAttention?", "RWKVとは何ですか？"), and the
sentences that say it.

Such a question is answered by the sentence that defines the term: introduces it with what kind
of thing it is ("We propose FlashAttention, an IO-aware exact attention algorithm ..."), names
something as it ("... which we call Pathways Language Model PaLM"), spells it out ("Receptance
Weighted Key Value (RWKV)") or says what it is ("Empyema is a rare complication of pneumonia").
The trained reader learnt from spans, and reads such sentences no better than one that only
mentions the term: "What is PonderNet?" over papers-pdf led with "In other words, the prediction of
PonderNet is the prediction made at the step n at which it halts." (benchmarks page). The wordings
are those of English and Japanese definitions in general (appositions, copulas, naming verbs,
abbreviations; as definitional question answering finds them), not of one set's questions.
"""

from __future__ import annotations

import re

from ..nlp.abbreviations import abbreviates, defined_abbreviations
from ..query import Query

# "What is X?", "What are X?", "Who was X?" for a term of a few words that relates nothing to
# anything ("What is the advantage of X?", "What is X used for?" ask something else)
_WHAT_IS = re.compile(r"^\s*(?:what|who)\s+(?:is|are|was|were)\s+(?:(?P<article>an?|the)\s+)?(?P<term>[^?,;:]{1,60}?)"
                      r"\s*\?*\s*$", re.I)
_WHAT_DOES = re.compile(r"^\s*what\s+(?:does|do)\s+(?P<term>[^?,;:]{1,60}?)\s+(?:stand\s+for|mean)\s*\?*\s*$|"
                        r"^\s*(?:define|what\s+is\s+meant\s+by)\s+(?P<term2>[^?,;:]{1,60}?)\s*\?*\s*$", re.I)
# "Xとは何ですか？", "Xとは？", "Xって何？"; "Xは何ですか？" where X is a Latin name ("RWKVは何ですか？")
_JA_WHAT_IS = re.compile(r"^\s*(?P<term>[^、，,。？?]{1,40}?)(?:とは|って)(?:(?:何|なに|なん)(?:ですか|でしょうか|か)?)?\s*[？?]?\s*$|"
                         r"^\s*(?P<latin>[A-Za-z][\w\- .]{0,40}?)\s*は(?:何|なに|なん)(?:ですか|でしょうか)\s*[？?]?\s*$")
# words that make "What is X?" ask about X's relation to something, not what X is
_RELATING = re.compile(r"\b(?:of|in|for|with|to|by|on|from|at|about|that|which|who|used|like|than|between|"
                       r"and|or|when|where|why|how|called|known)\b", re.I)
_MOST_WORDS = 6

# what follows the term in a sentence that says what it is: an apposition ("X, an IO-aware exact
# attention algorithm"), a copula with a determiner ("X is a ..."; "X is finetuned with ..." is not),
# a class ("X belongs to the porcine coronaviruses"), a naming or defining verb ("X stands for", "X
# refers to", "X is defined as")
_AFTER = re.compile(r"^\s*(?:,\s*(?:also\s+(?:known|called|referred\s+to)\s+as\b[^,]*,\s*)?(?:which\s+|that\s+)?"
                    r"(?:is\s+|are\s+|was\s+|were\s+)?(?:an?|the|one)\b"
                    r"|(?:is|are|was|were)\s+(?:an?|the|one\s+of|defined\s+as|known\s+as|called)\b"
                    r"|belongs?\s+to\b"
                    r"|(?:stands?\s+for|refers?\s+to|denotes?|means)\b)", re.I)
# a gloss in brackets after the term: "clinical attack rates (the proportion of individuals who ...)"
_GLOSS = re.compile(r"^\s*[(（]\s*(?:i\.\s?e\.,?\s+|that\s+is,?\s+)?(?:an?|the)\s+\w", re.I)
# the term after a preposition or a possessive within its clause is a thing of another's ("the
# prediction of X is ...", "The lack of information in relation to preexisting baseline X, ...",
# "adjusting deaths by age-specific X, a W-shaped curve ..."), and after a hyphenated word part of
# another name ("block-sparse FlashAttention, a ...")
_GOVERNED = re.compile(r"(?:\b(?:of|in|for|to|with|by|on|from|at|than|as|and|or|between|like|its|their)\b|['’]s?\s)"
                       r"(?:(?![,;:(（]|\b(?:that|which|who|whereas|while|although|though|because|since|if|when)\b).)*$"
                       r"|\w-\w+\s+$", re.I)
# a verb that introduces or names the term, a few words before it: "we propose X", "we introduce
# the X", "which we call Pathways Language Model PaLM", "we collectively refer to as X", "We name
# the discovered model X", "a technique called X"
_NAMING = re.compile(r"\b(?:call|calls|called|name|names|named|term|terms|termed|dub|dubbed|coin|coined|"
                     r"refer\s+to\s+as|referred\s+to\s+as|known\s+as)\s+(?:\S+\s+){0,4}$", re.I)
_INTRODUCING = re.compile(r"\b(?:propose|proposes|proposed|present|presents|introduce|introduces|introduced)\s+"
                          r"(?:an?\s+|the\s+)?(?:(?:new|novel|simple)\s+)?$", re.I)
# the introduced name ends there, not a modifier of a noun after it ("We present the PaLM model card")
_NAME_ENDS = re.compile(r"\s*(?:[,.;:!?()（）、。]|$|(?:which|that|to|as|for|in|with|by|and)\b)", re.I)
# Japanese: "Xとは", "Xと呼ばれる", "Xという", and "X（...）は ... である。" opening a sentence
_JA_NAMING = re.compile(r"^\s*(?:（[^）]*）|\([^)]*\))?\s*(?:とは|と呼ばれ|という|と呼ぶ|と称さ)")
_JA_COPULA_SUBJECT = re.compile(r"^\s*(?:（[^）]*）|\([^)]*\))?\s*は")
_JA_COPULA_END = re.compile(r"(?:である|です|だ|のこと|の一つ|の総称|を指す)[。．.]?\s*$")
_QUOTES = "\"'“”‘’「」『』"
# how far before the term its clause is read (characters)
_CLAUSE_CHARS = 200
# how surely a sentence says what the term is (`defines`)
SAYS, SPELLS_OUT, NOT = 2, 1, 0


def asked_term(question: str) -> str:
    """The term a question asks to be defined ("FlashAttention" for "What is FlashAttention?",
    "the Transformer" -> "Transformer"), or "" where it asks something else. A term after "the"
    must hold a name (a capital or a digit): "What is the presumed incubation period?" asks a value."""
    if m := _WHAT_DOES.match(question):
        term = m["term"] or m["term2"]
    elif m := _WHAT_IS.match(question):
        term = m["term"]
        if m["article"] and m["article"].lower() == "the" and not re.search(r"[A-Z0-9]", term):
            return ""
    elif m := _JA_WHAT_IS.match(question):
        term = m["term"] or m["latin"]
    else:
        return ""
    # "the Vision Transformer (ViT)": the name, without the short form the question adds
    term = re.sub(r"\s*[(（][^()（）]*[)）]\s*$", "", " ".join(term.split())).strip(_QUOTES)
    if not term or len(term.split()) > _MOST_WORDS or _RELATING.search(term):
        return ""
    return term


# The Query view that holds the term a question asks to be defined ("" where it asks none).
ASKED_TERM = "asked term"


def term_asked(query: Query) -> str:
    """`asked_term` of the question, worked out once a query (its ASKED_TERM view): the answer engine,
    the reader and the composer each read it."""
    return query.view(ASKED_TERM, lambda: asked_term(query.text))


def _mentions(sentence: str, term: str) -> list[tuple[str, str]]:
    """The text before and after each place `sentence` writes `term` as words of their own (case
    aside; the hyphens and spaces of a name either way; a plural's "s"; in quotation marks, 'called
    "distillation"'), or the brackets it stands in after its long form ("Retrieval-Enhanced
    Transformers (Retro), a method ...")."""
    words = [re.escape(w) for w in re.split(r"[\s\-]+", term) if w]
    if not words:
        return []
    body = r"[\s\-]+".join(words)
    out = []
    for m in re.finditer(rf"(?<![\w\-])[{_QUOTES}]?(?:{body})(?:e?s)?[{_QUOTES}]?(?![\w\-])", sentence, re.I):
        before, after = sentence[:m.start()], sentence[m.end():]
        if re.search(r"[(（]\s*$", before) and (closing := re.match(r"\s*[)）]", after)):
            before, after = re.sub(r"\s*[(（]\s*$", " ", before), after[closing.end():]
        out.append((before, after))
    return out


def defines(sentence: str, term: str) -> int:
    """How surely `sentence` says what `term` is (module docstring): SAYS, by an apposition, a copula
    with a determiner, a class, a gloss in brackets after it or a naming or introducing verb before it;
    SPELLS_OUT, by its abbreviation's long form alone ("We sequenced the first Bovine coronavirus
    (BCoV) complete genome ..."); else NOT."""
    if not term:
        return NOT
    for before, after in _mentions(sentence, term):
        before = before[-_CLAUSE_CHARS:]  # a clause's reach: a long PDF "sentence" is read in bounded time
        past = re.sub(r"^\s*[(（][^()（）]{0,80}[)）]", "", after)  # past its short form: "Coronaviruses (CoVs) are ..."
        if (_NAMING.search(before) or _INTRODUCING.search(before)) and _NAME_ENDS.match(past):
            return SAYS
        # the term is what the clause is about, not a thing of another's ("the prediction of X is ...")
        if (_AFTER.match(past) or _GLOSS.match(after)) and not _GOVERNED.search(before):
            return SAYS
        if _JA_NAMING.match(after) or (not before.strip() and _JA_COPULA_SUBJECT.match(after)
                                       and _JA_COPULA_END.search(after)):
            return SAYS
    # the term is an abbreviation the sentence spells out: "Receptance Weighted Key Value (RWKV)",
    # "HTS (high-throughput screening)"
    if defined_abbreviations([sentence]).get(term) is not None:
        return SPELLS_OUT
    inside = re.search(rf"(?<![\w\-]){re.escape(term)}\s*[(（]([^()（）]{{3,80}})[)）]", sentence)
    return SPELLS_OUT if inside and abbreviates(term, inside.group(1)) else NOT
