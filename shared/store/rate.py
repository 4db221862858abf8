"""Rate limits in DynamoDB: GCRA's one number per limited thing (shared/domain/rate.py), kept in
item ``RATE#<key>`` and moved by conditional writes, so every function that admits requests
for the same key agrees without a lock.

Admitting costs one write in the common case and never a read: GCRA moves the TAT to
``max(TAT, now) + interval``, which an update expression cannot compute, so the limiter says
which of the two cases it expects and lets the condition check it: *busy* (``now <= TAT <=
latest``: add the interval) or *idle* (no TAT, or ``TAT < now``: set ``now + interval``). A
wrong guess fails its condition and the other case is tried (a second write); when both fail,
the request is refused and one strongly consistent read gives its ``Retry-After``.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

from pynamodb.exceptions import DoesNotExist, PynamoDBException
from pynamodb.expressions.update import Action

from shared.domain.errors import StorageUnavailable
from shared.domain.rate import EPSILON_MS, Decision, Rate, admit
from shared.store.models import RateItem, is_conflict

IDLE_EXPIRY = timedelta(days=1)
"""A limit unused this long is forgotten (DynamoDB TTL); it then starts with a full burst."""
ATTEMPTS = 4


class DynamoRateLimiter:
    def __init__(self) -> None:
        self._busy: dict[str, bool] = {}
        """Per key, which case the last request was: the first guess for the next."""

    def take(self, key: str, rate: Rate, now_ms: float | None = None, count: int = 1) -> Decision:
        """Admit ``count`` requests for ``key`` at ``now_ms`` (the wall clock unless given), all
        of them or none (``count`` at most the burst)."""
        if not 1 <= count <= rate.burst:
            raise ValueError(f"take 1 to {rate.burst} at once, not {count}")
        now = time.time() * 1000 if now_ms is None else now_ms  # wall: API requests a real second
        item = RateItem(f"RATE#{key}", "RATE")
        expires = datetime.fromtimestamp(now / 1000, tz=UTC) + IDLE_EXPIRY
        latest = rate.latest_tat_ms(now, count)
        spent = count * rate.interval_ms
        for _ in range(ATTEMPTS):
            for busy in (self._busy.get(key, False), not self._busy.get(key, False)):
                step: Action
                try:
                    if busy:
                        condition = RateItem.tat_ms.between(now, latest + EPSILON_MS)
                        step = RateItem.tat_ms.add(spent)
                    else:
                        condition = RateItem.tat_ms.does_not_exist() | (RateItem.tat_ms < now)
                        step = RateItem.tat_ms.set(now + spent)
                    item.update([step, RateItem.expires_at.set(expires)], condition)
                except PynamoDBException as exc:
                    if not is_conflict(exc):
                        raise StorageUnavailable(f"rate limit {key}: {exc}") from exc
                    continue
                self._busy[key] = busy
                return Decision(True, float(item.tat_ms or 0))
            decision = admit(self._tat(key), now, rate, count)
            if not decision.allowed:
                return decision
            # the TAT moved between the writes and the read and admits now: try again
        # still contended after every attempt: refuse, and let the caller come back in an interval
        return Decision(False, latest, retry_after_ms=rate.interval_ms)

    @staticmethod
    def _tat(key: str) -> float | None:
        try:
            found = RateItem.get(f"RATE#{key}", "RATE", consistent_read=True)
        except DoesNotExist:
            return None
        except PynamoDBException as exc:
            raise StorageUnavailable(f"rate limit {key}: {exc}") from exc
        return None if found.tat_ms is None else float(found.tat_ms)
