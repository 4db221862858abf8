"""The registration routes' IAM twins (``POST /iam/v1/tasks``, ``POST /iam/v1/tasks:batch``;
docs/construct.md, section 1): behind API Gateway's ``AWS_IAM`` methods the function takes
``requestContext.identity`` as the caller, maps a granted role's session to its tenant and
registers through the same use case as the bearer routes; an identity not granted is ``403
identity_not_granted``. Nowhere else is the identity read: a bearer route's event that claims one
is the bearer's, and the local gateway, which verifies no SigV4, refuses the IAM routes.

The events are the local gateway's proxy events with AWS's documented ``requestContext.identity``
of an ``AWS_IAM`` method (tests/data/aws/apigateway-request-context-aws-iam.json) as the caller."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from shared.domain.iam_callers import IAM_REGISTER_PATHS
from tests.integration.conftest import ADMIN_KEY, use_settings
from tests.support.events import FakeLambdaContext, api_event
from tests.support.recordings import recording

pytestmark = pytest.mark.integration

ACCOUNT = "123456789012"
GRANTED = f"arn:aws:iam::{ACCOUNT}:role/team/Reporter"
"""A role granted to tenant acme, with a path its sessions' ARNs leave out."""
SESSION = f"arn:aws:sts::{ACCOUNT}:assumed-role/Reporter/nightly-job"
OTHER_SESSION = f"arn:aws:sts::{ACCOUNT}:assumed-role/Intruder/nightly-job"
TASK = {"schedule": {"after_seconds": 600}, "target": {"http": {"url": "https://example.com/hook"}}}


@pytest.fixture
def acme(api: Any, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Tenant acme and its key; its role granted (the setting ``grant_register`` writes)."""
    from functions.api import common

    answer = api("POST", "/v1/tenants", {"id": "acme"}, {"Authorization": f"Bearer {ADMIN_KEY}"})
    assert answer.status == 201, answer.body
    use_settings(monkeypatch, iam_roles=f"acme={GRANTED}")
    common.reset()
    return {"Authorization": f"Bearer {answer.body['key']['secret']}"}


def iam_event(path: str, body: Any, user_arn: str | None) -> dict[str, Any]:
    """The event of an ``AWS_IAM`` method on ``path``: its resource is the path, and its
    ``requestContext.identity`` AWS's documented one, with ``user_arn`` as the caller."""
    event = api_event("POST", path, body)
    identity = copy.deepcopy(recording("apigateway-request-context-aws-iam")["requestContext"]["identity"])
    if user_arn is not None:
        identity.update(userArn=user_arn, caller=f"AROAEXAMPLEID:{user_arn.rsplit('/', 1)[-1]}")
    event["resource"] = path
    event["requestContext"] = {**event["requestContext"], "resourcePath": path, "identity": identity}
    return event


def call(event: dict[str, Any]) -> tuple[int, Any]:
    """The API function as API Gateway invokes it behind the method (no local gateway in front)."""
    from functions.api.handler import handler

    raw = handler(event, FakeLambdaContext())
    return raw["statusCode"], json.loads(raw["body"]) if raw.get("body") else None


def test_a_granted_role_s_session_registers_a_task_as_its_tenant(api: Any, acme: dict[str, str]) -> None:
    status, body = call(iam_event("/iam/v1/tasks", TASK, SESSION))
    assert status == 201, body
    assert api("GET", f"/v1/tasks/{body['id']}", headers=acme).status == 200
    assert api("GET", f"/v1/tasks/{body['id']}").status == 404, "not the default tenant's"


def test_a_granted_role_s_session_registers_a_batch_as_its_tenant(api: Any, acme: dict[str, str]) -> None:
    status, body = call(iam_event("/iam/v1/tasks:batch", {"tasks": [TASK, {"schedule": {}}]}, SESSION))
    assert status == 200, body
    first, second = body["items"]
    assert api("GET", f"/v1/tasks/{first['task']['id']}", headers=acme).status == 200
    assert second["error"]["code"] == "validation_error"


def test_the_iam_route_validates_as_the_bearer_route_does(api: Any, acme: dict[str, str]) -> None:
    bad = {**TASK, "schedule": {"after_seconds": -1}}
    status, body = call(iam_event("/iam/v1/tasks", bad, SESSION))
    bearer = api("POST", "/v1/tasks", bad, acme)
    assert (status, body) == (bearer.status, bearer.body) == (400, bearer.body)


@pytest.mark.parametrize(
    "user_arn",
    [
        None,  # AWS's documented caller as it is: an IAM user, arn:aws:iam::123456789012:user/alice
        OTHER_SESSION,  # a role not granted
        "arn:aws:sts::210987654321:assumed-role/Reporter/nightly-job",  # the role's name in another account
        "",
    ],
)
def test_an_identity_not_granted_is_refused_with_a_stable_code(
    api: Any, acme: dict[str, str], user_arn: str | None
) -> None:
    for path in IAM_REGISTER_PATHS:
        status, body = call(iam_event(path, TASK, user_arn))
        assert (status, body["error"]["code"]) == (403, "identity_not_granted"), body


def test_a_bearer_route_s_event_claiming_an_iam_identity_is_not_iam(api: Any, acme: dict[str, str]) -> None:
    forged = iam_event("/iam/v1/tasks", TASK, SESSION)
    forged["path"] = forged["resource"] = "/v1/tasks"  # the identity, on the bearer route
    status, body = call(forged)
    assert (status, body["error"]["code"]) == (401, "unauthorized"), "no authorizer context: no caller"
    from tests.support.events import gateway

    answered = gateway()(forged, FakeLambdaContext())  # through the authorizer: no key, the default tenant
    created = json.loads(answered["body"])
    assert answered["statusCode"] == 201, created
    assert api("GET", f"/v1/tasks/{created['id']}", headers=acme).status == 404, "not acme's"
    assert api("GET", f"/v1/tasks/{created['id']}").status == 200


def test_an_iam_path_not_reached_through_its_method_is_refused(api: Any, acme: dict[str, str]) -> None:
    event = iam_event("/iam/v1/tasks", TASK, SESSION)
    event["resource"] = "/v1/{proxy+}"  # not the AWS_IAM method's resource
    status, body = call(event)
    assert (status, body["error"]["code"]) == (403, "iam_route_unavailable")


@pytest.mark.parametrize("path", [*IAM_REGISTER_PATHS, "/iam/v1/tasks/x"])
def test_the_local_gateway_refuses_the_iam_routes_without_invoking_the_function(
    api: Any, acme: dict[str, str], path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from functions.api import handler

    monkeypatch.setattr(handler, "admit", lambda event: pytest.fail("the function ran"))
    answer = api("POST", path, TASK)
    assert (answer.status, answer.body["error"]["code"]) == (403, "iam_route_unavailable")
    assert "only on AWS" in answer.body["error"]["message"]


def test_the_openapi_document_describes_the_iam_routes_as_the_bearer_ones(api: Any) -> None:
    document = api("GET", "/v1/openapi.json").body
    for path in IAM_REGISTER_PATHS:
        twin, bearer = document["paths"][path]["post"], document["paths"][path.removeprefix("/iam")]["post"]
        assert twin["requestBody"] == bearer["requestBody"]
        assert twin["responses"] == bearer["responses"]
        assert "SigV4" in twin["description"]
        assert "grant_register" in twin["description"]


def test_the_local_gateway_answers_another_method_on_an_iam_route_as_the_function_would(api: Any) -> None:
    for path in IAM_REGISTER_PATHS:
        answer = api("GET", path)
        assert (answer.status, answer.body["error"]["code"]) == (405, "method_not_allowed")
        assert answer.headers["Allow"] == "POST"
