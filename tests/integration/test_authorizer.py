"""The Lambda REQUEST authorizer as API Gateway calls it (functions/authorizer/handler.py): the
admin key and a tenant's key by their hashes in the table, the policy
API Gateway caches per key (every method and path of the stage) and the context the API reads.
Refusals are the exception API Gateway turns into 401."""

from __future__ import annotations

from typing import Any

import boto3
import pytest

from tests.integration.conftest import store_admin_key
from tests.support.events import FakeLambdaContext

pytestmark = pytest.mark.integration

METHOD_ARN = "arn:aws:execute-api:us-east-1:123456789012:abc123/prod/GET/v1/tasks/01ABC"
ADMIN_SECRET = "sk_admin_0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ01"


def request(authorization: str | None) -> dict[str, Any]:
    headers = {"Host": "abc123.execute-api.us-east-1.amazonaws.com"}
    if authorization is not None:
        headers["authorization"] = authorization  # API Gateway keeps the client's spelling
    return {"type": "REQUEST", "methodArn": METHOD_ARN, "headers": headers, "httpMethod": "GET", "path": "/v1/tasks"}


@pytest.fixture
def authorizer(aws, monkeypatch):
    from functions.authorizer import handler as module

    store_admin_key(ADMIN_SECRET)
    module.authenticator.cache_clear()
    yield module
    module.authenticator.cache_clear()


def tenant_key(tenant: str, **limits: int) -> str:
    from shared.services.factory import build_tenant_service
    from shared.settings.environment import from_env

    service = build_tenant_service(from_env())
    created = service.create(tenant, **limits)
    return created.key.secret


def test_a_tenant_key_is_allowed_everywhere_on_the_stage_with_its_tenant_and_rate(authorizer):
    key = tenant_key("acme", requests_per_second=7, burst=9)
    answer = authorizer.handler(request(f"Bearer {key}"), FakeLambdaContext())
    assert answer["principalId"] == "acme"
    (statement,) = answer["policyDocument"]["Statement"]
    assert statement == {
        "Action": "execute-api:Invoke",
        "Effect": "Allow",
        "Resource": "arn:aws:execute-api:us-east-1:123456789012:abc123/prod/*",
    }
    assert answer["context"] == {"role": "tenant", "tenant": "acme", "requests_per_second": 7, "burst": 9}
    assert key not in str(answer)


def test_the_admin_key_is_found_by_its_hash_in_the_table(authorizer):
    from shared.domain.tenants import key_hash
    from shared.settings.environment import from_env

    answer = authorizer.handler(request(f"Bearer {ADMIN_SECRET}"), FakeLambdaContext())
    assert answer["context"] == {"role": "admin"}
    assert answer["principalId"] == "admin"
    stored = boto3.client("dynamodb").scan(TableName=from_env().table_name)["Items"]
    assert ADMIN_SECRET not in str(stored)  # the hash only
    assert {item["pk"]["S"] for item in stored} == {"ADMIN", f"K#{key_hash(ADMIN_SECRET)}"}


def test_after_a_rotation_only_the_new_admin_key_is_the_admin(authorizer):
    from shared.domain.tenants import key_hash, new_admin_key
    from shared.settings.environment import from_env
    from shared.store.admin_key import AdminKeyStore

    new = new_admin_key()
    AdminKeyStore(boto3.client("dynamodb"), from_env().table_name).rotate(key_hash(new))
    assert authorizer.handler(request(f"Bearer {new}"), FakeLambdaContext())["context"] == {"role": "admin"}
    for refused in (ADMIN_SECRET, new_admin_key()):
        with pytest.raises(Exception, match=r"^Unauthorized$"):
            authorizer.handler(request(f"Bearer {refused}"), FakeLambdaContext())


def test_a_deployment_without_an_admin_key_has_no_admin(aws):
    from functions.authorizer import handler as module

    module.authenticator.cache_clear()
    try:
        with pytest.raises(Exception, match=r"^Unauthorized$"):
            module.handler(request(f"Bearer {ADMIN_SECRET}"), FakeLambdaContext())
    finally:
        module.authenticator.cache_clear()


@pytest.mark.parametrize(
    "authorization",
    [None, "", "Bearer", "Bearer ", "Basic YWRtaW46YWRtaW4=", "Bearer sk_unknown_key", f"Bearer {ADMIN_SECRET}x"],
)
def test_no_key_or_a_key_nobody_holds_is_unauthorized(authorizer, authorization):
    tenant_key("acme")
    with pytest.raises(Exception, match=r"^Unauthorized$"):  # API Gateway's 401
        authorizer.handler(request(authorization), FakeLambdaContext())


def test_a_revoked_key_is_refused_by_the_next_call(authorizer):
    from shared.services.factory import build_tenant_service
    from shared.settings.environment import from_env

    service = build_tenant_service(from_env())
    created = service.create("acme")
    spare = service.issue_key("acme")
    assert authorizer.handler(request(f"Bearer {created.key.secret}"), FakeLambdaContext())["principalId"] == "acme"
    service.revoke("acme", created.key.id)
    with pytest.raises(Exception, match=r"^Unauthorized$"):
        authorizer.handler(request(f"Bearer {created.key.secret}"), FakeLambdaContext())
    assert authorizer.handler(request(f"Bearer {spare.secret}"), FakeLambdaContext())["principalId"] == "acme"


def test_no_header_is_the_anonymous_tenant_only_where_the_local_gateway_asks(authorizer):
    local = authorizer.authorize(request(None), anonymous="default")
    assert local["context"] == {"role": "tenant", "tenant": "default", "requests_per_second": 100, "burst": 200}
    with pytest.raises(Exception, match=r"^Unauthorized$"):
        authorizer.authorize(request(None))
