"""The smoke check's verdicts (sundial_cli/smoke.py) on answers made up here: a late run, a run
that is not what the check wanted, and an API that cannot be reached each fail it, and say why.
That it passes against a real runtime is tests/e2e/test_smoke.py's."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from sundial_cli import smoke
from sundial_cli.client import Client

pytestmark = pytest.mark.unit

BASE = "https://api.example.test/prod"


def _late_api(lateness_ms: int) -> httpx.MockTransport:
    """Every task registers; every task's history is three succeeded runs ``lateness_ms`` late."""
    registered: list[dict[str, Any]] = []

    def answer(request: httpx.Request) -> httpx.Response:
        path = request.url.path.removeprefix("/prod")
        if request.method == "POST" and path == "/v1/tasks":
            registered.append(json.loads(request.content))
            return httpx.Response(201, json={"id": f"task-{len(registered)}"})
        if request.method == "GET" and path.endswith("/runs"):
            runs = [
                {
                    "run_id": f"run-{i}",
                    "scheduled_for": f"2026-11-26T10:00:0{i}.000Z",
                    "fired_at": f"2026-11-26T10:00:0{i}.000Z",
                    "status": "succeeded",
                    "attempts": 1,
                    "lateness_ms": lateness_ms,
                    "last_error": None,
                }
                for i in range(3)
            ]
            return httpx.Response(200, json={"items": runs, "next_cursor": None})
        if request.method == "GET" and path == "/v1/dead-letters":
            return httpx.Response(200, json={"items": [], "next_cursor": None})
        if request.method == "DELETE":
            return httpx.Response(204)
        return httpx.Response(404, json={"error": {"code": "not_found", "message": path}})

    return httpx.MockTransport(answer)


def test_late_and_wrong_runs_fail_the_smoke_with_their_figures(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(smoke, "POLL_S", 0.01)
    client = Client(BASE, "sk_test", transport=_late_api(lateness_ms=5000))
    said: list[str] = []
    verdicts = smoke.Smoke(client, smoke.ApiTargets(BASE), max_lateness_ms=1000).run(0.2, say=said.append)
    by_check = {verdict.check: verdict for verdict in verdicts}
    assert [verdict.check for verdict in verdicts] == ["one-shot", "recurring", "retry", "dead letter", "chain"]
    assert by_check["one-shot"].outcome == smoke.FAILED
    assert "run run-0 5000 ms late (bound 1000 ms)" in by_check["one-shot"].detail
    assert by_check["recurring"].outcome == smoke.FAILED
    assert "lateness [5000, 5000, 5000] ms" in by_check["recurring"].detail
    assert by_check["retry"].outcome == smoke.SKIPPED  # no target answers 500 then 200 on a deployed API
    assert by_check["dead letter"].outcome == smoke.FAILED
    assert "succeeded, not failed" in by_check["dead letter"].detail
    assert by_check["chain"].outcome == smoke.FAILED  # no child run names its parent
    assert by_check["chain"].detail == "no verdict within 0.2 s"
    assert sorted(said) == sorted(verdict.line() for verdict in verdicts)


def test_an_unreachable_api_fails_every_check_and_the_exit_status(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in (smoke.ACCESS_KEY_ENV, smoke.SECRET_KEY_ENV, smoke.SCHEDULER_URL_ENV):
        monkeypatch.delenv(name, raising=False)
    status = smoke.main(["--url", "http://127.0.0.1:9", "--timeout", "1"])
    out = capsys.readouterr().out
    assert status == 1, out
    failed = [line for line in out.splitlines() if line.startswith("FAILED")]
    assert len(failed) == 5, out
    assert all("could not reach http://127.0.0.1:9" in line for line in failed), out
    [skipped] = [line for line in out.splitlines() if line.startswith("skipped")]
    assert skipped.startswith("skipped eventbridge: no access key")
    assert smoke.ACCESS_KEY_ENV in skipped
    assert out.splitlines()[-1] == "smoke: 0 ok, 5 failed, 1 skipped"


def test_the_stacks_api_url_output_is_taken_as_it_is_printed() -> None:
    assert smoke.base_url(f"{BASE}/v1") == BASE
    assert smoke.base_url(f"{BASE}/v1/") == BASE
    assert smoke.base_url("http://127.0.0.1:8080") == "http://127.0.0.1:8080"


# --- the signed round trip of the EventBridge Scheduler API ----------------------------------------

DEFAULT_GROUP_ARN = "arn:aws:scheduler:eu-west-1:123456789012:schedule-group/default"
API_ENDPOINT = "https://abc123.execute-api.eu-west-1.amazonaws.com/prod/scheduler"
FUNCTION_URL = "https://xyz789.lambda-url.eu-west-1.on.aws"


class FakeScheduler:
    """boto3's ``scheduler`` client as the smoke uses it: each call recorded, ``refuse`` making a
    call fail as botocore raises a service's error."""

    def __init__(self, refuse: dict[str, str] | None = None) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.refuse = refuse or {}
        self.schedules: dict[str, dict[str, Any]] = {}

    def _call(self, operation: str, params: dict[str, Any]) -> None:
        from botocore.exceptions import ClientError

        self.calls.append((operation, params))
        if operation in self.refuse:
            code = self.refuse[operation]
            raise ClientError({"Error": {"Code": code, "Message": f"{code} for the test"}}, operation)

    def list_schedule_groups(self, **params: Any) -> dict[str, Any]:
        self._call("ListScheduleGroups", params)
        return {"ScheduleGroups": [{"Name": "default", "Arn": DEFAULT_GROUP_ARN, "State": "ACTIVE"}]}

    def create_schedule(self, **params: Any) -> dict[str, Any]:
        self._call("CreateSchedule", params)
        self.schedules[params["Name"]] = params
        return {"ScheduleArn": f"arn:aws:scheduler:eu-west-1:123456789012:schedule/default/{params['Name']}"}

    def get_schedule(self, **params: Any) -> dict[str, Any]:
        self._call("GetSchedule", params)
        return dict(self.schedules[params["Name"]])

    def delete_schedule(self, **params: Any) -> dict[str, Any]:
        self._call("DeleteSchedule", params)
        self.schedules.pop(params["Name"], None)
        return {}


def _round_trip(client: FakeScheduler, endpoint: str = API_ENDPOINT, function_url: bool = False) -> smoke.Verdict:
    from datetime import UTC, datetime

    return smoke.scheduler_round_trip(
        client,
        endpoint,
        function_url=function_url,
        name="smoke-1234-eventbridge",
        now=lambda: datetime(2026, 11, 26, 10, 0, tzinfo=UTC),
    )


def test_the_round_trip_creates_reads_back_and_deletes_a_schedule_that_cannot_fire() -> None:
    client = FakeScheduler()
    verdict = _round_trip(client)
    assert (verdict.check, verdict.outcome) == ("eventbridge", smoke.OK)
    assert "through the API's /scheduler" in verdict.detail
    assert [operation for operation, _ in client.calls] == [
        "ListScheduleGroups",
        "CreateSchedule",
        "GetSchedule",
        "DeleteSchedule",
    ]
    created = client.calls[1][1]
    assert created["State"] == "DISABLED"
    assert created["ScheduleExpression"] == "at(2026-12-26T10:00:00)"  # a month ahead
    # in the account and Region the default group's ARN names (a target elsewhere is refused)
    assert created["Target"]["Arn"] == "arn:aws:sqs:eu-west-1:123456789012:smoke-eventbridge-target"
    assert created["Target"]["RoleArn"] == "arn:aws:iam::123456789012:role/smoke-eventbridge"
    assert client.schedules == {}


def test_a_signature_the_api_refuses_names_the_function_url_to_use_instead() -> None:
    client = FakeScheduler(refuse={"ListScheduleGroups": "InvalidSignatureException"})
    verdict = _round_trip(client)
    assert verdict.outcome == smoke.FAILED
    assert verdict.detail.startswith("ListScheduleGroups refused (InvalidSignatureException): ")
    assert API_ENDPOINT in verdict.detail
    assert "Use the function URL instead" in verdict.detail
    assert f'"{smoke.FUNCTION_URL_SETTING}": true' in verdict.detail
    assert f"SchedulerFunctionUrl output as --scheduler-url (or {smoke.SCHEDULER_URL_ENV})" in verdict.detail


def test_a_signature_the_function_url_refuses_too_points_at_the_key_and_the_clock() -> None:
    client = FakeScheduler(refuse={"CreateSchedule": "InvalidSignatureException"})
    verdict = _round_trip(client, FUNCTION_URL, function_url=True)
    assert verdict.outcome == smoke.FAILED
    assert "CreateSchedule refused (InvalidSignatureException)" in verdict.detail
    assert "(the function URL) refused the signature too" in verdict.detail
    assert "clock" in verdict.detail
    assert "Use the function URL instead" not in verdict.detail


def test_an_unknown_access_key_is_said_so() -> None:
    verdict = _round_trip(FakeScheduler(refuse={"ListScheduleGroups": "UnrecognizedClientException"}))
    assert verdict.outcome == smoke.FAILED
    assert "does not know this access key" in verdict.detail
    assert "function URL" not in verdict.detail


def test_a_failure_after_the_create_deletes_the_schedule_and_says_which_call_failed() -> None:
    client = FakeScheduler(refuse={"GetSchedule": "InternalServerException"})
    verdict = _round_trip(client)
    assert verdict.outcome == smoke.FAILED
    assert verdict.detail.startswith(f"GetSchedule against {API_ENDPOINT} failed: ClientError")
    assert [operation for operation, _ in client.calls][-1] == "DeleteSchedule"
    assert client.schedules == {}


def _args(*argv: str) -> Any:
    return smoke.parse(list(argv))


def test_without_an_access_key_the_round_trip_is_skipped_and_says_how() -> None:
    verdict = smoke.eventbridge_check(_args(), BASE, {}, "smoke-1", make_client=lambda *a: pytest.fail("no client"))
    assert verdict.outcome == smoke.SKIPPED
    assert smoke.ACCESS_KEY_ENV in verdict.detail


def test_the_endpoint_is_the_apis_scheduler_or_the_function_url_each_signed_for_its_region() -> None:
    made: list[tuple[str, str, str, str]] = []

    def make(endpoint: str, region: str, key: str, secret: str) -> FakeScheduler:
        made.append((endpoint, region, key, secret))
        return FakeScheduler()

    env = {smoke.ACCESS_KEY_ENV: "AKSDEXAMPLE", smoke.SECRET_KEY_ENV: "s3cret"}
    api = "https://abc123.execute-api.eu-west-1.amazonaws.com/prod"
    verdict = smoke.eventbridge_check(_args(), api, env, "smoke-1", make_client=make)
    assert verdict.outcome == smoke.OK
    assert made[-1] == (f"{api}/scheduler", "eu-west-1", "AKSDEXAMPLE", "s3cret")

    args = _args("--scheduler-url", "https://xyz789.lambda-url.ap-south-1.on.aws/", "--access-key-id", "AKSDOTHER")
    verdict = smoke.eventbridge_check(args, api, env, "smoke-1", make_client=make)
    assert "through the function URL" in verdict.detail
    assert made[-1] == ("https://xyz789.lambda-url.ap-south-1.on.aws", "ap-south-1", "AKSDOTHER", "s3cret")

    local = smoke.eventbridge_check(_args(), "http://127.0.0.1:8080", {**env, "AWS_REGION": "us-west-2"}, "s", make)
    assert local.outcome == smoke.OK
    assert made[-1][:2] == ("http://127.0.0.1:8080/scheduler", "us-west-2")
