"""Levels 2-4 as users see them: how much of the collection each level covers, what building
one for the whole collection would cost, and building it (`monjyu index --level 2`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import MonjyuError
from ..levels.store import unit_key
from ..llm import load_prompt, run_sync
from ..nlp.lang import detect_language

BATCH = 64  # units extracted at a time by an eager build (each stored as it arrives)
# Output tokens an extraction is assumed to take per unit, for the estimate printed before an
# eager build (a passage names a handful of entities and relations, ~25 tokens each).
OUTPUT_TOKENS_PER_UNIT = 200


class LevelsMixin:
    """Coverage, estimate and eager build of the LLM levels over the current generation."""

    def levels(self) -> dict[str, Any]:
        """Per level, how much of the collection it covers: Level 0 units, Level 1 phrases and
        communities, Level 2 the units whose entities the configured LLM has extracted."""
        manifest = self.manifest()
        counts = manifest.counts
        out: dict[str, Any] = {"0": {"units": counts.get("text_units", 0)}}
        if 1 in manifest.levels:
            out["1"] = {"phrases": counts.get("phrases", 0), "communities": counts.get("communities", 0)}
        level2 = self._level_two()
        if level2 is None:
            out["2"] = {"model": None, "note": "built with an LLM (llm.provider), and none is configured"}
            return out
        texts = self._unit_texts()
        done = len(level2.store.records(level2.model, sorted({unit_key(t) for t in texts})))
        unique = len(set(texts))
        out["2"] = {"model": level2.model, "units_extracted": done, "units": unique,
                    "share": round(done / unique, 4) if unique else 0.0}
        return out

    def level_estimate(self, level: int) -> dict[str, Any]:
        """What building `level` for every unit would send: the units not extracted yet for the
        configured model, their prompt tokens (instructions + text) and the output tokens
        assumed (OUTPUT_TOKENS_PER_UNIT each)."""
        level2 = self._require_level(level)
        todo = self._todo(level2)
        count = self._answer_engine().count_tokens
        instructions = {lang: count(load_prompt("extract", lang, self.config.answer.prompts_dir or None))
                        for lang in ("en", "ja")}
        prompt = sum(count(t) + instructions[detect_language(t)] for t in todo)
        return {"level": level, "model": level2.model, "units": len(todo), "prompt_tokens": prompt,
                "completion_tokens": OUTPUT_TOKENS_PER_UNIT * len(todo),
                "already_extracted": len(set(self._unit_texts())) - len(todo)}

    def build_level(self, level: int, progress: Callable[[int], None] | None = None) -> dict[str, Any]:
        """Extract entities and relations from every unit not extracted yet for the configured
        model (each kept as it arrives: an interrupted build resumes where it stopped).

        Args:
            level: 2.
            progress: called with the number of units done after each batch.

        Returns:
            Units sent, reused and failed, and the usage of the calls.
        """
        level2 = self._require_level(level)
        todo = self._todo(level2)
        sent = failed = 0
        usage: dict[str, Any] = {}
        for start in range(0, len(todo), BATCH):
            _, run = run_sync(level2.extract(todo[start:start + BATCH]))
            sent, failed = sent + run.sent, failed + run.failed
            usage = {k: usage.get(k, 0) + v for k, v in run.usage.items()}
            if progress:
                progress(run.sent)
        return {"level": level, "model": level2.model, "sent": sent, "failed": failed,
                "reused": len(set(self._unit_texts())) - len(todo), "usage": usage}

    def _require_level(self, level: int):
        if level != 2:
            raise MonjyuError(f"level {level} cannot be built up front: levels 0 and 1 are built by every "
                              "`monjyu index`, level 2 by `monjyu index --level 2`")
        level2 = self._level_two()
        if level2 is None:
            raise MonjyuError("level 2 is built by an LLM, and none is configured (llm.provider: none); "
                              "configure one in monjyu.yaml")
        return level2

    def _unit_texts(self) -> list[str]:
        return list(self._searcher()[1].index.columns["text"])

    def _todo(self, level2) -> list[str]:
        texts = list(dict.fromkeys(self._unit_texts()))
        done = level2.store.records(level2.model, [unit_key(t) for t in texts])
        return [t for t in texts if unit_key(t) not in done]
