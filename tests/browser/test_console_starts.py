"""The console's targets that start something: a task registered from the editor with a Step
Functions target starts an execution in the runtime's moto, and the task's page shows the ARN its
run recorded; an ECS target the API refuses shows the field it named."""

from __future__ import annotations

import json
import uuid

import boto3
import pytest
from playwright.sync_api import expect

from tests.browser.console import as_tenant, nav, sign_in
from tests.support.runtime import Client

pytestmark = pytest.mark.browser

PASS = json.dumps({"StartAt": "Done", "States": {"Done": {"Type": "Pass", "End": True}}})


def _stepfunctions(sundial: Client) -> object:
    line = next(line for line in sundial.opening if line.strip().startswith("moto "))
    return boto3.client(
        "stepfunctions",
        endpoint_url=line.split()[1],
        region_name="us-east-1",
        aws_access_key_id="x",  # moto takes any key
        aws_secret_access_key="x",
    )


def _preview(page: object, schedule: str) -> None:
    page.get_by_label("Schedule (JSON)").fill(schedule)  # type: ignore[attr-defined]
    page.get_by_role("button", name="Preview").click()  # type: ignore[attr-defined]


def test_a_stepfunctions_target_from_the_editor_starts_an_execution_the_run_shows(
    page, shoot, sundial, new_tenant
) -> None:
    stepfunctions = _stepfunctions(sundial)
    machine = stepfunctions.create_state_machine(  # type: ignore[attr-defined]
        name=f"console-{uuid.uuid4().hex[:8]}", definition=PASS, roleArn="arn:aws:iam::123456789012:role/sfn"
    )["stateMachineArn"]
    tenant = new_tenant("starts")
    call = as_tenant(sundial, tenant.key)
    sign_in(page, tenant.key)
    nav(page, "New task")

    page.get_by_label("Name").fill("console-execution")
    _preview(page, '{"after_seconds": 2}')
    page.get_by_label("Target kind").select_option("stepfunctions")
    expect(page.get_by_label("URL")).to_have_count(0)
    page.get_by_label("State machine ARN").fill(machine)
    page.get_by_label("Execution input (JSON, optional: Sundial's envelope without it)").fill('{"from": "console"}')
    shoot(page, "editor-stepfunctions")
    page.get_by_role("button", name="Create").click()

    expect(page.get_by_test_id("task-name")).to_have_text("console-execution")
    task_id = page.url.rsplit("/", 1)[1]
    assert call("GET", f"/v1/tasks/{task_id}")[1]["target"] == {
        "stepfunctions": {"state_machine_arn": machine, "input": {"from": "console"}}
    }
    started = page.get_by_test_id("started").locator("code")
    expect(started).to_have_count(1, timeout=20_000)
    (run,) = call("GET", f"/v1/tasks/{task_id}/runs")[1]["items"]
    (arn,) = run["started"]
    expect(started).to_have_attribute("title", arn)
    expect(started).to_have_text(arn.rsplit(":", 1)[1])  # the execution's name
    execution = stepfunctions.describe_execution(executionArn=arn)  # type: ignore[attr-defined]
    assert json.loads(execution["input"]) == {"from": "console"}
    shoot(page, "task-started")


def test_an_ecs_target_the_api_refuses_names_its_field(page, sundial, new_tenant) -> None:
    tenant = new_tenant("starts-refused")
    sign_in(page, tenant.key)
    nav(page, "New task")
    _preview(page, '{"after_seconds": 60}')
    page.get_by_label("Target kind").select_option("ecs")
    page.get_by_label("Cluster ARN").fill("arn:aws:ecs:us-east-1:123456789012:cluster/jobs")
    page.get_by_label("Task definition ARN").fill("arn:aws:ecs:us-east-1:123456789012:task-definition/report:1")
    page.get_by_label("Subnets (comma-separated)").fill("subnet-0123456789abcdef0, 10.0.0.0/24")
    page.get_by_role("button", name="Create").click()
    expect(page.get_by_test_id("error-field")).to_have_text("target.ecs.network.subnets[1]")
    page.get_by_label("Subnets (comma-separated)").fill("subnet-0123456789abcdef0")
    page.get_by_label("Overrides (JSON, optional)").fill('{"containers": [{"name": "app"}, {"name": "app"}]}')
    page.get_by_role("button", name="Create").click()
    expect(page.get_by_test_id("error-field")).to_have_text("target.ecs.overrides.containers[1].name")
