"""Every bad input: a 400 (or 413) in the error format naming the field, and nothing stored."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import boto3
import pytest

from shared.domain.times import iso

pytestmark = pytest.mark.integration

HTTP = {"http": {"url": "https://example.com/hook"}}
NOW = datetime.now(UTC)


def spec(**changes):
    body = {"schedule": {"after_seconds": 60}, "target": HTTP}
    for key, value in changes.items():
        if value is None:
            body.pop(key, None)
        else:
            body[key] = value
    return body


MACHINE = "arn:aws:states:us-east-1:123456789012:stateMachine:orders"
SUBNET = "subnet-0123456789abcdef0"


def ecs(**fields):
    body = {
        "cluster_arn": "arn:aws:ecs:us-east-1:123456789012:cluster/jobs",
        "task_definition_arn": "arn:aws:ecs:us-east-1:123456789012:task-definition/report:3",
        "network": {"subnets": [SUBNET]},
        **fields,
    }
    return {"ecs": {k: v for k, v in body.items() if v is not None}}


def http(**fields):
    return {"http": {"url": "https://example.com/hook", **fields}}


CASES = {
    "no schedule": (spec(schedule=None), "schedule"),
    "no target": (spec(target=None), "target"),
    "target and targets": (spec(targets=[HTTP]), "target"),
    "two schedule kinds": (
        spec(schedule={"at": iso(NOW + timedelta(hours=1)), "after_seconds": 5}),
        "schedule",
    ),
    "empty schedule": (spec(schedule={}), "schedule"),
    "naive at": (spec(schedule={"at": "2030-01-01T00:00:00"}), "schedule.at"),
    "at not a time": (spec(schedule={"at": "tomorrow"}), "schedule.at"),
    "at over a year ahead": (spec(schedule={"at": iso(NOW + timedelta(days=400))}), "schedule.at"),
    "at days in the past": (spec(schedule={"at": iso(NOW - timedelta(days=2))}), "schedule.at"),
    "past at with skip": (
        spec(schedule={"at": iso(NOW - timedelta(minutes=5))}, misfire="skip"),
        "schedule.at",
    ),
    "after zero": (spec(schedule={"after_seconds": 0}), "schedule.after_seconds"),
    "after negative": (spec(schedule={"after_seconds": -3}), "schedule.after_seconds"),
    "after over a year": (spec(schedule={"after_seconds": 40_000_000}), "schedule.after_seconds"),
    "after not a number": (spec(schedule={"after_seconds": "soon"}), "schedule.after_seconds"),
    "cron nonsense": (spec(schedule={"cron": "every monday"}), "schedule.cron"),
    # fields apart by spaces and tabs only, as the document's pattern says (str.split takes any whitespace)
    "cron on two lines": (spec(schedule={"cron": "0 0\n* * *"}), "schedule.cron"),
    "cron ending in a newline": (spec(schedule={"cron": "0 0 * * *\n"}), "schedule.cron"),
    "cron with a no-break space": (spec(schedule={"cron": "0\u00a00 * * *"}), "schedule.cron"),
    "cron out of range": (spec(schedule={"cron": "61 * * * *"}), "schedule.cron"),
    "cron seven fields": (spec(schedule={"cron": "0 0 0 * * * 2030"}), "schedule.cron"),
    "cron never fires": (spec(schedule={"cron": "0 0 30 2 *"}), "schedule.cron"),
    "cron ended": (
        spec(schedule={"cron": "* * * * *", "end": iso(NOW - timedelta(days=1))}),
        "schedule.cron",
    ),
    "unknown zone": (spec(schedule={"cron": "* * * * *", "timezone": "Mars/Olympus"}), "schedule.timezone"),
    "zone on every": (spec(schedule={"every_seconds": 60, "timezone": "UTC"}), "schedule.timezone"),
    "every too fast": (spec(schedule={"every_seconds": 0.5}), "schedule.every_seconds"),
    "every start far ahead": (
        spec(schedule={"every_seconds": 60, "start": iso(NOW + timedelta(days=500))}),
        "schedule.every_seconds",
    ),
    "end before start": (
        spec(schedule={"every_seconds": 60, "start": iso(NOW), "end": iso(NOW - timedelta(hours=1))}),
        "schedule.end",
    ),
    "start on at": (
        spec(schedule={"at": iso(NOW + timedelta(hours=1)), "start": iso(NOW)}),
        "schedule.start",
    ),
    "calendar level": (spec(schedule={"repeat": {"level": "fortnight"}}), "schedule.repeat.level"),
    "calendar days on a day rule": (spec(schedule={"repeat": {"level": "day", "days": [1]}}), "schedule.repeat.days"),
    "calendar of no country": (
        spec(schedule={"repeat": {"level": "workday", "calendar": "XX"}}),
        "schedule.repeat.calendar",
    ),
    "calendar time": (spec(schedule={"repeat": {"level": "day", "time": "25:00"}}), "schedule.repeat.time"),
    "calendar and cron": (spec(schedule={"repeat": {"level": "day"}, "cron": "* * * * *"}), "schedule"),
    "unknown schedule field": (spec(schedule={"after_seconds": 5, "every": 3}), "schedule.every"),
    "ftp url": (spec(target=http(url="ftp://example.com/x")), "target.http.url"),
    "relative url": (spec(target=http(url="/hook")), "target.http.url"),
    "url ending in a newline": (spec(target=http(url="https://example.com/hook\n")), "target.http.url"),
    "url too long": (spec(target=http(url="https://example.com/" + "a" * 2100)), "target.http.url"),
    "credentials in url": (spec(target=http(url="https://user:pw@example.com/x")), "target.http.url"),
    "hop-by-hop header": (spec(target=http(headers={"Connection": "close"})), "target.http.headers"),
    "aws source": (
        spec(target={"eventbridge": {"event_bus": "default", "source": "aws.ec2", "detail_type": "x"}}),
        "target.eventbridge.source",
    ),
    "bad method": (spec(target=http(method="TRACE")), "target.http.method"),
    "reserved header": (spec(target=http(headers={"Idempotency-Key": "x"})), "target.http.headers"),
    "sundial header": (spec(target=http(headers={"Sundial-Attempt": "9"})), "target.http.headers"),
    "too many headers": (
        spec(target=http(headers={f"X-{i}": "v" for i in range(21)})),
        "target.http.headers",
    ),
    "header with newline": (spec(target=http(headers={"X-A": "a\r\nB: c"})), "target.http.headers"),
    "header name invalid": (spec(target=http(headers={"X A": "v"})), "target.http.headers"),
    "signature header": (spec(target=http(headers={"Webhook-Signature": "v1,forged"})), "target.http.headers"),
    "zero timeout": (spec(target=http(timeout_seconds=0)), "target.http.timeout_seconds"),
    "long timeout": (spec(target=http(timeout_seconds=61)), "target.http.timeout_seconds"),
    "lambda arn": (spec(target={"lambda": {"function_arn": "my-function"}}), "target.lambda.function_arn"),
    "queue url": (spec(target={"sqs": {"queue_url": "orders"}}), "target.sqs.queue_url"),
    "topic arn": (spec(target={"sns": {"topic_arn": "arn:aws:s3:::bucket"}}), "target.sns.topic_arn"),
    "eventbridge source": (
        spec(target={"eventbridge": {"event_bus": "default", "detail_type": "x"}}),
        "target.eventbridge.source",
    ),
    "state machine arn": (
        spec(target={"stepfunctions": {"state_machine_arn": "arn:aws:states:us-east-1:123456789012:activity:a"}}),
        "target.stepfunctions.state_machine_arn",
    ),
    "execution input too big": (
        spec(target={"stepfunctions": {"state_machine_arn": MACHINE, "input": {"blob": "x" * 33_000}}}),
        "target.stepfunctions.input",
    ),
    "cluster arn": (spec(target=ecs(cluster_arn="jobs")), "target.ecs.cluster_arn"),
    "task definition arn": (
        spec(target=ecs(task_definition_arn="arn:aws:ecs:us-east-1:123456789012:task/t")),
        "target.ecs.task_definition_arn",
    ),
    "task definition in another region": (
        spec(target=ecs(task_definition_arn="arn:aws:ecs:eu-west-1:123456789012:task-definition/t:1")),
        "target.ecs.task_definition_arn",
    ),
    "launch type not fargate": (spec(target=ecs(launch_type="EC2")), "target.ecs.launch_type"),
    "no network": (spec(target=ecs(network=None)), "target.ecs.network"),
    "no subnet": (spec(target=ecs(network={"subnets": []})), "target.ecs.network.subnets"),
    "subnet not an id": (spec(target=ecs(network={"subnets": ["10.0.0.0/24"]})), "target.ecs.network.subnets[0]"),
    "seventeen subnets": (
        spec(target=ecs(network={"subnets": [f"subnet-{i:017x}" for i in range(17)]})),
        "target.ecs.network.subnets",
    ),
    "six security groups": (
        spec(target=ecs(network={"subnets": [SUBNET], "security_groups": [f"sg-{i:08x}" for i in range(6)]})),
        "target.ecs.network.security_groups",
    ),
    "public ip yes": (
        spec(target=ecs(network={"subnets": [SUBNET], "assign_public_ip": "yes"})),
        "target.ecs.network.assign_public_ip",
    ),
    "network member unknown": (
        spec(target=ecs(network={"subnets": [SUBNET], "vpc": "vpc-1"})),
        "target.ecs.network.vpc",
    ),
    "container named twice": (
        spec(target=ecs(overrides={"containers": [{"name": "app"}, {"name": "app"}]})),
        "target.ecs.overrides.containers[1].name",
    ),
    "occurrence variable set": (
        spec(target=ecs(overrides={"containers": [{"name": "app", "environment": {"OCCURRENCE_RUN_ID": "x"}}]})),
        "target.ecs.overrides.containers[0].environment",
    ),
    "overrides over 8192 characters": (
        spec(
            target=ecs(
                overrides={"containers": [{"name": "app", "environment": {f"V{i}": "x" * 1000 for i in range(9)}}]}
            )
        ),
        "target.ecs.overrides",
    ),
    "variable name not a name": (
        spec(target=ecs(overrides={"containers": [{"name": "app", "environment": {"1-X": "x"}}]})),
        "target.ecs.overrides.containers[0].environment",
    ),
    "task cpu not a number": (spec(target=ecs(overrides={"cpu": "1 vCPU"})), "target.ecs.overrides.cpu"),
    "two target kinds": (
        spec(target={**HTTP, "sqs": {"queue_url": "https://sqs.us-east-1.amazonaws.com/123456789012/q"}}),
        "target",
    ),
    "empty target": (spec(target={}), "target"),
    "unknown target kind": (spec(target={"ftp": {"host": "x"}}), "target"),
    "no targets": (spec(target=None, targets=[]), "targets"),
    "six targets": (spec(target=None, targets=[HTTP] * 6), "targets"),
    "bad second target": (spec(target=None, targets=[HTTP, http(url="nope")]), "targets[1].http.url"),
    "empty name": (spec(name=""), "name"),
    "long name": (spec(name="n" * 201), "name"),
    "payload too big": (spec(payload={"blob": "x" * 33_000}), "payload"),
    "zero attempts": (spec(retry={"max_attempts": 0}), "retry.max_attempts"),
    "eleven attempts": (spec(retry={"max_attempts": 11}), "retry.max_attempts"),
    "linear backoff": (spec(retry={"backoff": "linear"}), "retry.backoff"),
    "zero interval": (spec(retry={"interval_seconds": 0}), "retry.interval_seconds"),
    # a string or a boolean where the document says integer or number (pydantic's lax mode read "3" as 3)
    "attempts as a string": (spec(retry={"max_attempts": "3"}), "retry.max_attempts"),
    "max age as a string": (spec(retry={"max_age_seconds": "3600"}), "retry.max_age_seconds"),
    "delay as a string": (spec(schedule={"after_seconds": "60"}), "schedule.after_seconds"),
    "period as a boolean": (spec(schedule={"every_seconds": True}), "schedule.every_seconds"),
    "timeout as a string": (spec(target=http(timeout_seconds="5")), "target.http.timeout_seconds"),
    "calendar day as a string": (
        spec(schedule={"repeat": {"level": "month", "days": ["3"]}}),
        "schedule.repeat.days",
    ),
    "calendar interval as a boolean": (
        spec(schedule={"repeat": {"level": "day", "interval": True}}),
        "schedule.repeat.interval",
    ),
    "unknown misfire": (spec(misfire="later"), "misfire"),
    "unknown field": (spec(bogus=1), "bogus"),
    "body not json": ("{not json", "body"),
    "body a list": ([1, 2], "body"),
    "body empty": ("", "body"),
}


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_bad_registrations_are_rejected_naming_the_field(api, case):
    body, field = CASES[case]
    answer = api("POST", "/v1/tasks", body)
    assert answer.status == 400, answer.body
    error = answer.body["error"]
    assert error["code"] == "validation_error"
    # the field itself, or a member of it (``target.http.headers.X-A``)
    named = [detail["field"] for detail in error["details"]]
    assert any(name == field or name.startswith((f"{field}.", f"{field}[")) for name in named), error
    assert error["message"]
    assert stored_tasks() == []


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("limit=0", "limit"),
        ("limit=101", "limit"),
        ("limit=ten", "limit"),
        ("status=done", "status"),
        ("cursor=garbage", "cursor"),
        ("cursor=eyJ4IjoxfQ", "cursor"),
    ],
)
def test_bad_list_parameters_are_rejected_naming_the_parameter(api, query, field):
    answer = api("GET", f"/v1/tasks?{query}")
    assert answer.status == 400
    assert answer.body["error"]["code"] == "validation_error"
    assert [d["field"] for d in answer.body["error"]["details"]] == [field]


def test_a_body_over_the_limit_is_413(api):
    answer = api("POST", "/v1/tasks", spec(payload="x" * 140_000))
    assert answer.status == 413
    assert answer.body["error"]["code"] == "payload_too_large"
    assert stored_tasks() == []


def test_a_body_over_the_limit_is_413_on_any_route_before_the_route_looks_at_it(api):
    answer = api("PATCH", "/v1/workflows/01ARZ3NDEKTSV4RRFFQ69G5FAV", {"name": "x" * 140_000})
    assert (answer.status, answer.body["error"]["code"]) == (413, "payload_too_large")


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("PUT", "/v1/tasks", "GET, POST"),
        ("OPTIONS", "/v1/dead-letters/redrive", "POST"),
        ("POST", "/v1/tasks/01ARZ3NDEKTSV4RRFFQ69G5FAV/runs", "GET"),
    ],
)
def test_a_method_a_routed_path_does_not_answer_is_405_naming_those_it_does(api, method, path, allow):
    answer = api(method, path)
    assert answer.status == 405, answer.body
    assert answer.body["error"]["code"] == "method_not_allowed"
    assert answer.headers["Allow"] == allow


def test_a_path_no_route_has_is_404(api):
    answer = api("GET", "/v1/nothing-here")
    assert answer.status == 404
    assert answer.body["error"]["code"] == "route_not_found"


def test_the_document_names_the_server_where_the_api_answers(aws):
    """Swagger UI's "Try it out" calls the document's server: the local runtime answers on /v1
    itself, API Gateway's own URL on /prod/v1 (the stage in the path)."""
    import json as jsonlib

    from functions.api.handler import handler
    from tests.support.events import FakeLambdaContext, api_event

    local = api_event("GET", "/v1/openapi.json")
    assert jsonlib.loads(handler(local, FakeLambdaContext())["body"])["servers"] == [{"url": "/"}]
    deployed = api_event("GET", "/v1/openapi.json")
    deployed["requestContext"]["path"] = "/prod/v1/openapi.json"
    assert jsonlib.loads(handler(deployed, FakeLambdaContext())["body"])["servers"] == [{"url": "/prod"}]
    swagger = api_event("GET", "/v1/docs?format=json")
    assert jsonlib.loads(handler(swagger, FakeLambdaContext())["body"])["servers"] == [{"url": "/"}]


def stored_tasks() -> list[dict]:
    """What the table holds of tasks (the rate limiter's, the tenants' and the keys' items are the
    callers', not tasks)."""
    items = boto3.resource("dynamodb").Table("sundial-test").scan()["Items"]
    return [item for item in items if not item["pk"].startswith(("RATE#", "T#", "K#", "ADMIN"))]
