"""Cron day fields read as Linux (Vixie) cron reads them (shared/domain/schedules.py).

Vixie cron -- the cron of Debian, Ubuntu and (as cronie) RHEL -- sets a flag for a day field whose
text starts with ``*`` (``DOM_STAR``, ``DOW_STAR`` in entry.c's ``load_entry``) and matches a day
in ``find_jobs`` with::

    ((e->flags & DOM_STAR) || (e->flags & DOW_STAR))
        ? (bit_test(e->dow, dow) && bit_test(e->dom, dom))
        : (bit_test(e->dow, dow) || bit_test(e->dom, dom))

so ``*/5`` in one day field ANDs it with the other, and only two restricted fields are ORed.
The hand-written cases state their expected times, derived by hand from the 2026 calendar (Jan 1
2026 is a Thursday). The random cases compare Sundial with a brute-force matcher written here
from that grammar and rule, independent of croniter.
"""

from __future__ import annotations

import random
from datetime import UTC, date, datetime, timedelta

import pytest

from shared.domain.errors import ValidationFailed
from shared.domain.schedules import Cron, check_cron, day_fields_ored, next_after, upcoming

pytestmark = pytest.mark.unit

NEW_YEAR = datetime(2026, 1, 1, tzinfo=UTC)  # a Thursday


def utc(text: str) -> datetime:
    """``MM-DD HH:MM[:SS]`` in 2026, or a full ISO time, as a UTC instant."""
    if text[2] == "-":
        text = f"2026-{text}"
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def fires(expression: str, count: int, after: datetime = NEW_YEAR, zone: str = "UTC") -> list[datetime]:
    return upcoming(Cron(expression, zone), after, count)


# --------------------------------------------------------------------------------------------
# Hand-written cases
# --------------------------------------------------------------------------------------------

HAND_CASES = [
    pytest.param(
        # crontab(5), on the day fields: "30 4 1,15 * 5" runs at 4:30 am on the 1st and 15th of
        # each month, plus every Friday. Both fields restricted: ORed. Jan 1 and 15 are
        # Thursdays; the Fridays are Jan 2, 9, 16, 23, 30; then Sunday Feb 1.
        "30 4 1,15 * 5",
        ["01-01 04:30", "01-02 04:30", "01-09 04:30", "01-15 04:30", "01-16 04:30", "01-23 04:30",
         "01-30 04:30", "02-01 04:30"],
        id="crontab5-1st-15th-plus-fridays",
    ),
    pytest.param(
        # Debian's crontab(5) runs a job on the second Saturday with "0 4 8-14 * *" and a `date`
        # test, because "0 4 8-14 * 6" would be ORed: days 8 to 14 plus every Saturday.
        "0 4 8-14 * 6",
        ["01-03 04:00", "01-08 04:00", "01-09 04:00", "01-10 04:00", "01-11 04:00", "01-12 04:00",
         "01-13 04:00", "01-14 04:00", "01-17 04:00", "01-24 04:00", "01-31 04:00", "02-07 04:00",
         "02-08 04:00"],
        id="debian-8-14-or-saturday",
    ),
    pytest.param(
        # "*/7" in the day of week starts with '*': ANDed, so days 8-14 that are Sundays (0 and 7
        # are both Sunday): the second Sunday. Jan 11; Feb 1 and Mar 1 are Sundays, so Feb 8 and
        # Mar 8; Apr 1 is a Wednesday (Apr 12); May 1 a Friday (May 10).
        "0 4 8-14 * */7",
        ["01-11 04:00", "02-08 04:00", "03-08 04:00", "04-12 04:00", "05-10 04:00"],
        id="second-sunday-and",
    ),
    pytest.param(
        # "*/5" is days 1, 6, 11, 16, 21, 26, 31 and starts with '*': ANDed with Monday. The
        # Mondays of 2026 on those days: Jan 26, Feb 16, Mar 16, Apr 6, May 11, Jun 1.
        # (ORed, as croniter reads it, the first would be Jan 5, a Monday.)
        "0 0 */5 * 1",
        ["01-26 00:00", "02-16 00:00", "03-16 00:00", "04-06 00:00", "05-11 00:00", "06-01 00:00"],
        id="every-5th-day-and-monday",
    ),
    pytest.param(
        # The same with seconds first.
        "15 0 0 */5 * 1",
        ["01-26 00:00:15", "02-16 00:00:15", "03-16 00:00:15", "04-06 00:00:15"],
        id="every-5th-day-and-monday-with-seconds",
    ),
    pytest.param(
        # "*/2" in the day of week (Sun, Tue, Thu, Sat) ANDed with the 1st: the 1sts of 2026
        # after Jan 1 fall on Sun (Feb), Sun (Mar), Wed, Fri, Mon, Wed, Sat (Aug), Tue (Sep),
        # Thu (Oct), Sun (Nov), Tue (Dec). (ORed it would fire on Sat Jan 3.)
        "0 0 1 * */2",
        ["02-01 00:00", "03-01 00:00", "08-01 00:00", "09-01 00:00", "10-01 00:00", "11-01 00:00",
         "12-01 00:00"],
        id="first-and-every-other-weekday",
    ),
    pytest.param(
        # Both fields start with '*': ANDed, which is the day of month alone.
        "0 0 */5 * *",
        ["01-06 00:00", "01-11 00:00", "01-16 00:00", "01-21 00:00", "01-26 00:00", "01-31 00:00",
         "02-01 00:00", "02-06 00:00"],
        id="every-5th-day",
    ),
    pytest.param(
        "0 0 * * 1",  # Mondays
        ["01-05 00:00", "01-12 00:00", "01-19 00:00", "01-26 00:00", "02-02 00:00"],
        id="mondays",
    ),
    pytest.param(
        # Names and 7 for Sunday; restricted both: the 1st of Jan-Mar or their Sundays.
        "0 0 1 JAN-MAR 7",
        ["01-04 00:00", "01-11 00:00", "01-18 00:00", "01-25 00:00", "02-01 00:00", "02-08 00:00",
         "02-15 00:00", "02-22 00:00", "03-01 00:00", "03-08 00:00", "03-15 00:00", "03-22 00:00",
         "03-29 00:00", "2027-01-01 00:00"],
        id="names-and-sunday-7",
    ),
    pytest.param(
        # "1-31" does not start with '*': ORed with Monday, which is every day.
        "0 0 1-31 * mon",
        ["01-02 00:00", "01-03 00:00", "01-04 00:00", "01-05 00:00"],
        id="all-days-or-monday",
    ),
    pytest.param(
        # A '*' later in a list does not make the field unrestricted: "1,*/2" (Sun, Mon, Tue,
        # Thu, Sat) ORed with days 1-31 is every day.
        "0 0 1-31 * 1,*/2",
        ["01-02 00:00", "01-03 00:00", "01-04 00:00", "01-05 00:00"],
        id="star-later-in-the-list",
    ),
    pytest.param(
        # "?" (no specific value) leaves its field unrestricted, like '*'.
        "0 0 ? * MON",
        ["01-05 00:00", "01-12 00:00"],
        id="question-mark-dom",
    ),
    pytest.param(
        "0 0 15 * ?",
        ["01-15 00:00", "02-15 00:00"],
        id="question-mark-dow",
    ),
    pytest.param(
        # A range whose ends are one value is that value, as cron reads it.
        "5-5 9-9 * * 1-1",
        ["01-05 09:05", "01-12 09:05"],
        id="one-value-ranges",
    ),
    pytest.param(
        "0 0 1 jun-jun sun-sun/2",  # ORed: June 1st and June's Sundays (Jun 1 is a Monday)
        ["06-01 00:00", "06-07 00:00", "06-14 00:00", "06-21 00:00", "06-28 00:00",
         "2027-06-01 00:00"],
        id="one-value-name-ranges",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("expression", "expected"), HAND_CASES)
def test_vixie_day_rule_by_hand(expression: str, expected: list[str]) -> None:
    check_cron(expression)
    assert fires(expression, len(expected)) == [utc(text) for text in expected]


def test_and_keeps_the_dst_rules() -> None:
    # Sundays that are the 8th at 02:30 in New York: Feb 8, Mar 8 and Nov 8 2026 (the other 8ths
    # are weekdays or Saturdays). Mar 8 is the spring-forward day: 02:30 does not exist and the
    # fire comes at the end of the gap, 03:00 EDT.
    assert fires("30 2 8 * */7", 3, zone="America/New_York") == [
        utc("2026-02-08T07:30"),  # EST
        utc("2026-03-08T07:00"),  # 03:00 EDT
        utc("2026-11-08T07:30"),  # EST again
    ]


@pytest.mark.parametrize(
    ("expression", "ored"),
    [
        ("30 4 1,15 * 5", True),
        ("0 0 */5 * 1", False),
        ("0 0 1 * */2", False),
        ("0 0 * * 1", False),
        ("0 0 1 * *", False),
        ("0 0 ? * 1", False),
        ("0 0 1-31 * 1,*/2", True),
        ("0 0 0 1 * 5", True),  # with seconds
        ("0 0 0 */2 * 5", False),
        ("0 0 L * 5", True),
    ],
)
def test_day_fields_are_ored_only_when_neither_starts_with_a_star(expression: str, ored: bool) -> None:
    assert day_fields_ored(expression) is ored


def test_the_re_arm_after_a_fire_follows_the_rule() -> None:
    fire = utc("01-26 00:00")
    assert next_after(Cron("0 0 */5 * 1"), fire) == utc("02-16 00:00")


def test_invalid_expressions_are_still_rejected() -> None:
    for expression in ["0 0 32 * 1", "0 0 */5 * 8", "0 0 * * mon-", "0 0 1 ? *", "0 0 */0 * 1"]:
        with pytest.raises(ValidationFailed):
            check_cron(expression)


# --------------------------------------------------------------------------------------------
# Random expressions against a brute-force Vixie matcher
# --------------------------------------------------------------------------------------------

MONTH_NAMES = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
DAY_NAMES = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]
# (first, last, names) as in Vixie's cron.h: the day of week runs 0-7, both ends Sunday.
SECOND = (0, 59, None)
MINUTE = (0, 59, None)
HOUR = (0, 23, None)
DOM = (1, 31, None)
MONTH = (1, 12, MONTH_NAMES)
DOW = (0, 7, DAY_NAMES)


def oracle_values(text: str, first: int, last: int, names: list[str] | None) -> set[int]:
    """The values a field stands for, by Vixie's grammar: a list of ``*``, ``n`` or ``a-b``,
    each range (``*`` included) optionally stepped by ``/s``; names count from ``first``."""

    def number(token: str) -> int:
        if token.isdigit():
            return int(token)
        assert names is not None
        return names.index(token.lower()) + first

    values: set[int] = set()
    for item in text.split(","):
        body, _, step = item.partition("/")
        if body == "*":
            low, high = first, last
        elif "-" in body:
            low_text, high_text = body.split("-")
            low, high = number(low_text), number(high_text)
        else:
            low = high = number(body)
        values.update(range(low, high + 1, int(step) if step else 1))
    assert all(first <= value <= last for value in values), text
    return values


class Oracle:
    def __init__(self, expression: str) -> None:
        fields = expression.split()
        self.seconds = sorted(oracle_values(fields[0], *SECOND)) if len(fields) == 6 else [0]
        minute, hour, dom, month, dow = fields[-5:]
        self.minutes = sorted(oracle_values(minute, *MINUTE))
        self.hours = sorted(oracle_values(hour, *HOUR))
        self.doms = oracle_values(dom, *DOM)
        self.months = oracle_values(month, *MONTH)
        self.dows = {value % 7 for value in oracle_values(dow, *DOW)}  # 7 is Sunday too
        self.either_star = dom.startswith("*") or dow.startswith("*")

    def day_matches(self, day: date) -> bool:
        if day.month not in self.months:
            return False
        in_dom = day.day in self.doms
        in_dow = day.isoweekday() % 7 in self.dows
        return (in_dom and in_dow) if self.either_star else (in_dom or in_dow)

    def fires(self, after: datetime, until: datetime, count: int) -> list[datetime]:
        """Up to ``count`` matching UTC times in ``(after, until]``, walking the days and, in
        each matching day, its hours, minutes and seconds in order."""
        found: list[datetime] = []
        day = after.date()
        while day <= until.date() and len(found) < count:
            if self.day_matches(day):
                for hour in self.hours:
                    for minute in self.minutes:
                        for second in self.seconds:
                            moment = datetime(day.year, day.month, day.day, hour, minute, second, tzinfo=UTC)
                            if after < moment <= until and len(found) < count:
                                found.append(moment)
            day += timedelta(days=1)
        return found


def random_item(rng: random.Random, first: int, last: int, names: list[str] | None) -> str:
    """One list item of a field, valid for Vixie cron: ``*``, ``*/s``, ``n``, ``a-b``, ``a-b/s``
    (sometimes an equal range ``a-a``), with names in any case where the field has them."""

    def spell(value: int) -> str:
        if names and value - first < len(names) and rng.random() < 0.3:
            name = names[value - first]
            return rng.choice([name, name.upper(), name.capitalize()])
        return str(value)

    kind = rng.choice(["star-step", "number", "number", "range", "range-step", "equal-range"])
    if kind == "star-step":
        return f"*/{rng.randint(1, last - first + 2)}"
    if kind == "number":
        return spell(rng.randint(first, last))
    low = rng.randint(first, last)
    high = low if kind == "equal-range" else rng.randint(low, last)
    text = f"{spell(low)}-{spell(high)}"
    if kind == "range-step" or (kind == "equal-range" and rng.random() < 0.3):
        text += f"/{rng.randint(1, max(1, high - low + 1))}"
    return text


def random_field(rng: random.Random, spec: tuple[int, int, list[str] | None], star: float) -> str:
    first, last, names = spec
    if rng.random() < star:
        return "*"
    items = [random_item(rng, first, last, names) for _ in range(rng.choice([1, 1, 1, 2, 3]))]
    if len(items) > 1 and rng.random() < 0.1:
        items[-1] = f"*/{rng.randint(2, 5)}"  # a '*' later in a list: the field stays restricted
    return ",".join(items)


def random_expression(rng: random.Random) -> str:
    # Hours and minutes are often narrow so that fires spread over days and the day rule decides.
    fields = [
        rng.choice([str(rng.randint(0, 59)), random_field(rng, MINUTE, 0.05)]),
        rng.choice([str(rng.randint(0, 23)), random_field(rng, HOUR, 0.2)]),
        random_field(rng, DOM, 0.3),
        random_field(rng, MONTH, 0.6),
        random_field(rng, DOW, 0.3),
    ]
    if rng.random() < 0.15:
        fields.insert(0, rng.choice(["0", "30", "*/20", random_field(rng, SECOND, 0.0)]))
    return " ".join(fields)


RANDOM_EXPRESSIONS = 400
FIRES_EACH = 12
WINDOW = timedelta(days=400)  # long enough for schedules that fire a few times a year or less


def test_random_expressions_fire_as_vixie_cron_would() -> None:
    rng = random.Random(20260101)
    start_low, start_high = datetime(2024, 1, 1, tzinfo=UTC), datetime(2030, 1, 1, tzinfo=UTC)
    kinds = {"ored": 0, "anded-restricted": 0}
    for _ in range(RANDOM_EXPRESSIONS):
        expression = random_expression(rng)
        check_cron(expression)
        after = start_low + timedelta(milliseconds=rng.randrange(int((start_high - start_low).total_seconds() * 1000)))
        if rng.random() < 0.5:
            after = after.replace(second=0, microsecond=0)
        until = after + WINDOW
        oracle = Oracle(expression)
        expected = oracle.fires(after, until, FIRES_EACH)

        actual = upcoming(Cron(expression), after, FIRES_EACH)

        assert actual[: len(expected)] == expected, expression
        if len(expected) < FIRES_EACH:  # the oracle found no more in the window: neither may Sundial
            assert all(fire > until for fire in actual[len(expected) :]), expression
        dom, dow = expression.split()[-3], expression.split()[-1]
        if not oracle.either_star:
            kinds["ored"] += 1
        elif dom != "*" and dow != "*":
            kinds["anded-restricted"] += 1  # e.g. "*/5" with "1": what croniter alone ORs
    # The draw covers both sides of the rule, and many cases where it matters.
    assert kinds["ored"] > 40, kinds
    assert kinds["anded-restricted"] > 40, kinds
