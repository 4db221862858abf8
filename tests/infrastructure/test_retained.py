"""What a deleted stack leaves behind never stands in the way of the next deployment of it.

A resource whose ``DeletionPolicy`` or ``UpdateReplacePolicy`` is ``Retain`` outlives its stack
("DeletionPolicy attribute", "UpdateReplacePolicy attribute" in the CloudFormation user guide,
https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-attribute-deletionpolicy.html).
Given a fixed physical name (a log group's, a table's, a queue's...), the next stack of the same
name asks for that name again and its deployment fails ("... already exists"). So no retained
resource may be named by anything but what is unique to one stack's creation: a name
CloudFormation generates (none given), or one built from the stack's id or another resource's
generated attribute.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.infrastructure.conftest import Synthesized

pytestmark = pytest.mark.infrastructure

NAME_PROPERTIES = {
    "AWS::Logs::LogGroup": "LogGroupName",
    "AWS::DynamoDB::Table": "TableName",
    "AWS::SQS::Queue": "QueueName",
    "AWS::SNS::Topic": "TopicName",
    "AWS::S3::Bucket": "BucketName",
    "AWS::IAM::Role": "RoleName",
    "AWS::IAM::ManagedPolicy": "ManagedPolicyName",
    "AWS::SecretsManager::Secret": "Name",
    "AWS::SSM::Parameter": "Name",
    "AWS::KMS::Alias": "AliasName",
    "AWS::Lambda::Function": "FunctionName",
    "AWS::StepFunctions::StateMachine": "StateMachineName",
    "AWS::Events::Rule": "Name",
    "AWS::CloudWatch::Alarm": "AlarmName",
    "AWS::CloudWatch::Dashboard": "DashboardName",
}
"""The physical name of each type the stack has or may come to have (a resource of another type
is checked by every top-level property named ``Name`` or ``...Name``)."""
FIXED_PSEUDO_PARAMETERS = {"AWS::StackName", "AWS::Region", "AWS::AccountId", "AWS::Partition", "AWS::URLSuffix"}
"""Pseudo parameters the next stack of the same name, in the same place, has again (AWS::StackId
it has not: the stack's ARN ends with a UUID of each creation)."""


def fixed(value: Any, parameters: frozenset[str] = frozenset()) -> bool:
    """Whether a property's value is the same for every stack of this name: a string, a fixed
    pseudo parameter or one of the template's ``parameters``, or an intrinsic made of those alone
    (a ``Ref`` of a resource, or its ``Fn::GetAtt``, is generated with that resource)."""
    if isinstance(value, str | int | float):
        return True
    if isinstance(value, list):
        return all(fixed(item, parameters) for item in value)
    if not isinstance(value, dict) or len(value) != 1:
        return True  # not understood: counted fixed, so it is looked at
    [(function, argument)] = value.items()
    if function == "Ref":
        return argument in FIXED_PSEUDO_PARAMETERS or argument in parameters
    if function == "Fn::GetAtt":
        return False
    if function in ("Fn::Join", "Fn::Select", "Fn::Split"):
        return fixed(argument[1], parameters)
    if function == "Fn::Sub":
        text = argument if isinstance(argument, str) else argument[0]
        return "${AWS::StackId}" not in text
    return True


def fixed_names(template: dict[str, Any]) -> list[str]:
    """Each retained resource named by a fixed string: ``<logical id> <type> <property>``."""
    found = []
    parameters = frozenset(template.get("Parameters", {}))
    for logical_id, resource in template["Resources"].items():
        policies = {resource.get("DeletionPolicy"), resource.get("UpdateReplacePolicy")}
        if "Retain" not in policies:
            continue
        properties = resource.get("Properties", {})
        type_name = resource["Type"]
        names = (
            [NAME_PROPERTIES[type_name]]
            if type_name in NAME_PROPERTIES
            else [key for key in properties if key.endswith("Name")]
        )
        found.extend(
            f"{logical_id} {type_name} {name}={properties[name]!r}"
            for name in names
            if name in properties and fixed(properties[name], parameters)
        )
    return found


@pytest.mark.parametrize("fixture", ["synthesized", "everything"])
def test_no_retained_resource_has_a_fixed_name(request: pytest.FixtureRequest, fixture: str) -> None:
    """Every optional part off (cdk.json) and on (the canary, the alarms, the dashboard, the
    scheduler's function URL), both with the default removal policy, retain."""
    built: Synthesized = request.getfixturevalue(fixture)
    template = built.template.to_json()
    retained = [
        logical_id
        for logical_id, resource in template["Resources"].items()
        if "Retain" in (resource.get("DeletionPolicy"), resource.get("UpdateReplacePolicy"))
    ]
    assert len(retained) >= 10  # the tables, the bucket, the log groups: the check has something to check
    assert fixed_names(template) == []


def test_the_jobs_log_group_is_named_after_the_stack_and_its_id(everything: Synthesized) -> None:
    """Still under /aws/vendedlogs/states/ (CloudWatch Logs' resource policy, infra/jobs.py), and
    ending with the UUID of the stack's ARN."""
    stack = everything.stack
    group = stack.resolve(stack.jobs.jobs.log_group.node.default_child.log_group_name)  # type: ignore[union-attr]
    assert group == {
        "Fn::Join": [
            "",
            [
                f"/aws/vendedlogs/states/{stack.stack_name}-jobs-",
                {"Fn::Select": [2, {"Fn::Split": ["/", {"Ref": "AWS::StackId"}]}]},
            ],
        ]
    }


def test_the_check_sees_a_fixed_name_and_a_generated_one() -> None:
    """Guards the test above against a check that finds nothing."""
    retained = {"DeletionPolicy": "Retain", "UpdateReplacePolicy": "Retain"}
    template = {
        "Resources": {
            "Plain": {"Type": "AWS::Logs::LogGroup", "Properties": {"LogGroupName": "/x"}, **retained},
            "Joined": {
                "Type": "AWS::DynamoDB::Table",
                "Properties": {"TableName": {"Fn::Join": ["-", [{"Ref": "AWS::StackName"}, "tasks"]]}},
                **retained,
            },
            "Replaced": {"Type": "AWS::SQS::Queue", "Properties": {"QueueName": "q"}, "UpdateReplacePolicy": "Retain"},
            "Other": {"Type": "AWS::Foo::Bar", "Properties": {"BarName": "b"}, **retained},
            "Generated": {"Type": "AWS::Logs::LogGroup", "Properties": {}, **retained},
            "PerStack": {
                "Type": "AWS::Logs::LogGroup",
                "Properties": {
                    "LogGroupName": {
                        "Fn::Join": ["", ["/a-", {"Fn::Select": [2, {"Fn::Split": ["/", {"Ref": "AWS::StackId"}]}]}]]
                    }
                },
                **retained,
            },
            "FromAnother": {
                "Type": "AWS::SNS::Topic",
                "Properties": {"TopicName": {"Fn::GetAtt": ["Queue", "QueueName"]}},
                **retained,
            },
            "Deleted": {"Type": "AWS::S3::Bucket", "Properties": {"BucketName": "b"}, "DeletionPolicy": "Delete"},
        }
    }
    assert [line.split()[0] for line in fixed_names(template)] == ["Plain", "Joined", "Replaced", "Other"]
