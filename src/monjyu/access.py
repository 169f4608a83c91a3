"""Who may reach the HTTP doors (the web app and the MCP server over HTTP).

On loopback a door is this machine's: only its loopback names are served (a page elsewhere that
resolves its own name to 127.0.0.1 is refused). Bound beyond loopback, every request needs the
access token (from `server.token_env`, or generated and printed once at start) and a Host
header naming an address the door was bound to. Browsers are also kept from writing across
origins: a request that changes or spends something (any method but GET and HEAD) must be JSON
and come from the door's own origin."""

from __future__ import annotations

import hmac
import ipaddress
import json
import os
import secrets
import socket
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from urllib.parse import parse_qs, urlsplit

from .config import ServerConfig

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
WILDCARDS = ("0.0.0.0", "::", "")
COOKIE = "monjyu_token"
SAFE_METHODS = ("GET", "HEAD")


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def bound_names(host: str, config: ServerConfig) -> list[str]:
    """The Host names a door bound to `host` serves: its loopback names, the address itself, and
    for a wildcard address this machine's name and addresses; plus `server.allowed_hosts`."""
    names = list(LOOPBACK_NAMES)
    if host in WILDCARDS:
        machine = socket.gethostname()
        names += [machine, socket.getfqdn()]
        try:
            names += socket.gethostbyname_ex(machine)[2]
        except OSError:
            pass
    else:
        names.append(host)
    names += config.allowed_hosts
    return list(dict.fromkeys(n.lower().strip("[]") for n in names if n))


def access_token(host: str, config: ServerConfig) -> tuple[str | None, bool]:
    """The token a door bound to `host` requires, and whether it was generated here (so that the
    caller prints it once). On loopback a token is required only when the variable sets one."""
    token = os.environ.get(config.token_env, "").strip() if config.token_env else ""
    if token:
        return token, False
    if is_loopback(host):
        return None, False
    return secrets.token_urlsafe(24), True


@dataclass
class AccessGuard:
    """ASGI middleware applying this module's rules to every HTTP request of `app`. With
    `browser_login`, `GET /?token=...` (the address printed at start) sets an HttpOnly cookie
    so that the page's own requests carry the token."""

    app: object
    allowed_hosts: list[str]
    token: str | None = None
    browser_login: bool = False
    _allowed: set[str] = field(init=False)

    def __post_init__(self) -> None:
        self._allowed = {h.lower() for h in self.allowed_hosts}

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        host = _hostname(headers.get("host", ""))
        if host not in self._allowed:
            return await _refuse(send, 421, f"Host {headers.get('host', '')!r} is not a name this server was bound "
                                            "to; add it to server.allowed_hosts if it is yours")
        if self.token is not None:
            given = _bearer(headers) or _cookie(headers)
            query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
            if self.browser_login and scope["method"] == "GET" and scope["path"] == "/" and "token" in query:
                if not hmac.compare_digest(query["token"][0], self.token):
                    return await _refuse(send, 401, "wrong access token")
                return await _login(send, self.token)
            if given is None or not hmac.compare_digest(given, self.token):
                return await _refuse(send, 401, "this server needs its access token: open the address printed at "
                                                "start, or send 'Authorization: Bearer <token>'")
        if scope["method"] not in SAFE_METHODS:
            problem = _cross_origin_write(headers, scope["method"])
            if problem:
                return await _refuse(send, 403, problem)
        return await self.app(scope, receive, send)


def _hostname(host_header: str) -> str:
    """The Host header's name without its port ("[::1]:8766" -> "::1")."""
    host = host_header.strip().lower()
    if host.startswith("["):
        return host[1:host.find("]")] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def _bearer(headers: dict[str, str]) -> str | None:
    scheme, _, value = headers.get("authorization", "").partition(" ")
    return value.strip() if scheme.lower() == "bearer" and value.strip() else None


def _cookie(headers: dict[str, str]) -> str | None:
    cookie = SimpleCookie()
    try:
        cookie.load(headers.get("cookie", ""))
    except Exception:  # a malformed Cookie header is no token, not a crash
        return None
    return cookie[COOKIE].value if COOKIE in cookie else None


def _cross_origin_write(headers: dict[str, str], method: str) -> str | None:
    """Why a write must be refused, or None: a body only as JSON (a cross-site form or text/plain
    POST is a "simple request" browsers send without asking first), and from this origin when
    the browser says where it comes from."""
    kind = headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if method in ("POST", "PUT", "PATCH") and kind != "application/json":
        return f"this request must send JSON (Content-Type: application/json), not {kind or 'nothing'!r}"
    site = headers.get("sec-fetch-site")
    if site is not None and site not in ("same-origin", "none"):
        return f"cross-origin request refused (Sec-Fetch-Site: {site})"
    origin = headers.get("origin")
    if origin is not None:
        parts = urlsplit(origin)
        if (parts.netloc or "").lower() != headers.get("host", "").lower():
            return f"cross-origin request refused (Origin {origin} is not this server)"
    return None


async def _refuse(send, status: int, message: str) -> None:
    body = json.dumps({"error": message}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


async def _login(send, token: str) -> None:
    cookie = f"{COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/"
    await send({"type": "http.response.start", "status": 303,
                "headers": [(b"location", b"/"), (b"set-cookie", cookie.encode()), (b"content-length", b"0")]})
    await send({"type": "http.response.body", "body": b""})
