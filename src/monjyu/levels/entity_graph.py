"""Level 3: the entities and relations of Level 2 joined into one graph and clustered.

Built from what Level 2 holds for the units of the current generation, whenever that changes
(a unit extracted, a document added or removed): it costs no LLM call, so it is derived, not
stored, and a removed document's entities leave it with the generation that drops its units.

- **Entities merge** by `same_entity` (names of one type: the same surface form, an
  abbreviation and its expansion, a name with middle names added; never two names that carry
  different numbers). The benchmarks page measures the rule on written pairs.
- **Each entity links units**: those whose extraction names it under any of its names, and those
  where one of its names is a noun phrase of Level 1 (not a hub). The graph walks of graph and
  hybrid search go through these links (`retrieval.graph.PhraseGraph.link_entities`), so a unit
  is reached through an entity it mentions under another name.
- **Communities**: the entities linked by a relation or named in one unit, clustered with Level
  1's hierarchical Leiden.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from ..config import GraphConfig
from ..index.communities import Assignments, leiden_hierarchy
from ..nlp.abbreviations import abbreviates
from .extract import Extraction, entity_key

MAX_NAMED_PER_UNIT = 30  # a unit naming more entities links only its first this many in the clustering

_NUMBER = re.compile(r"\d+|(?<![\w.])(?:[IVX]+|[A-Z])(?![\w.])")
_ARTICLE = re.compile(r"^(?:the|a|an) ")
_JOINERS = re.compile(r"[\s\-‐‑–_/]+")


def name_numbers(name: str) -> tuple[str, ...]:
    """The numbers and single-letter marks a name carries: digits, Roman numerals and a lone
    capital ("SARS-CoV-2": 2, "type I interferon": I, "influenza A virus": A). Two names that
    differ there name different things however alike they read."""
    return tuple(sorted(_NUMBER.findall(name)))


def surface_key(name: str) -> str:
    """A name with what only its spelling varies taken off: case, a leading article, hyphens
    and spaces between its parts, a plural s ("The Vero cells" and "vero cell", "interleukin 6"
    and "interleukin-6" are one key)."""
    words = _ARTICLE.sub("", entity_key(name)).split()
    if words and name.split()[-1].islower():  # "cells", not "SARS"
        words[-1] = _singular(words[-1])
    return _JOINERS.sub("", " ".join(words))


def _singular(word: str) -> str:
    for plural, single in (("ies", "y"), ("ses", "s"), ("xes", "x"), ("ches", "ch"), ("shes", "sh")):
        if word.endswith(plural) and len(word) > len(plural) + 2:
            return word[:-len(plural)] + single
    return word[:-1] if word.endswith("s") and not word.endswith(("ss", "us", "is")) else word


def middle_names(a: str, b: str) -> bool:
    """One proper name is the other with middle names added ("Aretha Franklin" / "Aretha Louise
    Franklin"): both two to five capitalised words, the same first and last word, every word of
    the shorter in the longer."""
    x, y = sorted((a.split(), b.split()), key=len)
    if not (2 <= len(x) < len(y) <= 5) or not all(w[:1].isupper() for w in x + y):
        return False
    return x[0] == y[0] and x[-1] == y[-1] and set(x) <= set(y)


def same_entity(a: str, b: str) -> bool:
    """Level 3's merge rule for two names of the same type: the same numbers, and the same
    surface key, one an abbreviation of the other or one the other with middle names. Name vectors are not used: on the written
    pairs, different entities with near names ("SARS-CoV" / "SARS-CoV-2", two Bachs) are closer
    than an entity and its abbreviation at every threshold."""
    if name_numbers(a) != name_numbers(b):
        return False
    return surface_key(a) == surface_key(b) or abbreviates(a, b) or abbreviates(b, a) or middle_names(a, b)


class _Merged:
    """Union-find over names that keeps each entity to one type: an untyped name (a relation's
    end) joins a typed entity, but never bridges two entities of different types."""

    def __init__(self, types: list[str]):
        self.parent = list(range(len(types)))
        self.type = list(types)  # by root: the entity's type ("" while none of its names has one)

    def find(self, i: int) -> int:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def union(self, i: int, j: int) -> None:
        a, b = self.find(i), self.find(j)
        if a == b or (self.type[a] and self.type[b] and self.type[a] != self.type[b]):
            return
        root, child = min(a, b), max(a, b)
        self.parent[child] = root
        self.type[root] = self.type[root] or self.type[child]


def merge_names(names: list[tuple[str, str]]) -> list[int]:
    """Each (name, type)'s entity number, names merged by `same_entity` when their types agree
    (an untyped name, such as a relation's end, agrees with any one type). Only names that could
    match are compared: those with one surface key and the same numbers; each abbreviation-shaped
    token against the names of two or more words with its first letter; names of two or more
    words with the same first and last word (middle names)."""
    merged = _Merged([kind for _, kind in names])
    numbers = [name_numbers(name) for name, _ in names]
    by_key: dict[tuple, list[int]] = defaultdict(list)
    long_by_letter: dict[str, list[int]] = defaultdict(list)
    by_ends: dict[tuple, list[int]] = defaultdict(list)
    shorts = []
    for i, (name, _) in enumerate(names):
        by_key[surface_key(name), numbers[i]].append(i)
        words = name.split()
        if len(words) >= 2:
            long_by_letter[name[0].lower()].append(i)
            by_ends[words[0], words[-1]].append(i)
        elif sum(c.isupper() for c in name) >= 2:
            shorts.append(i)
    for members in by_key.values():
        for j in members[1:]:
            merged.union(members[0], j)
    for i in shorts:
        for j in long_by_letter.get(names[i][0][0].lower(), ()):
            if numbers[i] == numbers[j] and abbreviates(names[i][0], names[j][0]):
                merged.union(i, j)
    for members in by_ends.values():
        for x, i in enumerate(members):
            for j in members[x + 1:]:
                if numbers[i] == numbers[j] and middle_names(names[i][0], names[j][0]):
                    merged.union(i, j)
    roots = [merged.find(i) for i in range(len(names))]
    number = {root: n for n, root in enumerate(dict.fromkeys(roots))}
    return [number[r] for r in roots]


@dataclass
class EntityGraph:
    """Level 3 over one generation: merged entities, the units each links, their relations and
    communities (rows are the text_units table's)."""

    names: list[list[str]]  # per entity: its names, most used (then longest) first: the first is its label
    types: list[str]
    units: list[np.ndarray]  # per entity: the rows that name it
    relations: list[tuple[int, int, str]]  # (source entity, target entity, description)
    communities: Assignments = field(default_factory=Assignments.empty)
    extracted_units: int = 0  # units of the generation with an extraction

    def __len__(self) -> int:
        return len(self.names)

    @cached_property
    def _by_key(self) -> dict[str, int]:
        return {entity_key(n): e for e, names in enumerate(self.names) for n in names}

    def entity_of(self, name: str) -> int | None:
        """The entity one of whose names is `name` (compared as entity keys)."""
        return self._by_key.get(entity_key(name))

    @cached_property
    def by_unit(self) -> dict[int, set[int]]:
        """row -> the entities it names."""
        named: dict[int, set[int]] = {}
        for e, rows in enumerate(self.units):
            for row in rows.tolist():
                named.setdefault(row, set()).add(e)
        return named

    def merged(self) -> list[list[str]]:
        """The entities known under more than one name (what the merge rule joined)."""
        return [names for names in self.names if len({entity_key(n) for n in names}) > 1]

    def to_dict(self) -> dict:
        levels = sorted(set(self.communities.level.tolist()))
        return {"entities": len(self), "merged": len(self.merged()), "relations": len(self.relations),
                "units_extracted": self.extracted_units,
                "communities": len(set(self.communities.community.tolist())), "community_levels": len(levels)}


def build_entity_graph(extractions: dict[str, Extraction], rows_of_key: dict[str, list[int]],
                       phrase_units: Callable[[str], np.ndarray | None], cfg: GraphConfig) -> EntityGraph:
    """Level 3 from the extractions of the generation's units (by unit key): names merged,
    each entity's units (extractions and noun phrases), the relations between entities, and
    their communities. `phrase_units(name)`: the rows where `name` is a non-hub noun phrase."""
    typed: dict[str, str] = {}  # entity key -> the first type an extraction gave it
    surfaces: dict[tuple[str, str], Counter] = defaultdict(Counter)  # (key, type) -> surface forms
    for record in extractions.values():
        for e in record.entities:
            key, kind = entity_key(e.name), e.type.strip().lower()
            typed.setdefault(key, kind)
            surfaces[key, kind][e.name.strip()] += 1
    for record in extractions.values():  # relation ends join their typed entity, else stay untyped
        for r in record.relations:
            for end in (r.source, r.target):
                key = entity_key(end)
                if key and (key, typed.get(key, "")) not in surfaces:
                    surfaces[key, ""][end.strip()] += 1
    surfaces = {k: c for k, c in surfaces.items() if k[0]}
    nodes = sorted(surfaces)
    number = merge_names([(surfaces[n].most_common(1)[0][0], n[1]) for n in nodes])
    entity_of_key: dict[str, int] = {}
    by_entity: dict[int, Counter] = defaultdict(Counter)
    kinds: dict[int, Counter] = defaultdict(Counter)
    for node, e in zip(nodes, number):
        entity_of_key.setdefault(node[0], e)
        by_entity[e].update(surfaces[node])
        if node[1]:
            kinds[e][node[1]] += 1
    count = len(by_entity)
    names = [sorted(by_entity[e], key=lambda n, c=by_entity[e]: (-c[n], -len(n), n)) for e in range(count)]
    types = [kinds[e].most_common(1)[0][0] if kinds[e] else "" for e in range(count)]
    rows: list[set[int]] = [set() for _ in range(count)]
    relations: list[tuple[int, int, str]] = []
    named_together: list[list[int]] = []
    for key, record in extractions.items():
        here = sorted({entity_of_key[n] for n in record.names() if n in entity_of_key})
        for e in here:
            rows[e].update(rows_of_key.get(key, ()))
        named_together.append(here[:MAX_NAMED_PER_UNIT])
        for r in record.relations:
            a, b = entity_of_key.get(entity_key(r.source)), entity_of_key.get(entity_key(r.target))
            if a is not None and b is not None and a != b:
                relations.append((a, b, r.description))
    for e in range(count):
        for name in {entity_key(n) for n in names[e]}:
            found = phrase_units(name)
            if found is not None:
                rows[e].update(found.tolist())
    return EntityGraph(names, types, [np.array(sorted(r), np.int64) for r in rows], relations,
                       _communities(relations, named_together, cfg), len(extractions))


def _communities(relations: list[tuple[int, int, str]], named_together: list[list[int]], cfg: GraphConfig) -> Assignments:
    """Hierarchical Leiden over the entities: a link per relation and per unit naming both."""
    links: Counter = Counter()
    for a, b, _ in relations:
        links[min(a, b), max(a, b)] += 1
    for here in named_together:
        for x, a in enumerate(here):
            for b in here[x + 1:]:
                links[a, b] += 1
    if not links:
        return Assignments.empty()
    pairs = sorted(links)
    return leiden_hierarchy(np.array([a for a, _ in pairs], np.int64), np.array([b for _, b in pairs], np.int64),
                            np.array([links[p] for p in pairs], np.float64), cfg)
