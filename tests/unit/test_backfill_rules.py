"""The pure rules of backfill (shared/domain/backfills.py): the window, the occurrences in it and
their bound, the pace, which occurrences are left out and why, the runs' ids."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from shared.domain.backfills import (
    MAX_AGE,
    MAX_OCCURRENCES,
    Backfill,
    BackfillStatus,
    LeftOut,
    Progress,
    check_window,
    fire_times,
    item_id,
    left_out,
    occurrences,
)
from shared.domain.errors import ValidationFailed
from shared.domain.ids import parse_task_id
from shared.domain.schedules import Cron, Every
from shared.domain.times import to_ms

pytestmark = pytest.mark.unit

NOW = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("start", "end", "field"),
    [
        (NOW - timedelta(hours=1), NOW + timedelta(seconds=1), "to"),
        (NOW - timedelta(hours=1), NOW - timedelta(hours=1), "to"),
        (NOW - timedelta(hours=1), NOW - timedelta(hours=2), "to"),
        (NOW - MAX_AGE - timedelta(milliseconds=1), NOW, "from"),
    ],
)
def test_a_window_not_in_the_past_or_empty_or_too_old_is_refused_naming_the_member(start, end, field) -> None:
    with pytest.raises(ValidationFailed) as refused:
        check_window(start, end, NOW)
    assert refused.value.details[0].field == field


def test_a_window_up_to_now_and_as_old_as_allowed_is_taken() -> None:
    check_window(NOW - MAX_AGE, NOW, NOW)


def test_the_occurrences_are_the_schedules_in_the_half_open_window_oldest_first() -> None:
    hourly = Cron("0 * * * *")
    found = occurrences(hourly, NOW - timedelta(hours=3), NOW)
    assert found == [NOW - timedelta(hours=3), NOW - timedelta(hours=2), NOW - timedelta(hours=1)]
    assert occurrences(hourly, NOW - timedelta(minutes=59), NOW) == []


def test_more_occurrences_than_a_backfill_fires_are_refused_with_where_a_first_part_ends() -> None:
    every_second = Every(1, start=NOW - timedelta(hours=1))
    assert len(occurrences(every_second, NOW - timedelta(seconds=MAX_OCCURRENCES), NOW)) == MAX_OCCURRENCES
    with pytest.raises(ValidationFailed) as refused:
        occurrences(every_second, NOW - timedelta(seconds=MAX_OCCURRENCES + 1), NOW)
    detail = refused.value.details[0]
    assert detail.field == "to"
    assert "a part to 2026-03-10T11:59:58.001Z" in detail.message  # the first is 11:43:19, the 1000th 999 s on


@pytest.mark.parametrize("per_second", [0.01, 0.5, 1, 2, 3, 7, 100])
def test_the_pace_puts_no_more_than_per_second_runs_in_any_second(per_second: float) -> None:
    times = fire_times(1_000_000, 300, per_second)
    assert times[0] == 1_000_000
    assert times == sorted(times)
    n = max(1, int(per_second))
    for i in range(len(times) - n):
        assert times[i + n] - times[i] >= 1000 * n / per_second - 1  # n in a row span at least n/per_second s
    window = [t for t in times if times[0] <= t < times[0] + 1000]
    assert len(window) <= max(1, per_second)


def test_occurrences_left_out_say_why_and_the_rest_are_taken() -> None:
    times = [NOW - timedelta(minutes=m) for m in (5, 4, 3, 2, 1)]
    out = left_out(
        times,
        armed=NOW - timedelta(minutes=1),  # the task is behind: armed for a minute ago
        firing=NOW - timedelta(minutes=2),
        fired={to_ms(times[0])},
        taken={to_ms(times[1])},
    )
    assert out == {
        to_ms(times[0]): LeftOut.FIRED,
        to_ms(times[1]): LeftOut.BACKFILLED,
        to_ms(times[3]): LeftOut.TASK,
        to_ms(times[4]): LeftOut.TASK,
    }
    assert left_out(times, armed=None, firing=None, fired=set(), taken=set()) == {}


def test_a_runs_id_lives_in_its_fire_minute_and_is_the_same_for_the_same_backfill_and_occurrence() -> None:
    fire = to_ms(NOW + timedelta(minutes=3))
    made = item_id("01JBACKFILL0000000000000000", to_ms(NOW - timedelta(hours=1)), fire, 16)
    assert parse_task_id(made).due_ms == fire
    assert parse_task_id(made).shard < 16
    assert made == item_id("01JBACKFILL0000000000000000", to_ms(NOW - timedelta(hours=1)), fire, 16)
    assert made != item_id("01JBACKFILL0000000000000001", to_ms(NOW - timedelta(hours=1)), fire, 16)


def test_a_backfill_is_running_until_its_runs_ended_and_cancelled_once_cancelled() -> None:
    backfill = Backfill("b", "t", "task", NOW, NOW, 1, NOW, 3)
    assert backfill.status() is BackfillStatus.RUNNING
    assert (
        Backfill("b", "t", "task", NOW, NOW, 1, NOW, 3, progress=Progress(firing=1)).status() is BackfillStatus.RUNNING
    )
    assert (
        Backfill("b", "t", "task", NOW, NOW, 1, NOW, 3, progress=Progress(succeeded=3)).status() is BackfillStatus.DONE
    )
    cancelled = Backfill("b", "t", "task", NOW, NOW, 1, NOW, 3, cancelled_at=NOW, progress=Progress(waiting=2))
    assert cancelled.status() is BackfillStatus.CANCELLED
