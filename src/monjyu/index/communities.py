"""Hierarchical communities of the noun-phrase graph: a full Leiden clustering, or an update of
the previous generation's hierarchy that re-clusters only where the graph changed.

Why an update: adding one paper to a large collection changes the links of a few hundred
phrases, but a full hierarchical Leiden re-clusters every phrase of the collection. The update
keeps every community whose phrases kept their links, places each new phrase in the smallest
community its links point to, and re-runs Leiden only inside the parents of the smallest
communities that changed (tens to hundreds of phrases each). Communities left as they were keep
their ids, so what refers to them (conversations, links in the web app) still holds.

What an update cannot do is move a phrase between the large communities near the top of the
hierarchy. How far the graph moved since the last full clustering is kept as the drift: the
co-occurrence counts added and removed since then, as a share of the links the full clustering
saw (one paper added to a thousand moves about a thousandth of them, though it touches the links
of every phrase it mentions). Past `graph.recluster_drift` the build clusters from scratch (and
`monjyu index --recluster` asks for it).
"""

from __future__ import annotations

from collections import defaultdict, deque
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from ..config import GraphConfig

@dataclass
class Assignments:
    """One row per level a phrase belongs to: (phrase, community, level, parent community, -1 for
    a top one), as arrays: a million-unit collection has ten million rows, too many for tuples."""

    node: np.ndarray
    community: np.ndarray
    level: np.ndarray
    parent: np.ndarray

    @classmethod
    def empty(cls) -> "Assignments":
        return cls(*(np.zeros(0, np.int64) for _ in range(4)))

    def __len__(self) -> int:
        return len(self.node)

    def __iter__(self):
        """(phrase, community, level, parent or None) tuples, for reading a few."""
        for n, c, lvl, p in zip(*(a.tolist() for a in (self.node, self.community, self.level, self.parent))):
            yield n, c, lvl, (None if p < 0 else p)

    def __eq__(self, other) -> bool:
        return all(np.array_equal(getattr(self, k), getattr(other, k)) for k in ("node", "community", "level", "parent"))


@dataclass
class Graph:
    """The co-occurrence graph as Leiden sees it: edges (src < dst) and their weights."""

    n_nodes: int
    src: np.ndarray
    dst: np.ndarray
    count: np.ndarray  # units the two phrases share
    weight: np.ndarray  # what Leiden maximises modularity over

    def nodes(self) -> np.ndarray:
        """The phrases with a link, ascending."""
        linked = np.zeros(self.n_nodes, bool)
        linked[self.src] = True
        linked[self.dst] = True
        return np.flatnonzero(linked)

    def adjacency(self) -> sp.csr_matrix:
        n = self.n_nodes
        a = sp.coo_matrix((self.weight, (self.src, self.dst)), shape=(n, n)).tocsr()
        return (a + a.T).tocsr()


@dataclass
class PreviousClustering:
    """The current generation's hierarchy and links, with phrases named by their text (a new
    build numbers phrases anew)."""

    titles: list[str]  # old phrase id -> text
    src: np.ndarray  # old edges, old phrase ids
    dst: np.ndarray
    count: np.ndarray
    ids: list[int]  # communities
    levels: list[int]
    parents: list[int]  # -1: a top community
    members: tuple[np.ndarray, np.ndarray]  # each community's old phrase ids: (offsets, values)
    changed_since_full: int = 0  # co-occurrence counts added and removed since the last full clustering
    links_at_full: int = 0  # the sum of the co-occurrence counts that clustering saw
    link_bound: int = 0  # the links kept per phrase when there were more than graph.max_links (0: all)


@dataclass
class Clustering:
    assignments: Assignments
    mode: str  # "full" or "update"
    changed: int = 0  # phrases added, removed or with changed links
    reclustered: int = 0  # phrases Leiden ran over
    drift: float = 0.0  # counts changed since the last full clustering / the counts it saw
    state: dict[str, int] = field(default_factory=dict)  # what the manifest keeps for the next build


def full_clustering(graph: Graph, cfg: GraphConfig) -> Clustering:
    return Clustering(leiden_hierarchy(graph.src, graph.dst, graph.weight, cfg), "full",
                      reclustered=len(graph.nodes()),
                      state={"links_at_full": int(graph.count.sum()), "changed_since_full": 0})


def cluster(graph: Graph, cfg: GraphConfig, titles: list[str], previous: PreviousClustering | None,
            recluster: bool = False, number: np.ndarray | None = None) -> Clustering:
    """A full clustering when asked, when there is nothing to update, or when the drift since the
    last full one would pass `cfg.recluster_drift`; else an update of `previous`. `number`: each
    previous phrase's id in `titles` (-1: gone), when the caller knows it (else found by text)."""
    if previous is None or recluster or not previous.ids or cfg.recluster_drift <= 0:
        return full_clustering(graph, cfg)
    update = _Update(graph, cfg, titles, previous, number)
    total = previous.changed_since_full + update.moved
    drift = total / max(previous.links_at_full, 1)
    if drift > cfg.recluster_drift:
        result = full_clustering(graph, cfg)
        result.changed, result.drift = len(update.changed), drift
        return result
    assignments, reclustered = update.run()
    return Clustering(assignments, "update", changed=len(update.changed), reclustered=reclustered, drift=drift,
                      state={"links_at_full": previous.links_at_full, "changed_since_full": total})


def leiden_hierarchy(src: np.ndarray, dst: np.ndarray, weight: np.ndarray, cfg: GraphConfig) -> Assignments:
    """Hierarchical Leiden, deterministic for a seed: Leiden over the whole graph, then again over
    the links inside each community larger than cfg.max_cluster_size, its parts one level down,
    until every community is small enough or Leiden no longer splits it (graspologic's
    hierarchical_leiden does the same, but takes the graph as a Python tuple per edge: 9.6 GB for
    the 26.9M links of a 100k-unit collection). Each run takes the graph as CSR arrays, read in
    place by the native code."""
    if len(src) == 0:
        return Assignments.empty()
    # The nodes with a link, numbered 0..n-1 in id order (a mask, not a sort of every link end).
    linked = np.zeros(int(max(src.max(), dst.max())) + 1, bool)
    linked[src] = True
    linked[dst] = True
    present = np.flatnonzero(linked)
    number = np.cumsum(linked, dtype=np.int64) - 1
    n = len(present)
    half = sp.csr_matrix((np.asarray(weight, np.float64), (number[src], number[dst])), shape=(n, n))
    del linked, number
    adjacency = (half + half.T).tocsr()
    del half
    adjacency.sort_indices()
    top = _leiden(adjacency, cfg.seed)
    rows: list[tuple[np.ndarray, int, int, int | None]] = []
    # (members, their links: the parent's links sliced to them, so a split costs its parent's
    # size, not a pass over the whole graph's columns; community, level)
    todo: deque[tuple[np.ndarray, sp.csr_matrix, int, int]] = deque()
    next_id = 0
    for members in _groups(top):
        rows.append((members, next_id, 0, None))
        if len(members) > cfg.max_cluster_size:
            todo.append((members, adjacency[members][:, members], next_id, 0))
        next_id += 1
    del adjacency
    while todo:
        parent_members, links, parent, level = todo.popleft()
        parts = _groups(_leiden(links, cfg.seed))
        if len(parts) < 2:
            continue  # Leiden keeps it whole: it stays a leaf
        for part in parts:
            members = parent_members[part]
            rows.append((members, next_id, level + 1, parent))
            if len(members) > cfg.max_cluster_size:
                todo.append((members, links[part][:, part], next_id, level + 1))
            next_id += 1
    sizes = [len(members) for members, _, _, _ in rows]
    return Assignments(present[np.concatenate([members for members, _, _, _ in rows])],
                       *(np.repeat(np.array([r[i] if r[i] is not None else -1 for r in rows], np.int64), sizes)
                         for i in (1, 2, 3)))


def _leiden(adjacency: sp.csr_matrix, seed: int) -> np.ndarray:
    """Leiden (modularity) over a symmetric adjacency: each node's community number."""
    from graspologic_native import leiden_csr

    _, found = leiden_csr(np.asarray(adjacency.indptr, np.int64), np.asarray(adjacency.indices, np.int32),
                          np.asarray(adjacency.data, np.float64), adjacency.shape[0], seed=seed)
    labels = np.empty(adjacency.shape[0], np.int64)
    labels[np.fromiter(found.keys(), np.int64, len(found))] = np.fromiter(found.values(), np.int64, len(found))
    return labels


def _groups(labels: np.ndarray) -> list[np.ndarray]:
    """The positions of each label, by the label's first position: a fixed order for a seed."""
    order = np.argsort(labels, kind="stable")
    bounds = np.flatnonzero(np.diff(labels[order])) + 1
    groups = np.split(order, bounds)
    return sorted(groups, key=lambda g: int(g[0]))


def modularity(graph: Graph, assignments: Assignments, level: int = 0) -> float:
    """Modularity of the partition at `level` (the top one by default): how much more weight
    lies inside communities than chance would put there. Phrases without a community at that
    level count as their own."""
    if len(graph.src) == 0:
        return 0.0
    label = np.arange(graph.n_nodes, dtype=np.int64) + (1 << 40)
    at = assignments.level == level
    label[assignments.node[at]] = assignments.community[at]
    m = float(graph.weight.sum())
    degree = np.bincount(graph.src, graph.weight, graph.n_nodes) + np.bincount(graph.dst, graph.weight, graph.n_nodes)
    inside = float(graph.weight[label[graph.src] == label[graph.dst]].sum())
    _, groups = np.unique(label, return_inverse=True)
    strength = np.bincount(groups, degree)
    return inside / m - float((strength ** 2).sum()) / (4 * m * m)


class _Update:
    """One update of a previous hierarchy to a new graph (see the module docstring). The
    hierarchy is held as arrays, one row per community and member phrase (ten million rows at a
    million units); only the communities the update touches are read one by one."""

    def __init__(self, graph: Graph, cfg: GraphConfig, titles: list[str], previous: PreviousClustering,
                 number: np.ndarray | None = None):
        self.graph, self.cfg = graph, cfg
        # Old phrase ids in the new numbering; a phrase no unit has any more gets an id past the end.
        gone_base = graph.n_nodes
        if number is not None and len(number) == len(previous.titles):
            remap = np.array(number, dtype=np.int64)
        else:
            new_id = {t: i for i, t in enumerate(titles)}
            remap = np.array([new_id.get(t, -1) for t in previous.titles], dtype=np.int64)
        missing = remap < 0
        remap[missing] = gone_base + np.arange(int(missing.sum()))
        n_ids = gone_base + int(missing.sum())
        self.in_graph = np.zeros(graph.n_nodes, bool)
        self.in_graph[graph.nodes()] = True
        # The edges by their first phrase, so a scope's links are read from its own phrases' rows.
        self.by_src = np.argsort(graph.src, kind="stable")
        self.src_ptr = np.concatenate([[0], np.cumsum(np.bincount(graph.src, minlength=graph.n_nodes))])

        # The previous tree, in new ids, without phrases that left the graph.
        self.level = dict(zip(previous.ids, previous.levels))
        self.parent = {c: (p if p >= 0 else None) for c, p in zip(previous.ids, previous.parents)}
        self.children: dict[int, list[int]] = defaultdict(list)
        for c, p in self.parent.items():
            if p is not None:
                self.children[p].append(c)
        offsets, values = previous.members
        sizes = np.diff(offsets)
        row_comm = np.repeat(np.asarray(previous.ids, np.int64), sizes)
        row_node = remap[np.asarray(values, np.int64)]
        present = np.zeros(n_ids, bool)
        present[:gone_base] = self.in_graph
        row_level = np.repeat(np.asarray(previous.levels, np.int64), sizes)
        was_clustered = np.zeros(n_ids, bool)  # the top level holds every clustered phrase
        was_clustered[row_node[row_level == 0]] = True
        kept = present[row_node]
        # The smallest community each phrase that left the graph was in (its ancestors lost it too,
        # but a change is re-clustered where it is smallest).
        self.left_leaves = set(_smallest(row_node[~kept], row_comm[~kept], row_level[~kept])[1].tolist())
        # The rows grouped by community (ascending), each community's phrases ascending.
        order = np.lexsort((row_node[kept], row_comm[kept]))
        self.row_comm, self.row_node = row_comm[kept][order], row_node[kept][order]
        self.row_level = row_level[kept][order]
        self.next_id = max(previous.ids) + 1
        self.added: dict[int, list[int]] = defaultdict(list)  # placed new phrases, by community
        self.grafted: list[tuple[int, np.ndarray]] = []  # (new community, its phrases)
        self.dropped: set[int] = set()  # communities a re-clustering replaced

        # Which phrases changed: the ends of every link added, dropped or recounted, phrases new to
        # the graph and those that left it.
        old = _pair_counts(remap[previous.src], remap[previous.dst], previous.count, n_ids)
        new = _pair_counts(graph.src, graph.dst, graph.count, n_ids)
        diff = (new - old).tocoo()
        self.moved = int(np.abs(diff.data).sum())  # co-occurrence counts added and removed
        touched = np.zeros(n_ids, bool)
        touched[diff.row[diff.data != 0]] = True
        touched[diff.col[diff.data != 0]] = True
        self.fresh = set(np.flatnonzero(present & ~was_clustered).tolist())
        left = was_clustered & ~present
        self.changed = set(np.flatnonzero((touched & present) | left).tolist()) | self.fresh
        self.n_ids = n_ids

    # ------------------------------------------------------------------ the update
    def run(self) -> tuple[Assignments, int]:
        leaf = self._leaves()
        unplaced = self._place_fresh(leaf)
        scopes = {self._scope(int(leaf[n])) for n in self.changed if leaf[n] >= 0}
        scopes |= {self._scope(c) for c in self.left_leaves}
        scopes = {s for s in scopes if not any(a in scopes for a in self._ancestors(s))}
        reclustered = 0
        for scope in sorted(scopes):
            nodes = self._members(scope)
            reclustered += len(nodes)
            self._recluster(scope, nodes)
        if unplaced:
            reclustered += len(unplaced)
            self._new_tops(sorted(unplaced))
        return self._assignments(), reclustered

    def _leaves(self) -> np.ndarray:
        """Each clustered phrase's smallest community (-1: none)."""
        leaf = np.full(self.n_ids, -1, np.int64)
        nodes, communities = _smallest(self.row_node, self.row_comm, self.row_level)
        leaf[nodes] = communities
        return leaf

    def _members(self, community: int) -> np.ndarray:
        """A community's phrases now (ascending): its kept rows and the new phrases placed in it."""
        a, b = np.searchsorted(self.row_comm, [community, community + 1])
        extra = self.added.get(community)
        return np.union1d(self.row_node[a:b], np.array(extra, np.int64)) if extra else self.row_node[a:b]

    def _place_fresh(self, leaf: np.ndarray) -> set[int]:
        """Each new phrase joins the smallest community holding most of its link weight (phrases
        linked only to other new phrases wait for those); what links to no community is left."""
        waiting = set(self.fresh)
        if not waiting:
            return waiting
        fresh = np.zeros(self.graph.n_nodes, bool)
        fresh[sorted(waiting)] = True
        src, dst, weight = self.graph.src, self.graph.dst, self.graph.weight
        touching = np.flatnonzero(fresh[src] | fresh[dst])
        links: dict[int, list[tuple[int, float]]] = defaultdict(list)
        for a, b, w in zip(src[touching].tolist(), dst[touching].tolist(), weight[touching].tolist()):
            links[a].append((b, w))
            links[b].append((a, w))
        while waiting:
            placed = []
            for n in sorted(waiting):
                weights: dict[int, float] = defaultdict(float)
                for m, w in sorted(links[n]):
                    if leaf[m] >= 0 and m not in waiting:
                        weights[int(leaf[m])] += w
                if weights:
                    best = max(weights.items(), key=lambda kv: (kv[1], -kv[0]))[0]
                    placed.append((n, best))
            if not placed:
                break
            for n, c in placed:
                leaf[n] = c
                waiting.discard(n)
                for a in [c, *self._ancestors(c)]:
                    self.added[a].append(n)
        return waiting

    def _scope(self, community: int) -> int:
        """Where a change is re-clustered: the parent of the smallest community it touched (so
        phrases may move between siblings), or that community when it is a top one."""
        p = self.parent.get(community)
        return community if p is None else p

    def _ancestors(self, community: int) -> list[int]:
        out, p = [], self.parent.get(community)
        while p is not None:
            out.append(p)
            p = self.parent.get(p)
        return out

    def _recluster(self, scope: int, nodes: np.ndarray) -> None:
        """Leiden over the phrases of `scope` and the links among them, replacing its subtree."""
        self.dropped.update(self._descendants(scope))
        if len(nodes) < self.cfg.max_cluster_size:
            return
        src, dst, weight = self._induced(nodes)
        self._graft(leiden_hierarchy(src, dst, weight, self.cfg), scope, whole=len(nodes))

    def _new_tops(self, nodes: list[int]) -> None:
        """New phrases linked only among themselves: communities of their own at the top."""
        src, dst, weight = self._induced(np.array(nodes, dtype=np.int64))
        self._graft(leiden_hierarchy(src, dst, weight, self.cfg), None, whole=0)

    def _graft(self, assignments: Assignments, parent: int | None, whole: int) -> None:
        """Leiden's communities of a subgraph under `parent` (None: at the top), with fresh ids.
        A single community holding all `whole` of the parent's phrases adds nothing."""
        base = 0 if parent is None else self.level[parent] + 1
        groups = sorted(set(assignments.community.tolist()))
        info = {c: (lvl, None if p < 0 else p) for c, lvl, p in zip(assignments.community.tolist(),
                                                                    assignments.level.tolist(),
                                                                    assignments.parent.tolist())}
        tops = [c for c in groups if info[c][0] == 0]
        if parent is not None and len(tops) == 1 and int((assignments.community == tops[0]).sum()) == whole:
            return
        fresh = {c: self.next_id + i for i, c in enumerate(groups)}
        self.next_id += len(fresh)
        for c in groups:
            lvl, par = info[c]
            cid = fresh[c]
            self.level[cid] = base + lvl
            self.parent[cid] = fresh[par] if par is not None else parent
            self.grafted.append((cid, np.unique(assignments.node[assignments.community == c])))

    def _descendants(self, community: int) -> list[int]:
        out, todo = [], list(self.children.get(community, []))
        while todo:
            c = todo.pop()
            out.append(c)
            todo.extend(self.children.get(c, []))
        return out

    def _induced(self, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The links among `nodes` (in edge order), read from their rows only: a scope costs its
        own links, not a pass over the whole graph's."""
        inside = np.zeros(self.graph.n_nodes, bool)
        inside[nodes] = True
        starts, counts = self.src_ptr[nodes], self.src_ptr[nodes + 1] - self.src_ptr[nodes]
        at = np.repeat(starts - (np.cumsum(counts) - counts), counts) + np.arange(int(counts.sum()))
        edges = self.by_src[at]
        edges = np.sort(edges[inside[self.graph.dst[edges]]])
        return self.graph.src[edges], self.graph.dst[edges], self.graph.weight[edges]

    def _assignments(self) -> Assignments:
        """The kept rows (communities a re-clustering replaced dropped), the placed new phrases and
        the grafted communities, by community and phrase. A community left with no phrase is gone
        with its subtree (its descendants hold no phrase either)."""
        dropped = np.array(sorted(self.dropped), np.int64)
        keep = ~np.isin(self.row_comm, dropped)
        added = [(c, n) for c, nodes in self.added.items() if c not in self.dropped for n in nodes]
        comm = np.concatenate([self.row_comm[keep], np.array([c for c, _ in added], np.int64)]
                              + [np.full(len(nodes), c, np.int64) for c, nodes in self.grafted])
        node = np.concatenate([self.row_node[keep], np.array([n for _, n in added], np.int64)]
                              + [nodes.astype(np.int64) for _, nodes in self.grafted])
        order = np.lexsort((node, comm))
        comm, node = comm[order], node[order]
        ids = np.fromiter(self.level, np.int64, len(self.level))
        level, parent = np.zeros(self.next_id, np.int64), np.full(self.next_id, -1, np.int64)
        level[ids] = np.fromiter(self.level.values(), np.int64, len(ids))
        parent[ids] = np.fromiter((-1 if p is None else p for p in (self.parent[c] for c in self.level)), np.int64,
                                  len(ids))
        return Assignments(node, comm, level[comm], parent[comm])


def _smallest(nodes: np.ndarray, communities: np.ndarray, levels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Of (phrase, community, level) rows, each phrase once with its deepest community."""
    order = np.lexsort((levels, nodes))  # by phrase, the deepest last
    last = np.r_[nodes[order][1:] != nodes[order][:-1], True] if len(order) else np.zeros(0, bool)
    return nodes[order][last], communities[order][last]


def _pair_counts(src: np.ndarray, dst: np.ndarray, count: np.ndarray, n: int) -> sp.csr_matrix:
    a, b = np.minimum(src, dst), np.maximum(src, dst)
    return sp.csr_matrix((np.asarray(count, np.int64), (a, b)), shape=(n, n))
