"""Incremental Level 1: communities updated where the graph changed, the drift bound, --recluster,
and an add and a remove through the real index giving what a full rebuild of the same files gives."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from typer.testing import CliRunner

from monjyu import Monjyu
from monjyu.cli import app
from monjyu.config import GraphConfig
from monjyu.index import level1
from monjyu.index.level1 import PhraseIncidence, build_level1, previous_clustering
from monjyu.index.manifest import read_manifest
from monjyu.store.lancedb_store import ENTITIES, LanceStore
from monjyu.store.sparse import PHRASE_VECTORS, load_vectors

TOPICS = [["neural network", "gradient descent", "loss function", "training data", "learning rate"],
          ["protein folding", "amino acid", "molecular dynamics", "binding site", "crystal structure"],
          ["tokyo", "kyoto", "osaka", "nagoya", "sapporo"]]
NEW_TOPIC = ["coral reef", "ocean acidity", "sea temperature", "bleaching event", "marine algae"]


def topic_units(topics, n: int, seed: int) -> list[list[str]]:
    rng = np.random.default_rng(seed)
    return [list(rng.choice(topics[i % len(topics)], size=3, replace=False)) for i in range(n)]


def check_hierarchy(result) -> dict[int, dict]:
    """Every linked phrase sits in one top community; children lie one level below their parent
    and within it; sizes are member counts."""
    by_id = {c["id"]: c for c in result.communities.to_pylist()}
    linked = set(result.relationships["source"].to_pylist()) | set(result.relationships["target"].to_pylist())
    tops = [c for c in by_id.values() if c["level"] == 0]
    placed = [e for c in tops for e in c["entity_ids"]]
    assert sorted(placed) == sorted(set(placed)) and set(placed) == linked
    for c in by_id.values():
        assert c["size"] == len(c["entity_ids"]) > 0
        for child in c["children"]:
            assert by_id[child]["parent"] == c["id"] and by_id[child]["level"] == c["level"] + 1
            assert set(by_id[child]["entity_ids"]) <= set(c["entity_ids"])
    return by_id


def previous_of(result):
    return previous_clustering(result.entities["title"].to_pylist(), result.relationships, result.communities,
                               result.clustering)


def titles_of(result, community) -> set[str]:
    titles = result.entities["title"].to_pylist()
    return {titles[e] for e in community["entity_ids"]}


def test_an_update_keeps_untouched_communities_and_places_new_phrases():
    cfg = GraphConfig(max_cluster_size=4, seed=7)
    units = topic_units(TOPICS, 60, 1)
    base = build_level1(60, units, cfg)
    assert base.clustering["mode"] == "full" and base.clustering["changed_since_full"] == 0
    # A few units of a topic the collection did not have.
    more = units + topic_units([NEW_TOPIC], 4, 2)
    updated = build_level1(64, more, cfg, previous_of(base))
    assert updated.clustering["mode"] == "update" and 0 < updated.clustering["drift"] < cfg.recluster_drift
    by_id = check_hierarchy(updated)
    # Communities whose phrases kept their links are there as they were, under their ids.
    before = {c["id"]: titles_of(base, c) for c in base.communities.to_pylist()}
    after = {c["id"]: titles_of(updated, c) for c in by_id.values()}
    assert before.items() <= after.items()
    # The new topic's phrases form a community of their own at the top.
    new_tops = [titles_of(updated, c) for c in by_id.values() if c["level"] == 0 and c["id"] not in before]
    assert any(set(NEW_TOPIC) & t for t in new_tops) and all(t <= set(NEW_TOPIC) for t in new_tops)
    # Asked to, or with no room for drift, the same graph is clustered from scratch.
    again = build_level1(64, more, cfg, previous_of(base), recluster=True)
    assert again.clustering["mode"] == "full"
    tight = build_level1(64, more, GraphConfig(max_cluster_size=4, seed=7, recluster_drift=0.01),
                         previous_of(base))
    assert tight.clustering["mode"] == "full" and tight.clustering["drift"] > 0.01
    assert again.communities.equals(tight.communities)


def test_an_update_after_units_are_removed_drops_their_phrases():
    cfg = GraphConfig(max_cluster_size=4, seed=7)
    units = topic_units(TOPICS, 60, 1) + topic_units([NEW_TOPIC], 6, 2)
    base = build_level1(66, units, cfg)
    updated = build_level1(60, units[:60], cfg, previous_of(base))
    assert updated.clustering["mode"] == "update"
    by_id = check_hierarchy(updated)
    assert not any(set(NEW_TOPIC) & titles_of(updated, c) for c in by_id.values())
    assert updated.incidence.matrix.shape[0] == 60



def test_a_phrase_that_leaves_reclusters_only_where_it_was_smallest():
    """A phrase whose units are removed leaves every community that held it, but Leiden re-runs
    only inside the parent of the smallest one, not over the whole top community."""
    rng = np.random.default_rng(4)
    topics = [[f"t{t} p{i}" for i in range(120)] for t in range(2)]
    units = [list(rng.choice(topics[i % 2], size=4, replace=False)) for i in range(300)]
    units += [["rare one", "t0 p1"], ["rare one", "t0 p2"]]
    cfg = GraphConfig(max_cluster_size=5, seed=3)
    base = build_level1(302, units, cfg)
    rare = base.entities["title"].to_pylist().index("rare one")
    top = next(c for c in base.communities.to_pylist() if c["level"] == 0 and rare in c["entity_ids"])
    assert top["children"]
    updated = build_level1(300, units[:300], cfg, previous_of(base))
    assert updated.clustering["mode"] == "update"
    assert 0 < updated.clustering["reclustered"] < top["size"] - 1
    check_hierarchy(updated)
    assert "rare one" not in updated.entities["title"].to_pylist()


QUERIES = ["How does Leiden find communities in a graph?", "What does lazy search do with its budget?",
           "検索拡張生成とは何ですか"]
MODES = ["vector", "keyword", "hybrid", "graph", "lazy", "hybridrag"]


def results(m: Monjyu) -> dict:
    out = {}
    for q in QUERIES:
        for mode in MODES:
            r = m.ask(q, mode=mode, top_k=5)
            out[q, mode] = ([h.text_unit_id for h in r.hits], r.answer.text if r.answer else None)
    return out


@pytest.mark.parametrize("seed", range(6))
def test_links_updated_from_the_changed_rows_equal_links_counted_anew(seed):
    """Removing and adding units: the links updated from the previous ones and the changed rows
    are those counted from every unit, including phrases that became linkable (a second unit, or
    no longer a hub) or stopped being so."""
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(40)]
    units = [list(rng.choice(words, size=rng.integers(1, 6), replace=False)) for _ in range(120)]
    units += [["w0", "w1"]] * 10  # w0 and w1 sit near the hub bound
    cfg = GraphConfig(min_hub_units=12, max_phrase_share=0.1, recluster_drift=1.0)
    before = PhraseIncidence.collect(iter(units), len(units))
    full = build_level1(len(units), before, cfg)
    keep = rng.random(len(units)) > 0.25
    added = [list(rng.choice(words + ["fresh a", "fresh b"], size=rng.integers(1, 6), replace=False))
             for _ in range(30)]
    after = before.update(keep, iter(added), len(added))
    df = np.bincount(after.matrix.indices, minlength=after.matrix.shape[1])
    hub = max(cfg.min_hub_units, int(cfg.max_phrase_share * after.matrix.shape[0]))
    linkable = (df <= hub) & (df >= 2)
    counted = level1._links_counted(after.matrix, linkable, 1, df, after.matrix.shape[0], cfg.max_links)[:3]
    updated = level1._links_updated(after, linkable, previous_of(full), cfg)
    order = np.lexsort((counted[1], counted[0]))
    for mine, theirs in zip(updated, counted):
        assert np.array_equal(mine, theirs[order])


def phrase_vectors(index_dir) -> dict[str, np.ndarray]:
    gen_dir = index_dir / "generations" / read_manifest(index_dir).generation
    ids, vectors = load_vectors(gen_dir, PHRASE_VECTORS)
    titles = LanceStore(gen_dir / "lancedb").read(ENTITIES, ["title"])["title"].to_pylist()
    return {titles[i]: v for i, v in zip(ids.tolist(), vectors)}


@pytest.mark.parametrize("change", ["add", "remove"])
def test_an_add_or_a_remove_searches_like_a_full_rebuild(tmp_path, samples_copy, make_config, change, monkeypatch):
    held = samples_copy.parent / "held"
    held.mkdir()
    moving = samples_copy / "lazygraphrag.md"
    if change == "add":
        shutil.move(moving, held / moving.name)
    # One file of seven moves more than the default drift bound allows: no bound, to test the update.
    m = Monjyu(tmp_path / "idx", make_config(graph={"recluster_drift": 1.0}))
    m.index([samples_copy])
    if change == "add":
        shutil.move(held / moving.name, moving)
    else:
        moving.unlink()
    updates = []  # the build updates the carried incidence with the new units' phrases only
    real_update = PhraseIncidence.update
    monkeypatch.setattr(PhraseIncidence, "update",
                        lambda self, keep, added, n: updates.append((len(keep), n)) or real_update(self, keep, added, n))
    report = m.index([samples_copy])
    assert (report.added if change == "add" else report.removed) and report.clustering["mode"] == "update"
    assert report.carried and len(updates) == 1 and (updates[0][1] > 0) == (change == "add")
    fresh = Monjyu(tmp_path / "fresh", make_config())
    fresh.index([samples_copy])
    assert results(m) == results(fresh)
    # The phrase vectors carried over from the previous generation are those a full build looks up.
    carried, built = phrase_vectors(tmp_path / "idx"), phrase_vectors(tmp_path / "fresh")
    assert carried.keys() == built.keys() and all(np.array_equal(carried[t], built[t]) for t in built)
    # `monjyu index --recluster` clusters the same graph from scratch, even with nothing else to do.
    out = CliRunner().invoke(app, ["index", str(samples_copy), "--index", str(tmp_path / "idx"), "--recluster",
                                   "--json"], env={"MONJYU_CACHE_DIR": str(make_config().cache_dir)})
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout)["clustering"]["mode"] == "full"


def as_archives(gen_dir) -> None:
    """A generation's graph arrays rewritten as the .npz archives generations had before the .npy
    folders."""
    import scipy.sparse as sp

    from monjyu.store import sparse

    matrix = sparse.load_incidence(gen_dir)
    sp.save_npz(gen_dir / "graph" / "incidence.npz", matrix)
    for name, keys in ((sparse.INCIDENCE_KINDS, ("kinds", "names")), (sparse.LINKS, ("source", "target", "weight")),
                       (sparse.PHRASE_VECTORS, ("ids", "vectors"))):
        np.savez(gen_dir / name.with_suffix(".npz"), **dict(zip(keys, sparse.load_arrays(gen_dir, name, keys))))
    for name in (sparse.INCIDENCE, sparse.INCIDENCE_KINDS, sparse.LINKS, sparse.PHRASE_VECTORS):
        shutil.rmtree(gen_dir / name)


def test_a_generation_with_npz_archives_is_searched_and_carried(tmp_path, samples_copy, make_config):
    held = samples_copy.parent / "held"
    held.mkdir()
    moving = samples_copy / "lazygraphrag.md"
    shutil.move(moving, held / moving.name)
    m = Monjyu(tmp_path / "idx", make_config(graph={"recluster_drift": 1.0}))
    m.index([samples_copy])
    before = results(m)
    as_archives(tmp_path / "idx" / "generations" / read_manifest(tmp_path / "idx").generation)
    again = Monjyu(tmp_path / "idx", make_config(graph={"recluster_drift": 1.0}))
    assert results(again) == before
    shutil.move(held / moving.name, moving)
    report = again.index([samples_copy])
    assert report.carried and report.clustering["mode"] == "update"
    fresh = Monjyu(tmp_path / "fresh", make_config())
    fresh.index([samples_copy])
    assert results(again) == results(fresh)
    carried, built = phrase_vectors(tmp_path / "idx"), phrase_vectors(tmp_path / "fresh")
    assert carried.keys() == built.keys() and all(np.array_equal(carried[t], built[t]) for t in built)


def test_recluster_is_refused_without_the_graph(tmp_path, samples_copy, make_config):
    out = CliRunner().invoke(app, ["index", str(samples_copy), "--index", str(tmp_path / "idx"), "--level", "0",
                                   "--recluster"])
    assert out.exit_code == 2 and "recluster" in out.output


def test_a_conversation_forgets_a_removed_documents_claims(tmp_path, samples_copy, make_config):
    m = Monjyu(tmp_path / "idx", make_config())
    m.index([samples_copy])
    conversation = m.conversations.get("c1")
    m.lazy_search("What does lazy search do with its budget?", conversation=conversation)
    removed = {h.text_unit_id for h in m.search("lazy search budget", mode="keyword", top_k=50).hits
               if h.document_id == "papers/lazygraphrag.md"}
    assert any(set(c.text_unit_ids) & removed for c in conversation.claims)
    (samples_copy / "lazygraphrag.md").unlink()
    m.index([samples_copy])
    result = m.lazy_search("And how does it stop?", conversation=conversation)
    assert result.answer is not None and len(conversation.turns) == 2
    assert not any(set(c.text_unit_ids) & removed for c in conversation.claims)


def test_leiden_hierarchy_splits_what_is_too_large_and_only_that():
    """Four dense groups of 30 phrases, loosely chained: four top communities; each (larger than
    max_cluster_size) split one level down inside itself; the same communities for the same seed."""
    from monjyu.index.communities import leiden_hierarchy

    rng = np.random.default_rng(3)
    pairs = [(g * 30 + a, g * 30 + b) for g in range(4) for a in range(30) for b in range(a + 1, 30)
             if rng.random() < 0.4] + [(29, 30), (59, 60), (89, 90)]
    src, dst = (np.array(x, dtype=np.int64) for x in zip(*pairs))
    weight = rng.uniform(1.0, 2.0, len(src))
    cfg = GraphConfig(max_cluster_size=10, seed=11)
    rows = leiden_hierarchy(src, dst, weight, cfg)
    assert rows == leiden_hierarchy(src, dst, weight, cfg)
    members: dict[int, set[int]] = {}
    info = {}
    for node, community, level, parent in rows:
        members.setdefault(community, set()).add(node)
        info[community] = (level, parent)
    tops = sorted((sorted(m) for c, m in members.items() if info[c][0] == 0), key=min)
    assert tops == [list(range(g * 30, g * 30 + 30)) for g in range(4)]
    for c, (level, parent) in info.items():
        if parent is not None:
            assert info[parent][0] == level - 1 and members[c] < members[parent]
    split = {parent for level, parent in info.values() if parent is not None}
    assert {c for c, (level, _) in info.items() if level == 0} <= split
    assert all(len(members[c]) > cfg.max_cluster_size for c in split)


def brute_links(units: list[list[str]], phrases: list[str], linkable: np.ndarray) -> dict[tuple[int, int], int]:
    """Every pair of linkable phrases and the units they share, counted one unit at a time."""
    at = {p: i for i, p in enumerate(phrases)}
    counts: dict[tuple[int, int], int] = {}
    for unit in units:
        ids = sorted({at[p] for p in unit if linkable[at[p]]})
        for i, a in enumerate(ids):
            for b in ids[i + 1:]:
                counts[a, b] = counts.get((a, b), 0) + 1
    return counts


@pytest.mark.parametrize("slice_size", [10**9, 7])
def test_links_counted_in_slices_and_cut_to_each_phrases_strongest(monkeypatch, slice_size):
    """Counted a few phrases at a time or all at once, the links are every pair sharing a unit;
    past max_links each phrase keeps its `bound` strongest links (by the clustering weight), a
    link staying when either end keeps it, and no more than max_links stay."""
    monkeypatch.setattr(level1, "LINK_SLICE", slice_size)
    rng = np.random.default_rng(5)
    words = [f"w{i}" for i in range(60)]
    units = [list(rng.choice(words, size=rng.integers(2, 8), replace=False)) for _ in range(200)]
    held = PhraseIncidence.collect(iter(units), len(units))
    df = np.bincount(held.matrix.indices, minlength=len(held.phrases)).astype(np.int64)
    linkable = df >= 2
    truth = brute_links(units, held.phrases, linkable)
    src, dst, count, bound = level1._links_counted(held.matrix, linkable, 1, df, len(units), 10**9)
    assert bound == 0 and dict(zip(zip(src.tolist(), dst.tolist()), count.tolist())) == truth
    assert np.all(np.diff(src * len(df) + dst) > 0)

    src, dst, count, bound = level1._links_counted(held.matrix, linkable, 1, df, len(units), 300)
    assert 1 <= bound < 20 and len(src) <= 300
    kept = dict(zip(zip(src.tolist(), dst.tolist()), count.tolist()))
    assert all(truth[pair] == c for pair, c in kept.items())
    weight = {pair: level1._edge_weights(np.array([pair[0]]), np.array([pair[1]]), np.array([c]), df,
                                         len(units))[0][0] for pair, c in truth.items()}
    for phrase in range(len(df)):
        mine = sorted((p for p in truth if phrase in p), key=lambda p: (-weight[p], p[0] + p[1] - phrase))
        assert set(mine[:bound]) <= set(kept), phrase  # its strongest stay
    assert all(pair in sorted((p for p in truth if pair[0] in p), key=lambda p: -weight[p])[:bound + 1]
               or pair in sorted((p for p in truth if pair[1] in p), key=lambda p: -weight[p])[:bound + 1]
               for pair in kept)  # and nothing else (the +1: ties)


def test_a_bounded_graph_is_updated_where_it_changed():
    """A build past graph.max_links records the bound. The next build updates the links: a link
    with an untouched phrase stays with its count; pairs of phrases the new units hold are counted
    from their units and each such phrase keeps its strongest; asked to re-cluster, the build
    counts every link anew, as a full build does."""
    cfg = GraphConfig(max_cluster_size=4, seed=7, max_links=20, recluster_drift=1.0)
    units = topic_units(TOPICS, 60, seed=1)
    base = build_level1(60, PhraseIncidence.collect(iter(units), 60), cfg)
    bound = base.clustering["link_bound"]
    assert bound >= 1 and base.relationships.num_rows <= 20
    check_hierarchy(base)
    more = units + topic_units([NEW_TOPIC], 6, seed=2) + [["tokyo", "coral reef"]]
    ids = [f"u{i}" for i in range(len(more))]

    def update(recluster: bool):
        held = PhraseIncidence.collect(iter(units), 60).update(np.ones(60, bool), iter(more[60:]), len(more) - 60)
        return build_level1(len(ids), held, cfg, previous_of(base), recluster=recluster)

    updated = update(False)
    assert updated.clustering["mode"] == "update" and updated.clustering["link_bound"] == bound
    check_hierarchy(updated)
    titles = updated.entities["title"].to_pylist()
    linkable = np.ones(len(titles), bool)
    truth = brute_links(more, titles, linkable)
    named = {(titles[a], titles[b]): c for a, b, c in zip(*(updated.relationships[k].to_pylist()
                                                           for k in ("source", "target", "weight")))}
    assert all(truth[titles.index(x), titles.index(y)] == c for (x, y), c in named.items())
    old_titles = base.entities["title"].to_pylist()
    touched = set(NEW_TOPIC) | {"tokyo"}
    kept_before = {(old_titles[a], old_titles[b]) for a, b in zip(base.relationships["source"].to_pylist(),
                                                                  base.relationships["target"].to_pylist())}
    assert {p for p in kept_before if not set(p) <= touched} <= set(named)
    for phrase in NEW_TOPIC:  # a new phrase found twice keeps a link
        assert sum(phrase in unit for unit in more) < 2 or any(phrase in pair for pair in named)
    assert update(True).relationships.equals(
        build_level1(len(ids), PhraseIncidence.collect(iter(more), len(more)), cfg).relationships)
