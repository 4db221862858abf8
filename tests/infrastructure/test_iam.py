"""Least privilege: each function its own role, exact actions on exact ARNs, "*" only for X-Ray."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import pytest

from infra.api import API_TABLE_ACTIONS
from infra.auth import AUTHORIZER_TABLE_ACTIONS
from infra.function import CONSUME_ACTIONS, XRAY_WRITE_ACTIONS, ServiceFunction
from infra.pipeline import SCANNER_TABLE_ACTIONS, TICK_TABLE_ACTIONS, TRIGGER_NAME_ACTIONS, TRIGGER_TABLE_ACTIONS
from infra.signing import SigningKey
from infra.storage import IDEMPOTENCY_ACTIONS
from infra.targets import START_ACTIONS, TARGET_ACTIONS
from shared.store.models import LIST_INDEX_NAME, STATUS_INDEX_NAME
from tests.infrastructure.conftest import Built, Synthesized, logical_id

pytestmark = pytest.mark.infrastructure


def _listify(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _function_roles(synthesized: Synthesized | Built) -> dict[str, str]:
    """Function logical id -> role logical id."""
    roles = {}
    for key, function in synthesized.resources("AWS::Lambda::Function").items():
        role = function["Properties"]["Role"]
        assert "Fn::GetAtt" in role, f"{key} must use a role of this stack"
        roles[key] = role["Fn::GetAtt"][0]
    return roles


def _statements_of_role(synthesized: Synthesized | Built, role_id: str) -> list[dict[str, Any]]:
    statements = []
    for policy in synthesized.resources("AWS::IAM::Policy").values():
        if {"Ref": role_id} in policy["Properties"]["Roles"]:
            statements += policy["Properties"]["PolicyDocument"]["Statement"]
    return statements


def test_every_function_has_its_own_role(synthesized: Synthesized) -> None:
    roles = _function_roles(synthesized)
    assert roles, "the stack has functions"
    assert len(set(roles.values())) == len(roles), "no two functions share a role"
    all_roles = synthesized.resources("AWS::IAM::Role")
    for role_id in roles.values():
        role = all_roles[role_id]["Properties"]
        assert role["AssumeRolePolicyDocument"]["Statement"] == [
            {"Action": "sts:AssumeRole", "Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}}
        ]
        assert "ManagedPolicyArns" not in role, "no AWS managed policies"
        assert "Policies" not in role


def test_function_policies_attach_to_one_role_each(synthesized: Synthesized) -> None:
    function_roles = set(_function_roles(synthesized).values())
    for policy in synthesized.resources("AWS::IAM::Policy").values():
        roles = [ref["Ref"] for ref in policy["Properties"]["Roles"]]
        if function_roles & set(roles):
            assert len(roles) == 1
            assert "Users" not in policy["Properties"]
            assert "Groups" not in policy["Properties"]


def test_no_wildcard_actions_and_star_resources_only_for_xray(synthesized: Synthesized) -> None:
    for role_id in _function_roles(synthesized).values():
        statements = _statements_of_role(synthesized, role_id)
        assert statements
        for statement in statements:
            actions = _listify(statement["Action"])
            # the one denial: the signing root is never overwritten (tests/infrastructure/test_signing.py)
            assert statement["Effect"] == "Allow" or actions == ["ssm:PutParameter"]
            assert "NotAction" not in statement
            assert "NotResource" not in statement
            for action in actions:
                assert "*" not in action, f"{role_id} grants the wildcard action {action}"
            if "*" in _listify(statement["Resource"]) and actions == ["ecs:ListTasks"]:
                # ListTasks names no resource: its cluster condition holds it (test_start_targets.py)
                assert set(statement["Condition"]["ArnLike"]) == {"ecs:cluster"}
            elif "*" in _listify(statement["Resource"]):
                assert sorted(actions) == sorted(XRAY_WRITE_ACTIONS), f"{role_id}: Resource * beyond X-Ray"


def test_api_function_may_only_touch_the_tables_and_the_listing_index(synthesized: Synthesized) -> None:
    stack = synthesized.stack
    function_id = logical_id(stack, stack.api.handler.function.node.default_child)
    table_id = logical_id(stack, stack.storage.table.node.default_child)
    idempotency_id = logical_id(stack, stack.storage.idempotency_table.node.default_child)
    role_id = _function_roles(synthesized)[function_id]
    dynamodb = [
        statement
        for statement in _statements_of_role(synthesized, role_id)
        if any(action.startswith("dynamodb:") for action in _listify(statement["Action"]))
    ]
    table_arn = {"Fn::GetAtt": [table_id, "Arn"]}
    index_arns = [{"Fn::Join": ["", [table_arn, f"/index/{name}"]]} for name in (STATUS_INDEX_NAME, LIST_INDEX_NAME)]
    assert sorted(dynamodb, key=str) == sorted(
        [
            {"Action": sorted(API_TABLE_ACTIONS), "Effect": "Allow", "Resource": table_arn},
            # its lists: the listing index, and the status index (docs/status-index.md)
            {"Action": "dynamodb:Query", "Effect": "Allow", "Resource": index_arns},
            {
                "Action": sorted(IDEMPOTENCY_ACTIONS),
                "Effect": "Allow",
                "Resource": {"Fn::GetAtt": [idempotency_id, "Arn"]},
            },
        ],
        key=str,
    )
    assert set(API_TABLE_ACTIONS) == {
        "dynamodb:GetItem",
        "dynamodb:PutItem",
        "dynamodb:UpdateItem",
        "dynamodb:DeleteItem",
        "dynamodb:Query",
        "dynamodb:BatchGetItem",
        "dynamodb:BatchWriteItem",
        "dynamodb:ConditionCheckItem",
    }


def test_functions_write_logs_only_to_their_own_log_group(synthesized: Synthesized) -> None:
    functions = synthesized.resources("AWS::Lambda::Function")
    for function_id, role_id in _function_roles(synthesized).items():
        own_group = functions[function_id]["Properties"]["LoggingConfig"]["LogGroup"]["Ref"]
        logs = [
            statement
            for statement in _statements_of_role(synthesized, role_id)
            if any(action.startswith("logs:") for action in _listify(statement["Action"]))
        ]
        assert logs == [
            {
                "Action": ["logs:CreateLogStream", "logs:PutLogEvents"],
                "Effect": "Allow",
                "Resource": {"Fn::GetAtt": [own_group, "Arn"]},
            }
        ]


def test_functions_exist_only_after_their_permissions(synthesized: Synthesized) -> None:
    functions = synthesized.resources("AWS::Lambda::Function")
    policies = synthesized.resources("AWS::IAM::Policy")
    for function_id, role_id in _function_roles(synthesized).items():
        own_policies = {key for key, policy in policies.items() if {"Ref": role_id} in policy["Properties"]["Roles"]}
        assert own_policies <= set(functions[function_id].get("DependsOn", []))


Grant = tuple[str, str]
"""(action, resource as JSON): statements flattened, since CDK merges statements that share
actions or resources (@aws-cdk/aws-iam:minimizePolicies)."""


def _grants(synthesized: Synthesized | Built, role_id: str, effect: str = "Allow") -> set[Grant]:
    """A role's grants beyond writing its own logs and X-Ray (``effect="Deny"``: its denials)."""
    found = set()
    for statement in _statements_of_role(synthesized, role_id):
        if statement["Effect"] != effect:
            continue
        actions = _listify(statement["Action"])
        if actions[0].startswith("logs:") or sorted(actions) == sorted(XRAY_WRITE_ACTIONS):
            continue
        for action in actions:
            for resource in _listify(statement["Resource"]):
                found.add((action, json.dumps(resource, sort_keys=True)))
    return found


def _arn(resource_id: str) -> str:
    return json.dumps({"Fn::GetAtt": [resource_id, "Arn"]}, sort_keys=True)


def _account_wide(service: str, resource: str) -> str:
    parts = ["arn:", {"Ref": "AWS::Partition"}, f":{service}:", {"Ref": "AWS::Region"}, ":"]
    return json.dumps({"Fn::Join": ["", [*parts, {"Ref": "AWS::AccountId"}, f":{resource}"]]}, sort_keys=True)


class _Ids:
    def __init__(self, built: Synthesized | Built) -> None:
        stack = built.stack
        self.built = built
        self.table = logical_id(stack, stack.storage.table.node.default_child)
        queues = stack.pipeline.queues
        self.dead_letters = logical_id(stack, queues.dead_letters.node.default_child)
        self.scanner = logical_id(stack, stack.pipeline.scanner.function.node.default_child)
        self.recover = logical_id(stack, stack.pipeline.recover.function.node.default_child)
        self.stranded = logical_id(stack, queues.stranded.node.default_child)
        self.delay = [logical_id(stack, queue.node.default_child) for queue in queues.delay]
        self.high_priority = logical_id(stack, queues.high_priority.node.default_child)
        self.roles = _function_roles(built)

    def role(self, function: ServiceFunction) -> str:
        return self.roles[logical_id(self.built.stack, function.function.node.default_child)]


def _on(actions: Iterable[str], *resource_ids: str) -> set[Grant]:
    return {(action, _arn(resource_id)) for action in actions for resource_id in resource_ids}


def _job_starter(built: Synthesized | Built) -> set[Grant]:
    """What starting a job takes: its data under jobs/ of the jobs bucket, its execution."""
    stack = built.stack
    bucket = logical_id(stack, stack.jobs.bucket.node.default_child)
    objects = {"Fn::Join": ["", [{"Fn::GetAtt": [bucket, "Arn"]}, "/jobs/*"]]}
    state_machine = {"Ref": logical_id(stack, stack.jobs.jobs.state_machine.node.default_child)}
    return {
        ("s3:PutObject", json.dumps(objects, sort_keys=True)),
        ("states:StartExecution", json.dumps(state_machine, sort_keys=True)),
    }


def _job_stopper(built: Synthesized | Built) -> set[Grant]:
    """What cancelling a job takes: StopExecution on the job state machine's executions."""
    stack = built.stack
    machine = logical_id(stack, stack.jobs.jobs.state_machine.node.default_child)
    executions = {
        "Fn::Join": [
            "",
            [
                "arn:",
                {"Ref": "AWS::Partition"},
                ":states:",
                {"Ref": "AWS::Region"},
                ":",
                {"Ref": "AWS::AccountId"},
                ":execution:",
                {"Fn::GetAtt": [machine, "Name"]},
                ":*",
            ],
        ]
    }
    return {("states:StopExecution", json.dumps(executions, sort_keys=True))}


def _key(built: Synthesized | Built) -> str:
    signing = built.stack.signing
    assert isinstance(signing, SigningKey), "sundial:signingKey is kms"
    return _arn(logical_id(built.stack, signing.key.node.default_child))


def _root(built: Synthesized | Built) -> str:
    """The parameter of the signing root, written out (the stack is named Sundial)."""
    return _account_wide("ssm", "parameter/Sundial/signing-root")


def _signer(built: Synthesized | Built) -> set[Grant]:
    """What signing calls takes: read a tenant's secrets' values and make its first one (the KMS
    key's decrypt and encrypted-only data keys, or reading and creating the root's parameter),
    read and write its secret items."""
    table = _arn(logical_id(built.stack, built.stack.storage.table.node.default_child))
    if built.stack.settings.signing_key == "kms":
        values = {("kms:Decrypt", _key(built)), ("kms:GenerateDataKeyWithoutPlaintext", _key(built))}
    else:
        values = {("ssm:GetParameter", _root(built)), ("ssm:PutParameter", _root(built))}
    return {*values, ("dynamodb:Query", table), ("dynamodb:PutItem", table)}


def _kms_grants(built: Synthesized | Built, function: ServiceFunction) -> set[Grant]:
    return {grant for grant in _grants(built, _Ids(built).role(function)) if grant[0].startswith("kms:")}


def test_the_signing_key_is_customer_managed_with_rotation(alternate: Built) -> None:
    """sundial:signingKey "kms" (the alternate stack's)."""
    (key,) = alternate.resources("AWS::KMS::Key").values()
    assert key["Properties"]["EnableKeyRotation"] is True
    assert key["Properties"].get("KeySpec", "SYMMETRIC_DEFAULT") == "SYMMETRIC_DEFAULT"
    assert key["DeletionPolicy"] == "Delete"  # the alternate stack's removal policy is "destroy"


def test_only_the_api_encrypts_and_only_the_signers_and_the_api_decrypt(alternate: Built) -> None:
    stack = alternate.stack
    key = _key(alternate)
    # the API also reads an access key's secret back (the EventBridge Scheduler API's SigV4), and so
    # does the scheduler's function URL, which only verifies
    assert _kms_grants(alternate, stack.api.handler) == {("kms:Encrypt", key), ("kms:Decrypt", key)}
    assert stack.scheduler_url is not None
    assert _kms_grants(alternate, stack.scheduler_url.handler) == {("kms:Decrypt", key)}
    signers = {("kms:Decrypt", key), ("kms:GenerateDataKeyWithoutPlaintext", key)}
    for trigger in stack.pipeline.triggers:
        assert _kms_grants(alternate, trigger) == signers
    assert _kms_grants(alternate, stack.jobs.function) == signers
    for function in (stack.pipeline.tick, stack.pipeline.scanner, stack.keys.function):
        assert _kms_grants(alternate, function) == set()


@pytest.mark.parametrize("which", ["synthesized", "alternate"])
def test_the_signers_table_access_is_limited_to_the_tenant_partitions(
    request: pytest.FixtureRequest, which: str
) -> None:
    built = request.getfixturevalue(which)
    stack = built.stack
    for function in (*stack.pipeline.triggers, stack.jobs.function):
        statements = _statements_of_role(built, _Ids(built).role(function))
        (signing,) = [s for s in statements if "dynamodb:Query" in _listify(s["Action"])]
        assert signing["Condition"] == {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["T#*"]}}


@pytest.mark.parametrize("which", ["synthesized", "alternate"])
def test_pipeline_functions_have_exactly_the_permissions_they_use(request: pytest.FixtureRequest, which: str) -> None:
    built = request.getfixturevalue(which)
    ids = _Ids(built)
    pipeline = built.stack.pipeline
    send = ["sqs:SendMessage"]
    # the tick looks at the stranded queue's depth and invokes the recovering trigger to drain it
    assert _grants(built, ids.role(pipeline.tick)) == {
        *_on(["lambda:InvokeFunction"], ids.scanner, ids.recover),
        *_on(TICK_TABLE_ACTIONS, ids.table),
        *_on(["sqs:GetQueueAttributes"], ids.stranded),
    }
    # its on-failure destination: Lambda sends a spent scan invocation with the scanner's role
    assert _grants(built, ids.role(pipeline.scanner)) == {
        *_on(SCANNER_TABLE_ACTIONS, ids.table),
        *_on(send, *ids.delay, ids.high_priority, ids.dead_letters),
    }
    trigger = {
        *_on(TRIGGER_TABLE_ACTIONS, ids.table),
        *_on(TRIGGER_NAME_ACTIONS, ids.table),
        *_on(send, *ids.delay, ids.high_priority, ids.dead_letters),
        ("lambda:InvokeFunction", _account_wide("lambda", "function:*")),
        ("sqs:SendMessage", _account_wide("sqs", "*")),
        ("sns:Publish", _account_wide("sns", "*")),
        ("events:PutEvents", _account_wide("events", "event-bus/*")),
        ("states:StartExecution", _account_wide("states", "stateMachine:*")),
        ("ecs:RunTask", _account_wide("ecs", "task-definition/*")),
        ("ecs:ListTasks", json.dumps("*")),
        *_job_starter(built),
        *_signer(built),
    }
    assert _grants(built, ids.role(pipeline.trigger)) == {*trigger, *_on(CONSUME_ACTIONS, *ids.delay)}
    # the high-priority trigger: the same permissions, consuming its own queue alone
    assert _grants(built, ids.role(pipeline.high_priority_trigger)) == {
        *trigger,
        *_on(CONSUME_ACTIONS, ids.high_priority),
    }
    # the recovering trigger: the same permissions, receiving from the stranded queue itself (no
    # event source: functions/recover/drain.py) with the actions Lambda's poller would use
    assert _grants(built, ids.role(pipeline.recover)) == {*trigger, *_on(CONSUME_ACTIONS, ids.stranded)}
    assert _job_starter(built) <= _grants(built, ids.role(built.stack.api.handler))
    # the API cancels jobs; nothing else stops an execution (the triggers' grants are whole above)
    assert _job_stopper(built) <= _grants(built, ids.role(built.stack.api.handler))
    assert not _job_stopper(built) & _grants(built, ids.role(built.stack.jobs.function))
    api_queue_grants = {
        grant for grant in _grants(built, ids.role(built.stack.api.handler)) if grant[0].startswith("sqs:")
    }
    assert api_queue_grants == _on(send, *ids.delay, ids.high_priority)
    # the API invokes the job function alone (a notify a progress report crossed), nothing else
    job_function = logical_id(built.stack, built.stack.jobs.function.function.node.default_child)
    api_invokes = {
        grant for grant in _grants(built, ids.role(built.stack.api.handler)) if grant[0] == "lambda:InvokeFunction"
    }
    assert api_invokes == {("lambda:InvokeFunction", _arn(job_function))}


@pytest.mark.parametrize("which", ["synthesized", "alternate"])
def test_the_authorizer_may_only_read_items(request: pytest.FixtureRequest, which: str) -> None:
    """GetItem on the task table (no index, no write) and nothing else: the admin key is an item
    of the table too (its hash), so no Secrets Manager or KMS permission."""
    built = request.getfixturevalue(which)
    stack = built.stack
    ids = _Ids(built)
    assert _grants(built, ids.role(stack.keys.function)) == {("dynamodb:GetItem", _arn(ids.table))}
    assert AUTHORIZER_TABLE_ACTIONS == ("dynamodb:GetItem",)


def test_no_function_reads_secrets_manager(synthesized: Synthesized) -> None:
    ids = _Ids(synthesized)
    readers = {
        role_id
        for role_id in ids.roles.values()
        if any(action.startswith("secretsmanager:") for action, _ in _grants(synthesized, role_id))
    }
    assert readers == set()


def test_the_ticks_table_access_is_limited_to_the_marks_and_the_buckets(synthesized: Synthesized) -> None:
    statements = _statements_of_role(synthesized, _Ids(synthesized).role(synthesized.stack.pipeline.tick))
    (table,) = [s for s in statements if "dynamodb:Query" in _listify(s["Action"])]
    assert sorted(_listify(table["Action"])) == sorted(TICK_TABLE_ACTIONS)
    assert table["Condition"] == {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["W#*", "B#*"]}}


def test_the_trigger_deletes_only_schedule_names(synthesized: Synthesized) -> None:
    """The one delete the trigger may make is of a completed EventBridge Scheduler schedule's name."""
    ids = _Ids(synthesized)
    for trigger in synthesized.stack.pipeline.triggers:
        statements = _statements_of_role(synthesized, ids.role(trigger))
        (deletes,) = [s for s in statements if "dynamodb:DeleteItem" in _listify(s["Action"])]
        assert _listify(deletes["Action"]) == ["dynamodb:DeleteItem"]
        assert deletes["Condition"] == {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["SN#*"]}}


def test_the_pipeline_uses_the_table_but_no_index() -> None:
    assert set(SCANNER_TABLE_ACTIONS) == {"dynamodb:UpdateItem", "dynamodb:Query"}
    assert set(TRIGGER_TABLE_ACTIONS) == {
        "dynamodb:GetItem",
        "dynamodb:PutItem",
        "dynamodb:UpdateItem",
        "dynamodb:BatchGetItem",
        "dynamodb:ConditionCheckItem",
    }


def test_account_wide_resources_are_only_the_triggers_targets(synthesized: Synthesized) -> None:
    """Only the trigger's target policy (and the job function's Lambda processors) name resources
    by wildcard, and only in their own account and region; a job's objects are granted under the
    jobs bucket's own prefix, and the job executions the API may stop are the job state machine's.
    The target policy holds nothing else."""
    stack = synthesized.stack
    targets_policies = [
        logical_id(stack, policy.node.default_child) for policy in stack.pipeline.targets_policies.values()
    ]
    processors_policy = logical_id(stack, stack.jobs.processors_policy.node.default_child)
    bucket = logical_id(stack, stack.jobs.bucket.node.default_child)
    jobs_objects = {"Fn::Join": ["", [{"Fn::GetAtt": [bucket, "Arn"]}, "/jobs/*"]]}
    for key, policy in synthesized.resources("AWS::IAM::Policy").items():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            for resource in _listify(statement["Resource"]):
                text = json.dumps(resource)
                if resource == "*" or "*" not in text or resource == jobs_objects:
                    continue
                if {("states:StopExecution", json.dumps(resource, sort_keys=True))} == _job_stopper(synthesized):
                    continue
                assert key in (*targets_policies, processors_policy), f"{key} grants {text}"
                parts = resource["Fn::Join"][1]
                assert {"Ref": "AWS::AccountId"} in parts
                assert {"Ref": "AWS::Region"} in parts
    for targets_policy in targets_policies:
        policy = synthesized.resources("AWS::IAM::Policy")[targets_policy]
        statements = policy["Properties"]["PolicyDocument"]["Statement"]
        assert sorted(statement["Action"] for statement in statements) == sorted(TARGET_ACTIONS + START_ACTIONS)
