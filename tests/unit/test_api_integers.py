"""The API's integers take what JSON Schema calls an integer, ``5.0`` included, and nothing else:
not ``5.5``, ``"5"`` or ``false``; and every integer, number and boolean of a request body takes a
JSON value of that type only (pydantic's lax mode would read ``"5"`` as 5 and ``true`` as 1)."""

from __future__ import annotations

import importlib
import json
import pkgutil
import re
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from shared.api import models
from shared.api.models.signing import SigningRotateIn
from shared.api.models.tenants import LimitsIn

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(("given", "read"), [(5, 5), (5.0, 5), (1e2, 100)])
def test_an_integral_number_is_an_integer(given: object, read: int) -> None:
    assert LimitsIn.model_validate({"burst": given}).burst == read
    assert type(LimitsIn.model_validate({"burst": given}).burst) is int
    assert SigningRotateIn.model_validate({"previous_expires_in_seconds": given}).previous_expires_in_seconds == read


@pytest.mark.parametrize("field", ["requests_per_second", "burst", "max_tasks"])
@pytest.mark.parametrize("given", [5.5, "5", False, True, 0.0])
def test_a_limit_is_a_whole_number_only(field: str, given: object) -> None:
    with pytest.raises(ValidationError):
        LimitsIn.model_validate({field: given})


@pytest.mark.parametrize("given", [5.5, "5", False, True, None, -1.0])
def test_a_rotation_takes_whole_seconds_only(given: object) -> None:
    with pytest.raises(ValidationError):
        SigningRotateIn.model_validate({"previous_expires_in_seconds": given})


def _request_models() -> dict[str, type[BaseModel]]:
    """Every model of shared/api/models by its name, the name the document's components take."""
    found: dict[str, type[BaseModel]] = {}
    for module in pkgutil.iter_modules(models.__path__):
        for value in vars(importlib.import_module(f"{models.__name__}.{module.name}")).values():
            if isinstance(value, type) and issubclass(value, BaseModel):
                found[value.__name__] = value
    return found


def _kinds(schema: dict[str, Any]) -> set[str]:
    """The JSON types a member's schema admits, ``array of integer`` for a list of integers."""
    members = schema.get("anyOf") or schema.get("oneOf") or [schema]
    kinds = set()
    for member in members:
        kind = member.get("type")
        if kind == "array" and member.get("items", {}).get("type") == "integer":
            kinds.add("array of integer")
        elif isinstance(kind, str):
            kinds.add(kind)
    return kinds


def _scalar_members(document: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(component, member, kind) of every integer, number and boolean member of every request body's
    schema and of the schemas it refers to."""
    schemas = document["components"]["schemas"]
    queue = [
        operation["requestBody"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
        for path in document["paths"].values()
        for operation in path.values()
        if "requestBody" in operation
    ]
    seen: set[str] = set()
    members = []
    while queue:
        name = queue.pop()
        if name in seen:
            continue
        seen.add(name)
        schema = schemas[name]
        queue += [ref.rsplit("/", 1)[1] for ref in re.findall(r"'\$ref': '([^']+)'", str(schema))]
        for member, member_schema in schema.get("properties", {}).items():
            members += [(name, member, kind) for kind in _kinds(member_schema) & set(NOT_OF_KIND)]
    return sorted(set(members))


NOT_OF_KIND: dict[str, tuple[object, ...]] = {
    "integer": ("5", True, False),
    "number": ("5", True, False),
    "boolean": (1, 1.0, "true"),
    "array of integer": (["1"], [True]),
}
"""JSON values of another type than the document's, which pydantic's lax mode would read as one of
its type ("5" as 5, true as 1, 1 as true)."""


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    from functions.api.handler import app

    return json.loads(app.get_openapi_json_schema())


def test_every_request_member_the_document_types_as_a_number_or_a_boolean_takes_only_that(document) -> None:
    """The document says integer, number or boolean: a string or a value of another of those types
    is refused, naming the member (the OpenAPI fuzzer sends them, and sees a 2xx as a broken
    contract)."""
    classes = _request_models()
    members = _scalar_members(document)
    assert len(members) > 10, members
    accepted = []
    for component, member, kind in members:
        for value in NOT_OF_KIND[kind]:
            try:
                classes[component].model_validate({member: value})
            except ValidationError as error:
                if any(detail["loc"][:1] == (member,) for detail in error.errors()):
                    continue
            accepted.append(f"{component}.{member} ({kind}) took {value!r}")
    assert accepted == []
