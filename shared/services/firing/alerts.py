"""An occurrence's alerts (shared/domain/alerts.py), sent once its batch's outcomes are on record."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace

from shared.delivery import AlertEnvelope
from shared.domain.alerts import Notice
from shared.domain.signing import Signer
from shared.domain.tasks import HttpTarget, JobTarget, WorkflowTarget
from shared.domain.times import from_ms
from shared.observability import logger
from shared.services.ports.pipeline import Delivery

ALERT_RETRY_PAUSES_S = (0.5, 0.0)
"""An alert is tried twice at most, half a second apart, when its first try may be retried; then
it is logged and given up (it is never retried into another alert, nor left for a later batch)."""
ALERT_TIMEOUT_S = 10.0
"""An HTTP alert's try waits this long at most (less when its target's ``timeout_seconds`` says so):
alerts are sent at the end of a trigger invocation, which must end within the trigger's timeout."""


@dataclass
class AlertSender:
    deliverer: Delivery
    signer: Callable[[str], Signer] | None = None
    """The tenant's signer: an HTTP alert is signed, or not sent (never unsigned)."""
    sleep: Callable[[float], None] = time.sleep  # wall: pauses between an alert's calls to a real receiver
    _pool: ThreadPoolExecutor = field(default_factory=lambda: ThreadPoolExecutor(max_workers=16))

    def send(self, alerts: Sequence[Notice]) -> None:
        """Send each alert (side by side); never raises: an alert that cannot be sent is logged."""
        if len(alerts) == 1:
            self._send(alerts[0])
        elif alerts:
            list(self._pool.map(self._send, alerts))

    def _send(self, notice: Notice) -> None:
        # pragma: no mutate start (what is logged only)
        ids = {"task_id": notice.task_id, "run_id": notice.run_id, "type": notice.type.value}
        # pragma: no mutate end
        try:
            if isinstance(notice.target, JobTarget | WorkflowTarget):
                logger.warning("an alert cannot start a job or a workflow", extra=ids)
                return
            target, signer = notice.target, None
            if isinstance(target, HttpTarget):
                target = replace(target, timeout_seconds=min(target.timeout_seconds, ALERT_TIMEOUT_S))
                if self.signer is not None:
                    signer = self.signer(notice.tenant)  # never an unsigned alert: a failure to read it is logged
            at = from_ms(notice.at_ms)
            for attempt, pause in enumerate(ALERT_RETRY_PAUSES_S, start=1):
                envelope = AlertEnvelope(
                    notice.task_id,
                    notice.key,
                    at,
                    at,
                    attempt,
                    signer=signer,
                    tenant=notice.tenant,
                    content=notice.body(),
                )
                outcome = self.deliverer.deliver(target, envelope)
                if outcome.ok:
                    return
                if not outcome.retryable or not pause:
                    break
                self.sleep(pause)
            logger.warning("an alert was not delivered", extra={**ids, "error": outcome.error, "attempts": attempt})
        except Exception:
            logger.exception("an alert was not sent", extra=ids)
