"""Load on the MCP server: N concurrent MCP clients over streamable HTTP, each calling `search`
back to back for a fixed time, against the sample index. Reports calls, errors and latency.

    python bench/mcp_load.py --seconds 120 --clients 10 [--servers 2]

Each server runs as `monjyu serve --transport http` in its own process, on a free port of
127.0.0.1; the clients are the official SDK's, in this process, spread over the servers in turn.
With a shared store configured (MONJYU_STORE__BACKEND / MONJYU_STORE__URL in the environment)
every server is a stateless process with its own cache directory beside --index. The samples are indexed first
when the index does not exist yet. Latency is per tool call as the client sees it (JSON-RPC
over HTTP, validation, retrieval and the extractive answer unless --no-answer).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from mcp import Client

from monjyu import Monjyu
from monjyu.config import load_config
from monjyu.index.manifest import manifest_path

SAMPLES = Path(__file__).resolve().parents[1] / "samples"
QUERIES = [
    "How does LazyGraphRAG keep indexing cheap?",
    "Which algorithm detects communities in the concept graph?",
    "reciprocal rank fusion of BM25 and vector results",
    "How are retrieval systems for RAG evaluated?",
    "What does a cross-encoder reranker do?",
    "検索拡張生成とは何か",
    "multilingual text embeddings",
    "Okapi BM25 term saturation",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(index_dir: Path, port: int, log: Path) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "monjyu.cli", "serve", "--transport", "http", "--port", str(port), "--index", str(index_dir)]
    process = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log.open("w"))
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"the server exited with {process.returncode}; see {log}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return process
        except OSError:
            time.sleep(0.2)
    process.terminate()
    raise SystemExit(f"the server did not listen on port {port} within 120 s; see {log}")


async def client_loop(url: str, client_id: int, deadline: float, args: argparse.Namespace,
                      latencies: list[float], errors: list[str]) -> None:
    queries = itertools.islice(itertools.cycle(QUERIES), client_id, None)
    async with Client(url, read_timeout_seconds=120) as client:
        while time.monotonic() < deadline:
            arguments = {"query": next(queries), "limit": args.limit, "answer": args.answer}
            if args.mode:
                arguments["mode"] = args.mode
            t0 = time.perf_counter()
            try:
                result = await client.call_tool("search", arguments)
                if result.is_error:
                    errors.append(result.content[0].text[:200])
            except Exception as exc:  # a transport failure counts as an error, the run goes on
                errors.append(f"{type(exc).__name__}: {exc}"[:200])
            latencies.append((time.perf_counter() - t0) * 1000)


async def run(urls: list[str], args: argparse.Namespace) -> dict:
    for url in urls:
        async with Client(url, read_timeout_seconds=120) as client:  # warm-up: loads the index and the embedder
            t0 = time.perf_counter()
            warm = await client.call_tool("search", {"query": QUERIES[0], "answer": args.answer})
            first_ms = (time.perf_counter() - t0) * 1000
            if warm.is_error:
                raise SystemExit(f"warm-up search failed: {warm.content[0].text}")
    latencies: list[float] = []
    errors: list[str] = []
    started = time.monotonic()
    deadline = started + args.seconds
    await asyncio.gather(*(client_loop(urls[i % len(urls)], i, deadline, args, latencies, errors)
                           for i in range(args.clients)))
    elapsed = time.monotonic() - started
    lat = np.array(latencies)
    return {
        "servers": len(urls), "clients": args.clients, "seconds": round(elapsed, 1), "mode": args.mode or "default (hybrid)",
        "answer": args.answer, "limit": args.limit, "calls": len(latencies), "errors": len(errors),
        "calls_per_s": round(len(latencies) / elapsed, 2), "first_call_ms": round(first_ms, 1),
        "p50_ms": round(float(np.percentile(lat, 50)), 1), "p95_ms": round(float(np.percentile(lat, 95)), 1),
        "p99_ms": round(float(np.percentile(lat, 99)), 1), "max_ms": round(float(lat.max()), 1),
        "error_samples": sorted(set(errors))[:5], "cpus": os.cpu_count(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--clients", type=int, default=10)
    parser.add_argument("--servers", type=int, default=1, help="server processes, each with its own cache directory")
    parser.add_argument("--limit", type=int, default=10, help="passages per search")
    parser.add_argument("--mode", default=None, help="search mode (default: the server's configured mode)")
    parser.add_argument("--answer", action=argparse.BooleanOptionalAction, default=True,
                        help="ask for the (extractive) answer too")
    parser.add_argument("--index", type=Path, default=Path(tempfile.gettempdir()) / "monjyu-mcp-load" / ".monjyu",
                        help="index of the samples (built when missing)")
    args = parser.parse_args()

    if not manifest_path(args.index).exists():
        print(f"indexing {SAMPLES} -> {args.index}", file=sys.stderr)
        report = Monjyu(args.index).index([SAMPLES])
        if report.failures:
            raise SystemExit(f"indexing failed: {report.failures}")
    ports = [free_port() for _ in range(args.servers)]
    # A shared store: each server its own cache directory; the embedded store: all read one directory.
    store = load_config().store
    shared = store.backend != "lancedb" or bool(store.url)
    dirs = [args.index.parent / f"server-{i}" if shared else args.index for i in range(args.servers)]
    servers = [start_server(d, port, args.index.parent / f"mcp-server-{i}.log")
               for i, (d, port) in enumerate(zip(dirs, ports))]
    try:
        result = asyncio.run(run([f"http://127.0.0.1:{port}/mcp" for port in ports], args))
    finally:
        for server in servers:
            server.terminate()
            server.wait(timeout=30)
    print(json.dumps(result, ensure_ascii=False, indent=1))
    print(f"{result['servers']} server(s), {result['clients']} clients x {result['seconds']} s: {result['calls']} searches, {result['errors']} errors, "
          f"p50 {result['p50_ms']} ms, p95 {result['p95_ms']} ms ({result['calls_per_s']} calls/s)", file=sys.stderr)


if __name__ == "__main__":
    main()
