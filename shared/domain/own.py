"""Sundial's own resources are never a task's target.

A task must not feed the scheduler's internals (a delay queue, the trigger, the dead-letter
queue, the alarm topic): every resource of a deployment that a target could name has a name
starting with the deployment's prefix (the stack's name and a dash: CloudFormation's generated
names do), so a Lambda, SQS or SNS target in the deployment's account whose name starts with it
is refused at registration, naming the field. So is a queue that a task sends to when an
occurrence fails for good (an EventBridge-made schedule's ``DeadLetterConfig.Arn``): it is written
to as a target is. Sundial has no event bus or container cluster of its own; its jobs state
machine is a job target's to start, so a ``stepfunctions`` target naming it (or any state machine
with the prefix) is refused.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from shared.domain.errors import FieldError, ValidationFailed
from shared.domain.tasks import JobTarget, LambdaTarget, SnsTarget, SqsTarget, StepFunctionsTarget, Target

_ARN = re.compile(r"^arn:[^:]+:(?P<service>[^:]+):[^:]*:(?P<account>\d{12}):(?:function:)?(?P<name>[^:/]+)")
_STATE_MACHINE = re.compile(r"^arn:[^:]+:states:[^:]*:(?P<account>\d{12}):stateMachine:(?P<name>[^:]+)")
_QUEUE_URL = re.compile(r"^https?://[^/]+/(?P<account>\d{12})/(?P<name>[^/?#]+)")


def _why(name: str) -> str:
    return f"is one of this Sundial deployment's own resources ({name}): a task must not feed the scheduler"


@dataclass(frozen=True)
class OwnResources:
    prefix: str = ""
    """The name prefix of the deployment's resources; empty: nothing is refused."""
    account: str = ""
    """The deployment's account; empty: a name with the prefix is refused in any account."""

    def _ours(self, account: str, name: str) -> bool:
        return bool(self.prefix) and name.startswith(self.prefix) and (not self.account or account == self.account)

    def arn_refusal(self, arn: str) -> str | None:
        """Why the resource at ``arn`` (a Lambda function, an SQS queue, an SNS topic) may not be
        written to by a task: it is one of ours; None when it is not."""
        match = _ARN.match(arn)
        if match and self._ours(match["account"], match["name"]):
            return _why(match["name"])
        return None

    def refusal(self, target: Target) -> tuple[str, str] | None:
        """(the member at fault, why) when ``target`` names one of Sundial's own resources."""
        if isinstance(target, LambdaTarget | SnsTarget):
            arn, member = (
                (target.function_arn, "lambda.function_arn")
                if isinstance(target, LambdaTarget)
                else (target.topic_arn, "sns.topic_arn")
            )
            why = self.arn_refusal(arn)
            if why is not None:
                return member, why
        if isinstance(target, SqsTarget):
            match = _QUEUE_URL.match(target.queue_url)
            if match and self._ours(match["account"], match["name"]):
                return "sqs.queue_url", _why(match["name"])
        if isinstance(target, StepFunctionsTarget):
            found = _STATE_MACHINE.match(target.state_machine_arn)
            if found and self._ours(found["account"], found["name"]):
                return "stepfunctions.state_machine_arn", _why(found["name"])
        if isinstance(target, JobTarget):
            return self._processor(target)
        return None

    def _processor(self, target: JobTarget) -> tuple[str, str] | None:
        processor = json.loads(target.job).get("processor") or {}
        arn = (processor.get("lambda") or {}).get("function_arn")
        match = _ARN.match(arn) if isinstance(arn, str) else None
        if match and self._ours(match["account"], match["name"]):
            return "job.processor.lambda.function_arn", _why(match["name"])
        return None

    def check_processor(self, processor: Target) -> None:
        """Refuse a job's processor that is one of ours (``processor.lambda.function_arn``)."""
        refused = self.refusal(processor)
        if refused is not None:
            raise ValidationFailed.on(f"processor.{refused[0]}", refused[1])

    def check(self, targets: Sequence[Target], multicast: bool) -> None:
        """Refuse (:class:`ValidationFailed`, every refused target named) targets that are ours."""
        details = []
        for index, target in enumerate(targets):
            refused = self.refusal(target)
            if refused is not None:
                where = f"targets[{index}]" if multicast else "target"
                details.append(FieldError(f"{where}.{refused[0]}", refused[1]))
        if details:
            raise ValidationFailed("; ".join(f"{d.field}: {d.message}" for d in details), details)
