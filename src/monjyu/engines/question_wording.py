"""What a question's wording asks for: the kind of answer ("how many", "why", "A or B?"), whether
it is a question at all, and the things it weighs against each other, in English and Japanese.
The offline reader reads these to decide how far an answer goes and what it must speak to."""

from __future__ import annotations

import re

# What a question asks for, from its wording (English and Japanese); "" = a fact of no marked type.
# A choice: yes or no, or one of the things it names ("Which came first, A or B?").
# A Japanese yes/no question: a question ending ("...ですか", "...ましたか") and no question word.
_JA_YES_NO = re.compile(r"^(?!.*(?:何|どこ|どちら|どっち|どれ|どの|どう|どんな|いつ|誰|だれ|なぜ|いくつ|いくら))"
                        r".*[ぁ-ん]か[。？?]?\s*$")
# A phrase that sets the scene before a yes/no question's verb: "On the Diamond Princess, did ...?"
_LEAD_IN = (r"(?:(?:in|on|at|for|from|among|according to|after|before|during|with|without|within|under|by|"
            r"over|across|compared (?:to|with))\b[^,?]{0,80},\s*)?")
# "or" between alternatives; not in an amount's "or more" ("aged 65 years or over", "two or more sources")
_OR = r"\bor\b(?!\s+(?:more|over|less|fewer|above|below|under)\b)"
_CHOICE = re.compile(r"^\s*(which|who|what)\b[^?]*" + _OR + r"[^?]*\?\s*$|^\s*" + _LEAD_IN +
                     r"(is|are|was|were|do|does|did|can|could|has|have|had|will|would|should)\b.+\?\s*$|"
                     r"\b(or|and)\b.+\b(both|either)\b|\bboth\b.+\b(and)\b|どちら|どっち|それとも|" + _JA_YES_NO.pattern, re.I)
# An English question asks a date, a person or a place by the word that opens it ("When did ...",
# "According to X, when ...", "For whom ..."), or, for "when" and "where", by one a verb's auxiliary
# follows ("... and where is it expressed?"): not a relative pronoun or a conjunction within it ("...
# patients who died", "... when the loss diverged", "... where keys and values are shared", the WHO).
_OPENS = r"^\s*(?:(?!what|which|how|why)[^,?]{0,80},\s*)?(?:(?:to|from|for|by|with|since|until|of|in)\s+)?"
_AUX = r"(?:is|are|was|were|do|does|did|can|could|will|would|should|shall|may|might|must|has|have|had)\b"
_ASKS = [
    ("number", re.compile(r"\bhow (many|much|long|often|large|big|old|far|fast|high|low|small)\b|"
                          r"\bwhat (percentage|proportion|fraction|number|rate|ratio|size|amount|dose)\b|"
                          r"何人|何個|何倍|何層|何件|何回|何%|何パーセント|いくつ|どのくらい|どれくらい|どれだけ|何割|何台|何枚|何次元|何億|何万", re.I)),
    ("date", re.compile(_OPENS + r"when\b|\bwhen\s+" + _AUX +
                        r"|\b(what|which) (year|date|month|day|decade|century)\b|いつ|何年|何月", re.I)),
    ("person", re.compile(_OPENS + r"(?:who|whom|whose)\b|誰|だれ", re.I)),
    ("place", re.compile(_OPENS + r"where\b|\bwhere\s+" + _AUX + r"|どこ", re.I)),
    ("reason", re.compile(r"\bwhy\b|\bwhat (causes|caused|leads|led)\b|\breasons?\b|\bfor what purpose\b|"
                          r"なぜ|どうして|理由|原因|目的", re.I)),
    # "differentiate" compares only "between" things or one "from" another: a gradient's sense
    # ("differentiate through the inner loop") and "differentiated cells" do not
    ("compare", re.compile(r"\bdiffer(?!entia)|\bdifferentiat\w*\b.*\b(?:between|from)\b|\bdifference|\bcompar|\bversus\b|\bvs\.?\b|\bbetter than\b|"
                           r"\bworse than\b|\badvantages?\b|\bdisadvantages?\b|\bunlike\b|違い|比較|異な|比べ|優れ|利点|欠点", re.I)),
    ("list", re.compile(r"\bwhat are (the|some)\b|\bwhich\b.*\b(are|were)\b|\blist\b|\bname (the|some)\b|"
                        r"\bwhat (types|kinds|sorts|components|steps|stages|factors|features|methods|techniques)\b|"
                        r"\bexamples?\b|挙げ|種類|どのようなものが|何と何|[二三四2-4]つ", re.I)),
    ("method", re.compile(r"\bhow (does|do|did|is|are|was|were|can|could|should|to)\b|\bwhat (method|approach|technique)\b|"
                          r"\bin what way\b|どのように|どうやって|方法|仕組み|手法", re.I)),
    ("definition", re.compile(r"^\s*(what|who) (is|are|was|were) (a |an |the )?[^,]{1,60}\??$|\bdefin|\bmeaning of\b|"
                              r"\bstands? for\b|\bwhat does .* mean\b|とは|何ですか|なんですか", re.I)),
    ("choice", _CHOICE),
]

# A question, as opposed to keywords or a request: a question mark, a question word first, or a
# Japanese question's ending or question word.
_QUESTION = re.compile(r"[?？]\s*$|^\s*(what|which|who|whom|whose|when|where|why|how|is|are|was|were|do|does|did|"
                       r"can|could|has|have|had|will|would|should|in what|to what|at what|on what)\b|"
                       r"[かの][。？?]?\s*$|何|なぜ|どう|いつ|どこ|誰|だれ|どれ|どの|いくつ", re.I)


def question_asks(query: str) -> str:
    """The first kind of answer the question's wording asks for, or "" (a plain fact). A Japanese
    question with no question word is a yes/no question whatever nouns it holds ("...手法より速いの
    ですか" asks no method): the English patterns are anchored on question words, the Japanese
    ones on nouns."""
    if _JA_YES_NO.search(query):
        return "choice"
    for name, pattern in _ASKS:
        if pattern.search(query):
            return name
    return ""


# The two things a question sets side by side, by the words that join them. Japanese と joins two
# things, but not in という ("called"), として ("as"), との ("with"), とする or となる.
_JA_AND = r"と(?!いう|いった|して|の|する|なる)"
_PAIRED = [re.compile(p, re.I) for p in (
    # AとBのどちら, AとBでは、…どちら, AとBのうち: a side runs from a comma or a topic's は
    r"(?:^|[、，,\s]|は)([^、，,は]+?)" + _JA_AND + r"[、，,]?\s*([^、，,は]+?)(?:とでは|では|のうち|の中では?|の|で)(?:[、，,][^、，,]*?)?"
    r"(?:どちら|どっち)",
    r"(?:^|[、，,\s]|は)([^、，,は]+?)(?:ですか|でしょうか|か)[、，,]\s*それとも\s*([^、，,]+?)(?:ですか|でしょうか|か)?$",  # Aですか、それともBですか
    r"^([^、，,は]+?)" + _JA_AND + r"[、，,]?\s*([^、，,は]+?)(?:は|では|が)",  # AとBは…ですか (Are A and B ...?)
    r"\bbetween\s+(.+?)\s+and\s+(.+?)(?=[,;]|$)",
    r"\b(?:out of|which of)\s+(.+?)\s+and\s+(.+?)(?=[,;]|$)",
    r"\bboth\s+(.+?)\s+and\s+(.+?)(?=[,;]|$|\s(?:are|were|is|was|have|had|do|did)\b)",
    "^" + _LEAD_IN + r"(?:are|were|is|was|do|does|did|have|has|had)\s+([^,;]+?)\s+and\s+([^,;]+?)\s+both\b",
    "^" + _LEAD_IN + r"(?:are|were|is|was|do|does|did|have|has|had)\s+([^,;]+?)\s+and\s+(.+?)(?=[,;]|$)",
    r"([^,;:]+?)\s+(?:versus|vs\.?)\s+(.+?)(?=[,;]|$)")]
# What sets a second side against the first: "than", and "before" or "after" where a pronoun for the
# first side follows ("did infections among crew members peak before those among passengers?";
# "before the lockdown" names a time, no second side). `prep`: the pronoun's preposition.
SET_AGAINST = (r"\b(?:than\b|(?:before|after)(?=\s+(?:those|that|the ones?)\s))"
               r"(?:\s+(?:those|that|the ones?)\s+(?P<prep>of|in|among|for|from|with|at|on)\b)?")


_ALTERNATIVE = re.compile(r"\s*,?\s+" + _OR + r"\s+", re.I)
_CLAUSE_START = re.compile(r"[,;:](?!\s*or\b)", re.I)  # a comma that does not open ", or B"


def question_sides(query: str) -> list[str]:
    """The things a yes/no, choice or comparison question names to be weighed against each other,
    each of which its answer should speak to: the alternatives of "..., A or B?" and "...: A or
    B?", "both A and B", "Are A and B ...?", "between A and B", "A versus B", "Is A ... than B?",
    "Did ... among A peak before those among B?", and their Japanese counterparts ("AとBのどちら",
    "AとBでは、…どちら", "Aですか、それともBですか", "AとBは…ですか", "AはBより…", "BよりAの方が…"); []
    when it names no two things. What follows a colon is read first (the alternatives of "...: A or
    B?"), then the whole question (a title may hold a colon)."""
    q = query.strip().rstrip("?？。 ")
    after_colon = q.rpartition(":")[2].strip()
    for text in dict.fromkeys((after_colon, q)):
        for pattern in _PAIRED:
            if m := pattern.search(text):
                return [m.group(1).strip(), m.group(2).strip()]
        if first_or := re.search(_OR, text, re.I):  # from the last comma before it
            clause = text[max((m.end() for m in _CLAUSE_START.finditer(text) if m.start() < first_or.start()),
                             default=0):]
            parts = [p.strip() for p in _ALTERNATIVE.split(clause) if p.strip()]
            if len(parts) >= 2:
                return parts
    if m := _japanese_than(q):
        return m
    thans = list(re.finditer(SET_AGAINST, q, re.I))
    if thans:
        than = thans[-1]  # the last "than": the comparison of the main clause
        before = q[:than.start()]
        before = before[max((m.end() for m in _CLAUSE_START.finditer(before)), default=0):].strip()
        after = re.split(r"[,;]", q[than.end():])[0].strip()
        # "those among passengers" stands for what the first side is "among crew members": each side
        # is what follows that preposition
        if (prep := than["prep"]) and (shared := list(re.finditer(rf"\b{prep}\b", before, re.I))):
            before = before[shared[-1].end():].strip()
        if before and after:
            return [before, after]
    return []


def _japanese_than(q: str) -> list[str] | None:
    """"AはBより…" and "BよりAの方が…": B is the phrase before the last より (the main clause's);
    A, the phrase before の方が, else the topic before は with what the clause says after より
    ("ウマコロナウイルスは、ウマの糞便よりも呼吸器の分泌物から…": the topic alone may not be the other
    side), else that clause alone."""
    found = list(re.finditer(r"([^、，,は]+?)よりも?", q))
    if not found:
        return None
    than = found[-1]
    after = re.split(r"[、，,]", q[than.end():].lstrip("、，, "))[0]
    if preferred := re.search(r"(.+?)(?:の方|のほう)が", after):
        return [preferred.group(1).strip(), than.group(1).strip()]
    before = q[:than.start()].rstrip("、，, ")
    topic = re.split(r"[、，,]", before[:-1])[-1] if before.endswith("は") else ""
    side = f"{topic} {after}".strip()
    return [side, than.group(1).strip()] if side else None


# The words that weigh things by a date ("Which came out first, A or B?", "Who was born later?") or
# by an amount ("more ... than", "higher", "the largest", "closer": the nearer by some measure):
# what the answer states of each side.
# "Longer" is neither: a life is longer by its dates, a genome by its length. A Japanese adjective
# by its stem and any ending ("高い", "高く", "高かった", "高ければ").
_BY_DATE = re.compile(r"\b(first|earlier|earliest|later|latest|before|after|older|oldest|younger|youngest|sooner)\b|"
                      r"先に|最初|早[いくかけ]|遅[いくかけ]|古[いくかけ]|新し|年上|年下", re.I)
_BY_AMOUNT = re.compile(r"\b(more|less|fewer|greater|higher|lower|larger|smaller|bigger|faster|slower|heavier|"
                        r"lighter|most|least|highest|lowest|largest|smallest|biggest|fastest|slowest|closer|closest|"
                        r"nearer|nearest)\b|多[いくかけ]|少な|高[いくかけ]|低[いくかけ]|大き|小さ|速[いくかけ]|近[いくかけ]", re.I)


def weighed_by(text: str) -> str:
    """"amount" or "date" where the question weighs things by one (`carries` tells a sentence that
    states it), else "". An amount's word first: "In the first genome, which gene had the higher
    identity?" weighs an amount."""
    return "amount" if _BY_AMOUNT.search(text) else "date" if _BY_DATE.search(text) else ""


def asks_to_choose(text: str) -> bool:
    """A yes/no question, or one that asks to choose between the things it names."""
    return bool(_CHOICE.search(text))


def is_question(text: str) -> bool:
    """A question, as opposed to keywords or a request."""
    return bool(_QUESTION.search(text))


# What a sentence carries, for each kind of question.
_CARRIES = {
    "number": re.compile(r"\d|\b(one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|hundred|"
                         r"thousand|million|billion|dozen|half|twice|double|triple)\b|[一二三四五六七八九十百千万億]", re.I),
    "date": re.compile(r"\b(1[6-9]|20)\d\d\b|\b(January|February|March|April|May|June|July|August|September|"
                       r"October|November|December)\b|\bcentury\b|\d+年|\d+月", re.I),
    "person": re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z]+ [A-Z][a-z]+\b|\bet al\b|[一-龯]{1,3}[\s　][一-龯]{1,3}"),
    "place": re.compile(r"\b(in|at|from|of) (the )?[A-Z][a-z]+|\b(at|from|on|in):? (https?://|www\.)|[都道府県市国州]"),
    "reason": re.compile(r"\b(because|due to|since|as a result|result(s|ed)? (in|from)|caused by|owing to|therefore|"
                         r"thus|hence|leads? to|led to|so that|in order to|allows?|enables?|reason|attributed to|"
                         r"responsible for|consequently)\b|ため|ので|から|により|によって|原因", re.I),
    "compare": re.compile(r"\b(than|whereas|while|unlike|compared|in contrast|outperforms?|instead of|rather than|"
                          r"better|worse|faster|slower|more|less|fewer|higher|lower|similar|same as)\b|より|比べ|対して|一方", re.I),
    "list": re.compile(r",.*,|;|\b(include|includes|including|such as|consists? of|comprises?|namely|first|second|"
                       r"both|two|three|several)\b|・|、.*、", re.I),
    "method": re.compile(r"\b(by|using|uses?|through|via|with|propose[sd]?|method|approach|computes?|estimates?|"
                         r"trains?|applies|applying|replaces?|combines?)\b|によって|を用いて|により|使って", re.I),
    "choice": re.compile(r"\b(than|whereas|unlike|compared|in contrast|not|no|both|neither|also|same|first|"
                         r"earlier|later|more|less|larger|smaller)\b|ない|より|比べ", re.I),
    "definition": re.compile(r"\b(is|are|was|were) (a|an|the|defined|known|called|termed|referred)\b|\brefers? to\b|"
                             r"\bdefined as\b|\bknown as\b|\bstands? for\b|\bi\.e\.|とは|である|のこと", re.I),
}


# An amount: a number or a number word, not a date's nor a name's digits ("19 January 2020", "in
# 2009", "COVID-19", "H1N1").
_DATES = re.compile(r"\b(?:\d{1,2}\s+)?(?:January|February|March|April|May|June|July|August|September|October|"
                    r"November|December)(?:\s+\d{1,2}\b)?|\b(?:1[6-9]|20)\d\d\b|\d+年|\d+月|\d+日")
_AMOUNT = re.compile(r"(?<![\w-])\d+(?:[.,]\d+)*(?![\w-])|\b(two|three|four|five|six|seven|eight|nine|ten|eleven|"
                     r"twelve|hundred|thousand|million|billion|dozen|half|twice|double|triple)\b", re.I)


# An amount's unit: a percentage, else the words after its number ("1,100 nt differences", "3.5 days"),
# not a function word ("12 of them", "100,000 steps or 12 hours").
_UNIT = re.compile(r"(?<![\w.,-])\d+(?:[.,]\d+)*(?:\s*(%|％|percent\b|per cent\b)|\s+([A-Za-z]{2,})(?:\s+([A-Za-z]{2,}))?)")
_NOT_UNITS = frozenset("a an the of or and to in on at by for from with as than vs versus per each".split())


def amount_units(text: str) -> set[str]:
    """The units `text` states amounts in: "%" for a percentage, else the (singular) words that follow a
    number. Two amounts are comparable where they share one ("89% ... identity" and "∼96% homology",
    not "1,100 nt differences")."""
    units: set[str] = set()
    for m in _UNIT.finditer(_DATES.sub(" ", text)):
        if m.group(1):
            units.add("%")
            continue
        for word in m.group(2, 3):
            if word is None or word.lower() in _NOT_UNITS:
                break
            units.add(word.lower().removesuffix("s"))
    return units


def carries(asks: str, text: str) -> bool:
    """Whether `text` (a sentence) carries what a question of the kind `asks` asks for (a number
    for "how many", a place for "where", an amount for "more than" ...): a kind of answer's
    surface, not the answer."""
    if asks == "amount":
        return _AMOUNT.search(_DATES.sub(" ", text)) is not None
    return bool(asks) and _CARRIES[asks].search(text) is not None

