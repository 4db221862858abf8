"""The Lambda REQUEST authorizer as API Gateway calls it (functions/authorizer/handler.py): the
admin key from the stack's Secrets Manager secret, a tenant's key from the table, the policy
API Gateway caches per key (every method and path of the stage) and the context the API reads.
Refusals are the exception API Gateway turns into 401."""

from __future__ import annotations

from typing import Any

import boto3
import pytest

from tests.integration.conftest import use_settings
from tests.support.events import FakeLambdaContext

pytestmark = pytest.mark.integration

METHOD_ARN = "arn:aws:execute-api:us-east-1:123456789012:abc123/prod/GET/v1/tasks/01ABC"
ADMIN_SECRET = "admin-key-from-secrets-manager-0123456789abcdef"


def request(authorization: str | None) -> dict[str, Any]:
    headers = {"Host": "abc123.execute-api.us-east-1.amazonaws.com"}
    if authorization is not None:
        headers["authorization"] = authorization  # API Gateway keeps the client's spelling
    return {"type": "REQUEST", "methodArn": METHOD_ARN, "headers": headers, "httpMethod": "GET", "path": "/v1/tasks"}


@pytest.fixture
def authorizer(aws, monkeypatch):
    from functions.authorizer import handler as module

    arn = boto3.client("secretsmanager").create_secret(Name="sundial-admin-key", SecretString=ADMIN_SECRET)["ARN"]
    use_settings(monkeypatch, admin_key_secret_arn=arn)
    module.authenticator.cache_clear()
    yield module
    module.authenticator.cache_clear()


def tenant_key(tenant: str, **limits: int) -> str:
    from shared.services.factory import build_tenant_service
    from shared.settings import from_env

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


def test_the_admin_key_comes_from_the_stacks_secret(authorizer):
    answer = authorizer.handler(request(f"Bearer {ADMIN_SECRET}"), FakeLambdaContext())
    assert answer["context"] == {"role": "admin"}
    assert answer["principalId"] == "admin"


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
    from shared.settings import from_env

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
