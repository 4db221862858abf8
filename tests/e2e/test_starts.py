"""`make run` end to end: tasks whose targets start a Step Functions execution and an ECS task on
Fargate, registered over HTTP, fired by the runtime against its moto's Step Functions and ECS, and
the ARNs their runs record. The state machine's execution runs for real in moto's interpreter:
its Lambda task invokes a function made in moto, which the runtime's Lambda keeps each event of
in the function's log group (local/functions.py), the receiver here. moto runs no container: its
ECS keeps the task as RunTask asked for it, which is what is checked."""

from __future__ import annotations

import io
import json
import uuid
import zipfile
from typing import Any

import boto3
import pytest

from shared.domain import starts
from tests.e2e.conftest import ADMIN_KEY
from tests.e2e.test_local_runtime import settled, wait
from tests.support.cli import Sundial, new_tenant, rows, until
from tests.support.runtime import Client

pytestmark = pytest.mark.e2e

ACCOUNT = "123456789012"


def _moto(sundial: Client) -> str:
    """The runtime's moto, as its start-up banner names it."""
    line = next(line for line in sundial.opening if line.strip().startswith("moto "))
    return line.split()[1]


def _client(sundial: Client, service: str) -> Any:
    return boto3.client(
        service,
        endpoint_url=_moto(sundial),
        region_name="us-east-1",
        aws_access_key_id="x",  # moto takes any key
        aws_secret_access_key="x",
    )


def _code() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("index.py", "def handler(event, context):\n    return event\n")
    return buffer.getvalue()


def _receiving_state_machine(sundial: Client, name: str) -> tuple[str, str]:
    """A state machine whose one task invokes a Lambda function made in moto with the execution's
    input; (its ARN, the function's log group)."""
    iam = _client(sundial, "iam")
    role = iam.create_role(RoleName=f"{name}-role", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    function = _client(sundial, "lambda").create_function(
        FunctionName=f"{name}-receiver",
        Runtime="python3.12",
        Role=role,
        Handler="index.handler",
        Code={"ZipFile": _code()},
    )["FunctionArn"]
    definition = {
        "StartAt": "Receive",
        "States": {
            "Receive": {
                "Type": "Task",
                "Resource": "arn:aws:states:::lambda:invoke",
                "Parameters": {"FunctionName": function, "Payload.$": "$"},
                "End": True,
            }
        },
    }
    machine = _client(sundial, "stepfunctions").create_state_machine(
        name=name, definition=json.dumps(definition), roleArn=role
    )["stateMachineArn"]
    return machine, f"/aws/lambda/{name}-receiver"


def test_a_task_starts_an_execution_of_its_state_machine_with_the_occurrence_and_its_run_shows_it(
    sundial: Client,
) -> None:
    name = f"e2e-{uuid.uuid4().hex[:8]}"
    machine, log_group = _receiving_state_machine(sundial, name)
    status, task = sundial.call(
        "POST",
        "/v1/tasks",
        {
            "name": name,
            "schedule": {"after_seconds": 2},
            "target": {"stepfunctions": {"state_machine_arn": machine}},
            "payload": {"report": "daily"},
        },
    )
    assert status == 201, task
    assert task["target"] == {"stepfunctions": {"state_machine_arn": machine}}
    (run,) = settled(sundial, task["id"], "succeeded", timeout=30)
    (execution_arn,) = run["started"]
    stepfunctions = _client(sundial, "stepfunctions")
    execution = stepfunctions.describe_execution(executionArn=execution_arn)
    assert execution["stateMachineArn"] == machine
    assert execution["name"].startswith(run["run_id"] + "-")
    envelope = json.loads(execution["input"])
    assert (envelope["task_id"], envelope["run_id"]) == (task["id"], run["run_id"])
    assert envelope["payload"] == {"report": "daily"}
    assert envelope["scheduled_for"] == run["scheduled_for"]
    # the execution ran: its task gave the function the occurrence
    logs = _client(sundial, "logs")

    def received() -> list[dict[str, Any]]:
        try:
            events = logs.filter_log_events(logGroupName=log_group)["events"]
        except logs.exceptions.ResourceNotFoundException:
            return []
        return [json.loads(event["message"]) for event in events]

    assert wait(received, timeout=20)
    assert [event["run_id"] for event in received()] == [run["run_id"]]
    assert wait(lambda: stepfunctions.describe_execution(executionArn=execution_arn)["status"] == "SUCCEEDED", 20)
    assert [e["executionArn"] for e in stepfunctions.list_executions(stateMachineArn=machine)["executions"]] == [
        execution_arn
    ]


def _fargate(sundial: Client, name: str) -> dict[str, Any]:
    """An ``ecs`` target on a cluster and task definition made in moto, in its default VPC."""
    ec2 = _client(sundial, "ec2")
    vpc = ec2.describe_vpcs(Filters=[{"Name": "is-default", "Values": ["true"]}])["Vpcs"][0]["VpcId"]
    subnet = ec2.describe_subnets(Filters=[{"Name": "vpc-id", "Values": [vpc]}])["Subnets"][0]["SubnetId"]
    group = ec2.describe_security_groups(Filters=[{"Name": "vpc-id", "Values": [vpc]}])["SecurityGroups"][0]
    ecs = _client(sundial, "ecs")
    cluster = ecs.create_cluster(clusterName=name)["cluster"]["clusterArn"]
    definition = ecs.register_task_definition(
        family=name,
        requiresCompatibilities=["FARGATE"],
        networkMode="awsvpc",
        cpu="256",
        memory="512",
        # moto's RunTask needs a container's own memory (AWS's Fargate takes the task's)
        containerDefinitions=[{"name": "app", "image": "public.ecr.aws/docker/library/busybox:latest", "memory": 512}],
    )["taskDefinition"]["taskDefinitionArn"]
    return {
        "cluster_arn": cluster,
        "task_definition_arn": definition,
        "launch_type": "FARGATE",
        "network": {"subnets": [subnet], "security_groups": [group["GroupId"]], "assign_public_ip": "DISABLED"},
        "overrides": {"containers": [{"name": "app", "command": ["report", "--daily"], "environment": {"MODE": "x"}}]},
    }


def test_a_task_runs_a_container_task_on_fargate_and_its_run_shows_the_tasks_arn(sundial: Client) -> None:
    name = f"e2e-{uuid.uuid4().hex[:8]}"
    target = _fargate(sundial, name)
    status, task = sundial.call(
        "POST", "/v1/tasks", {"name": name, "schedule": {"after_seconds": 2}, "target": {"ecs": target}}
    )
    assert status == 201, task
    assert task["target"]["ecs"]["overrides"]["containers"][0]["command"] == ["report", "--daily"]
    (run,) = settled(sundial, task["id"], "succeeded", timeout=30)
    (task_arn,) = run["started"]
    ecs = _client(sundial, "ecs")
    assert ecs.list_tasks(cluster=target["cluster_arn"])["taskArns"] == [task_arn]  # one task, once
    [started] = ecs.describe_tasks(cluster=target["cluster_arn"], tasks=[task_arn])["tasks"]
    assert started["launchType"] == "FARGATE"
    assert started["startedBy"].startswith(run["run_id"] + "-")
    [container] = started["overrides"]["containerOverrides"]
    assert container["command"] == ["report", "--daily"]
    assert {v["name"]: v["value"] for v in container["environment"]} == {
        "MODE": "x",
        starts.TASK_ID_VARIABLE: task["id"],
        starts.RUN_ID_VARIABLE: run["run_id"],
        starts.SCHEDULED_FOR_VARIABLE: run["scheduled_for"],
    }


def test_a_recurring_tasks_runs_each_record_what_they_started(sundial: Client) -> None:
    name = f"e2e-{uuid.uuid4().hex[:8]}"
    machine, _ = _receiving_state_machine(sundial, name)
    status, task = sundial.call(
        "POST",
        "/v1/tasks",
        {
            "name": name,
            "schedule": {"every_seconds": 1},
            "target": {"stepfunctions": {"state_machine_arn": machine, "input": {"kind": "tick"}}},
        },
    )
    assert status == 201, task
    found: list[dict[str, Any]] = []

    def two_ended() -> bool:
        found[:] = [r for r in sundial.call("GET", f"/v1/tasks/{task['id']}/runs")[1]["items"] if r.get("started")]
        return len(found) >= 2

    assert wait(two_ended, timeout=30)
    sundial.call("DELETE", f"/v1/tasks/{task['id']}")
    stepfunctions = _client(sundial, "stepfunctions")
    for run in found:
        (arn,) = run["started"]
        assert json.loads(stepfunctions.describe_execution(executionArn=arn)["input"]) == {"kind": "tick"}
    assert len({run["started"][0] for run in found}) == len(found)  # one execution per occurrence


@pytest.mark.parametrize(
    ("target", "field"),
    [
        ({"stepfunctions": {"state_machine_arn": "orders"}}, "target.stepfunctions.state_machine_arn"),
        (
            {"stepfunctions": {"state_machine_arn": f"arn:aws:states:us-east-1:{ACCOUNT}:stateMachine:o", "x": 1}},
            "target.stepfunctions.x",
        ),
        (
            {
                "ecs": {
                    "cluster_arn": f"arn:aws:ecs:us-east-1:{ACCOUNT}:cluster/c",
                    "task_definition_arn": f"arn:aws:ecs:us-east-1:{ACCOUNT}:task-definition/t:1",
                    "launch_type": "EC2",
                    "network": {"subnets": ["subnet-0123456789abcdef0"]},
                }
            },
            "target.ecs.launch_type",
        ),
    ],
)
def test_a_bad_target_is_refused_naming_its_field(sundial: Client, target: dict[str, Any], field: str) -> None:
    status, answer = sundial.call("POST", "/v1/tasks", {"schedule": {"after_seconds": 60}, "target": target})
    assert status == 400, answer
    assert answer["error"]["code"] == "validation_error"
    assert [detail["field"] for detail in answer["error"]["details"]] == [field]


def test_the_cli_makes_a_stepfunctions_target_from_flags_and_lists_what_its_run_started(sundial: Client) -> None:
    cli = Sundial(sundial.base, new_tenant(Sundial(sundial.base, ADMIN_KEY), "cli-starts")[1])
    name = f"e2e-{uuid.uuid4().hex[:8]}"
    machine, _ = _receiving_state_machine(sundial, name)
    task = cli.json(
        "tasks", "create", "--name", name, "--after", "1", "--state-machine", machine,
        "--execution-input", '{"report": "daily"}',
    )  # fmt: skip
    assert task["target"] == {"stepfunctions": {"state_machine_arn": machine, "input": {"report": "daily"}}}
    (run,) = until(lambda: [r for r in cli.json("tasks", "runs", task["id"])["items"] if r.get("started")])
    table = rows(cli.table("tasks", "runs", task["id"]))
    assert table[0][6] == "STARTED"
    assert table[1][6] == run["started"][0]
    execution = _client(sundial, "stepfunctions").describe_execution(executionArn=run["started"][0])
    assert json.loads(execution["input"]) == {"report": "daily"}
    refused = cli.fails(2, "tasks", "create", "--after", "1", "--state-machine", machine, "--url", "http://a/")
    assert "not with --url" in refused.stderr
