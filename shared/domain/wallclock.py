"""Wall clocks: time zones by name, and the instant a local wall time stands for."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from shared.domain.errors import ValidationFailed


def zone_of(name: str, field: str = "schedule.timezone") -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ValidationFailed.on(field, f"unknown time zone {name!r} (use an IANA name)") from exc


def localize(naive: datetime, zone: ZoneInfo) -> datetime:
    """The instant of a wall time; a skipped wall time maps to the first instant after the gap."""
    utc = naive.replace(tzinfo=zone, fold=0).astimezone(UTC)
    if utc.astimezone(zone).replace(tzinfo=None) == naive:
        return utc
    probe = naive.replace(second=0, microsecond=0)
    for _ in range(48 * 60):
        probe += timedelta(minutes=1)
        utc = probe.replace(tzinfo=zone, fold=0).astimezone(UTC)
        if utc.astimezone(zone).replace(tzinfo=None) == probe:
            return utc
    raise ValueError(f"no valid wall time after {naive} in {zone.key}")  # pragma: no cover
