"""Level 1 graph statistics and exports: GraphML (for Gephi and friends) and a self-contained HTML
picture of the top phrases coloured by community, which opens offline in any browser."""

from __future__ import annotations

import html
from collections import Counter
from pathlib import Path

import networkx as nx
import numpy as np

from ..errors import MonjyuError
from ..store import LanceStore
from ..store.lancedb_store import COMMUNITIES, ENTITIES, RELATIONSHIPS

PALETTE = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
           "#9c755f", "#bab0ac", "#1f77b4", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#17becf"]


def _tables(generation_dir: Path):
    store = LanceStore(generation_dir / "lancedb")
    if not store.has(ENTITIES):
        raise MonjyuError("this index has no Level 1 graph: rebuild it without `--level 0`")
    return store.read(ENTITIES), store.read(RELATIONSHIPS), store.read(COMMUNITIES)


def graph_stats(generation_dir: Path, top: int = 15) -> dict:
    entities, relationships, communities = _tables(generation_dir)
    levels = Counter(communities["level"].to_pylist())
    sizes = communities["size"].to_pylist()
    degree = entities["degree"].to_pylist()
    titles = entities["title"].to_pylist()
    order = np.argsort(-np.array(degree))[:top] if degree else []
    return {
        "phrases": entities.num_rows,
        "hubs_pruned": int(sum(entities["is_hub"].to_pylist())),
        "edges": relationships.num_rows,
        "communities": communities.num_rows,
        "communities_per_level": {str(k): v for k, v in sorted(levels.items())},
        "largest_community": max(sizes) if sizes else 0,
        "top_phrases_by_degree": [[titles[i], int(degree[i])] for i in order],
    }


def _community_of(communities, level: int) -> dict[int, int]:
    """Entity id -> community id at `level` (the deepest level above it when a node stops earlier)."""
    best: dict[int, tuple[int, int]] = {}
    for c in communities.to_pylist():
        if c["level"] <= level:
            for e in c["entity_ids"]:
                if e not in best or c["level"] > best[e][0]:
                    best[e] = (c["level"], c["id"])
    return {e: cid for e, (_, cid) in best.items()}


def to_networkx(generation_dir: Path, max_nodes: int | None = None) -> nx.Graph:
    entities, relationships, communities = _tables(generation_dir)
    top_level = _community_of(communities, 0)
    g = nx.Graph()
    keep = None
    if max_nodes is not None:
        deg = np.array(entities["degree"].to_pylist())
        keep = set(np.argsort(-deg)[:max_nodes].tolist())
    for e in entities.to_pylist():
        if keep is None or e["id"] in keep:
            g.add_node(e["id"], label=e["title"], frequency=e["frequency"], community=top_level.get(e["id"], -1))
    for r in relationships.to_pylist():
        if g.has_node(r["source"]) and g.has_node(r["target"]):
            g.add_edge(r["source"], r["target"], weight=r["weight"], npmi=float(r["npmi"]))
    return g


def export_graphml(generation_dir: Path, path: Path) -> Path:
    nx.write_graphml(to_networkx(generation_dir), path)
    return path


def export_html(generation_dir: Path, path: Path, max_nodes: int = 300, community_href: str | None = None) -> Path:
    """An SVG of the most connected phrases, laid out by force (seeded), coloured by top-level
    community; with `community_href` (a URL with {id}), each node and legend entry links to its community."""
    g = to_networkx(generation_dir, max_nodes=max_nodes)
    _, _, communities = _tables(generation_dir)
    names = {c["id"]: c["title"] for c in communities.to_pylist() if c["level"] == 0}
    pos = nx.spring_layout(g, seed=42, weight="weight") if g.number_of_nodes() else {}
    w, h, pad = 1200, 900, 40
    xy = {n: (pad + (p[0] + 1) / 2 * (w - 2 * pad), pad + (p[1] + 1) / 2 * (h - 2 * pad)) for n, p in pos.items()}
    colour = {c: PALETTE[i % len(PALETTE)] for i, c in enumerate(sorted({d["community"] for _, d in g.nodes(data=True)}))}
    parts = []
    for a, b in g.edges():
        (x1, y1), (x2, y2) = xy[a], xy[b]
        parts.append(f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="#ccc" stroke-width="0.5"/>')
    def linked(c: int, inner: str) -> str:
        if not community_href or c < 0:
            return inner
        return f'<a href="{html.escape(community_href.format(id=c))}" target="_top">{inner}</a>'

    for n, d in g.nodes(data=True):
        x, y = xy[n]
        r = 3 + min(12, d["frequency"] ** 0.5)
        label = html.escape(d["label"])
        comm = html.escape(names.get(d["community"], ""))
        parts.append(linked(d["community"], f'<g><title>{label} (units: {d["frequency"]}; community: {comm})</title>'
                     f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{r:.1f}" fill="{colour[d["community"]]}" opacity="0.85"/>'
                     f'<text x="{x + r + 2:.1f}" y="{y + 4:.1f}" font-size="11">{label}</text></g>'))
    swatch = '<span style="background:{}"></span>'
    legend = "".join(f'<li>{linked(c, swatch.format(colour[c]) + html.escape(names.get(c, "(none)")))}</li>'
                     for c in colour)
    path.write_text(f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>MONJYU concept graph</title>
<style>body{{font-family:sans-serif;margin:1em}} ul{{columns:2;list-style:none;padding:0}}
li span{{display:inline-block;width:12px;height:12px;margin-right:6px;border-radius:6px}}</style></head>
<body><h1>Concept graph: top {g.number_of_nodes()} phrases, {g.number_of_edges()} co-occurrence edges</h1>
<p>Colour = top-level community (named by its most frequent phrases). Hover a node for details.</p>
<svg width="100%" viewBox="0 0 {w} {h}" xmlns="http://www.w3.org/2000/svg">{''.join(parts)}</svg>
<h2>Communities</h2><ul>{legend}</ul></body></html>
""", encoding="utf-8")
    return path
