"""The local API Gateway keeps the authorizer's answers as API Gateway does (the stack's TTL per
``Authorization`` value): a key asked about once is not asked about again until the TTL has
passed, whatever happened to it meanwhile; a refusal is not kept."""

from __future__ import annotations

from typing import Any

import pytest

from local.apigw import AuthorizerCache, with_authorizer
from local.settings import LocalSettings
from shared.topology import AUTHORIZER_CACHE_TTL_S

pytestmark = pytest.mark.unit


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Authorizer:
    """Allows the keys in ``valid`` (their tenant in the context), counting its calls."""

    def __init__(self) -> None:
        self.valid = {"Bearer a": "acme", "Bearer b": "globex"}
        self.calls: list[str | None] = []

    def __call__(self, event: dict[str, Any], anonymous: str | None) -> dict[str, Any]:
        header = event["headers"].get("Authorization") or event["headers"].get("authorization")
        self.calls.append(header)
        if header not in self.valid:
            raise Exception("Unauthorized")
        return {"principalId": self.valid[header], "context": {"tenant": self.valid[header]}}


def event(authorization: str | None, header: str = "Authorization") -> dict[str, Any]:
    headers = {header: authorization} if authorization else {}
    context = {"accountId": "1", "apiId": "api", "stage": "prod"}
    return {
        "path": "/v1/tasks",
        "httpMethod": "GET",
        "resource": "/{proxy+}",
        "headers": headers,
        "multiValueHeaders": {},
        "queryStringParameters": None,
        "pathParameters": None,
        "stageVariables": None,
        "requestContext": context,
    }


def gateway(ttl_s: float) -> tuple[Any, Authorizer, Clock]:
    clock, authorizer = Clock(), Authorizer()

    def api(event: dict[str, Any], context: Any) -> dict[str, Any]:
        return {"statusCode": 200, "body": event["requestContext"]["authorizer"]["tenant"]}

    handle = with_authorizer(api, authorizer, lambda path: False, None, AuthorizerCache(ttl_s, clock))
    return handle, authorizer, clock


def test_a_keys_answer_serves_its_requests_until_the_ttl_even_once_the_key_is_revoked() -> None:
    handle, authorizer, clock = gateway(60)
    assert handle(event("Bearer a"), None)["body"] == "acme"
    del authorizer.valid["Bearer a"]  # revoked
    clock.now = 59.9
    assert handle(event("Bearer a"), None)["statusCode"] == 200
    assert handle(event("Bearer a", header="authorization"), None)["statusCode"] == 200  # the same value
    assert authorizer.calls == ["Bearer a"]
    clock.now = 60.0
    assert handle(event("Bearer a"), None)["statusCode"] == 401
    assert authorizer.calls == ["Bearer a", "Bearer a"]


def test_each_key_has_its_own_answer_and_a_refusal_is_not_kept() -> None:
    handle, authorizer, _ = gateway(60)
    assert handle(event("Bearer b"), None)["body"] == "globex"
    assert handle(event("Bearer a"), None)["body"] == "acme"
    assert handle(event("Bearer c"), None)["statusCode"] == 401
    authorizer.valid["Bearer c"] = "initech"  # a key made after a refused try works at once
    assert handle(event("Bearer c"), None)["body"] == "initech"
    assert authorizer.calls == ["Bearer b", "Bearer a", "Bearer c", "Bearer c"]


def test_a_ttl_of_zero_asks_the_authorizer_every_time() -> None:
    handle, authorizer, _ = gateway(0)
    for _ in range(3):
        handle(event("Bearer a"), None)
    assert authorizer.calls == ["Bearer a"] * 3


def test_the_local_gateway_keeps_answers_as_long_as_the_stacks() -> None:
    assert LocalSettings.from_env({}).authorizer_cache_s == AUTHORIZER_CACHE_TTL_S
    assert LocalSettings.from_env({LocalSettings.setting_name("authorizer_cache_s"): "0"}).authorizer_cache_s == 0
