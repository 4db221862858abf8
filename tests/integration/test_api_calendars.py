"""Calendar rules and schedule previews through the API handler (docs/api.md "Tasks",
docs/management.md): every answer here was checked by hand against a calendar."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from shared.domain.times import iso

pytestmark = pytest.mark.integration


def preview(api, schedule, count=5, after=None, notes: tuple[str, ...] | list[str] | None = ()):
    """The previewed times; ``notes``: words each note must hold (``None``: not checked)."""
    body = {"schedule": schedule, "count": count, **({"after": after} if after else {})}
    answer = api("POST", "/v1/schedules:preview", body)
    assert answer.status == 200, answer.body
    if notes is not None:
        assert len(answer.body["notes"]) == len(notes)
        for note, words in zip(answer.body["notes"], notes, strict=True):
            assert words in note
    return answer.body["times"]


def test_a_month_rule_skips_the_days_a_month_lacks(api):
    rule = {"repeat": {"level": "month", "days": [29, 30, 31], "time": "10:00", "start": "2027-01-01T00:00:00Z"}}
    assert preview(api, rule, 8, after="2027-01-01T00:00:00Z") == [
        "2027-01-29T10:00:00.000Z",
        "2027-01-30T10:00:00.000Z",
        "2027-01-31T10:00:00.000Z",
        # February 2027 has 28 days: none of the three
        "2027-03-29T10:00:00.000Z",
        "2027-03-30T10:00:00.000Z",
        "2027-03-31T10:00:00.000Z",
        "2027-04-29T10:00:00.000Z",
        "2027-04-30T10:00:00.000Z",  # April has no 31st
    ]


def test_every_second_month_on_the_3rd_5th_and_23rd_counts_from_the_start_month(api):
    rule = {
        "repeat": {
            "level": "month",
            "interval": 2,
            "days": [3, 5, 23],
            "time": "09:30",
            "timezone": "Asia/Shanghai",
            "start": "2027-01-10T00:00:00+08:00",
        }
    }
    assert preview(api, rule, 5, after="2027-01-01T00:00:00Z") == [
        "2027-01-23T01:30:00.000Z",  # the 3rd and 5th of January are before start
        "2027-03-03T01:30:00.000Z",
        "2027-03-05T01:30:00.000Z",
        "2027-03-23T01:30:00.000Z",
        "2027-05-03T01:30:00.000Z",
    ]


def test_a_workday_rule_follows_chinas_published_2025_spring_festival_calendar(api):
    """State Council notice for 2025: 28 January to 4 February off; Sunday 26 January and
    Saturday 8 February are working days."""
    rule = {
        "repeat": {
            "level": "workday",
            "calendar": "CN",
            "time": "09:00",
            "timezone": "Asia/Shanghai",
            "start": "2025-01-24T00:00:00+08:00",
        }
    }
    assert preview(api, rule, 7, after="2025-01-24T00:00:00+08:00") == [
        "2025-01-24T01:00:00.000Z",  # Friday
        "2025-01-26T01:00:00.000Z",  # Sunday, a working day
        "2025-01-27T01:00:00.000Z",  # Monday; then the holiday
        "2025-02-05T01:00:00.000Z",
        "2025-02-06T01:00:00.000Z",
        "2025-02-07T01:00:00.000Z",
        "2025-02-08T01:00:00.000Z",  # Saturday, a working day
    ]


def test_a_workday_rule_in_a_year_china_has_not_published_says_so(api):
    rule = {"repeat": {"level": "workday", "calendar": "CN", "time": "09:00", "timezone": "Asia/Shanghai",
                       "start": "2027-01-04T00:00:00+08:00"}}  # fmt: skip
    times = preview(api, rule, 3, after="2027-01-04T00:00:00Z", notes=["official schedule up to 2026"])
    assert times == ["2027-01-04T01:00:00.000Z", "2027-01-05T01:00:00.000Z", "2027-01-06T01:00:00.000Z"]


def test_every_second_workday_across_us_thanksgiving(api):
    rule = {
        "repeat": {
            "level": "workday",
            "interval": 2,
            "calendar": "US",
            "time": "12:00",
            "start": "2026-11-23T00:00:00Z",
        }
    }
    # Workdays: Mon 23, Tue 24, Wed 25, (Thu 26 Thanksgiving), Fri 27, Mon 30, Tue 1 Dec
    assert preview(api, rule, 3, after="2026-11-23T00:00:00Z") == [
        "2026-11-23T12:00:00.000Z",
        "2026-11-25T12:00:00.000Z",
        "2026-11-30T12:00:00.000Z",
    ]


def test_week_day_hour_and_year_rules(api):
    week = {
        "repeat": {"level": "week", "interval": 2, "days": [1, 3], "time": "08:00", "start": "2026-12-02T00:00:00Z"}
    }  # a Wednesday
    assert preview(api, week, 4, after="2026-12-01T00:00:00Z") == [
        "2026-12-02T08:00:00.000Z",
        "2026-12-14T08:00:00.000Z",
        "2026-12-16T08:00:00.000Z",
        "2026-12-28T08:00:00.000Z",
    ]
    day = {"repeat": {"level": "day", "interval": 3, "start": "2026-12-30T22:15:00Z"}}
    assert preview(api, day, 3, after="2026-12-30T00:00:00Z") == [
        "2026-12-30T22:15:00.000Z",
        "2027-01-02T22:15:00.000Z",
        "2027-01-05T22:15:00.000Z",
    ]
    hour = {"repeat": {"level": "hour", "interval": 5, "start": "2027-03-28T00:45:00Z", "timezone": "Europe/Berlin"}}
    assert preview(api, hour, 3, after="2027-03-28T00:00:00Z") == [
        "2027-03-28T00:45:00.000Z",
        "2027-03-28T05:45:00.000Z",  # across the clocks going forward: still five hours apart
        "2027-03-28T10:45:00.000Z",
    ]
    leap = {"repeat": {"level": "year", "start": "2028-02-29T06:00:00Z"}}
    assert preview(api, leap, 2, after="2028-01-01T00:00:00Z") == [
        "2028-02-29T06:00:00.000Z",
        "2032-02-29T06:00:00.000Z",
    ]


def test_preview_answers_every_schedule_kind(api):
    assert preview(api, {"at": "2027-05-01T10:00:00.250+02:00"}, 3) == ["2027-05-01T08:00:00.250Z"]
    # Friday 27 November 2026, 08:00 in Shanghai is 00:00 UTC: "after" includes it
    assert preview(api, {"cron": "0 8 * * 1-5", "timezone": "Asia/Shanghai"}, 2, after="2026-11-27T00:00:00Z") == [
        "2026-11-27T00:00:00.000Z",
        "2026-11-30T00:00:00.000Z",
    ]
    assert preview(api, {"every_seconds": 90, "start": "2027-01-01T00:00:00Z", "end": "2027-01-01T00:03:00Z"}, 5) == [
        "2027-01-01T00:00:00.000Z",
        "2027-01-01T00:01:30.000Z",
        "2027-01-01T00:03:00.000Z",
    ]
    soon = preview(api, {"after_seconds": 60}, 3)
    assert len(soon) == 1
    assert abs(datetime.fromisoformat(soon[0].replace("Z", "+00:00")) - datetime.now(UTC) - timedelta(seconds=60)) < (
        timedelta(seconds=2)
    )


def test_a_cron_in_eventbridge_scheduler_s_dialect(api):
    # the last Friday of each month at 18:00 in New York, 2027 only; day-of-week 6 is Friday there
    schedule = {"cron": "0 18 ? * 6L 2027", "timezone": "America/New_York", "dialect": "eventbridge"}
    assert preview(api, schedule, 3, after="2027-01-01T00:00:00Z") == [
        "2027-01-29T23:00:00.000Z",
        "2027-02-26T23:00:00.000Z",
        "2027-03-26T22:00:00.000Z",  # daylight-saving time from 14 March
    ]
    # 02:30 on 14 March 2027 does not exist in New York: the service's rule skips it
    daily = {"cron": "30 2 * * ? *", "timezone": "America/New_York", "dialect": "eventbridge"}
    assert preview(api, daily, 2, after="2027-03-13T08:00:00Z") == [
        "2027-03-15T06:30:00.000Z",
        "2027-03-16T06:30:00.000Z",
    ]
    # the native reading of the same wall time fires at the end of the gap
    assert preview(api, {"cron": "30 2 * * *", "timezone": "America/New_York"}, 1, after="2027-03-13T08:00:00Z") == [
        "2027-03-14T07:00:00.000Z"
    ]
    task = api("POST", "/v1/tasks", {"schedule": schedule, "target": {"http": {"url": "http://example.com/x"}}})
    assert task.status == 201, task.body
    assert task.body["schedule"]["dialect"] == "eventbridge"
    assert task.body["next_fire_at"] == "2027-01-29T23:00:00.000Z"
    assert api("GET", f"/v1/tasks/{task.body['id']}").body["schedule"] == task.body["schedule"]
    native = api(
        "POST", "/v1/tasks", {"schedule": {"cron": "0 9 * * 1"}, "target": {"http": {"url": "http://e.com/x"}}}
    )
    assert "dialect" not in native.body["schedule"]  # the default is not written out


@pytest.mark.parametrize(
    ("cron", "words"),
    [
        ("0 9 * * *", "six fields"),
        ("0 9 * * * *", "must be ?"),
        ("0 9 ? * 0 *", "day-of-week value (1-7)"),
        ("0 9 ? * 2#1,3#2 *", "# stands alone"),
    ],
)
def test_a_bad_eventbridge_cron_names_the_field(api, cron, words):
    answer = api("POST", "/v1/schedules:preview", {"schedule": {"cron": cron, "dialect": "eventbridge"}})
    assert answer.status == 400, answer.body
    details = answer.body["error"]["details"]
    assert [d["field"] for d in details] == ["schedule.cron"], details
    assert words in details[0]["message"]


@pytest.mark.parametrize(
    "schedule",
    [
        {"cron": "15 9 * * 1-5", "timezone": "Asia/Shanghai"},
        {"every_seconds": 3600, "start": "2027-01-01T00:00:00Z"},
        {"at": "2027-02-01T00:00:00Z"},
        {
            "repeat": {
                "level": "workday",
                "interval": 2,
                "calendar": "CN",
                "time": "09:00",
                "timezone": "Asia/Shanghai",
                "start": "2027-01-04T00:00:00+08:00",
            }
        },
        {"repeat": {"level": "month", "days": [31], "time": "23:59:59", "start": "2027-01-01T00:00:00Z"}},
    ],
)
def test_next_fire_at_agrees_with_the_preview(api, schedule):
    times = preview(api, schedule, 3, notes=None)
    task = api("POST", "/v1/tasks", {"schedule": schedule, "target": {"http": {"url": "http://example.com/x"}}})
    assert task.status == 201, task.body
    assert task.body["next_fire_at"] == times[0]
    assert preview(api, task.body["schedule"], 3, notes=None) == times  # the stored form previews the same


def test_a_rule_without_start_counts_from_registration(api):
    task = api(
        "POST",
        "/v1/tasks",
        {"schedule": {"repeat": {"level": "day", "time": "00:00"}}, "target": {"http": {"url": "http://e.com/x"}}},
    ).body
    start = datetime.fromisoformat(task["schedule"]["repeat"]["start"].replace("Z", "+00:00"))
    assert abs(start - datetime.now(UTC)) < timedelta(seconds=5)
    tomorrow = (datetime.now(UTC) + timedelta(days=1)).date()
    assert task["next_fire_at"] == f"{tomorrow.isoformat()}T00:00:00.000Z"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"schedule": {"repeat": {"level": "week", "days": [0]}}}, "schedule.repeat.days"),
        ({"schedule": {"repeat": {"level": "month", "days": [32]}}}, "schedule.repeat.days"),
        ({"schedule": {"repeat": {"level": "day", "interval": 0}}}, "schedule.repeat.interval"),
        ({"schedule": {"repeat": {"level": "day", "timezone": "Mars/Base"}}}, "schedule.repeat.timezone"),
        ({"schedule": {"repeat": {"level": "day", "start": "2027-01-01T00:00:00"}}}, "schedule.repeat.start"),
        ({"schedule": {"repeat": {"level": "day", "colour": "red"}}}, "schedule.repeat.colour"),
        ({"schedule": {"cron": "0 0 31 2 *"}}, "schedule.cron"),
        ({"schedule": {"after_seconds": 5}, "count": 0}, "count"),
        ({"schedule": {"after_seconds": 5}, "count": 101}, "count"),
        ({"count": 3}, "schedule"),
    ],
)
def test_a_bad_preview_names_the_field(api, body, field):
    answer = api("POST", "/v1/schedules:preview", body)
    assert answer.status == 400, answer.body
    named = [d["field"] for d in answer.body["error"]["details"]]
    assert any(name == field or name.startswith((f"{field}.", f"{field}[")) for name in named), named


def test_a_calendar_task_fires_at_its_start_and_re_arms_a_day_later(api, pipeline, receiver):
    url = receiver.script("/daily", 200)
    # 5 s ahead: a loaded machine's registration lands before it (2 s did not, once, and the task
    # was armed for the next day); past the writer's window, so a tick a second before stages it
    start = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=5)
    schedule = {"repeat": {"level": "day", "start": iso(start)}}
    task = api("POST", "/v1/tasks", {"schedule": schedule, "target": {"http": {"url": url}}}).body
    assert task["next_fire_at"] == iso(start)
    pipeline.tick(at=start.timestamp() - 1)
    assert pipeline.fire(until=lambda: len(receiver.calls_to("/daily")) == 1, timeout=10)
    assert pipeline.fire(
        until=lambda: api("GET", f"/v1/tasks/{task['id']}").body["next_fire_at"] == iso(start + timedelta(days=1)),
        timeout=5,
    )
    assert receiver.calls_to("/daily")[0].body["scheduled_for"] == iso(start)


def test_an_update_to_a_calendar_rule_re_arms_the_task(api):
    task = api("POST", "/v1/tasks", {"schedule": {"cron": "0 0 1 1 *"}, "target": {"http": {"url": "http://e.com"}}})
    rule = {"repeat": {"level": "month", "days": [15], "time": "12:00", "start": "2027-03-01T00:00:00Z"}}
    changed = api("PATCH", f"/v1/tasks/{task.body['id']}", {"schedule": rule})
    assert changed.status == 200, changed.body
    assert changed.body["next_fire_at"] == "2027-03-15T12:00:00.000Z"
    assert changed.body["schedule"]["repeat"]["level"] == "month"
