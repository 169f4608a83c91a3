"""Bounded work for any query: a 10,000-word query against a 20-word one, every mode, answers on.

    python bench/long_query.py --index IDX [--words 10000] [--repeat 3]

The long query is a run of real passages of the index (someone pasting a section to find related
work). Prints per mode the median seconds of the short and the long query and their ratio (the
aim: long <= 2x short), then sends a 1 MB query through the API, the CLI and MCP (stdio) and
prints how each refused it and how fast.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import time
from pathlib import Path

from monjyu import Monjyu
from monjyu.api import ALL_MODES
from monjyu.errors import MonjyuError

# Every timed run has a query of its own: nothing a run leaves in a cache helps the next one.
SHORT = ["Which film director was born in the same city as the author of the novel the film adapts?",
         "Who was the spouse of the director of the film that won the award in the year the novelist died?",
         "Which country is the composer of the opera that premiered in the city where the painter was born from?",
         "Where did the founder of the company that published the game study before he became an engineer?",
         "What is the nationality of the performer who sang the song that was written by the poet's brother?"]


def timed(fn, queries: list[str]) -> float:
    times = []
    for query in queries:
        t0 = time.perf_counter()
        fn(query)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def long_text(m: Monjyu, words: int, start: int = 0) -> str:
    """`words` words of the index's own documents, from the `start`-th document on."""
    out: list[str] = []
    docs = m.documents.list(limit=500)["documents"]
    i = start
    while sum(len(t.split()) for t in out) < words:
        out.append(m.documents.get(docs[i % len(docs)]["id"], max_chars=4000)["text"])
        i += 1
    return " ".join(" ".join(out).split()[:words])


async def mcp_refusal(index: Path, query: str) -> tuple[str, float]:
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=sys.executable, args=["-m", "monjyu.cli", "serve", "--index", str(index)])
    async with Client(params) as client:
        t0 = time.perf_counter()
        result = await client.call_tool("search", {"query": query})
        return result.content[0].text[:160], time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--index", type=Path, required=True)
    ap.add_argument("--words", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    m = Monjyu(args.index)
    modes = {mode: (lambda q, mode=mode: m.ask(q, mode)) for mode in ALL_MODES}
    runs = len(modes) * args.repeat
    longs = [long_text(m, args.words, start=40 * k) for k in range(runs + 1)]
    shorts = [f"{SHORT[k % len(SHORT)]} ({k})" if k >= len(SHORT) else SHORT[k] for k in range(runs + 1)]
    print(f"long queries: {args.words:,} words, {statistics.median(len(q) for q in longs):,.0f} characters; "
          f"short: {statistics.median(len(q.split()) for q in shorts):.0f} words; {args.repeat} runs per mode, each a new query")
    print(f"{'mode':14}{'short s':>10}{'long s':>10}{'ratio':>8}")
    fn = modes["hybrid"]
    fn(shorts[-1]), fn(longs[-1])  # warm-up: models loaded
    for i, (name, fn) in enumerate(modes.items()):
        part = slice(i * args.repeat, (i + 1) * args.repeat)
        short = timed(fn, shorts[part])
        long_ = timed(fn, longs[part])
        print(f"{name:14}{short:>10.3f}{long_:>10.3f}{long_ / short:>8.2f}")

    mb = "x" * 1_000_000
    t0 = time.perf_counter()
    try:
        m.search(mb)
        api = "accepted (!)"
    except MonjyuError as exc:
        api = str(exc)
    print(f"API, 1 MB: {time.perf_counter() - t0:.3f} s: {api[:120]}")
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "monjyu.cli", "search", "--index", str(args.index), "-"],
                          input=mb, capture_output=True, text=True)  # argv cannot carry 1 MB: the query comes on stdin
    print(f"CLI, 1 MB: {time.perf_counter() - t0:.3f} s (whole process), exit {proc.returncode}: {proc.stderr.strip()[:120]}")
    text, seconds = asyncio.run(mcp_refusal(args.index, mb))
    print(f"MCP stdio, 1 MB: {seconds:.3f} s: {text}")


if __name__ == "__main__":
    main()
