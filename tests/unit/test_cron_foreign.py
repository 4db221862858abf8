"""A cron expression written for EventBridge Scheduler or Quartz is recognised, and the message
gives its Linux cron form (shared/domain/schedules.py, ``check_cron``).

The cases are the examples of the EventBridge Scheduler user guide's cron reference ("Schedule
types on EventBridge Scheduler", cron-based schedules: ``minutes hours day-of-month month
day-of-week year``, weekdays 1-7 = SUN-SAT, ``?`` in one day field) with the meaning the guide
gives each. The test takes the form the message suggests and checks, through Sundial's own
schedule evaluation, that it fires at exactly the times the guide describes, counted here by
brute force over two weeks of minutes."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from shared.domain.errors import ValidationFailed
from shared.domain.schedules import Cron, check_cron, upcoming

pytestmark = pytest.mark.unit

START = datetime(2026, 11, 30, tzinfo=UTC)  # a Monday
WEEKDAY = range(0, 5)  # datetime.weekday(): Monday 0 ... Friday 4


def minutes(predicate: Callable[[datetime], bool], days: int = 14) -> list[datetime]:
    span = (START + timedelta(minutes=step) for step in range(days * 24 * 60))
    return [instant for instant in span if predicate(instant)]


GUIDE = [
    ("0 10 * * ? *", lambda t: (t.hour, t.minute) == (10, 0)),
    ("15 12 * * ? *", lambda t: (t.hour, t.minute) == (12, 15)),
    ("0 18 ? * MON-FRI *", lambda t: (t.hour, t.minute) == (18, 0) and t.weekday() in WEEKDAY),
    ("0 8 1 * ? *", lambda t: (t.day, t.hour, t.minute) == (1, 8, 0)),
    ("0/15 * * * ? *", lambda t: t.minute % 15 == 0),
    ("0/10 * ? * MON-FRI *", lambda t: t.minute % 10 == 0 and t.weekday() in WEEKDAY),
    ("0/5 8-17 ? * MON-FRI *", lambda t: t.minute % 5 == 0 and 8 <= t.hour <= 17 and t.weekday() in WEEKDAY),
    # numbered weekdays count from 1 = Sunday: 2-6 is Monday to Friday
    ("30 7 ? * 2-6 *", lambda t: (t.hour, t.minute) == (7, 30) and t.weekday() in WEEKDAY),
    ("0 9 * * MON-FRI *", lambda t: (t.hour, t.minute) == (9, 0) and t.weekday() in WEEKDAY),  # no "?": pasted anyway
]


def refusal(expression: str) -> str:
    with pytest.raises(ValidationFailed) as caught:
        check_cron(expression)
    (detail,) = caught.value.details
    assert detail.field == "schedule.cron"
    return detail.message


@pytest.mark.parametrize(("expression", "described"), GUIDE, ids=[case[0] for case in GUIDE])
def test_an_eventbridge_expression_gets_its_linux_form(expression: str, described) -> None:
    message = refusal(expression)
    assert "EventBridge Scheduler" in message
    suggested = re.search(r"write '([^']+)'", message)
    assert suggested, message
    linux = suggested[1]
    check_cron(linux)
    expected = minutes(described)
    assert upcoming(Cron(linux, "UTC"), START - timedelta(milliseconds=1), len(expected) + 1)[:-1] == expected


def test_a_quartz_expression_with_a_year_gets_its_six_field_form() -> None:
    message = refusal("0 0 12 ? * MON-FRI *")
    assert "Quartz" in message
    assert "write '0 0 12 * * MON-FRI'" in message


def test_years_are_bounded_with_start_and_end() -> None:
    message = refusal("0 8 1 * ? 2027-2028")
    assert "write '0 8 1 * *'" in message
    assert "start and end" in message


def test_what_has_no_linux_form_says_so() -> None:
    message = refusal("15 10 ? * 6L 2027")  # the last Friday of every month in 2027
    assert "EventBridge Scheduler" in message
    assert "no Linux cron form" in message


@pytest.mark.parametrize(
    ("expression", "field", "text"),
    [("61 * * * *", "minute", "61"), ("* * * * 8", "day of week", "8"), ("0 61 * * * *", "minute", "61")],
)
def test_a_bad_field_is_named_in_the_callers_order(expression: str, field: str, text: str) -> None:
    """croniter's message echoes the fields reordered (seconds last); the message names the field
    as the caller wrote it, and never echoes a reordered expression."""
    message = refusal(expression)
    assert message.startswith(f"the {field} field '{text}' is not valid"), message
    assert "[" not in message
