"""Whether a question asks who wrote a paper, when it was published or who proposed a method, and
the words it asks with.

Such a question names the paper by the rest of its words: "Who wrote the ResNet paper?" is about
ResNet, not about papers. The answer engines answer it from the bylines (engines/byline.py); the
keyword search leaves the asking words out, so that passages of other papers that say "paper"
(or, in Japanese, whose English gloss of 論文 is "paper") and name ResNet do not outrank ResNet's.
"""

from __future__ import annotations

import re

# Kana and kanji: a Japanese question's or word's script.
JAPANESE = re.compile(r"[\u3040-\u30ff\u3400-\u9fff]")
# "Who wrote ...?", "Who are the authors of ...?", "Which researchers wrote ...?", "Name the authors
# of ...", "著者は誰", "誰が書いた", "執筆者は": the names on the byline.
_ASKS_AUTHORS = re.compile(
    r"^\s*who\b[^?]*\b(?:wrote|write|written|authored|authors?)\b|"
    r"^\s*(?:which|what) (?:researchers|people|authors|scientists|team)\b[^?]*\b(?:wrote|authored|write)\b|"
    r"^\s*(?:name|list|give)(?: me)? the authors\b|"
    r"(?:著者|執筆者|筆者)(?:たち|ら)?(?:は|が)(?:誰|だれ|どなた)|(?:誰|だれ)が(?:書|執筆)|(?:書い|執筆し)たのは(?:誰|だれ)|"
    r"(?:著者|執筆者)(?:の名前)?を(?:教え|挙げ|示)", re.I)
# "When ...?", "In what year ...?", "何年に ...", "いつ ...": a question for a year.
_WHEN = r"^\s*(?:when|(?:in )?(?:what|which) year)"
_JA_WHEN = "(?:何年|いつ)(?:に|頃)?"
# "When was ... published?", "In what year was ... published?", "何年に発表", "いつ出版".
_ASKS_YEAR = re.compile(rf"{_WHEN}\b[^?]*\b(?:published|written|released as a paper)\b|"
                        rf"\bpublication (?:year|date)\b|{_JA_WHEN}(?:発表|出版|公開|刊行|出さ)", re.I)
# The words that ask for a byline, not for a paper: left out of the question's words matched to
# titles and of its keyword search.
ASKING_WORDS = "paper papers article study work author authors wrote written write authored publish published " \
               "publication year researchers people 論文 著者 執筆者 筆者 発表 出版"


# "Who proposed ...?", "Which researchers developed ...?", "Which paper introduced ...?", "When was ...
# introduced?", "In what year was ... proposed?", "...を提案したのは誰", "誰が...を開発", "...はいつ提案
# されましたか": the people behind a method, or its year, which the paper that presents it or the work
# the papers cite for it gives.
_VERBS = (r"(?:first )?(?:proposed|propose|introduced|introduce|invented|invent|developed|develop|created|create|"
          r"devised|devise|designed|design|built|build|came up with|come up with|pioneered|coined)\b")
_JA_VERBS = "(?:提案|考案|開発|発明|提唱|導入|創案)"
_ASKS_WHO = re.compile(rf"^\s*(?:who|(?:which|what) (?:researchers|people|team|group|lab|authors|scientists|paper|"
                       rf"work|article|publication))\b[^?]*?\b{_VERBS}|"
                       # "Who is behind FlashAttention?", "Who are the people behind PonderNet?"
                       rf"^\s*(?:who|(?:which|what) (?:researchers|people|team|group|lab|scientists))\s+(?:is|are|was|were)"
                       rf"\s+(?:the\s+(?:people|team|group|lab|researchers|scientists|minds)\s+)?behind\b|"
                       rf"{_JA_VERBS}(?:し|さ)た(?:の|人|人物|研究者|論文)(?:は|が)(?:誰|だれ|どなた|どれ|何)|"
                       rf"(?:誰|だれ|どなた|どの論文)(?:が|で)[^？?]*{_JA_VERBS}", re.I)
_ASKS_WHEN = re.compile(rf"{_WHEN}\s+(?:was|were|is|did)?\s*(?P<between>[^?]*?)\s*\b{_VERBS}|"
                        rf"{_JA_WHEN}{_JA_VERBS}(?:さ|し)", re.I)
# ... and the words it asks with, English glosses of the Japanese ones included: what is left names the method.
ORIGINATOR_WORDS = "who which what when year researchers people person team group lab authors scientists paper " \
                   "work article publication first " \
                   "proposed propose introduced introduce invented invent developed develop created create devised " \
                   "devise designed design built build came come up pioneered coined 提案 考案 開発 発明 提唱 導入 " \
                   "創案 誰 人 人物 研究者 論文 何年 proposal plan invention development introduction advocacy thesis"


def asks_originators(text: str) -> tuple[str, str] | None:
    """Where the question asks who proposed a method ("authors") or when ("year"), that and the
    words that name the method: those after the asking ones ("Who proposed the Adam optimizer?",
    "When did Finn come up with MAML?"), else before the verb ("When was the Transformer
    introduced?"), or in Japanese the whole question. A question for a byline is not one ("Who wrote
    the paper that introduced X?" asks who wrote that paper)."""
    if asks_byline(text):
        return None
    for asked, pattern in (("authors", _ASKS_WHO), ("year", _ASKS_WHEN)):
        if (m := pattern.search(text)) is None:
            continue
        if m.start() > 0 or JAPANESE.search(m.group(0)):
            return asked, text
        after = text[m.end():].strip(" ?？")
        return asked, after or m.groupdict().get("between") or ""
    return None


def asks_byline(text: str) -> str | None:
    """"authors" or "year" where the question asks who wrote a paper or when it was published."""
    if _ASKS_AUTHORS.search(text):
        return "authors"
    if _ASKS_YEAR.search(text):
        return "year"
    return None
