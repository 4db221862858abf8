"""docs/api.md, the human API reference, names every route the API's OpenAPI document has (and
none it does not), so it cannot fall behind the code. Routes are read from the document, not the
handler's source, wherever they are declared."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from local.advance import ADVANCE_ROUTE, CLOCK_ROUTE

pytestmark = pytest.mark.unit

REFERENCE = Path(__file__).resolve().parents[2] / "docs" / "api.md"
METHODS = ("get", "put", "post", "delete", "patch", "head", "options")
SERVED_OUTSIDE_THE_DOCUMENT = {
    "GET /v1/openapi.json",
    "GET /v1/docs",
    f"GET {CLOCK_ROUTE}",
    f"POST {ADVANCE_ROUTE}",
}
"""The document itself and Swagger UI: served, but not operations of the document; and the local
runtime's virtual clock (local/advance.py), which only a runtime on it answers."""


def documented_routes() -> set[str]:
    """Every route the API's OpenAPI document describes, as ``METHOD /path``."""
    from functions.api.handler import app

    schema = app.get_openapi_schema().model_dump(by_alias=True, exclude_none=True)
    return {
        f"{method.upper()} {path}"
        for path, operations in schema["paths"].items()
        for method in METHODS
        if method in operations
    }


def test_the_openapi_document_has_the_api_routes() -> None:
    routes = documented_routes()
    assert "POST /v1/tasks" in routes
    assert "GET /v1/tasks/{task_id}" in routes
    assert len(routes) >= 17


def test_the_reference_names_every_route_of_the_openapi_document() -> None:
    text = REFERENCE.read_text()
    missing = sorted(route for route in documented_routes() if f"`{route}`" not in text)
    assert not missing, f"docs/api.md does not name: {missing}"


def test_the_reference_routes_table_names_no_route_the_api_lacks() -> None:
    rows = re.findall(r"^\| `([A-Z]+ /v1/[^`]*)` \|", REFERENCE.read_text(), flags=re.MULTILINE)
    assert rows, "docs/api.md has a routes table: | `METHOD /path` | ... |"
    unknown = sorted(set(rows) - documented_routes() - SERVED_OUTSIDE_THE_DOCUMENT)
    assert not unknown, f"docs/api.md names routes the API does not have: {unknown}"
