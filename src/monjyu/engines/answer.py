"""Baseline RAG's answer step: numbered sources within a token budget, then the LLM writes an
answer with [n] citations — or, with no LLM configured, an extractive answer from the same sources."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from string import Template

import numpy as np
from pydantic import BaseModel, Field

from ..config import AnswerConfig
from ..errors import ServiceError
from ..llm import LLM, Message, load_prompt
from ..nlp.byline_questions import asks_byline, asks_originators
from ..query import Query
from ..types import Answer, SearchHit
from .byline import AskedAuthor, byline_answer, named_paper, only_lists_papers, paper_source, papers_by_answer
from .citations import resolve_citations
from ..llm.replies import structured_reply
from .context import Source, format_sources, next_number, select_sources
from .cross_encoder import shared_reader_model
from .definitions import SAYS, defines, term_asked
from .extractive import extractive_answer, insufficient, unheard_answer
from .names import ASKED_PAPER, PaperTitles, TitleNamed, asked_of_the_paper, paper_asked_about
from .originators import CollectionReferences, originators_answer
from .quotes import clean_quote, quotable
from .reader import Reader
from .relevance import LocalRelevanceScorer, sentences_of
from .verify import AnswerVerifier


async def generate(llm: LLM, messages: list[Message], on_token: Callable[[str], None] | None) -> str:
    """The LLM's reply; streamed to `on_token` piece by piece when it is given."""
    if on_token is None:
        return (await llm.achat(messages)).text
    parts = []
    async for delta in llm.astream(messages):
        parts.append(delta)
        on_token(delta)
    return "".join(parts)


# The Query view that holds where the question writes a paper's title (`AnswerEngine.titled`).
TITLED = "titled paper"
# The passages of the paper a question asks about by its name that its search within that paper puts
# first of the sources (`AnswerEngine.asked_paper_first`). Not fitted.
ASKED_PAPER_PASSAGES = 5


class QueryRewrites(BaseModel):
    queries: list[str] = Field(default_factory=list)


class AnswerEngine:
    def __init__(self, config: AnswerConfig, llm: LLM | None, scorer: LocalRelevanceScorer,
                 count_tokens: Callable[[str], int],
                 term_weights: Callable[[set[str]], dict[str, float]] | None = None,
                 unheard: Callable[[Query], list[str]] | None = None,
                 asked_author: Callable[[Query], AskedAuthor | None] | None = None,
                 first_passage: Callable[[str], SearchHit | None] | None = None,
                 references: Callable[[], CollectionReferences] | None = None,
                 search_within: Callable[[Query, list[str], int], list[SearchHit]] | None = None,
                 text_after: Callable[[SearchHit, int], str] | None = None,
                 aliases: Callable[[], dict[str, list[str]]] | None = None,
                 titles: Callable[[], PaperTitles] | None = None):
        """`term_weights`: a query term's weight in the collection (its IDF), for the reader and
        the check of LLM answers; `unheard`: the names of a query that no indexed text mentions;
        `asked_author`: the author on the bylines whose papers a query asks about; `first_passage`: a
        document's first unit of body text, cited for a paper listed that no source is from;
        `references`: the collection's reference entries, the citations that point at them, and the
        names citing papers give its papers; `search_within`: the passages of some documents a keyword
        search finds for a query, best first; `text_after`: the document's text after a passage, up to so
        many characters (where its footnotes are); `aliases`: the names citing papers give each paper of the
        collection (citations.json), by document id; `titles`: its papers' titles, by document id."""
        self.config = config
        self.unheard = unheard
        self.asked_author = asked_author
        self.first_passage = first_passage
        self.references = references
        self.search_within = search_within
        self.text_after = text_after
        self.aliases = aliases
        self.titles = titles
        self.llm = llm
        self.scorer = scorer
        self.count_tokens = count_tokens
        model = shared_reader_model() if config.reader == "model" else None
        self.reader = Reader(scorer, term_weights, max_sentences=config.extractive_sentences, model=model,
                             model_candidates=config.reader_candidates, sure_relevance=config.sure_sentence_score)
        self.verifier = AnswerVerifier(scorer, config.min_support, term_weights)

    def language(self, query: Query) -> str:
        """The answer's language: the question's, unless answer.language sets one."""
        return query.language if self.config.language == "auto" else self.config.language

    def _prompt(self, name: str, lang: str) -> str:
        return load_prompt(name, lang, self.config.prompts_dir or None)

    async def aanswer(self, query: Query, query_vector: np.ndarray, hits: Sequence[SearchHit],
                      on_token: Callable[[str], None] | None = None) -> Answer:
        lang = self.language(query)
        cfg = self.config
        if (refused := self.refused_as_unheard(query, on_token)) is not None:
            return refused
        sources = select_sources(hits, cfg.context_tokens, self.count_tokens, cfg.max_sources)
        if not sources:
            return insufficient(lang, "no passage was retrieved (or all fell under the threshold)")
        if (byline := self.byline(query, sources, lang, on_token)) is not None:
            return byline

        author = self.asked_author(query) if self.asked_author is not None else None
        # "What does the paper by Hinton say about temperature?" is read as "What does the paper say
        # about temperature?": the sources are Hinton's papers, and no sentence of them names him
        read = query.derive(author.rest) if author is not None and author.rest else query
        read, sources = self.asked_paper_first(read, sources)

        def extractive(note: str = "") -> Answer:
            answer = extractive_answer(read, query_vector, self.with_defining_passage(read, sources), self.reader,
                                       lang, min_score=cfg.min_sentence_score, text_after=self.text_after)
            if note:
                answer.note = f"{note}; {answer.note}" if answer.note else note
            if on_token and answer.text:
                on_token(answer.text)
            return answer

        if self.llm is None:
            return extractive()
        user = Template(self._prompt("answer_user", lang)).safe_substitute(sources=format_sources(sources),
                                                                           question=query.text)
        messages = [Message(role="system", content=self._prompt("answer", lang)), Message(role="user", content=user)]
        try:
            text = await generate(self.llm, messages, on_token)
        except ServiceError as exc:
            return extractive(f"the LLM failed ({exc}), so this answer is extractive")
        if not text.strip():
            return extractive("the LLM returned an empty answer, so this answer is extractive")
        return self.checked(text, sources, lang)

    def refused_as_unheard(self, query: Query, on_token: Callable[[str], None] | None = None) -> Answer | None:
        """"Insufficient", naming them, for a question about something no document mentions ("How
        does DetectGPT decide ...?"): it is not answered from passages that share its other words,
        by the reader or the LLM. None for any other question."""
        unheard = self.unheard(query) if self.unheard is not None else []
        if not unheard:
            return None
        answer = unheard_answer(self.language(query), unheard)
        if on_token:
            on_token(answer.text)
        return answer

    def byline(self, query: Query, sources: Sequence[Source], lang: str,
               on_token: Callable[[str], None] | None = None) -> Answer | None:
        """Who wrote the paper the question names, when it was published, which papers someone
        wrote, or who proposed a method and when, from the bylines and reference entries the index keeps
        (engines/byline.py, engines/originators.py), with no LLM call: no passage says it. None for
        any other question, and where no retrieved paper is the one named."""
        terms = self.scorer.analyzer.terms
        author = self.asked_author(query) if self.asked_author is not None else None
        answer = None
        if author is not None and only_lists_papers(query.text, author, terms):
            answer = papers_by_answer(author, sources, lang, self.first_passage)
        elif (asked := asks_byline(query.text)) is not None:
            source = self.titled_paper(query, sources) or named_paper(sources, self.scorer.query_terms(query), terms)
            answer = byline_answer(asked, source, lang) if source is not None else None
        elif (originators := asks_originators(query.text)) is not None:
            answer = originators_answer(*originators, sources, lang, terms, self.references, self.first_passage,
                                        self.search_within)
        if answer is not None and on_token:
            on_token(answer.text)
        return answer

    def titled_paper(self, query: Query, sources: Sequence[Source]) -> Source | None:
        """The first passage of the paper whose title the question writes (`PaperTitles.named`: "Who
        wrote Attention Is All You Need?"), among the sources or, failing them, its first passage
        numbered after them; None where it writes none. The passages its words find first may be
        another paper's ("FlashAttention: Fast and Memory-Efficient Exact Attention ...")."""
        titled = self.titled(query)
        return paper_source(titled.paper, sources, self.first_passage) if titled is not None else None

    def titled(self, query: Query) -> TitleNamed | None:
        """Where the question writes the title of a paper of the collection (`PaperTitles.named`), looked
        up once a query (its TITLED view)."""
        return query.view(TITLED, lambda: self.titles().named(query.text) if self.titles is not None else None)

    def asked_paper_first(self, query: Query, sources: list[Source]) -> tuple[Query, list[Source]]:
        """Where the question asks about a paper of the collection by the name citing papers give it
        ("Which optimizer was used to train the Transformer?") or by its title (`paper_asked_about`),
        the reader leads from that paper (the query's ASKED_PAPER view), and where its passages are
        not the first retrieved they come first: those a search for the question within it finds
        (ASKED_PAPER_PASSAGES), then its others retrieved, then the rest. The other papers of a
        machine-learning folder use Transformers, and their passages are the ones the question's
        words find first. A question that names the paper by its title is read, and searched within
        it, with the title taken out (`asked_of_the_paper`), whatever its own search found first: the
        query as read, and the sources; the query and the sources as they are for any other question."""
        aliases = self.aliases() if self.aliases is not None else {}
        titled = self.titled(query)
        if self.search_within is None or not (aliases or titled):
            return query, sources

        def writes(name: str, paper: str) -> bool:
            return any(name.lower() in h.text.lower() for h in self.search_within(Query.of(name), [paper], 3))

        paper = paper_asked_about(query.text, aliases, writes, titled)
        if paper is None:
            return query, sources
        if titled is not None:
            query = query.derive(asked_of_the_paper(query.text, titled, query.language))
        query.view(ASKED_PAPER, lambda: paper)
        # the question's own search found it first, and with the words asked of it (a title's words
        # find the passages that present the paper)
        if sources[0].hit.document_id == paper and titled is None:
            return query, sources
        retrieved = {s.hit.text_unit_id: s for s in sources}
        number = next_number(sources)
        first = []
        for hit in self.search_within(query, [paper], ASKED_PAPER_PASSAGES):
            source = retrieved.pop(hit.text_unit_id, None)
            if source is None:  # a passage the question's own search did not return: numbered after its sources
                source, number = Source(number, hit), number + 1
            first.append(source)
        rest = list(retrieved.values())
        return query, (first + [s for s in rest if s.hit.document_id == paper]
                       + [s for s in rest if s.hit.document_id != paper])

    def with_defining_passage(self, query: Query, sources: list[Source]) -> list[Source]:
        """For a question that asks what a thing is, where no source says it (`definitions.py`), the
        first passage of the paper it is asked of (or of the first source's) in the last source's
        place, numbered after them: a paper says what its method is in its abstract, which the
        question's words need not find ("... a 540-billion parameter, densely activated, Transformer
        language model, which we call Pathways Language Model (PaLM)." for "What is PaLM?"). The
        sources as they are for any other question, and for an LLM's answer."""
        term = term_asked(query)
        said = (defines(clean_quote(s.text), term) == SAYS for s in sentences_of(sources) if quotable(s))
        if not term or self.first_passage is None or any(said):  # read as the reader reads them
            return sources
        hit = self.first_passage(query.known(ASKED_PAPER) or sources[0].hit.document_id)
        if hit is None or any(s.hit.text_unit_id == hit.text_unit_id for s in sources):
            return sources
        return sources[:self.reader.max_sources - 1] + [Source(next_number(sources), hit)]

    def checked(self, text: str, sources: Sequence[Source], lang: str) -> Answer:
        """The LLM's answer with its citations resolved and (answer.verify) each sentence checked
        against the sources; "insufficient" when no sentence is supported."""
        sentences, dropped, moved, quoted = [], [], 0, ""
        if self.config.verify:
            text, checks = self.verifier.check(text, sources)
            sentences = [c.to_dict() for c in checks]
            dropped = [c.text for c in checks if c.status == "dropped"]
            moved = sum(c.status == "recited" for c in checks)
            quoted = " / ".join(f"“{d[:160]}”" for d in dropped[:3])
            if dropped and not any(c.status in ("supported", "recited", "cited") for c in checks):
                answer = insufficient(lang, f"no passage supports what the model wrote: {quoted}")
                answer.sentences = sentences
                return answer
        text, citations = resolve_citations(text, sources)
        notes = [] if citations else ["the model cited no source"]
        if dropped:
            notes.append(f"{len(dropped)} sentence(s) no passage supports were dropped: {quoted}")
        if moved:
            notes.append(f"{moved} sentence(s) re-cited to the passage that supports them")
        return Answer(text=text, kind="llm", citations=citations, language=lang, note="; ".join(notes),
                      sentences=sentences)

    async def aexpand(self, query: Query) -> list[str]:
        """LLM rewrites of the query (the query itself first); just the query when there is no LLM
        or the LLM fails, since expansion only adds recall."""
        if self.llm is None:
            return [query.text]
        n = self.config.expansions
        reply = await structured_reply(self.llm, "expand_query", self.language(query), query.text, QueryRewrites,
                                       self.config.prompts_dir or None, n=n)
        if reply is None:
            return [query.text]
        rewrites = [q.strip() for q in reply.queries if q.strip() and q.strip() != query.text]
        return [query.text] + list(dict.fromkeys(rewrites))[:n]
