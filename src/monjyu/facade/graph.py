"""The concept graph (Level 1) as users see it: statistics, export, neighbours, communities."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import MonjyuError
from ..retrieval.rankers import require_communities, require_graph
from .workspace import Workspace


class Graph:
    """Reading the noun-phrase graph and its community hierarchy of the current generation (`m.graph`)."""

    def __init__(self, workspace: Workspace):
        self.workspace = workspace

    def _report_of(self, community, searcher) -> dict[str, Any] | None:
        """The community's Level 4 report for the configured LLM, when one was written."""
        from ..levels.reports import community_key

        level4 = self.workspace.level_four()
        if level4 is None:
            return None
        key = community_key([searcher.index.graph.phrases[p] for p in community.phrases])
        report = level4.kept([key]).get(key)
        if report is None:
            return None
        return {"title": report.title, "summary": report.summary, "claims": [c["statement"] for c in report.claims],
                "model": level4.model}

    def stats(self) -> dict[str, Any]:
        """Phrases, edges and communities per level of the current generation."""
        from ..index.graph_export import graph_stats

        return graph_stats(self.workspace.current().generation_dir)

    def export(self, path: str | Path, fmt: str = "html", community_href: str | None = None) -> Path:
        """Write the concept graph to a file.

        Args:
            path: the file to write.
            fmt: "html" (a picture to open in a browser) or "graphml".
            community_href: (html) a link for each community, e.g. "/?community={id}".

        Returns:
            The path written.
        """
        from ..index.graph_export import export_graphml, export_html

        if fmt not in ("html", "graphml"):
            raise MonjyuError(f"unknown graph export format '{fmt}' (html, graphml)")
        if fmt == "graphml":
            if community_href:
                raise MonjyuError("community links apply to the html picture, not to GraphML")
            return export_graphml(self.workspace.current().generation_dir, Path(path))
        return export_html(self.workspace.current().generation_dir, Path(path), community_href=community_href)

    def neighbours(self, text: str, hops: int = 1, limit: int = 30) -> list[dict[str, Any]]:
        """Phrases within `hops` co-occurrence steps of the phrases `text` names (or, by embedding,
        means: `text` may be in another language than the papers).

        Args:
            text: a phrase or question.
            hops: co-occurrence steps.
            limit: most phrases returned.
        """
        searcher = self.workspace.current().searcher
        graph = require_graph(searcher.index)
        seeds = searcher.graph.seeds(self.workspace.query(text))
        return [{"phrase": graph.phrases[n], "hop": hop, "strength": round(w, 4), "units": int(graph.df[n])}
                for n, hop, w in graph.neighbours(list(seeds), hops, limit)]

    def search_communities(self, query: str, top_k: int = 10, level: int | None = None,
                           units: int = 50) -> list[dict[str, Any]]:
        """Communities ranked by how many of the query's best text units (hybrid ranking) they hold,
        rank-weighted.

        Args:
            query: the question or topic.
            top_k: how many communities.
            level: one level of the hierarchy (0 = coarsest); none: all levels.
            units: how many of the query's best units to count.
        """
        asked = self.workspace.query(query)
        context = self.workspace.current()
        searcher = context.searcher
        communities = searcher.index.communities
        if communities is None:
            require_graph(searcher.index)
        vector = context.embed_query(asked)
        ranked = searcher.search(asked, vector, "hybrid", units)
        rows = [searcher.row_of(h.text_unit_id) for h in ranked.hits]
        weight = self.workspace.config.search.community_title_weight
        hits = communities.rank(rows, level=level, title_scores=communities.title_similarity(vector, weight),
                                title_weight=weight)
        return [hit.to_dict() for hit in hits[:top_k]]

    def community(self, community_id: int, limit: int = 20) -> dict[str, Any]:
        """One community of the hierarchy (what a click on the map opens): label, level, parent,
        children, and its passages, those naming most of its phrases first.

        Args:
            community_id: the community's id (see `search_communities`, `monjyu graph communities`).
            limit: most passages returned.
        """
        searcher = self.workspace.current().searcher
        c = require_communities(searcher.index).by_id.get(community_id)
        if c is None:
            raise MonjyuError(f"no community with id {community_id} in the index; see `monjyu graph communities`")
        rows = c.unit_rows.tolist()
        shared = {r: len(c.phrases.intersection(searcher.graph.unit_phrases(r, limit=10_000))) for r in rows}
        best = sorted(rows, key=lambda r: (-shared[r], r))[:limit]
        return {"id": c.id, "level": c.level, "title": c.title, "parent": c.parent, "children": c.children,
                "phrases": c.size, "text_units": len(rows), "report": self._report_of(c, searcher),
                "hits": [searcher.hit(r, float(shared[r]), i + 1, None, None).to_dict() for i, r in enumerate(best)]}

