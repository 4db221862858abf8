"""Where user-registered targets may be: every resource of its kind in the deployment's own
account and region (the trigger calls task targets, the job function calls Lambda processors;
neither ARN is known until run time). The targets that start something (a Step Functions
execution, an ECS task on Fargate: :func:`start_statements`) are held the same way, and the roles
an ECS task may run as are the ones the ``ecs_task_roles`` setting names."""

from __future__ import annotations

from aws_cdk import ArnFormat, Stack
from aws_cdk import aws_iam as iam

from .nag import nag_form

TARGET_ACTIONS = ("lambda:InvokeFunction", "sqs:SendMessage", "sns:Publish", "events:PutEvents")
START_ACTIONS = ("states:StartExecution", "ecs:RunTask", "ecs:ListTasks")
"""``stepfunctions`` targets start executions; ``ecs`` targets run tasks, and list a cluster's
tasks by ``startedBy`` before a later attempt (shared/delivery/starts.py)."""
ECS_TASKS = "ecs-tasks.amazonaws.com"


def target_resources(stack: Stack) -> dict[str, str]:
    """Action -> every resource of its kind in the stack's account and region."""
    return {
        "lambda:InvokeFunction": stack.format_arn(
            service="lambda", resource="function", resource_name="*", arn_format=ArnFormat.COLON_RESOURCE_NAME
        ),
        "sqs:SendMessage": stack.format_arn(service="sqs", resource="*"),
        "sns:Publish": stack.format_arn(service="sns", resource="*"),
        "events:PutEvents": stack.format_arn(
            service="events", resource="event-bus", resource_name="*", arn_format=ArnFormat.SLASH_RESOURCE_NAME
        ),
    }


def start_statements(stack: Stack, task_roles: tuple[str, ...]) -> tuple[list[iam.PolicyStatement], dict[str, str]]:
    """The statements of the targets that start something, and the cdk-nag findings they raise
    (finding id -> reason). StartExecution on every state machine (its versions and aliases too)
    of the account and Region; RunTask on every task definition, in the account's and Region's
    clusters only (the ``ecs:cluster`` condition); ListTasks, which names no resource but a
    cluster, in those clusters; PassRole of ``task_roles`` to ECS tasks alone
    (https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazonelasticcontainerservice.html,
    https://docs.aws.amazon.com/AmazonECS/latest/developerguide/task_execution_IAM_role.html)."""
    machines = stack.format_arn(
        service="states", resource="stateMachine", resource_name="*", arn_format=ArnFormat.COLON_RESOURCE_NAME
    )
    definitions = stack.format_arn(
        service="ecs", resource="task-definition", resource_name="*", arn_format=ArnFormat.SLASH_RESOURCE_NAME
    )
    clusters = stack.format_arn(
        service="ecs", resource="cluster", resource_name="*", arn_format=ArnFormat.SLASH_RESOURCE_NAME
    )
    in_clusters = {"ArnLike": {"ecs:cluster": clusters}}
    statements = [
        iam.PolicyStatement(actions=["states:StartExecution"], resources=[machines]),
        iam.PolicyStatement(actions=["ecs:RunTask"], resources=[definitions], conditions=in_clusters),
        iam.PolicyStatement(actions=["ecs:ListTasks"], resources=["*"], conditions=in_clusters),
    ]
    why = (
        "Task targets are ARNs users register through the API at run time, so no template can name "
        "them; {what}, only within this deployment's account and region."
    )
    acknowledgments = {
        f"AwsSolutions-IAM5[Resource::{nag_form(stack, machines)}]": why.format(
            what="states:StartExecution on state machines"
        ),
        f"AwsSolutions-IAM5[Resource::{nag_form(stack, definitions)}]": why.format(
            what="ecs:RunTask on task definitions, in the account's clusters"
        ),
        "AwsSolutions-IAM5[Resource::*]": why.format(
            what="ecs:ListTasks (which takes no resource but its cluster, held by ecs:cluster) to find a task an "
            "earlier attempt started"
        ),
    }
    if task_roles:
        roles = [stack.format_arn(service="iam", region="", resource="role", resource_name=name) for name in task_roles]
        statements.append(
            iam.PolicyStatement(
                actions=["iam:PassRole"],
                resources=roles,
                conditions={"StringEquals": {"iam:PassedToService": ECS_TASKS}},
            )
        )
        for name, role in zip(task_roles, roles, strict=True):
            if "*" in name:
                acknowledgments[f"AwsSolutions-IAM5[Resource::{nag_form(stack, role)}]"] = (
                    "The roles the deployment's settings name (sundial:ecsTaskRoles) for ECS tasks to run as, "
                    "passed to ecs-tasks.amazonaws.com only."
                )
    return statements, acknowledgments
