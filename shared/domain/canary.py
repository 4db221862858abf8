"""The canary: an occurrence due every minute that a deployment fires through its own path (tick,
scanner, delay queue, trigger, target) and times, so that an alarm tells within minutes when
firing stops or runs late (docs/deploy.md, "The canary").

The canary is a task of a tenant no API key can name (:data:`TENANT`: tenant ids are ``a-z``,
``0-9`` and ``-``), registered when the stack is deployed and cancelled when it is deleted
(functions/canary/handler.py, a CloudFormation custom resource). Its target is the canary
function itself, which reads how late each call came from the callback's own body.
"""

from __future__ import annotations

import hashlib
from datetime import datetime

from shared.domain.retry import Backoff, RetryPolicy
from shared.domain.schedules import Cron
from shared.domain.tasks import LambdaTarget, Misfire, TaskSpec

TENANT = "_canary"
"""Outside the API's tenant ids: no key can read, change or be charged for the canary."""
NAME = "sundial-canary"
SCHEDULE = Cron("* * * * *")
"""Every minute at second 0 (UTC)."""
LATE_MS = 1_000
"""An occurrence later than this is an alarm (the stack's canary alarm threshold)."""


RESOURCE_PREFIX = "sundial-canary-"


def resource_key(stack_id: str, logical_resource_id: str) -> str:
    """The canary's custom resource, named by what every request CloudFormation makes of it
    carries: the stack's id and the resource's logical id ("Custom resource request objects",
    https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/crpg-ref-requests.html). A
    retried request, an update and its rollback name the same canary; a new stack of the same name
    has a new stack id (its ARN ends with a UUID of each creation). It is the custom resource's
    physical id, and the key of the item that names the canary's task.

    The task's id itself cannot be derived so: it encodes the task's first due time and bucket
    shard (shared/domain/ids.py), which a retry a minute later does not share."""
    digest = hashlib.sha256(f"{stack_id}\n{logical_resource_id}".encode()).hexdigest()
    return RESOURCE_PREFIX + digest[:32]


def spec(function_arn: str) -> TaskSpec:
    """The canary task: every minute, the canary function as its target, one attempt (a failure
    is what the alarm is for, not something to retry), a missed minute skipped."""
    return TaskSpec(
        schedule=SCHEDULE,
        targets=(LambdaTarget(function_arn),),
        name=NAME,
        retry=RetryPolicy(max_attempts=1, backoff=Backoff.FIXED, interval_seconds=1),
        misfire=Misfire.SKIP,
    )


def lateness_ms(scheduled_for: datetime, fired_at: datetime) -> int:
    """How late the trigger fired the occurrence due at ``scheduled_for``."""
    return round((fired_at - scheduled_for).total_seconds() * 1000)
