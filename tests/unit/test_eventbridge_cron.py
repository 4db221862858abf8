"""EventBridge Scheduler's expressions (shared/domain/scheduler_api.py).

The oracle is pyawscron, an independent implementation of the service's cron dialect (a port of
aws-cron-parser): for several hundred random expressions of the documented grammar (``, - * /
?``, ``L``, ``nW``, ``nL``, ``n#k``, names, a year field), the next five times after a random
instant must be the same. It has gaps of its own (``L`` alone in day-of-week, a day of the month
past a month's end, an expression whose years run out): those cases are skipped and counted, and
most must be compared. Each run adds a fresh seed to the fixed ones (printed on failure), so the
comparison does not only find again what it found once.

Time zones and daylight-saving changes, which the oracle does not model, are checked against the
service's documented rule by hand: a wall time that does not exist is skipped, one that happens
twice fires once.
"""

from __future__ import annotations

import random
import time
from datetime import UTC, datetime, timedelta

import pytest

from shared.domain.errors import ValidationFailed
from shared.domain.scheduler_api import (
    AtExpression,
    CronExpression,
    RateExpression,
    cron_at_or_after,
    parse,
)

pytestmark = pytest.mark.unit


def upcoming(cron: CronExpression, timezone: str, after: datetime, count: int) -> list[datetime]:
    """Up to ``count`` times of ``cron`` strictly after ``after``, found one after the other as the
    service finds each occurrence's (``cron_at_or_after``)."""
    times: list[datetime] = []
    cursor = after + timedelta(milliseconds=1)
    while len(times) < count:
        found = cron_at_or_after(cron, timezone, cursor)
        if found is None:
            break
        times.append(found)
        cursor = found + timedelta(milliseconds=1)
    return times


pyawscron = pytest.importorskip("pyawscron")


def _field(r: random.Random, low: int, high: int) -> str:
    k = r.random()
    if k < 0.25:
        return "*"
    if k < 0.45:
        return str(r.randint(low, high))
    if k < 0.6:
        a = r.randint(low, high)
        return f"{a}-{r.randint(a, high)}"
    if k < 0.75:
        return f"{r.randint(low, high)}/{r.randint(1, max(1, (high - low) // 2))}"
    if k < 0.85:
        return f"*/{r.randint(1, max(1, (high - low) // 2))}"
    return ",".join(sorted({str(r.randint(low, high)) for _ in range(r.randint(2, 4))}, key=int))


def _expression(r: random.Random) -> str:
    minutes, hours, months = _field(r, 0, 59), _field(r, 0, 23), _field(r, 1, 12)
    if r.random() < 0.2:
        months = r.choice(["JAN", "FEB-MAY", "MAR,SEP,DEC", "jun-aug"])
    year = r.choice(
        ["*", "*", f"{r.randint(2026, 2030)}-{r.randint(2031, 2040)}", str(r.randint(2026, 2032)), "2026/2"]
    )
    if r.random() < 0.5:
        k = r.random()
        dom = "L" if k < 0.15 else f"{r.randint(1, 28)}W" if k < 0.3 else _field(r, 1, 28)
        dow = "?"
    else:
        dom, k = "?", r.random()
        if k < 0.15:
            dow = f"{r.randint(1, 7)}L"
        elif k < 0.3:
            dow = f"{r.randint(1, 7)}#{r.randint(1, 5)}"
        elif k < 0.4:
            dow = r.choice(["MON-FRI", "SUN,SAT", "TUE", "wed-fri"])
        else:
            dow = _field(r, 1, 7)
    return f"{minutes} {hours} {dom} {months} {dow} {year}"


def _oracle(expression: str, after: datetime, count: int) -> list[datetime] | None:
    try:
        found = pyawscron.AWSCron.get_next_n_schedule(count, after, expression)
    except Exception:  # the oracle's own gaps: the case is skipped, and counted
        return None
    times = []
    for moment in found:
        if moment is None:
            break
        times.append(moment.astimezone(UTC))
    return times


@pytest.mark.parametrize("seed", [1, 2, 3, None])
def test_next_times_agree_with_an_independent_implementation(seed: int | None) -> None:
    """``None``: a fresh seed, drawn here (not at collection: pytest-xdist's workers must collect
    the same tests) and named in any failure."""
    seed = time.time_ns() % 1_000_000 if seed is None else seed
    r = random.Random(seed)
    compared = skipped = 0
    for _ in range(250):
        expression = _expression(r)
        after = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(minutes=r.randint(0, 60 * 24 * 365 * 2))
        theirs = _oracle(expression, after, 5)
        if theirs is None:
            skipped += 1
            continue
        ours = upcoming(parse(f"cron({expression})"), "UTC", after, 5)
        assert ours == theirs, f"seed {seed}: cron({expression}) after {after.isoformat()}"
        compared += 1
    assert compared >= 200, f"seed {seed}: only {compared} compared ({skipped} beyond the oracle)"


def _first(expression: str, zone: str, after: str) -> list[str]:
    cron = parse(expression)
    assert not isinstance(cron, AtExpression | RateExpression)
    return [t.isoformat() for t in upcoming(cron, zone, datetime.fromisoformat(after), 3)]


def test_a_wall_time_the_spring_change_skips_does_not_fire() -> None:
    # New York, 8 March 2026: 02:00 EST jumps to 03:00 EDT; 02:30 that day does not exist
    # (`after` is 07:00 EST on the 7th: that day's 02:30 has passed, the 8th has none)
    assert _first("cron(30 2 * * ? *)", "America/New_York", "2026-03-07T12:00:00+00:00") == [
        "2026-03-09T06:30:00+00:00",
        "2026-03-10T06:30:00+00:00",
        "2026-03-11T06:30:00+00:00",
    ]


def test_a_wall_time_the_autumn_change_repeats_fires_once() -> None:
    # New York, 1 November 2026: 02:00 EDT goes back to 01:00 EST; 01:30 happens twice
    assert _first("cron(30 1 * * ? *)", "America/New_York", "2026-11-01T00:00:00+00:00") == [
        "2026-11-01T05:30:00+00:00",  # 01:30 EDT, the first of the two
        "2026-11-02T06:30:00+00:00",
        "2026-11-03T06:30:00+00:00",
    ]


def test_hourly_across_the_changes_in_a_time_zone() -> None:
    times = _first("cron(0 * * * ? *)", "America/New_York", "2026-03-08T05:30:00+00:00")
    # 01:00 EST, then 03:00 EDT (02:00 does not exist): an hour apart on the UTC line
    assert times == ["2026-03-08T06:00:00+00:00", "2026-03-08T07:00:00+00:00", "2026-03-08T08:00:00+00:00"]
    times = _first("cron(0 * * * ? *)", "America/New_York", "2026-11-01T04:30:00+00:00")
    # 00:00 EDT, 01:00 EDT, then 02:00 EST: the repeated 01:00 EST fires no second time
    assert times == ["2026-11-01T05:00:00+00:00", "2026-11-01T07:00:00+00:00", "2026-11-01T08:00:00+00:00"]


def test_shanghai_workdays_at_nine() -> None:
    assert _first("cron(0 9 ? * MON-FRI *)", "Asia/Shanghai", "2026-11-27T02:00:00+00:00") == [
        "2026-11-30T01:00:00+00:00",  # Friday 27th 09:00 CST was 01:00 UTC, before `after`: Monday
        "2026-12-01T01:00:00+00:00",
        "2026-12-02T01:00:00+00:00",
    ]


def test_an_end_and_years_that_run_out() -> None:
    cron = parse("cron(0 12 1 JAN ? 2026-2027)")
    assert not isinstance(cron, AtExpression | RateExpression)
    after = datetime(2026, 6, 1, tzinfo=UTC)
    assert cron_at_or_after(cron, "UTC", after) == datetime(2027, 1, 1, 12, tzinfo=UTC)
    assert cron_at_or_after(cron, "UTC", after, end=datetime(2026, 12, 31, tzinfo=UTC)) is None
    assert cron_at_or_after(cron, "UTC", datetime(2027, 1, 2, tzinfo=UTC)) is None


def test_the_other_two_kinds() -> None:
    assert parse("at(2026-12-24T18:30:00)") == AtExpression(datetime(2026, 12, 24, 18, 30))
    assert parse("rate(5 minutes)") == RateExpression(5, "minutes")
    assert parse("rate(1 day)").seconds == 86400  # type: ignore[union-attr]
    assert parse("rate(2 hours)").seconds == 7200  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("every 5 minutes", "is not at(...), rate(...) or cron(...)"),
        (" rate(2 hours) ", "spaces before or after"),  # refused by AWS (tests/data/aws/scheduler-invalid-*)
        ("rate( 2 hours )", "no spaces inside"),
        ("at(2026-12-24 18:30)", "at(yyyy-mm-ddThh:mm:ss)"),
        ("rate(0 minutes)", "positive"),
        ("rate(5 seconds)", "rate(value unit)"),
        ("rate(1 minutes)", "singular"),
        ("rate(5 minute)", "singular"),
        ("cron(0 9 * * *)", "six fields"),
        ("cron(0 9 * * * *)", "must be ?"),
        ("cron(0 9 ? * ? *)", "must be ?"),
        ("cron(60 9 * * ? *)", "'60' is not a minutes value"),
        ("cron(0 9 ? * 0 *)", "'0' is not a day-of-week value (1-7)"),
        ("cron(0 9 * * ? 2200)", "year value (1970-2199)"),
        ("cron(0 9 5-1 * ? *)", "runs backwards"),
        ("cron(0 9 L-2,3 * ? *)", "L and W stand alone"),
        ("cron(0 9 ? * 2#1,3#2 *)", "# stands alone"),
        ("cron(0 9 ? * 2#6 *)", "# stands alone"),
        ("cron(0 9 32W * ? *)", "W follows one day"),
        ("cron(*/0 9 * * ? *)", "not a positive number"),
        ("cron(0 9 ? * MON,L *)", "L stands alone"),
    ],
)
def test_refusals_name_the_expression_and_say_why(text: str, says: str) -> None:
    with pytest.raises(ValidationFailed) as refused:
        parse(text)
    assert [error.field for error in refused.value.details] == ["ScheduleExpression"]
    assert says in str(refused.value), str(refused.value)


def test_an_input_gets_the_occurrence_s_context_attributes() -> None:
    from shared.domain.scheduler_api import delivered_input

    template = (
        '{"at": "<aws.scheduler.scheduled-time>", "id": "<aws.scheduler.execution-id>", '
        '"n": <aws.scheduler.attempt-number>, "arn": "<aws.scheduler.schedule-arn>", "keep": "<aws.other>"}'
    )
    sent = delivered_input(
        template,
        schedule_arn="arn:aws:scheduler:us-east-1:123456789012:schedule/default/s",
        scheduled_for=datetime(2027, 1, 4, 9, 0, 0, 250000, tzinfo=UTC),
        execution_id="01RUN",
        attempt=2,
    )
    assert sent == (
        '{"at": "2027-01-04T09:00:00Z", "id": "01RUN", "n": 2, '
        '"arn": "arn:aws:scheduler:us-east-1:123456789012:schedule/default/s", "keep": "<aws.other>"}'
    )
    assert delivered_input(None, schedule_arn="a", scheduled_for=datetime.now(UTC), execution_id="r", attempt=1) == "{}"
