"""API Gateway proxy events and a fake LambdaContext: the one place tests build them."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qs, urlsplit

from local.apigw import LocalContext, proxy_event

FakeLambdaContext = LocalContext


def api_event(method: str, url: str, body: Any = None, headers: dict[str, str] | None = None) -> dict[str, Any]:
    """A REST API (v1) Lambda proxy event for ``METHOD /path?query``."""
    parts = urlsplit(url)
    if body is not None and not isinstance(body, str):
        body = json.dumps(body)
    return proxy_event(
        method,
        parts.path,
        parse_qs(parts.query, keep_blank_values=True),
        {"Content-Type": "application/json", **(headers or {})},
        body,
    )
