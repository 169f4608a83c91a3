"""Levels 2-4: structure an LLM writes (entities and relations, community reports), built only
where questions go and kept, so a collection pays for it once and only where it is asked about.

Level 0 and 1 (text units, vectors, BM25, the noun-phrase graph and its communities) are built
by `monjyu index` without an LLM. With an LLM configured, lazy search deepens to Level 2 when its
relevance tests found too little: the units it kept are sent to entity and relation extraction
(`extract.py`), and the entities join the graph walk beside the noun phrases. `monjyu index
--level 2` extracts from every unit up front. Everything is kept in the index directory, keyed
by content and model (`store.py`); with no LLM nothing here runs.
"""

from .extract import Extraction, LevelTwo
from .store import ExtractionStore

__all__ = ["Extraction", "ExtractionStore", "LevelTwo"]
