"""The web console's static files (``functions/api/console/``), served at ``/console/`` by the API
function itself: one more public route on API Gateway (``infra/api.py``), the same on the local
runtime, and the console calls the API from the same origin with the key its user signs in with.

Every file is read once, at cold start, into a table of answers: the path a request names is
looked up in it, never joined to a directory, so no path reaches a file outside the console.
Each answer carries the security headers the console is built for (a Content Security Policy
with no inline script and nothing from another origin) and an ``ETag``, so a browser revalidates
instead of downloading again."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent / "console"
PREFIX = "/console"

CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".txt": "text/plain; charset=utf-8",
}
"""The kinds of file the console is made of (all text: API Gateway's proxy passes them as they are)."""

POLICY = "; ".join(
    (
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
    )
)
"""Scripts, styles and API calls from this origin only; no inline script or style attribute, no
framing (a console button cannot be clicked through another site's page)."""

HEADERS = {
    "Content-Security-Policy": POLICY,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


@dataclass(frozen=True)
class Asset:
    body: str
    content_type: str
    etag: str


def is_console(path: str) -> bool:
    return path == PREFIX or path.startswith(PREFIX + "/")


@cache
def assets(root: Path = ROOT) -> dict[str, Asset]:
    """Every console file by the path it is served at (``/console/app.js``); the folder's
    ``index.html`` also at the folder's own path."""
    table: dict[str, Asset] = {}
    for file in sorted(root.rglob("*")):
        content_type = CONTENT_TYPES.get(file.suffix)
        if content_type is None or not file.is_file():
            continue
        body = file.read_text(encoding="utf-8")
        asset = Asset(body, content_type, '"' + hashlib.sha256(body.encode()).hexdigest()[:20] + '"')
        relative = file.relative_to(root).as_posix()
        table[f"{PREFIX}/{relative}"] = asset
        if file.name == "index.html":
            table[f"{PREFIX}/{relative.removesuffix('index.html')}"] = asset
    return table


def answer(event: dict[str, Any]) -> dict[str, Any] | None:
    """The proxy result for a console path (None: not a console path)."""
    path = event.get("path") or ""
    if not is_console(path):
        return None
    method = (event.get("httpMethod") or "").upper()
    if method not in {"GET", "HEAD"}:
        return _error(405, "method_not_allowed", f"{path} answers GET, HEAD, not {method}", {"Allow": "GET, HEAD"})
    if path == PREFIX:  # relative, so it holds under a stage's path (/prod/console -> /prod/console/)
        return {"statusCode": 301, "headers": {**HEADERS, "Location": "console/"}, "body": ""}
    asset = assets().get(path)
    if asset is None:
        return _error(404, "route_not_found", f"the console has no file {path}")
    headers = {**HEADERS, "Content-Type": asset.content_type, "ETag": asset.etag}
    if _header(event, "If-None-Match") == asset.etag:
        return {"statusCode": 304, "headers": headers, "body": ""}
    return {"statusCode": 200, "headers": headers, "body": "" if method == "HEAD" else asset.body}


def _header(event: dict[str, Any], name: str) -> str | None:
    for key, value in (event.get("headers") or {}).items():
        if key.lower() == name.lower():
            return str(value)
    return None


def _error(status: int, code: str, message: str, extra: dict[str, str] | None = None) -> dict[str, Any]:
    headers = {"Content-Type": "application/json", **HEADERS, **(extra or {})}
    return {"statusCode": status, "headers": headers, "body": json.dumps({"error": {"code": code, "message": message}})}
