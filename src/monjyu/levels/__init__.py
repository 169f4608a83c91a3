"""Levels 2-4: structure an LLM writes (entities and relations, community reports), built only
where questions go and kept, so a collection pays for it once and only where it is asked about.

Level 0 and 1 (text units, vectors, BM25, the noun-phrase graph and its communities) are built
by `monjyu index` without an LLM. With an LLM configured, lazy search deepens to Level 2 when its
relevance tests found too little or the question asks how things relate: the units it kept are
sent to entity and relation extraction (`extract.py`), and the units naming the same entities
(in a kept extraction, or as a noun phrase) are tested next. A global question deepens to Level
4: reports on the communities it reads, written the first time they are needed (`reports.py`).
`monjyu index --level 2` / `--level 4` build either for the whole collection up front.
Everything is kept in the index directory (`levels/`), keyed by content and model; with no LLM
nothing here runs.
"""

from .extract import Extraction, LevelTwo
from .reports import LevelFour
from .store import ExtractionStore

__all__ = ["Extraction", "ExtractionStore", "LevelFour", "LevelTwo"]
