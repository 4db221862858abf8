"""Where user-registered targets may be: every resource of its kind in the deployment's own
account and region (the trigger calls task targets, the job function calls Lambda processors;
neither ARN is known until run time)."""

from __future__ import annotations

from aws_cdk import ArnFormat, Stack

TARGET_ACTIONS = ("lambda:InvokeFunction", "sqs:SendMessage", "sns:Publish", "events:PutEvents")


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
