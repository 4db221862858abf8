"""The command line's client has a method for every route of the API's OpenAPI document (and
no route the document lacks), so a new route cannot be forgotten by the CLI."""

from __future__ import annotations

import inspect
import re

import httpx
import pytest

from sundial_cli.client import ApiError, Client
from tests.unit.test_api_reference import SERVED_OUTSIDE_THE_DOCUMENT, documented_routes

pytestmark = pytest.mark.unit

NOT_ROUTES = {"close", "request", "pages"}
NOT_IN_THE_CLIENT_YET: set[str] = set()
"""Routes the API has that the client is still to call (the command line is being built on them
apart); each must not be called yet, so that the client's method, once written, removes it here."""
BODIES = {"spec": {}, "patch": {}, "body": {}, "specs": []}


def requested_routes() -> set[str]:
    """Call every route method of the client once; each request is recorded and refused."""
    seen: list[httpx.Request] = []

    def refuse(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(404, json={"error": {"code": "route_not_found", "message": "recorded"}})

    client = Client("http://sundial.test", transport=httpx.MockTransport(refuse))
    for name, method in inspect.getmembers(client, inspect.ismethod):
        if name.startswith("_") or name in NOT_ROUTES:
            continue
        parameters = inspect.signature(method).parameters.values()
        args = [BODIES.get(p.name, "x") for p in parameters if p.default is inspect.Parameter.empty]
        with pytest.raises(ApiError):
            method(*args)
    return {f"{request.method} {request.url.path}" for request in seen}


def as_template(route: str, templates: set[str]) -> str:
    for template in templates:
        pattern = re.sub(r"\\\{[a-z_]+\\\}", "[^/]+", re.escape(template))
        if re.fullmatch(pattern, route):
            return template
    return route


def test_the_client_calls_every_route_of_the_document() -> None:
    documented = {route for route in documented_routes() if route not in SERVED_OUTSIDE_THE_DOCUMENT}
    documented = {route for route in documented if " /v1/" in route}
    called = {as_template(route, documented) for route in requested_routes()}
    assert not called & NOT_IN_THE_CLIENT_YET, "the client calls it now: take it out of NOT_IN_THE_CLIENT_YET"
    assert called == documented - NOT_IN_THE_CLIENT_YET
