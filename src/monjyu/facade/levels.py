"""Levels 2-4 as users see them: how much of the collection each level covers, what building
one for the whole collection would cost, and building it (`monjyu index --level 2 / 3 / 4`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import MonjyuError
from ..levels.reports import community_key
from ..levels.store import EXTRACTIONS, unit_key
from ..engines.lazy.themes import ThemeFinder
from ..llm import UsageScope, load_prompt, run_sync
from ..nlp.lang import detect_language
from .workspace import Workspace

BATCH = 64  # units extracted at a time by an eager build (each stored as it arrives)
# Output tokens assumed for the estimate printed before an eager build: an extraction names a
# handful of entities and relations (~25 tokens each); a report has a title, a summary and up
# to eight claims.
OUTPUT_TOKENS = {2: 200, 3: 200, 4: 400}  # level 3 sends what level 2 does


class Levels:
    """Coverage, estimate and eager build of the LLM levels over the current generation (`m.levels`)."""

    def __init__(self, workspace: Workspace):
        self.workspace = workspace

    def status(self) -> dict[str, Any]:
        """Per level, how much of the collection it covers: Level 0 units, Level 1 phrases and
        communities, Level 2 the units whose entities the configured LLM has extracted, Level 3
        the entity graph made of them, Level 4 the communities with a report."""
        context = self.workspace.current()
        manifest = context.manifest
        counts = manifest.counts
        out: dict[str, Any] = {"0": {"units": counts.get("text_units", 0)}}
        if 1 in manifest.levels:
            out["1"] = {"phrases": counts.get("phrases", 0), "communities": counts.get("communities", 0)}
        level2 = self.workspace.level_two()
        if level2 is None:
            out["2"] = {"model": None, "note": "built with an LLM (llm.provider), and none is configured"}
            return out
        texts = list(context.searcher.index.columns["text"])
        done = len(level2.records(sorted({unit_key(t) for t in texts})))
        unique = len(set(texts))
        out["2"] = {"model": level2.model, "units_extracted": done, "units": unique,
                    "share": round(done / unique, 4) if unique else 0.0}
        entities = context.level_three()
        out["3"] = {"model": level2.model, **(entities.to_dict() if entities is not None else
                                              {"entities": 0, "note": "derived from Level 2, which has nothing yet"})}
        if 1 in manifest.levels:
            keys = self._community_keys()
            level4 = self.workspace.level_four()
            written = len(level4.kept(list(keys.values())))
            out["4"] = {"model": level4.model, "communities_reported": written, "communities": len(keys),
                        "share": round(written / len(keys), 4) if keys else 0.0}
        return out

    def estimate(self, level: int) -> dict[str, Any]:
        """What building `level` for the whole collection would send: level 2 (and 3, made of
        it with no LLM call) the units not extracted yet for the configured model, level 4 the
        communities without a report; their prompt tokens (instructions + text) and the output
        tokens assumed (OUTPUT_TOKENS each)."""
        builder = self.require(level)
        todo, done = self._todo(level, builder)
        count = self.workspace.answers().count_tokens
        prompt_name = "report" if level == 4 else "extract"
        instructions = {lang: count(load_prompt(prompt_name, lang, self.workspace.config.answer.prompts_dir or None))
                        for lang in ("en", "ja")}
        texts = ["\n".join(s for _, s in sentences) for _, _, sentences in todo] if level == 4 else todo
        prompt = sum(count(t) + instructions[detect_language(t)] for t in texts)
        return {"level": level, "model": builder.model, "items": len(todo),
                "what": "community reports" if level == 4 else "passages", "prompt_tokens": prompt,
                "completion_tokens": OUTPUT_TOKENS[level] * len(todo), "already_built": done}

    def build(self, level: int, progress: Callable[[int], None] | None = None) -> dict[str, Any]:
        """Level 2: extract entities and relations from every unit not extracted yet for the
        configured model; level 3: the same, then the entity graph of them all; level 4: write a
        report for every community that has none. Each is kept as it arrives, so an interrupted
        build resumes where it stopped.

        Args:
            level: 2, 3 or 4.
            progress: called with the number of items done after each batch.

        Returns:
            Items sent, reused (built before) and failed, and the usage of the calls.
        """
        builder = self.require(level)
        todo, done = self._todo(level, builder)
        sent = failed = 0
        with UsageScope(builder.llm) as usage:
            for start in range(0, len(todo), BATCH):
                batch = todo[start:start + BATCH]
                if level in (2, 3):
                    _, run = run_sync(builder.extract(batch))
                    missed = run.failed
                else:
                    _, missed = run_sync(builder.write(batch))
                sent, failed = sent + len(batch), failed + missed
                if progress:
                    progress(len(batch))
        built = {"level": level, "model": builder.model, "sent": sent, "failed": failed, "reused": done,
                 "usage": usage.to_dict()}
        if level == 3:
            entities = self.workspace.current().level_three()
            built["level3"] = entities.to_dict() if entities is not None else {"entities": 0}
        return built

    def forget_removed_units(self) -> None:
        """After a build: the extractions of units the new generation no longer holds are
        dropped from the level records (every model's), wherever the index keeps them."""
        records = self.workspace.level_records()
        kept = records.keys(EXTRACTIONS)
        if kept and self.workspace.generation_or_none() is not None:
            records.remove(EXTRACTIONS, kept - set(self.workspace.current().searcher.rows_by_text_key()))

    def require(self, level: int):
        """The builder of `level` (2, 3, 4), or a clear error: another level, no LLM, no communities."""
        if level not in (2, 3, 4):
            raise MonjyuError(f"level {level} cannot be built on its own: levels 0 and 1 are built by every "
                              "`monjyu index`, levels 2, 3 and 4 by `monjyu index --level 2`, `--level 3` or "
                              "`--level 4`")
        builder = self.workspace.level_four() if level == 4 else self.workspace.level_two()
        if builder is None:
            raise MonjyuError(f"level {level} is built by an LLM, and none is configured (llm.provider: none); "
                              "configure one in monjyu.yaml")
        if level == 4 and 1 not in self.workspace.manifest().levels:
            raise MonjyuError("level 4 reports are on the Level 1 communities, which this index does not have: "
                              "run `monjyu index` without --level 0 first")
        return builder

    def _community_keys(self) -> dict[int, str]:
        """Each community's report key ({} when the index has no communities)."""
        index = self.workspace.current().searcher.index
        if index.graph is None or index.communities is None:
            return {}
        return {c.id: community_key([index.graph.phrases[p] for p in c.phrases]) for c in index.communities.by_id.values()}

    def _todo(self, level: int, builder) -> tuple[list, int]:
        """What an eager build of `level` still has to send, and how many are built already."""
        if level in (2, 3):
            texts = list(dict.fromkeys(self.workspace.current().searcher.index.columns["text"]))
            done = builder.records([unit_key(t) for t in texts])
            return [t for t in texts if unit_key(t) not in done], len(done)
        context = self.workspace.current()
        searcher, config = context.searcher, self.workspace.config
        keys = self._community_keys()
        done = builder.kept(list(keys.values()))
        finder = ThemeFinder(searcher, self.workspace.answers().scorer, config.answer.min_sentence_score,
                             context.embed_query)
        texts = searcher.index.columns["text"]
        todo = []
        for cid, key in sorted(keys.items()):
            community = searcher.index.communities.by_id[cid]
            if key not in done:
                sentences = finder.central_sentences(community, config.lazy.report_sentences)
                if sentences:
                    todo.append((key, community.title, [(texts[row], text) for row, _, _, text in sentences]))
        return todo, len(done)
