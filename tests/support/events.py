"""API Gateway proxy events and a fake LambdaContext: the one place tests build them."""

from __future__ import annotations

import json
from collections.abc import Callable
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


def gateway() -> Callable[[dict[str, Any], Any], dict[str, Any]]:
    """The API function behind the local API Gateway: the authorizer on every request (no
    ``Authorization`` header: the default tenant, as on the local runtime), within the function's
    limits (its timeout, Lambda's response size: local/apigw.py). Built fresh, so it reads the
    settings the test has just set."""
    from functions.api import common
    from functions.api import handler as module
    from functions.api.access import is_public
    from functions.authorizer import handler as authorizer
    from local.apigw import with_authorizer, with_limits
    from shared.settings.environment import from_env

    common.reset()
    authorizer.authenticator.cache_clear()
    return with_authorizer(
        with_limits(module.handler), authorizer.authorize, is_public, anonymous=from_env().default_tenant
    )
