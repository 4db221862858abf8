"""The EventBridge Scheduler API as the stack serves it: ``/scheduler/{proxy+}`` to the API
function's handler with no authorizer, the request's SigV4 signature verified against a tenant's
access key (docs/eventbridge.md, section 5). boto3's ``scheduler`` client signs each request
(nothing is sent: a ``before-send`` hook turns the signed request into API Gateway's event for
``/prod/scheduler/...``, hands it to the function and answers with what it answered), so the
signatures are the SDK's own."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import boto3
import pytest
from botocore.awsrequest import AWSResponse

from functions.api import common
from functions.api.handler import handler
from local.apigw import LocalContext
from shared.domain.errors import SchedulerApiError
from tests.integration.conftest import ADMIN_KEY
from tests.support.eventually import until

pytestmark = pytest.mark.integration

ADMIN = {"Authorization": f"Bearer {ADMIN_KEY}"}
TARGET = {"Arn": "arn:aws:sqs:us-east-1:123456789012:q", "RoleArn": "arn:aws:iam::123456789012:role/r"}


class _Body:
    def __init__(self, data: bytes) -> None:
        self.data = data

    def stream(self, **_: Any) -> Any:
        yield self.data


def gateway_event(request: Any, decoded: tuple[bool, bool] = (True, True)) -> dict[str, Any]:
    """API Gateway's proxy event for the signed request (its stage in the URL's path); its
    ``path`` and ``requestContext.path`` decoded, or as the client sent them (``decoded``)."""
    url = urlsplit(request.url)
    body = request.body or b""
    headers = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in request.headers.items()}
    headers["Host"] = url.netloc
    query = parse_qs(url.query, keep_blank_values=True)
    path = url.path.removeprefix("/prod")
    return {
        "path": unquote(path) if decoded[0] else path,
        "httpMethod": request.method,
        "headers": headers,
        "multiValueQueryStringParameters": query or None,
        "queryStringParameters": {k: v[-1] for k, v in query.items()} or None,
        "requestContext": {
            "path": unquote(url.path) if decoded[1] else url.path,
            "stage": "prod",
            "requestId": "r-1",
        },
        "body": body.decode() if isinstance(body, bytes) else body,
        "isBase64Encoded": False,
    }


def scheduler_client(key_id: str, secret: str, decoded: tuple[bool, bool] = (True, True)) -> Any:
    client = boto3.client(
        "scheduler",
        endpoint_url="https://abc123.execute-api.us-east-1.amazonaws.com/prod/scheduler",
        region_name="us-east-1",
        aws_access_key_id=key_id,
        aws_secret_access_key=secret,
        config=boto3.session.Config(retries={"max_attempts": 1}),
    )

    def send(request: Any, **_: Any) -> AWSResponse:
        answer = handler(gateway_event(request, decoded), LocalContext())
        return AWSResponse(request.url, answer["statusCode"], answer["headers"], _Body(answer["body"].encode()))

    client.meta.events.register_first("before-send", send)  # before moto's own stub of every client
    return client


def test_an_access_key_signs_for_its_tenant_until_it_is_revoked(api: Any) -> None:
    common.reset()
    assert api("POST", "/v1/tenants", {"id": "acme"}, ADMIN).status == 201
    issued = api("POST", "/v1/tenants/acme/access-keys", None, ADMIN)
    assert issued.status == 201, issued.body
    key_id, secret = issued.body["access_key_id"], issued.body["secret_access_key"]
    assert key_id.startswith("AKSD")
    assert len(key_id) == 20

    acme = scheduler_client(key_id, secret)
    arn = acme.create_schedule(
        Name="nightly", ScheduleExpression="cron(0 2 * * ? *)", FlexibleTimeWindow={"Mode": "OFF"}, Target=TARGET
    )["ScheduleArn"]
    assert arn.endswith(":schedule/default/nightly")
    assert acme.get_schedule(Name="nightly")["ScheduleExpression"] == "cron(0 2 * * ? *)"
    # the schedule is the tenant's: acme's task, not the default tenant's
    listed = api("GET", "/v1/tasks?limit=100")
    assert all(t.get("name") != "eventbridge:default/nightly" for t in listed.body["items"])

    forged = scheduler_client(key_id, secret[:-2] + "xx")
    with pytest.raises(forged.exceptions.ClientError) as wrong:
        forged.get_schedule(Name="nightly")
    assert wrong.value.response["Error"]["Code"] == "InvalidSignatureException"
    assert wrong.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403

    stranger = scheduler_client("AKSDAAAAAAAAAAAAAAAA", secret)
    with pytest.raises(stranger.exceptions.ClientError) as unknown:
        stranger.list_schedules()
    assert unknown.value.response["Error"]["Code"] == "UnrecognizedClientException"

    assert api("DELETE", f"/v1/tenants/acme/access-keys/{key_id}", None, ADMIN).status == 204
    with pytest.raises(acme.exceptions.ClientError) as revoked:
        acme.list_schedules()
    assert revoked.value.response["Error"]["Code"] == "UnrecognizedClientException"
    assert api("DELETE", "/v1/tenants/other/access-keys/AKSDAAAAAAAAAAAAAAAA", None, ADMIN).status == 404


@pytest.mark.parametrize("decoded", [(False, False), (True, False), (False, True)], ids=str)
def test_the_tag_operations_verify_however_api_gateway_hands_on_an_encoded_slash(
    api: Any, decoded: tuple[bool, bool]
) -> None:
    """A schedule group's ARN in the path holds ``%2F``. Whether API Gateway hands on ``path`` and
    ``requestContext.path`` decoded or as sent (not checked on AWS), the signature verifies."""
    common.reset()
    assert api("POST", "/v1/tenants", {"id": "tags"}, ADMIN).status in (201, 409)
    issued = api("POST", "/v1/tenants/tags/access-keys", None, ADMIN)
    assert issued.status == 201, issued.body
    client = scheduler_client(issued.body["access_key_id"], issued.body["secret_access_key"], decoded)
    group = f"team-{'-'.join(str(d).lower() for d in decoded)}"
    arn = client.create_schedule_group(Name=group)["ScheduleGroupArn"]
    client.tag_resource(ResourceArn=arn, Tags=[{"Key": "team", "Value": "pay"}])
    assert client.list_tags_for_resource(ResourceArn=arn)["Tags"] == [{"Key": "team", "Value": "pay"}]
    client.untag_resource(ResourceArn=arn, TagKeys=["team"])
    assert client.list_tags_for_resource(ResourceArn=arn)["Tags"] == []


def test_access_keys_are_admin_routes(api: Any) -> None:
    assert api("POST", "/v1/tenants/default/access-keys").status == 403
    assert api("POST", "/v1/tenants/nobody/access-keys", None, ADMIN).status == 404


def test_unsigned_requests_are_refused(api: Any) -> None:
    event = {
        "path": "/scheduler/schedules",
        "httpMethod": "GET",
        "headers": {"Host": "x"},
        "requestContext": {"path": "/prod/scheduler/schedules", "requestId": "r-2"},
        "body": None,
    }
    answer = handler(event, LocalContext())
    assert answer["statusCode"] == 403
    assert answer["headers"]["x-amzn-ErrorType"] == "MissingAuthenticationTokenException"
    assert json.loads(answer["body"])["Message"] == "Missing Authentication Token"


def test_a_name_left_by_a_creation_that_crashed_is_taken_again(api: Any) -> None:
    """A creation takes the name, then registers the task, then records it on the name: a crash
    in between leaves a name without a task, which must not block the name for ever."""
    from functions.api.common import scheduler as service
    from shared.domain.schedule_names import NameRecord

    common.reset()
    schedules = service("us-east-1", "123456789012")
    params = {
        "Name": "crashed",
        "ScheduleExpression": "rate(5 minutes)",
        "FlexibleTimeWindow": {"Mode": "OFF"},
        "Target": TARGET,
    }
    now_ms = int(schedules.now().timestamp() * 1000)
    left = NameRecord("default", "crashed", "", now_ms - 120_000, now_ms - 120_000, {}, None)
    schedules.store.take_name("default", left)
    assert schedules.call("default", "CreateSchedule", dict(params))["ScheduleArn"].endswith("/default/crashed")
    assert schedules.call("default", "GetSchedule", {"Name": "crashed"})["ScheduleExpression"] == "rate(5 minutes)"

    recent = NameRecord("default", "in-flight", "", now_ms, now_ms, {}, None)
    schedules.store.take_name("default", recent)  # a creation still under way: its name is taken
    with pytest.raises(SchedulerApiError) as taken:
        schedules.call("default", "CreateSchedule", {**params, "Name": "in-flight"})
    assert taken.value.code == "ConflictException"


def url_client(handler_: Any, key_id: str, secret: str) -> Any:
    """boto3's ``scheduler`` client against the scheduler function's URL (as `make run` serves
    ``/scheduler``): each signed request becomes the function URL's event (local/function_url.py)
    handed to ``handler_``."""
    from local.function_url import url_answer, url_event

    client = boto3.client(
        "scheduler",
        endpoint_url="http://127.0.0.1:8080/scheduler",
        region_name="us-east-1",
        aws_access_key_id=key_id,
        aws_secret_access_key=secret,
        config=boto3.session.Config(retries={"max_attempts": 1}),
    )

    def send(request: Any, **_: Any) -> AWSResponse:
        url = urlsplit(request.url)
        body = request.body or b""
        body = body if isinstance(body, bytes) else body.encode()
        headers = [
            ("Host", url.netloc),
            *((k, v.decode() if isinstance(v, bytes) else v) for k, v in request.headers.items()),
        ]
        status, answer_headers, raw = url_answer(
            handler_(url_event(request.method, url.path, url.query, headers, body), LocalContext())
        )
        return AWSResponse(request.url, status, dict(answer_headers), _Body(raw))

    client.meta.events.register_first("before-send", send)
    return client


def acme_key(api: Any) -> tuple[str, str, dict[str, str]]:
    """Tenant acme's access key (id, secret) and its API key's header."""
    common.reset()
    tenant = api("POST", "/v1/tenants", {"id": "acme"}, ADMIN)
    assert tenant.status == 201, tenant.body
    issued = api("POST", "/v1/tenants/acme/access-keys", None, ADMIN)
    assert issued.status == 201, issued.body
    bearer = {"Authorization": f"Bearer {tenant.body['key']['secret']}"}
    return issued.body["access_key_id"], issued.body["secret_access_key"], bearer


def test_the_function_url_verifies_as_the_stack_does(api: Any) -> None:
    """`make run` verifying signatures (its ``scheduler_auth`` ``sigv4``), and the stack's function
    URL: the signing key's tenant, a wrong secret refused."""
    from functions.scheduler.handler import handler as url_handler

    key_id, secret, bearer = acme_key(api)
    acme = url_client(url_handler, key_id, secret)
    acme.create_schedule(
        Name="by-url", ScheduleExpression="rate(5 minutes)", FlexibleTimeWindow={"Mode": "OFF"}, Target=TARGET
    )
    assert acme.get_schedule(Name="by-url")["Name"] == "by-url"
    acme_tasks = until(lambda: api("GET", "/v1/tasks?name_prefix=eventbridge:", None, bearer).body["items"])
    assert [t["name"] for t in acme_tasks] == ["eventbridge:default/by-url"]
    assert api("GET", "/v1/tasks?name_prefix=eventbridge:").body["items"] == []  # not the default tenant's
    forged = url_client(url_handler, key_id, secret[:-1] + "x")
    with pytest.raises(forged.exceptions.ClientError) as wrong:
        forged.get_schedule(Name="by-url")
    assert wrong.value.response["Error"]["Code"] == "InvalidSignatureException"


def test_make_run_without_verification_reads_every_request_as_the_default_tenant(api: Any) -> None:
    """`make run` unless its ``scheduler_auth`` is ``sigv4``: whatever signed the request (another
    tenant's key, a wrong secret, a key no one issued), it acts as the default tenant."""
    from functions.scheduler.handler import handler as url_handler
    from local.function_url import as_default_tenant

    key_id, secret, _ = acme_key(api)
    lenient = as_default_tenant(url_handler, "default")
    for name, (kid, sec) in {
        "acme-key": (key_id, secret),
        "wrong": (key_id, "x" * 40),
        "made-up": ("AKSDMADEUP0000000000", "s"),
    }.items():
        url_client(lenient, kid, sec).create_schedule(
            Name=name, ScheduleExpression="rate(5 minutes)", FlexibleTimeWindow={"Mode": "OFF"}, Target=TARGET
        )
    listed = until(lambda: len(api("GET", "/v1/tasks?name_prefix=eventbridge:&limit=100").body["items"]) == 3)
    assert listed
    names = api("GET", "/v1/tasks?name_prefix=eventbridge:&limit=100").body["items"]  # no key: the default tenant
    assert sorted(t["name"] for t in names) == [
        "eventbridge:default/acme-key",
        "eventbridge:default/made-up",
        "eventbridge:default/wrong",
    ]
