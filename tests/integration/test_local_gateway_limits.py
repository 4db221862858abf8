"""The local API Gateway models the limits the API function runs under on AWS (local/apigw.py,
from shared/topology.py, which infra/api.py builds the stack from): a request still running after
the function's timeout is the function's 502 ("Handling Lambda errors with an API Gateway API"),
one past API Gateway's integration timeout when that comes first is its 504, and an answer over
Lambda's 6 MB response is a failed invocation, 502; each in the API's error format."""

from __future__ import annotations

import http.client
import json
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from local.apigw import FunctionLimits, LocalContext, response_bytes, with_limits
from local.http_adapter import make_server
from shared.api.responses import ErrorOut
from shared.topology import (
    API_FUNCTION_TIMEOUT_S,
    API_INTEGRATION_TIMEOUT_S,
    FUNCTION_FAILED,
    INTEGRATION_TIMED_OUT,
    LAMBDA_RESPONSE_MAX_BYTES,
)

pytestmark = pytest.mark.integration

SHORT_S = 0.05
"""A timeout the tests give the function: a handler held on an event runs past it."""


def ok(body: str = '{"ok": true}') -> dict[str, Any]:
    return {"statusCode": 200, "headers": {"Content-Type": "application/json"}, "body": body}


@pytest.fixture
def held() -> Iterator[tuple[Callable[[dict[str, Any], Any], dict[str, Any]], threading.Event]]:
    """A function that answers only once the test lets it (never sleeps: it waits on an event)."""
    release = threading.Event()

    def function(event: dict[str, Any], context: Any) -> dict[str, Any]:
        release.wait(timeout=10)
        return ok()

    yield function, release
    release.set()


def error_of(answer: dict[str, Any]) -> tuple[int, str]:
    assert answer["headers"]["Content-Type"] == "application/json"
    return answer["statusCode"], ErrorOut.model_validate(json.loads(answer["body"])).error.code


def test_the_default_limits_are_the_stacks() -> None:
    limits = FunctionLimits()
    assert (limits.timeout_s, limits.integration_timeout_s) == (API_FUNCTION_TIMEOUT_S, API_INTEGRATION_TIMEOUT_S)
    assert limits.max_response_bytes == LAMBDA_RESPONSE_MAX_BYTES == 6 * 1024 * 1024
    assert limits.wait_s == 10, "the function's 10 s come before API Gateway's 29 s"
    assert limits.late is FUNCTION_FAILED


def test_a_request_past_the_functions_timeout_is_its_502_in_the_error_format(held) -> None:
    function, release = held
    api = with_limits(function, FunctionLimits(timeout_s=SHORT_S))
    assert error_of(api({}, LocalContext())) == (502, FUNCTION_FAILED.code)
    release.set()
    assert api({}, LocalContext())["statusCode"] == 200, "the next request is answered once the function is free"


def test_a_request_past_api_gateways_timeout_when_it_comes_first_is_504(held) -> None:
    function, _ = held
    api = with_limits(function, FunctionLimits(timeout_s=60, integration_timeout_s=SHORT_S))
    assert error_of(api({}, LocalContext())) == (504, INTEGRATION_TIMED_OUT.code)


def test_the_function_sees_its_remaining_time() -> None:
    seen: list[int] = []

    def function(event: dict[str, Any], context: Any) -> dict[str, Any]:
        seen.append(context.get_remaining_time_in_millis())
        return ok()

    with_limits(function)({}, LocalContext())
    assert 9_000 < seen[0] <= API_FUNCTION_TIMEOUT_S * 1000


def test_an_answer_over_lambdas_6_mb_is_a_failed_invocation_502() -> None:
    envelope = response_bytes(ok(""))
    fits = ok("x" * (LAMBDA_RESPONSE_MAX_BYTES - envelope))
    over = ok("x" * (LAMBDA_RESPONSE_MAX_BYTES - envelope + 1))
    assert response_bytes(fits) == LAMBDA_RESPONSE_MAX_BYTES
    assert with_limits(lambda e, c: fits)({}, LocalContext()) is fits
    assert error_of(with_limits(lambda e, c: over)({}, LocalContext())) == (502, FUNCTION_FAILED.code)
    # measured as the runtime sends it: a quote in the body is two bytes there (\")
    quoted = ok('"' * ((LAMBDA_RESPONSE_MAX_BYTES - envelope) // 2 + 1))
    assert error_of(with_limits(lambda e, c: quoted)({}, LocalContext())) == (502, FUNCTION_FAILED.code)


def test_the_local_http_api_answers_a_slow_request_as_api_gateway_does(held) -> None:
    function, _ = held
    server = make_server("127.0.0.1", 0, with_limits(function, FunctionLimits(timeout_s=SHORT_S)))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        connection = http.client.HTTPConnection("127.0.0.1", server.server_address[1], timeout=5)
        connection.request("GET", "/v1/tasks")
        response = connection.getresponse()
        body = json.loads(response.read())
        assert response.status == 502
        assert body["error"]["code"] == FUNCTION_FAILED.code
        connection.close()
    finally:
        server.shutdown()
        server.server_close()
