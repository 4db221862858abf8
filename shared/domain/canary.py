"""The canary: an occurrence due every minute that a deployment fires through its own path (tick,
scanner, delay queue, trigger, target) and times, so that an alarm tells within minutes when
firing stops or runs late (docs/deploy.md, "The canary").

The canary is a task of a tenant no API key can name (:data:`TENANT`: tenant ids are ``a-z``,
``0-9`` and ``-``), registered when the stack is deployed and cancelled when it is deleted
(functions/canary/handler.py, a CloudFormation custom resource). Its target is the canary
function itself, which reads how late each call came from the callback's own body.
"""

from __future__ import annotations

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
