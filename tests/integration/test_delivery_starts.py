"""The ``stepfunctions`` and ``ecs`` targets against moto's Step Functions and ECS: what each
really starts, and what a repeated call does. Where moto differs from AWS it is said here (and
in docs/design.md, "Targets that start executions and containers")."""

from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import replace
from typing import Any

import boto3
import pytest

from shared.delivery import AwsDelivery, Envelope
from shared.domain import starts
from shared.domain.starts import SECURITY_GROUP, SUBNET
from shared.domain.tasks import EcsTarget, StepFunctionsTarget

pytestmark = pytest.mark.integration

ACCOUNT = "123456789012"
ENVELOPE = Envelope(
    task_id="01JD8ZZZZZZZZZZZZZZZZZZZZZ",
    run_id="01JD90ZZZZZZZZZZZZZZZZZZZZ",
    scheduled_for=dt.datetime(2026, 11, 22, 10, 0, 0, 250_000, tzinfo=dt.UTC),
    fired_at=dt.datetime(2026, 11, 22, 10, 0, 0, 300_000, tzinfo=dt.UTC),
    attempt=1,
    payload={"order_id": 123},
)
PASS = json.dumps({"StartAt": "Done", "States": {"Done": {"Type": "Pass", "End": True}}})


def state_machine(name: str = "orders") -> str:
    arn: str = boto3.client("stepfunctions").create_state_machine(
        name=name, definition=PASS, roleArn=f"arn:aws:iam::{ACCOUNT}:role/sfn"
    )["stateMachineArn"]
    return arn


def network() -> tuple[str, str]:
    """A subnet and a security group of the Region's default VPC: moto's RunTask puts the task's
    network interface in them (and needs the VPC's DNS hostnames on, as a default VPC has them)."""
    ec2 = boto3.client("ec2")
    vpc = ec2.describe_vpcs(Filters=[{"Name": "is-default", "Values": ["true"]}])["Vpcs"][0]["VpcId"]
    subnet = ec2.describe_subnets(Filters=[{"Name": "vpc-id", "Values": [vpc]}])["Subnets"][0]["SubnetId"]
    group = ec2.describe_security_groups(Filters=[{"Name": "vpc-id", "Values": [vpc]}])["SecurityGroups"][0]
    return subnet, group["GroupId"]


def container_target(**changes: Any) -> EcsTarget:
    subnet, group = network()
    ecs = boto3.client("ecs")
    cluster = ecs.create_cluster(clusterName="jobs")["cluster"]["clusterArn"]
    definition = ecs.register_task_definition(
        family="report",
        requiresCompatibilities=["FARGATE"],
        networkMode="awsvpc",
        cpu="256",
        memory="512",
        # moto's RunTask fails on a container without a memory of its own (AWS's Fargate takes the task's)
        containerDefinitions=[{"name": "app", "image": "public.ecr.aws/docker/library/busybox:latest", "memory": 512}],
    )["taskDefinition"]["taskDefinitionArn"]
    overrides = json.dumps({"containers": [{"name": "app", "command": ["report"], "environment": {"MODE": "daily"}}]})
    target = EcsTarget(cluster, definition, (subnet,), (group,), "DISABLED", overrides)
    return replace(target, **changes)


def test_an_execution_is_started_with_the_envelope_under_the_occurrences_name(aws: None) -> None:
    machine = state_machine()
    target = StepFunctionsTarget(machine)
    outcome = AwsDelivery().call(target, ENVELOPE)
    assert outcome.ok
    execution = boto3.client("stepfunctions").describe_execution(executionArn=outcome.started)
    assert execution["name"] == starts.execution_name(ENVELOPE.run_id, target)
    assert execution["stateMachineArn"] == machine
    assert json.loads(execution["input"]) == ENVELOPE.to_dict()
    assert outcome.started == starts.execution_arn(machine, execution["name"])  # the ARN AWS and Sundial name


def test_a_given_input_is_the_executions(aws: None) -> None:
    target = StepFunctionsTarget(state_machine(), '{"report":"daily"}')
    outcome = AwsDelivery().call(target, ENVELOPE)
    assert boto3.client("stepfunctions").describe_execution(executionArn=outcome.started)["input"] == (
        '{"report":"daily"}'
    )


def test_a_later_attempt_of_the_occurrence_starts_no_second_execution(aws: None) -> None:
    machine = state_machine()
    target = StepFunctionsTarget(machine)
    first = AwsDelivery().call(target, ENVELOPE)
    # its envelope says attempt 2 (another input): StartExecution answers ExecutionAlreadyExists
    again = AwsDelivery().call(target, replace(ENVELOPE, attempt=2))
    assert again.ok
    assert again.started == first.started
    executions = boto3.client("stepfunctions").list_executions(stateMachineArn=machine)["executions"]
    assert [e["executionArn"] for e in executions] == [first.started]


def test_a_missing_state_machine_is_a_final_failure(aws: None) -> None:
    outcome = AwsDelivery().call(StepFunctionsTarget(f"arn:aws:states:us-east-1:{ACCOUNT}:stateMachine:nope"), ENVELOPE)
    assert outcome.final
    assert outcome.error is not None
    assert "StateMachineDoesNotExist" in outcome.error


def test_a_container_task_runs_on_fargate_with_the_occurrence_in_its_environment(aws: None) -> None:
    target = container_target()
    assert re.fullmatch(SUBNET, target.subnets[0])  # moto's ids have the form the API takes
    assert re.fullmatch(SECURITY_GROUP, target.security_groups[0])
    outcome = AwsDelivery().call(target, ENVELOPE)
    assert outcome.ok
    [task] = boto3.client("ecs").describe_tasks(cluster=target.cluster_arn, tasks=[outcome.started])["tasks"]
    assert task["taskArn"] == outcome.started
    assert task["launchType"] == "FARGATE"
    assert task["startedBy"] == starts.started_by(ENVELOPE.run_id, target)
    [container] = task["overrides"]["containerOverrides"]
    assert container["command"] == ["report"]
    assert {v["name"]: v["value"] for v in container["environment"]} == {
        "MODE": "daily",
        starts.TASK_ID_VARIABLE: ENVELOPE.task_id,
        starts.RUN_ID_VARIABLE: ENVELOPE.run_id,
        starts.SCHEDULED_FOR_VARIABLE: "2026-11-22T10:00:00.250Z",
    }


def test_a_later_attempt_finds_the_task_the_first_started(aws: None) -> None:
    target = container_target()
    first = AwsDelivery().call(target, ENVELOPE)
    again = AwsDelivery().call(target, replace(ENVELOPE, attempt=2))
    assert again.started == first.started
    assert len(boto3.client("ecs").list_tasks(cluster=target.cluster_arn)["taskArns"]) == 1


def test_moto_ignores_run_tasks_client_token(aws: None) -> None:
    """moto differs from AWS here: the same clientToken twice starts two tasks (AWS answers the
    first's). Sundial does not lean on the token across attempts: a later attempt looks for the
    task by startedBy first (the test above), and the token only makes the SDK's own retries of
    one request start one task, which moto cannot show."""
    target = container_target()
    ecs = boto3.client("ecs")
    request = {
        "cluster": target.cluster_arn,
        "taskDefinition": target.task_definition_arn,
        "launchType": "FARGATE",
        "clientToken": "same-token",
        "networkConfiguration": {
            "awsvpcConfiguration": {"subnets": list(target.subnets), "securityGroups": list(target.security_groups)}
        },
    }
    ecs.run_task(**request)
    ecs.run_task(**request)
    assert len(ecs.list_tasks(cluster=target.cluster_arn)["taskArns"]) == 2


def test_a_missing_cluster_is_a_final_failure(aws: None) -> None:
    target = container_target(cluster_arn=f"arn:aws:ecs:us-east-1:{ACCOUNT}:cluster/nope")
    outcome = AwsDelivery().call(target, ENVELOPE)
    assert outcome.final
    assert outcome.error is not None
    assert "ClusterNotFoundException" in outcome.error
