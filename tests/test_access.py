"""The HTTP doors off loopback and against other pages in the user's browser: `monjyu ui` and
`monjyu serve --transport http` started as a user starts them, then asked over real HTTP."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.test_mcp import free_port, wait_for_port
from tests.test_web import UIServer

MCP_INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "test", "version": "0"}}}
MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


class Door:
    """One server process bound to 0.0.0.0; `output` is what it printed at start."""

    def __init__(self, args: list[str], index_dir: Path, cache_dir: Path, tmp_path: Path, env: dict | None = None):
        self.port = free_port()
        self.log = tmp_path / f"door-{self.port}.log"
        with self.log.open("w") as sink:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "monjyu.cli", *args, "--index", str(index_dir), "--host", "0.0.0.0",
                 "--port", str(self.port)], stdout=sink, stderr=subprocess.STDOUT, cwd=tmp_path,
                env={**os.environ, "MONJYU_CACHE_DIR": str(cache_dir), "COLUMNS": "400", **(env or {})})
        wait_for_port(self.port, self.process, self.log)
        deadline = time.monotonic() + 30
        while "MONJYU" not in self.log.read_text() and time.monotonic() < deadline:
            time.sleep(0.1)
        self.url = f"http://127.0.0.1:{self.port}"

    @property
    def output(self) -> str:
        return self.log.read_text()

    def token(self) -> str | None:
        found = re.search(r"access token \(printed once[^)]*\): (\S+)", self.output)
        return found.group(1) if found else None

    def close(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


@pytest.fixture
def door(sample_index, cache_dir, tmp_path):
    opened = []

    def start(*args: str, env: dict | None = None) -> Door:
        opened.append(Door(list(args), sample_index.index_dir, cache_dir, tmp_path, env))
        return opened[-1]

    yield start
    for d in opened:
        d.close()


def test_web_app_off_loopback_needs_its_token_and_a_host_it_was_bound_to(door):
    ui = door("ui")
    token = ui.token()
    assert token and f"?token={token}" in ui.output, ui.output
    with httpx.Client(base_url=ui.url, timeout=60) as http:
        assert http.get("/api/info").status_code == 401
        assert http.get("/api/info", headers={"Authorization": "Bearer wrong"}).status_code == 401
        bearer = {"Authorization": f"Bearer {token}"}
        assert http.get("/api/info", headers=bearer).status_code == 200
        rebound = http.get("/api/info", headers={**bearer, "Host": f"evil.example:{ui.port}"})
        assert rebound.status_code == 421 and "server.allowed_hosts" in rebound.json()["error"]
        assert http.get("/?token=wrong").status_code == 401
        login = http.get(f"/?token={token}", follow_redirects=False)
        assert login.status_code == 303 and "HttpOnly" in login.headers["set-cookie"]
        assert "SameSite=Strict" in login.headers["set-cookie"]
        assert http.get("/api/info").status_code == 200  # the cookie, as the page's own requests send it
        found = http.post("/api/search", json={"query": "Leiden communities", "mode": "hybrid"})
        assert found.status_code == 200 and '"result"' in found.text


def test_a_token_from_the_environment_is_used_and_never_printed(door):
    ui = door("ui", env={"MONJYU_TOKEN": "s3cret-from-env"})
    assert ui.token() is None and "s3cret-from-env" in ui.output  # in the address the user opens
    with httpx.Client(base_url=ui.url, timeout=60) as http:
        assert http.get("/api/info", headers={"Authorization": "Bearer s3cret-from-env"}).status_code == 200
        assert http.get("/api/info").status_code == 401


@pytest.fixture(scope="module")
def loopback_app(sample_index):
    with UIServer(sample_index) as url:
        yield url


@pytest.mark.parametrize("headers,content,why", [
    ({"Content-Type": "text/plain"}, json.dumps({"query": "q"}), "must send JSON"),
    ({"Content-Type": "application/x-www-form-urlencoded"}, "query=q", "must send JSON"),
    ({"Content-Type": "application/json", "Origin": "https://evil.example"}, json.dumps({"query": "q"}),
     "Origin https://evil.example is not this server"),
    ({"Content-Type": "application/json", "Sec-Fetch-Site": "cross-site"}, json.dumps({"query": "q"}),
     "Sec-Fetch-Site: cross-site"),
])
def test_no_page_elsewhere_can_search_through_the_users_browser(loopback_app, headers, content, why):
    """A cross-origin `text/plain` POST used to answer 200 and spend the user's LLM tokens."""
    refused = httpx.post(f"{loopback_app}/api/search", headers=headers, content=content, timeout=60)
    assert refused.status_code == 403 and why in refused.json()["error"]


def test_the_pages_own_search_and_loopback_names_still_work(loopback_app):
    port = loopback_app.rsplit(":", 1)[1]
    same = httpx.post(f"{loopback_app}/api/search", json={"query": "Leiden", "mode": "hybrid"},
                      headers={"Origin": loopback_app, "Sec-Fetch-Site": "same-origin"}, timeout=60)
    assert same.status_code == 200
    assert httpx.get(f"{loopback_app}/api/info", headers={"Host": f"localhost:{port}"}).status_code == 200
    assert httpx.get(f"{loopback_app}/api/info", headers={"Host": f"rebind.example:{port}"}).status_code == 421


@pytest.mark.parametrize("path,named", [
    ("/api/page?id=x&page=abc", "'page' must be a whole number"),
    ("/api/page?id=x", "the parameter 'page'"),
    ("/api/page?id=x&page=0", "'page' must be between 1"),
    ("/api/page?page=1", "the parameter 'id'"),
    ("/api/documents?limit=0", "'limit' must be between 1 and 1000"),
    ("/api/documents?limit=99999999999999999999", "'limit' must be between"),
    ("/api/documents?offset=-1", "'offset' must be between 0"),
    ("/api/document", "the parameter 'id'"),
    ("/api/document?id=" + "x" * 3000, "'id' is longer than"),
    ("/api/document?id=abs-bm25&context=500", "'context' must be between 0 and 20"),
    ("/api/community?id=1e3", "'id' must be a whole number"),
])
def test_a_bad_parameter_is_a_400_that_names_it(loopback_app, path, named):
    response = httpx.get(loopback_app + path, timeout=60)
    assert response.status_code == 400 and named in response.json()["error"], response.text


@pytest.mark.parametrize("body,named", [
    ({"query": ""}, "'query' must be a non-empty string"),
    ({"query": 42}, "'query' must be a non-empty string"),
    ({"query": "q" * 100_001}, "above search.max_query_chars"),
    ({"query": "q", "top_k": "ten"}, "'top_k' must be a whole number from 1 to 100"),
    ({"query": "q", "top_k": 10**6}, "'top_k' must be a whole number from 1 to 100"),
    ({"query": "q", "preset": "z9"}, "'preset' must be one of"),
    ({"query": "*", "preset": {"type": "", "x": ""}}, "'preset' must be one of"),  # found by the fuzz suite (500)
    ({"query": "q", "mode": "vector"}, "'mode' must be one of"),
    ({"query": "q", "mode": "lazy", "level": 5}, "'level' must be one of"),
    ({"query": "q", "mode": "hybrid", "level": 3}, "'level' is lazy search's"),
    ({"query": "q", "filters": {"year": "last year"}}, "'filters'"),
    ({"query": "q", "filters": {"type": ["pdf"]}}, "'filters' values"),
    ({"query": "q", "colour": "red"}, "unknown search fields: colour"),
    ([1, 2], "a JSON object"),
])
def test_a_bad_search_field_is_a_400_that_names_it(loopback_app, body, named):
    response = httpx.post(f"{loopback_app}/api/search", json=body, timeout=60)
    assert response.status_code == 400 and named in response.json()["error"], response.text


def test_mcp_over_http_off_loopback_needs_its_token(door):
    server = door("serve", "--transport", "http")
    token = server.token()
    assert token, server.output
    url = f"{server.url}/mcp"
    assert httpx.post(url, json=MCP_INIT, headers=MCP_HEADERS, timeout=60).status_code == 401
    bearer = {**MCP_HEADERS, "Authorization": f"Bearer {token}"}
    assert httpx.post(url, json=MCP_INIT, headers=bearer, timeout=60).status_code == 200
    rebound = httpx.post(url, json=MCP_INIT, headers={**bearer, "Host": f"evil.example:{server.port}"}, timeout=60)
    assert rebound.status_code == 421
    cross = httpx.post(url, json=MCP_INIT, headers={**bearer, "Origin": "https://evil.example"}, timeout=60)
    assert cross.status_code == 403
