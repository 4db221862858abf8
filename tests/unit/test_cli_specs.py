"""Task specs built from a file's object and the flags: flags win, the target and retry are
merged, schedules replaced; YAML times stay strings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sundial_cli.commands.common import parse_document
from sundial_cli.specs import SpecError, schedule_from, summary, task_body

pytestmark = pytest.mark.unit


def test_flags_make_a_whole_spec() -> None:
    body = task_body(
        {},
        schedule={"after_seconds": 10, "at": None},
        url="http://127.0.0.1:9000/hook",
        method="PUT",
        headers=["X-Team=orders", "X-Eq=a=b"],
        retry={"max_attempts": 5, "backoff": None},
        members={"name": "close-order-123", "payload": {"order_id": 123}, "priority": None},
    )
    assert body == {
        "schedule": {"after_seconds": 10},
        "target": {
            "http": {
                "url": "http://127.0.0.1:9000/hook",
                "method": "PUT",
                "headers": {"X-Team": "orders", "X-Eq": "a=b"},
            }
        },
        "retry": {"max_attempts": 5},
        "name": "close-order-123",
        "payload": {"order_id": 123},
    }


def test_flags_override_the_file_and_merge_into_its_target_and_retry() -> None:
    base = {
        "name": "from-file",
        "schedule": {"cron": "0 9 * * *", "timezone": "UTC"},
        "target": {"http": {"url": "http://a/", "headers": {"A": "1"}, "timeout_seconds": 5}},
        "retry": {"max_attempts": 3, "backoff": "fixed"},
        "payload": [1],
    }
    body = task_body(
        base,
        schedule={"timezone": "Asia/Shanghai"},
        url="http://b/",
        headers=["B=2"],
        retry={"interval_seconds": 4},
        members={"name": "from-flag"},
    )
    assert body["schedule"] == {"cron": "0 9 * * *", "timezone": "Asia/Shanghai"}
    assert body["target"] == {"http": {"url": "http://b/", "headers": {"A": "1", "B": "2"}, "timeout_seconds": 5}}
    assert body["retry"] == {"max_attempts": 3, "backoff": "fixed", "interval_seconds": 4}
    assert (body["name"], body["payload"]) == ("from-flag", [1])
    assert base["target"]["http"]["url"] == "http://a/"  # the file's object is left as it was


def test_a_schedule_kind_flag_replaces_the_files_schedule() -> None:
    assert schedule_from({"cron": "0 9 * * *", "timezone": "UTC"}, {"every_seconds": 60}) == {"every_seconds": 60}


def test_schedule_flags_that_cannot_make_a_body() -> None:
    with pytest.raises(SpecError, match="one of"):
        schedule_from(None, {"at": "2030-01-01T00:00:00Z", "after_seconds": 5})
    with pytest.raises(SpecError, match="need a schedule"):
        schedule_from(None, {"timezone": "UTC"})
    with pytest.raises(SpecError, match="NAME=VALUE"):
        task_body({}, headers=["no-equals"])
    with pytest.raises(SpecError, match="targets"):
        task_body({"targets": [{"http": {"url": "http://a/"}}]}, url="http://b/")


def test_yaml_times_stay_strings_and_json_numbers_stay_json() -> None:
    document = "schedule:\n  at: 2030-03-01T08:00:00Z\ntarget:\n  http: {url: 'http://a/'}\n"
    assert parse_document(document, "t.yaml")["schedule"]["at"] == "2030-03-01T08:00:00Z"
    assert parse_document('{"n": 1e3}', "t.json") == {"n": 1000.0}


@pytest.mark.parametrize(
    ("schedule", "text"),
    [
        ({"at": "2030-01-01T00:00:00.000Z"}, "at 2030-01-01T00:00:00.000Z"),
        ({"after_seconds": 10.0}, "after 10 s"),
        ({"cron": "*/5 * * * *", "timezone": "Asia/Shanghai"}, "cron */5 * * * * (Asia/Shanghai)"),
        ({"every_seconds": 1.5}, "every 1.5 s"),
        (
            {"repeat": {"level": "workday", "interval": 2, "time": "09:00", "calendar": "CN", "timezone": "UTC"}},
            "every 2 workdays at 09:00 [CN] (UTC)",
        ),
    ],
)
def test_schedule_summaries(schedule: dict, text: str) -> None:
    assert summary(schedule) == text


def test_create_sends_the_file_with_the_flags_over_it(tmp_path: Path) -> None:
    import httpx

    from sundial_cli.commands.common import State
    from sundial_cli.main import cli

    sent: list[dict] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(json.loads(request.content))
        return httpx.Response(400, json={"error": {"code": "validation_error", "message": "no"}})

    spec = tmp_path / "task.yaml"
    spec.write_text("name: nightly\nschedule: {cron: '0 3 * * *'}\ntarget: {http: {url: 'http://a/'}}\n")
    state = State(transport=httpx.MockTransport(answer))
    result = CliRunner().invoke(
        cli, ["--url", "http://sundial.test", "tasks", "create", "-f", str(spec), "--name", "other"], obj=state
    )
    assert result.exit_code == 1
    assert sent == [{"name": "other", "schedule": {"cron": "0 3 * * *"}, "target": {"http": {"url": "http://a/"}}}]
    bad = CliRunner().invoke(cli, ["tasks", "create", "--payload", "{nope"], obj=state)
    assert bad.exit_code == 2
    assert "--payload" in bad.stderr


MACHINE = "arn:aws:states:us-east-1:123456789012:stateMachine:orders"


def test_state_machine_flags_make_a_stepfunctions_target() -> None:
    assert task_body({}, state_machine=MACHINE)["target"] == {"stepfunctions": {"state_machine_arn": MACHINE}}
    made = task_body({}, state_machine=MACHINE, execution_input={"report": "daily"})
    assert made["target"] == {"stepfunctions": {"state_machine_arn": MACHINE, "input": {"report": "daily"}}}
    # the file's stepfunctions target keeps its machine when only the input is given
    filed = {"target": {"stepfunctions": {"state_machine_arn": MACHINE, "input": 1}}}
    assert task_body(filed, execution_input=2)["target"] == {
        "stepfunctions": {"state_machine_arn": MACHINE, "input": 2}
    }
    # an ecs target comes from the file as it is
    ecs = {"target": {"ecs": {"cluster_arn": "c", "network": {"subnets": ["s"]}}}}
    assert task_body(ecs, members={"name": "n"})["target"] == ecs["target"]


def test_state_machine_flags_that_cannot_make_a_body() -> None:
    with pytest.raises(SpecError, match="not with --url"):
        task_body({}, url="http://a/", state_machine=MACHINE)
    with pytest.raises(SpecError, match="needs --state-machine"):
        task_body({"target": {"http": {"url": "http://a/"}}}, execution_input={})
    with pytest.raises(SpecError, match="the file has targets"):
        task_body({"targets": [{"http": {"url": "http://a/"}}]}, state_machine=MACHINE)
