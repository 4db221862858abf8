"""A flexible window (shared/domain/schedules.py, :class:`Flexible`): every occurrence fires at a
moment drawn in the window after it, the same whoever computes it, in the occurrences' order,
none passed over. The oracle is brute force: the inner schedule's occurrences listed one by one
and each one's drawn moment taken; ``at_or_after`` from any instant must be the first of those
at or after it. Instants are drawn with a fixed seed and a fresh one."""

from __future__ import annotations

import random
import secrets
from datetime import UTC, datetime, timedelta

import pytest

from shared.domain import schedules as sched
from shared.domain.codec import schedule_from_dict, schedule_to_dict
from shared.domain.schedules import EVENTBRIDGE, At, Cron, Every, Flexible

pytestmark = pytest.mark.unit

START = datetime(2027, 3, 1, 0, 0, tzinfo=UTC)


def occurrences(schedule: sched.Schedule, start: datetime, end: datetime) -> list[datetime]:
    found, cursor = [], sched.at_or_after(schedule, start)
    while cursor is not None and cursor < end:
        found.append(cursor)
        cursor = sched.next_after(schedule, cursor)
    return found


CASES = [
    Flexible(Every(300, START), 15 * 60, "arn:a"),  # window longer than the period: held before the next
    Flexible(Every(3600, START), 10 * 60, "arn:b"),
    Flexible(Cron("0/7 9-17 ? * MON-FRI *", "America/New_York", None, None, EVENTBRIDGE), 30 * 60, "arn:c"),
    Flexible(Cron("0 2 L * ? *", "Europe/Paris", None, None, EVENTBRIDGE), 1440 * 60, "arn:d"),
]


@pytest.mark.parametrize("flexible", CASES, ids=["every-5m-w15", "hourly-w10", "cron-7m-w30", "monthly-w1440"])
@pytest.mark.parametrize("seed", [7, None], ids=["seed-7", "fresh"])
def test_the_first_drawn_moment_from_any_instant_is_the_brute_force_one(flexible: Flexible, seed: int | None) -> None:
    # None: a fresh seed, drawn here (not at collection: pytest-xdist's workers must collect alike)
    seed = secrets.randbits(32) if seed is None else seed
    end = START + timedelta(days=70 if "L" in getattr(flexible.inner, "expression", "") else 2)
    nominals = occurrences(flexible.inner, START, end)
    drawn = [sched.at_or_after(flexible, n) for n in nominals]
    window = timedelta(seconds=flexible.window_s)
    for n, following, d in zip(nominals, [*nominals[1:], None], drawn, strict=True):
        assert d is not None
        assert n <= d < n + window, (n, d)
        assert following is None or d < following  # kept before the next occurrence
        assert d.microsecond == 0  # whole seconds after a whole-second occurrence
        assert sched.nominal(flexible, d) == n
    assert drawn == sorted(drawn)
    offsets = {d - n for d, n in zip(drawn, nominals, strict=True)}
    assert len(offsets) > min(len(nominals), 100) // 2  # drawn, not one fixed delay
    rng = random.Random(seed)
    last = drawn[-2]
    for _ in range(120):
        instant = START + timedelta(milliseconds=rng.randrange(int((last - START).total_seconds() * 1000)))
        expected = next(d for d in drawn if d >= instant)
        assert sched.at_or_after(flexible, instant) == expected, (instant, f"seed {seed}")
        assert sched.next_after(flexible, expected) == drawn[drawn.index(expected) + 1]


def test_a_one_shot_fires_in_its_window_and_two_seeds_draw_apart() -> None:
    at = datetime(2027, 3, 1, 9, 0, 0, tzinfo=UTC)
    moments = {sched.first_fire(Flexible(At(at), 600, f"arn:{i}"), START) for i in range(50)}
    assert all(at <= m < at + timedelta(minutes=10) for m in moments if m is not None)
    assert len(moments) > 40
    assert sched.upcoming(Flexible(At(at), 600, "arn:x"), at + timedelta(minutes=10), 3) == []


def test_the_window_survives_the_task_item_s_codec() -> None:
    flexible = Flexible(Cron("0 9 ? * 2#1 *", "Asia/Shanghai", START, None, EVENTBRIDGE), 900, "arn:z")
    assert schedule_from_dict(schedule_to_dict(flexible)) == flexible
    every = Flexible(Every(60, None, None, START), 120, "arn:e")
    assert schedule_from_dict(schedule_to_dict(every), START) == every
    assert sched.is_recurring(every)
    assert not sched.is_recurring(Flexible(At(START), 60, "arn:o"))
