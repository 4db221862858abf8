"""``/v1/limits``: a limit per destination."""

from __future__ import annotations

from shared.api.responses import DestinationLimitOut
from shared.domain.limits import Limit


def limit_view(limit: Limit) -> DestinationLimitOut:
    assert limit.created_at is not None, "a stored limit has both times"
    assert limit.updated_at is not None, "a stored limit has both times"
    return DestinationLimitOut(
        name=limit.name,
        origin=limit.origin,
        per_second=limit.per_second,
        burst=limit.burst,
        max_in_flight=limit.max_in_flight,
        version=limit.version,
        created_at=limit.created_at,
        updated_at=limit.updated_at,
    )
