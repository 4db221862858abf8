"""What an occurrence's end asks of a schedule made through the EventBridge Scheduler API
(docs/eventbridge.md, section 7), the firing pipeline's part (shared/services/firing/record.py
calls it through the ``ScheduleEnds`` port): an occurrence that failed for good is sent to the
schedule's own dead-letter queue as the service sends it, and a schedule that asked
(``ActionAfterCompletion: DELETE``) loses its name once it has fired its last."""

from __future__ import annotations

from datetime import UTC

from shared.domain.arns import queue_arn, schedule_of_arn
from shared.domain.firing import Staged
from shared.domain.retry import Exhausted
from shared.domain.scheduler_api import delivered_input, input_template
from shared.domain.schedules import scheduled_time
from shared.domain.tasks import EventBridgeTarget, LambdaTarget, SnsTarget, SqsTarget, Target, Task
from shared.domain.times import from_ms
from shared.observability import logger
from shared.services.ports.pipeline import QueueSender
from shared.services.ports.scheduler_api import ScheduleNames

_EXHAUSTED = {Exhausted.ATTEMPTS: "MaximumRetryAttempts", Exhausted.AGE: "MaximumEventAgeInSeconds"}


class ScheduleEnds:
    """The dead-letter event to the schedule's own queue, and the name removed after completion."""

    def __init__(self, queues: QueueSender, store: ScheduleNames) -> None:
        self.queues, self.store = queues, store

    def dead_letter(self, task: Task, staged: Staged, error: str | None, exhausted: Exhausted | None) -> None:
        """The dead-letter event as the service sends it: the ``Input`` the target was sent as the
        body, and what went wrong as message attributes ("Configuring a dead-letter queue",
        https://docs.aws.amazon.com/scheduler/latest/UserGuide/configuring-schedule-dlq.html; the
        attribute names are unconfirmed against its sample event: docs/eventbridge.md, section 7).
        Best effort: a send that fails is logged, and never stops the run's end from being
        recorded; its dead letter stays in Sundial's own, where the native API can redrive it."""
        schedule = task.eventbridge
        if schedule is None or schedule.dead_letter_arn is None:
            return
        scheduled = scheduled_time(task.schedule, from_ms(staged.due_ms))
        body = delivered_input(
            input_template(task.payload),
            schedule_arn=schedule.arn,
            scheduled_for=scheduled,
            execution_id=staged.run_id,
            attempt=staged.attempt,
        )
        code, message = _error_parts(error)
        values = {
            "ERROR_CODE": code,
            "ERROR_MESSAGE": message or code,
            "EXECUTION_ID": staged.run_id,
            "IS_PAYLOAD_TRUNCATED": "false",
            "RETRY_ATTEMPTS": str(staged.attempt - 1),
            "SCHEDULED_TIME": scheduled.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "SCHEDULE_ARN": schedule.arn,
            "TARGET_ARN": _target_arn(task.targets[0]) if task.targets else "",
        }
        if exhausted is not None:
            values["EXHAUSTED_RETRY_CONDITION"] = _EXHAUSTED[exhausted]
        attributes = {k: {"DataType": "String", "StringValue": v} for k, v in values.items() if v}
        try:
            outcome = self.queues.send_to_queue(schedule.dead_letter_arn, body, attributes)
        except Exception:  # never stops the occurrence's end from being written
            logger.exception("a dead-letter event was not sent", extra={"run_id": staged.run_id})
            return
        if not outcome.ok:
            logger.warning("a dead-letter event was not sent", extra={"run_id": staged.run_id, "error": outcome.error})

    def completed(self, task: Task) -> None:
        """The task has nothing left to fire: its schedule's name goes if it asked to, unless
        the name was taken again since by another schedule."""
        schedule = task.eventbridge
        if schedule is None or not schedule.delete_after_completion:
            return
        group, name = schedule_of_arn(schedule.arn)
        self.store.drop_completed(task.tenant, group, name, task.id)


def _error_parts(error: str | None) -> tuple[str, str]:
    """A failed call's error code and message, from the text the delivery wrote
    (``"sqs SendMessage failed: <Code>: <message>"``)."""
    text = (error or "").partition("; ")[0]
    _, found, rest = text.partition(" failed: ")
    if not found:
        return "Unknown", text
    code, _, message = rest.partition(": ")
    return (code, message) if message else ("Unknown", rest)


def _target_arn(target: Target) -> str:
    if isinstance(target, SqsTarget):
        return queue_arn(target.queue_url)
    if isinstance(target, LambdaTarget):
        return target.function_arn
    if isinstance(target, SnsTarget):
        return target.topic_arn
    return target.event_bus if isinstance(target, EventBridgeTarget) else ""
