"""cdk-nag acknowledgments, always on exactly one CloudFormation resource and with a reason."""

from __future__ import annotations

from typing import Any

from aws_cdk import Acknowledgment, CfnResource, Stack, Validations
from constructs import IConstruct


def acknowledge(construct: IConstruct | None, rule: str, reason: str) -> None:
    """Acknowledge one cdk-nag finding on one resource (an L2 construct's own L1 resource).

    ``rule`` is a rule id (``AwsSolutions-SQS3``) or one finding of it
    (``AwsSolutions-IAM5[Resource::*]``): name the finding when a rule can report several, so a
    new finding of the same rule on the same resource still fails the synth.
    """
    resource = construct if isinstance(construct, CfnResource) else construct and construct.node.default_child
    if not isinstance(resource, CfnResource):
        raise TypeError(f"acknowledge {rule} on a CloudFormation resource, got {construct!r}")
    Validations.of(resource).acknowledge(Acknowledgment(id=rule, reason=reason))


def nag_form(stack: Stack, arn: str) -> str:
    """How cdk-nag writes a resource in a finding id: ``{"Ref": "AWS::Region"}`` as ``<AWS::Region>``,
    ``{"Fn::GetAtt": [id, "Name"]}`` as ``<id.Name>``."""
    resolved = stack.resolve(arn)
    if isinstance(resolved, str):
        return resolved
    separator, parts = resolved["Fn::Join"]

    def written(part: Any) -> str:
        if isinstance(part, str):
            return part
        if "Fn::GetAtt" in part:
            return "<{}.{}>".format(*part["Fn::GetAtt"])
        return f"<{part['Ref']}>"

    return separator.join(written(part) for part in parts)
