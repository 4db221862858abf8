"""What jobs run on (infra/job_runner.py), in the whole stack: the rule that records a job failed
when its execution ended without it, and a throw-away stack's jobs bucket emptied before it goes."""

from __future__ import annotations

import pytest

from tests.infrastructure.conftest import Built, Synthesized, logical_id

pytestmark = pytest.mark.infrastructure


def test_an_execution_that_ends_without_its_job_goes_to_the_job_function(synthesized: Synthesized) -> None:
    stack = synthesized.stack
    machine = logical_id(stack, stack.jobs.jobs.state_machine.node.default_child)
    function = logical_id(stack, stack.jobs.function.function.node.default_child)
    rules = [
        rule["Properties"]
        for rule in synthesized.resources("AWS::Events::Rule").values()
        if "EventPattern" in rule["Properties"]
    ]
    [rule] = rules
    assert rule["EventPattern"] == {
        "source": ["aws.states"],
        "detail-type": ["Step Functions Execution Status Change"],
        "detail": {"status": ["FAILED", "TIMED_OUT", "ABORTED"], "stateMachineArn": [{"Ref": machine}]},
    }
    [target] = rule["Targets"]
    assert target["Arn"] == {"Fn::GetAtt": [function, "Arn"]}
    assert target["RetryPolicy"] == {"MaximumRetryAttempts": 8, "MaximumEventAgeInSeconds": 86_400}


def test_an_execution_end_the_rule_could_not_deliver_goes_to_a_dead_letter_queue(synthesized: Synthesized) -> None:
    """Not dropped: "Using dead-letter queues to process undelivered events in EventBridge" (the
    queue SSE encrypted and TLS only, as the stack's other queues; EventBridge may send to it from
    this rule alone)."""
    stack = synthesized.stack
    rule = logical_id(stack, stack.jobs.execution_ends.node.default_child)
    queue = logical_id(stack, stack.jobs.execution_ends_dead_letters.node.default_child)
    [target] = synthesized.resources("AWS::Events::Rule")[rule]["Properties"]["Targets"]
    assert target["DeadLetterConfig"] == {"Arn": {"Fn::GetAtt": [queue, "Arn"]}}
    properties = synthesized.resources("AWS::SQS::Queue")[queue]["Properties"]
    assert properties["SqsManagedSseEnabled"] is True
    assert properties["MessageRetentionPeriod"] == 14 * 86_400  # SQS's longest
    [policy] = [
        policy["Properties"]["PolicyDocument"]["Statement"]
        for policy in synthesized.resources("AWS::SQS::QueuePolicy").values()
        if policy["Properties"]["Queues"] == [{"Ref": queue}]
    ]
    arn = {"Fn::GetAtt": [queue, "Arn"]}
    assert {
        "Action": "sqs:*",
        "Condition": {"Bool": {"aws:SecureTransport": "false"}},
        "Effect": "Deny",
        "Principal": {"AWS": "*"},
        "Resource": arn,
    } in policy
    [sends] = [statement for statement in policy if statement["Effect"] == "Allow"]
    assert (sends["Action"], sends["Principal"], sends["Resource"]) == (
        "sqs:SendMessage",
        {"Service": "events.amazonaws.com"},
        arn,
    )
    assert sends["Condition"] == {"ArnEquals": {"aws:SourceArn": {"Fn::GetAtt": [rule, "Arn"]}}}


def test_a_retained_jobs_bucket_is_kept_and_a_throw_away_one_emptied_first(
    synthesized: Synthesized, alternate: Built
) -> None:
    """CloudFormation deletes no bucket that holds objects: a "destroy" stack's teardown would end
    DELETE_FAILED without the objects deleted first."""
    assert synthesized.resources("Custom::S3AutoDeleteObjects") == {}
    [bucket] = synthesized.resources("AWS::S3::Bucket").values()
    assert bucket["DeletionPolicy"] == "Retain"
    [auto_delete] = alternate.resources("Custom::S3AutoDeleteObjects").values()
    [thrown] = alternate.resources("AWS::S3::Bucket").values()
    assert thrown["DeletionPolicy"] == "Delete"
    assert auto_delete["Properties"]["BucketName"] == {"Ref": next(iter(alternate.resources("AWS::S3::Bucket")))}
