"""SigV4 verified on the receiving side (shared/domain/sigv4.py), against the signer the SDKs use:
botocore signs real EventBridge Scheduler requests (its own serialization, nothing sent: a
``before-send`` hook keeps the prepared request and answers), and the verifier must accept each
one, find its key and region, and refuse it once anything signed is changed, its key is unknown,
or its time is more than 5 minutes off."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

import boto3
import pytest
from botocore.awsrequest import AWSResponse

from shared.api import scheduler_protocol as protocol
from shared.domain.sigv4 import SignatureRefused, verify

pytestmark = pytest.mark.unit

KEY_ID, SECRET = "AKIASUNDIALTEST00001", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
ARN = "arn:aws:scheduler:eu-west-1:123456789012:schedule-group/billing"


class _Raw:
    """An answer's body as botocore reads it (``stream``)."""

    def stream(self, **_: Any) -> Any:
        yield b"{}"


def signed_requests() -> list[Any]:
    """Requests of several operations as botocore signs them (paths with members and an ARN, a
    query string, JSON bodies)."""
    client = boto3.client(
        "scheduler",
        endpoint_url="https://sundial.example.com/scheduler",
        region_name="eu-west-1",
        aws_access_key_id=KEY_ID,
        aws_secret_access_key=SECRET,
    )
    kept: list[Any] = []

    def keep(request: Any, **_: Any) -> AWSResponse:
        kept.append(request)
        return AWSResponse(request.url, 200, {}, _Raw())

    client.meta.events.register("before-send", keep)
    target = {"Arn": "arn:aws:sqs:eu-west-1:123456789012:q", "RoleArn": "arn:aws:iam::123456789012:role/r"}
    client.create_schedule(
        Name="close-orders",
        ScheduleExpression="cron(0 9 ? * MON-FRI *)",
        FlexibleTimeWindow={"Mode": "OFF"},
        Target={**target, "Input": '{"a": "é ü"}'},
    )
    client.list_schedules(GroupName="billing", NamePrefix="a b", MaxResults=10)
    client.untag_resource(ResourceArn=ARN, TagKeys=["team", "cost center"])
    client.get_schedule(Name="x.y_z-1", GroupName="default")
    return kept


def _parts(request: Any) -> dict[str, Any]:
    url = urlsplit(request.url)
    body = request.body or b""
    return {
        "method": request.method,
        "wire_path": url.path,
        "query": parse_qsl(url.query, keep_blank_values=True),
        # the Host header http.client adds when it sends, as the receiver gets it
        "headers": {**dict(request.headers.items()), "Host": url.netloc},
        "body": body if isinstance(body, bytes) else body.encode(),
    }


def _now(request: Any) -> datetime:
    return datetime.strptime(request.headers["X-Amz-Date"].decode(), "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)


def _verify(parts: dict[str, Any], now: datetime, secrets: dict[str, str] | None = None) -> tuple[str, str]:
    known = {KEY_ID: SECRET} if secrets is None else secrets
    headers = {k: v.decode() if isinstance(v, bytes) else v for k, v in parts["headers"].items()}
    return verify(**{**parts, "headers": headers}, secret_of=known.get, now=now, service="scheduler")


def test_botocore_s_signatures_verify() -> None:
    requests = signed_requests()
    assert len(requests) == 4
    for request in requests:
        assert _verify(_parts(request), _now(request)) == (KEY_ID, "eu-west-1")


@pytest.mark.parametrize("decoded", [True, False], ids=["decoded", "as-sent"])
def test_the_path_rebuilt_from_what_api_gateway_hands_over_is_the_one_signed(decoded: bool) -> None:
    """Whether API Gateway hands the function the path decoded (``%2F`` in a tag operation's ARN
    turned into ``/``) or as the client sent it, the operation, its members and the path the
    signature covers come out the same."""
    for request in signed_requests():
        path = urlsplit(request.url).path.removeprefix(protocol.PREFIX)
        operation, members = protocol.route(request.method, unquote(path) if decoded else path)
        assert protocol.PREFIX + protocol.wire_path(operation, members) == urlsplit(request.url).path
        if operation == "UntagResource":
            assert members == {"ResourceArn": ARN}


@pytest.mark.parametrize(
    ("change", "code"),
    [
        (lambda p: {**p, "body": p["body"] + b" "}, "InvalidSignatureException"),
        (lambda p: {**p, "wire_path": p["wire_path"] + "x"}, "InvalidSignatureException"),
        (lambda p: {**p, "method": "PUT"}, "InvalidSignatureException"),
        (lambda p: {**p, "headers": {**p["headers"], "host": "elsewhere.example.com"}}, "InvalidSignatureException"),
        (
            lambda p: {**p, "headers": {k: v for k, v in p["headers"].items() if k != "Authorization"}},
            "MissingAuthenticationTokenException",
        ),
    ],
)
def test_a_changed_request_is_refused(change: Any, code: str) -> None:
    request = signed_requests()[0]
    with pytest.raises(SignatureRefused) as refused:
        _verify(change(_parts(request)), _now(request))
    assert refused.value.code == code


def test_an_unknown_key_and_a_stale_or_future_time() -> None:
    request = signed_requests()[1]
    with pytest.raises(SignatureRefused) as unknown:
        _verify(_parts(request), _now(request), secrets={})
    assert unknown.value.code == "UnrecognizedClientException"
    with pytest.raises(SignatureRefused) as other:
        _verify(_parts(request), _now(request), secrets={KEY_ID: SECRET + "x"})
    assert other.value.code == "InvalidSignatureException"
    for skew in (timedelta(minutes=5, seconds=1), -timedelta(minutes=5, seconds=1)):
        with pytest.raises(SignatureRefused) as late:
            _verify(_parts(request), _now(request) + skew)
        assert "Signature expired" in late.value.message
    assert _verify(_parts(request), _now(request) + timedelta(minutes=4, seconds=59))[0] == KEY_ID
