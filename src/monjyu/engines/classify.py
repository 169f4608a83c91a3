"""What kind of question is this (HybridRAG stage 1, lazy search, auto routing)? local (a fact about something), global (themes across
the collection), relationship (how things connect), or hybrid (both kinds of cue). Rule-based by
default, in English and Japanese; the LLM classifies instead when one is configured."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pydantic import BaseModel, Field

from ..llm import LLM
from ..llm.replies import structured_reply
from ..query import Query

_GLOBAL = {
    "en": re.compile(r"\b(overall (themes?|topics?|picture|landscape|trends?|findings)|main (themes?|topics?|ideas?|"
                     r"findings|trends)|key (themes?|topics?|findings|trends)|summari[sz]e|summary|overview|in general|"
                     r"across (all |the |these |those )*(documents|papers|articles|collection|corpus|literature|studies)|"
                     r"whole (collection|corpus)|(all|these|the) (documents|papers|articles)|trends?|landscape of|"
                     r"common (themes?|patterns?)|what (topics|themes) )", re.I),
    "ja": re.compile(r"全体|テーマ|要約|概要|概観|傾向|まとめ|総じて|主な|全般|俯瞰|全文書|すべての(文書|論文)|"
                     r"これらの(文書|論文)|(文書|論文)群|共通"),
}
# A question about one work ("the summary of this report", "この論文の目的") is local, whatever
# global cue it holds: its answer is in that work, not spread over the collection.
_ONE_WORK = {
    "en": re.compile(r"\b(this|that) (study|report|paper|article|review|work|trial|survey|analysis|document|book|"
                     r"chapter|thesis)\b", re.I),
    "ja": re.compile(r"(この|その|本)(論文|研究|報告|文書|記事)(?!群)"),
}
_RELATION = {
    "en": re.compile(r"\b(relat(ionship|ion|e[sd]?) (between|to|with)|connect(ion|ed)? (between|to|with)|"
                     r"link(s|ed)? (between|to)|differ(ence|s)? (between|from)|compare[sd]?|comparison|versus|vs\.?|"
                     r"influence[sd]? (on|by)|affect(s|ed)?|(both|either) .+ (and|or)|same (country|nationality|"
                     r"place|year)|who (is|was) (older|younger)|(earlier|later|first),? .+ or |"
                     r"(director|author|composer|performer|father|mother|husband|wife|spouse|child|son|daughter|"
                     r"founder|creator|producer) of (the )?(film|song|book|album|novel|company|work)?)", re.I),
    "ja": re.compile(r"関係|関連|違い|比較|つながり|繋がり|影響|共通点|相違|対比|どちらが"),
}


@dataclass
class Classification:
    type: str
    confidence: float
    entities: list[str] = field(default_factory=list)
    relation_hint: str = ""
    method: str = "rules"


def rule_classify(asked: Query, entities: list[str]) -> Classification:
    """The question's type by its cues, in its language (the Query's, detected once at the door)."""
    query, lang = asked.text, asked.language
    is_global = bool(_GLOBAL[lang].search(query)) and not _ONE_WORK[lang].search(query)
    relation = _RELATION[lang].search(query)
    is_relation = bool(relation) or (len(entities) >= 2 and bool(re.search(r"\b(and|or)\b|と|や", query))
                                     and not is_global and bool(re.search(r"\b(how|why)\b|どう|なぜ", query)))
    if is_global and is_relation:
        return Classification("hybrid", 0.6, entities, relation.group(0) if relation else "")
    if is_global:
        return Classification("global", 0.8, entities)
    if is_relation:
        return Classification("relationship", 0.8, entities, relation.group(0) if relation else "")
    return Classification("local", 0.7 if entities else 0.5, entities)


class LLMClassification(BaseModel):
    type: str = Field(pattern="^(local|global|relationship|hybrid)$")
    confidence: float = Field(ge=0, le=1)
    entities: list[str] = Field(default_factory=list)
    relation_hint: str = ""


async def llm_classify(llm: LLM, asked: Query, fallback: Classification,
                       prompts_dir: str | None = None) -> Classification:
    p = await structured_reply(llm, "classify", asked.language, asked.text, LLMClassification, prompts_dir)
    if p is None:
        return fallback
    return Classification(p.type, p.confidence, p.entities or fallback.entities, p.relation_hint, method=f"llm:{llm.id}")
