"""The firing pipeline end to end on moto: the API handler, the tick, the scanners, real SQS
delays, the trigger with Lambda's batch semantics, and a real HTTP receiver."""

from __future__ import annotations

import itertools
import json
import time
from datetime import datetime

import pytest

from tests.integration.conftest import DELAY_QUEUES, held
from tests.support.eventually import eventually

pytestmark = pytest.mark.integration


def parse(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def register(api, url: str, **fields):
    body = {"schedule": {"after_seconds": 1.5}, "target": {"http": {"url": url, "timeout_seconds": 1}}, **fields}
    answer = api("POST", "/v1/tasks", body)
    assert answer.status == 201, answer.body
    return answer.body


def runs(api, task_id: str) -> list[dict]:
    answer = api("GET", f"/v1/tasks/{task_id}/runs")
    assert answer.status == 200
    return answer.body["items"]


def test_a_one_shot_task_fires_once_on_time_with_the_api_body_and_headers(api, pipeline, receiver):
    url = receiver.script("/hook", 200)
    task = register(api, url, payload={"order_id": 123}, schedule={"after_seconds": 2.25})
    due = parse(task["next_fire_at"]).timestamp()
    assert pipeline.fire(until=lambda: len(receiver.calls_to("/hook")) >= 1, timeout=10)
    pipeline.settle()  # nothing left that could bring a duplicate
    (call,) = receiver.calls_to("/hook")
    assert call.at >= due  # never early
    assert call.method == "POST"
    assert call.body["task_id"] == task["id"]
    assert call.body["payload"] == {"order_id": 123}
    assert call.body["attempt"] == 1
    assert call.body["scheduled_for"] == task["next_fire_at"]
    assert parse(call.body["fired_at"]).timestamp() >= due
    assert call.headers["Content-Type"] == "application/json"
    assert call.headers["Idempotency-Key"] == call.body["run_id"]
    assert call.headers["Sundial-Task-Id"] == task["id"]
    assert call.headers["Sundial-Attempt"] == "1"
    after = api("GET", f"/v1/tasks/{task['id']}").body
    assert after["status"] == "completed"
    assert after["next_fire_at"] is None
    (run,) = runs(api, task["id"])
    assert run["run_id"] == call.body["run_id"]
    assert run["status"] == "succeeded"
    assert run["attempts"] == 1
    assert run["scheduled_for"] == task["next_fire_at"]
    assert run["lateness_ms"] >= 0  # never early (how late: the lateness summary, and make bench)


def test_a_task_beyond_the_writers_window_is_staged_by_the_scanners(api, pipeline, receiver):
    url = receiver.script("/later", 200)
    task = register(api, url, schedule={"after_seconds": 4})  # look-ahead 2 s + guard 1 s < 4 s
    pipeline.tick()  # its window ends 2 s from now: the task is not in it
    assert receiver.calls_to("/later") == []
    assert all(held(pipeline, f"delay-{i}") == 0 for i in range(DELAY_QUEUES))  # nothing staged
    pipeline.tick(at=time.time() + 2.3)  # a tick 2.3 s on: the task's due time is inside its window
    assert pipeline.fire(until=lambda: len(receiver.calls_to("/later")) == 1, timeout=10)
    assert receiver.calls_to("/later")[0].at >= parse(task["next_fire_at"]).timestamp()


def test_a_missed_tick_loses_nothing_and_fire_now_fires_once_late(api, pipeline, receiver):
    url = receiver.script("/missed", 200)
    now = time.time()
    pipeline.tick(at=now - 4.5)  # the shards' marks start 4.5 s ago
    task = registered_ago(url, 4.5, {"after_seconds": 3.5})  # then: due a second ago, no tick since
    pipeline.tick()
    assert pipeline.fire(until=lambda: len(receiver.calls_to("/missed")) == 1, timeout=10)
    pipeline.settle()
    assert len(receiver.calls_to("/missed")) == 1
    (run,) = runs(api, task)
    assert run["status"] == "succeeded"
    assert run["lateness_ms"] >= 900


def registered_ago(url: str, seconds: float, schedule: dict, **fields) -> str:
    """The id of a task registered ``seconds`` ago, through the service with its clock set back
    that far (its writer staging, or not, as it would have then): a fake clock, so the time
    since it was registered passes without a sleep. ``schedule``: ``after_seconds`` or
    ``every_seconds``, counted from then."""
    from datetime import UTC, timedelta

    from shared.domain.schedules import After, Every
    from shared.domain.tasks import HttpTarget, Misfire, TaskSpec
    from shared.services.factory import build_task_service
    from shared.settings.environment import from_env

    then = datetime.now(UTC) - timedelta(seconds=seconds)
    service = build_task_service(from_env())
    service.clock = lambda: then
    when = After(schedule["after_seconds"]) if "after_seconds" in schedule else Every(schedule["every_seconds"])
    misfire = Misfire(fields.pop("misfire")) if "misfire" in fields else None
    spec = TaskSpec(when, (HttpTarget(url, timeout_seconds=1),), misfire=misfire, **fields)
    return service.register("default", spec).id


def test_a_cancelled_task_never_fires(api, pipeline, receiver):
    url = receiver.script("/cancelled", 200)
    task = register(api, url, schedule={"after_seconds": 2})
    assert api("DELETE", f"/v1/tasks/{task['id']}").status == 204
    pipeline.settle()  # its staged occurrence came and was dropped
    assert receiver.calls_to("/cancelled") == []


def test_the_same_message_delivered_twice_fires_once(api, pipeline, receiver):
    url = receiver.script("/twice", 200)
    register(api, url, schedule={"after_seconds": 1.5})
    queue = next(q for q in ("delay-0", "delay-1") if _depth(pipeline, q))
    # a copy of the staged message, as SQS's at-least-once delivery may hand out
    message = pipeline.sqs.receive_message(QueueUrl=pipeline.urls[queue], WaitTimeSeconds=3)["Messages"][0]
    for _ in range(2):
        pipeline.sqs.send_message(QueueUrl=pipeline.urls[queue], MessageBody=message["Body"])
    pipeline.sqs.delete_message(QueueUrl=pipeline.urls[queue], ReceiptHandle=message["ReceiptHandle"])
    assert pipeline.fire(until=lambda: len(receiver.calls_to("/twice")) >= 1, timeout=5)
    pipeline.settle()  # the other copy came too
    assert len(receiver.calls_to("/twice")) == 1


def _depth(pipeline, queue: str) -> int:
    return held(pipeline, queue)


def test_a_receiver_answering_500_500_200_gets_three_attempts_with_backoff(api, pipeline, receiver):
    url = receiver.script("/flaky", 500, 500, 200)
    task = register(api, url, retry={"max_attempts": 3, "backoff": "fixed", "interval_seconds": 1})
    assert pipeline.fire(until=lambda: len(receiver.calls_to("/flaky")) == 3, timeout=15)
    calls = receiver.calls_to("/flaky")
    assert [c.body["attempt"] for c in calls] == [1, 2, 3]
    assert [c.headers["Sundial-Attempt"] for c in calls] == ["1", "2", "3"]
    assert len({c.headers["Idempotency-Key"] for c in calls}) == 1
    assert calls[1].at - calls[0].at >= 0.9
    assert calls[2].at - calls[1].at >= 0.9
    pipeline.fire(until=lambda: api("GET", f"/v1/tasks/{task['id']}").body["status"] == "completed", timeout=3)
    (run,) = runs(api, task["id"])
    assert run["status"] == "succeeded"
    assert run["attempts"] == 3


def test_a_retry_is_due_its_backoff_after_the_attempt_before_was_due_and_held_to_it(api, pipeline, receiver):
    """Retries are occurrences too: attempt n + 1 is due exactly ``interval`` after attempt n was
    due (not a whole-second SQS delay counted from whenever the failure was recorded, which put
    2.2-3 s between attempts 2 s apart), staged a lead early and held until its due time; the
    run's lateness is its first attempt's."""
    from functions.trigger import handler as trigger

    staged: list[tuple[int, int, int | None]] = []

    def observe(fired) -> None:  # when each attempt was due, and when it started
        due = fired.staged.start_ms if fired.staged.start_ms is not None else fired.staged.due_ms
        at = fired.staged.due_ms + fired.lateness_ms if fired.lateness_ms is not None else None
        staged.append((fired.staged.attempt, due, at))

    trigger.observers.append(observe)
    try:
        url = receiver.script("/gaps", 500, 500, 200)
        register(api, url, retry={"max_attempts": 3, "backoff": "fixed", "interval_seconds": 2})
        assert pipeline.fire(until=lambda: len(receiver.calls_to("/gaps")) == 3, timeout=20)
    finally:
        trigger.observers.remove(observe)
    calls = receiver.calls_to("/gaps")
    attempts = {attempt: (due, at) for attempt, due, at in staged if at is not None}
    assert sorted(attempts) == [1, 2, 3]
    for n in (1, 2, 3):
        due, at = attempts[n]
        assert at >= due  # never early
        if n > 1:
            assert due == attempts[n - 1][0] + 2000  # due its backoff after the attempt before was due
            # the receiver's clock agrees: never before the first attempt's due time plus the backoffs
            # (counted from when attempt 1 was due, not from when it came: a loaded run calls it late)
            assert calls[n - 1].at >= attempts[1][0] / 1000 + 2.0 * (n - 1) - 0.05

    def run_over() -> dict:
        (run,) = runs(api, calls[0].body["task_id"])
        assert run["status"] == "succeeded", run
        return run

    run = eventually(run_over)
    # the run's lateness is its first attempt's (the API's word), not the third's 4 s of backoff
    assert run["lateness_ms"] == attempts[1][1] - attempts[1][0]


def test_a_429_with_retry_after_holds_the_next_attempt_back_longer_than_the_backoff(api, pipeline, receiver):
    url = receiver.script("/busy", (429, {"Retry-After": "3"}), 200)
    task = register(api, url, retry={"max_attempts": 3, "backoff": "fixed", "interval_seconds": 1})
    assert pipeline.fire(until=lambda: len(receiver.calls_to("/busy")) == 2, timeout=15)
    first, second = receiver.calls_to("/busy")
    assert second.body["attempt"] == 2
    assert second.at - first.at >= 3.0  # the receiver's 3 s, not the task's 1 s
    pipeline.fire(until=lambda: api("GET", f"/v1/tasks/{task['id']}").body["status"] == "completed", timeout=3)
    (run,) = runs(api, task["id"])
    assert run["status"] == "succeeded"
    assert run["attempts"] == 2


def test_a_400_fails_at_once_and_reaches_the_dead_letter_queue(api, pipeline, receiver):
    url = receiver.script("/bad", 400)
    task = register(api, url)
    assert pipeline.fire(until=lambda: [r["status"] for r in runs(api, task["id"])] == ["failed"])
    assert len(receiver.calls_to("/bad")) == 1
    (run,) = runs(api, task["id"])
    assert run["attempts"] == 1
    assert "400" in run["last_error"]
    (letter,) = pipeline.dead_letters()
    assert letter["task_id"] == task["id"]
    assert "400" in letter["reason"]


def test_exhausting_the_retries_dead_letters_the_occurrence(api, pipeline, receiver):
    url = receiver.script("/down", 503)
    task = register(api, url, retry={"max_attempts": 2, "backoff": "fixed", "interval_seconds": 1})
    assert pipeline.fire(until=lambda: [r["status"] for r in runs(api, task["id"])] == ["dead_lettered"])
    assert len(receiver.calls_to("/down")) == 2
    (letter,) = pipeline.dead_letters()
    assert letter["run_id"] == runs(api, task["id"])[0]["run_id"]
    assert "retries exhausted" in letter["reason"]


def test_a_crash_after_the_claim_fires_once_after_redelivery(api, pipeline, receiver, monkeypatch):
    from shared.services.firing import call

    url = receiver.script("/crash", 200)
    task = register(api, url)
    crashes = []
    real_call = call.Caller._call

    def crash_once(self, *args, **kwargs):
        if not crashes:
            crashes.append(time.time())
            raise RuntimeError("the trigger died mid-callback")
        return real_call(self, *args, **kwargs)

    monkeypatch.setattr(call.Caller, "_call", crash_once)
    assert pipeline.fire(until=lambda: len(receiver.calls_to("/crash")) == 1, timeout=15)
    pipeline.settle()
    assert crashes
    assert len(receiver.calls_to("/crash")) == 1
    assert runs(api, task["id"])[0]["status"] == "succeeded"


def test_a_cron_task_fires_repeatedly_on_its_schedule(api, pipeline, receiver):
    url = receiver.script("/cron", 200)
    task = register(api, url, schedule={"cron": "* * * * * *"})  # every second
    assert pipeline.fire(until=lambda: len(receiver.calls_to("/cron")) >= 3, timeout=10)
    calls = receiver.calls_to("/cron")
    fired = [parse(c.body["scheduled_for"]).timestamp() for c in calls]
    assert fired == sorted(set(fired))  # one call per occurrence, in order
    assert all(c.at >= s for c, s in zip(calls, fired, strict=True))
    assert all(s == int(s) for s in fired)  # whole seconds, as the expression says
    assert api("DELETE", f"/v1/tasks/{task['id']}").status == 204
    count = len(receiver.calls_to("/cron"))
    pipeline.settle()  # what was staged when the cancel came has fired or been skipped
    assert len(receiver.calls_to("/cron")) <= count + 1  # at most the one already claimed
    history = runs(api, task["id"])
    assert len(history) >= 3
    # every occurrence succeeded, except the one staged when the cancel came: under load it may
    # be claimed after the cancel, and is then skipped (never fired)
    statuses = [r["status"] for r in history]
    assert statuses.count("succeeded") >= 3, statuses
    assert set(statuses) <= {"succeeded", "skipped"}, statuses
    assert statuses.count("skipped") <= 1, statuses


def test_an_every_seconds_task_fires_every_period(api, pipeline, receiver):
    url = receiver.script("/every", 200)
    register(api, url, schedule={"every_seconds": 1})
    assert pipeline.fire(until=lambda: len(receiver.calls_to("/every")) >= 3, timeout=10)
    times = [parse(c.body["scheduled_for"]).timestamp() for c in receiver.calls_to("/every")]
    assert [round(b - a, 3) for a, b in itertools.pairwise(times)] == [1.0] * (len(times) - 1)


def test_a_message_that_poisons_the_trigger_reaches_the_dead_letter_queue(pipeline):
    queue = pipeline.urls["delay-0"]
    policy = {"deadLetterTargetArn": pipeline.arns["dead-letters"], "maxReceiveCount": "2"}
    pipeline.sqs.set_queue_attributes(
        QueueUrl=queue, Attributes={"VisibilityTimeout": "1", "RedrivePolicy": json.dumps(policy)}
    )
    pipeline.sqs.send_message(QueueUrl=queue, MessageBody=json.dumps({"not": "a staged occurrence"}))
    letters: list[dict] = []
    pipeline.fire(until=lambda: bool(letters.extend(pipeline.dead_letters()) or letters), timeout=8)
    assert letters == [{"not": "a staged occurrence"}]


def test_a_recurring_task_found_late_skips_and_never_fires_a_burst(api, pipeline, receiver, monkeypatch):
    url = receiver.script("/burst", 200)
    resumed = time.time()
    registered = resumed - 4  # then an outage: nothing fired for 4 periods
    task = {"id": registered_ago(url, 4, {"every_seconds": 1})}  # misfire defaults to skip
    assert pipeline.fire(until=lambda: len(receiver.calls_to("/burst")) >= 2, timeout=10)
    calls = receiver.calls_to("/burst")
    scheduled = [parse(c.body["scheduled_for"]).timestamp() for c in calls]
    assert min(scheduled) >= resumed - 1.6  # nothing from the outage but what the tolerance allows
    assert scheduled[1] - scheduled[0] == 1.0  # the next period's, not a backlog of missed ones
    history = runs(api, task["id"])
    assert history[-1]["status"] == "skipped"
    assert parse(history[-1]["scheduled_for"]).timestamp() < registered + 1.5


def test_a_one_shot_found_late_with_skip_does_not_fire(api, pipeline, receiver):
    url = receiver.script("/late-skip", 200)
    pipeline.tick(at=time.time() - 6)
    # registered 6 s ago, a tick missed since: found 2.5 s late, over the 1.5 s tolerance
    task = {"id": registered_ago(url, 6, {"after_seconds": 3.5}, misfire="skip")}
    pipeline.tick()
    assert pipeline.fire(until=lambda: api("GET", f"/v1/tasks/{task['id']}").body["status"] == "completed")
    assert receiver.calls_to("/late-skip") == []
    (run,) = runs(api, task["id"])
    assert run["status"] == "skipped"
    assert run["attempts"] == 0  # nothing was called


def test_a_paused_task_does_not_fire_and_fires_after_resume(api, pipeline, receiver):
    url = receiver.script("/paused", 200)
    # registered 2.5 s ago, due half a second ago and staged then; paused before anything fired
    task = api("GET", f"/v1/tasks/{registered_ago(url, 2.5, {'after_seconds': 2})}").body
    paused = api("POST", f"/v1/tasks/{task['id']}/pause")
    assert paused.status == 200
    assert paused.body["status"] == "paused"
    pipeline.settle()  # its staged message comes and is dropped
    assert receiver.calls_to("/paused") == []
    resumed = api("POST", f"/v1/tasks/{task['id']}/resume")
    assert resumed.body["status"] == "scheduled"
    assert parse(resumed.body["next_fire_at"]) > parse(task["next_fire_at"])  # missed: fire_now, now
    assert pipeline.fire(until=lambda: len(receiver.calls_to("/paused")) == 1, timeout=6)
    pipeline.settle()
    assert len(receiver.calls_to("/paused")) == 1
    assert api("GET", f"/v1/tasks/{task['id']}").body["status"] == "completed"


def test_a_paused_recurring_task_stops_and_resumes_on_its_schedule(api, pipeline, receiver):
    url = receiver.script("/rec", 200)
    task = register(api, url, schedule={"every_seconds": 1})
    assert pipeline.fire(until=lambda: len(receiver.calls_to("/rec")) >= 2, timeout=8)
    api("POST", f"/v1/tasks/{task['id']}/pause")
    settled = len(receiver.calls_to("/rec"))
    pipeline.settle()  # the occurrence staged when the pause came is dropped (or was in flight)
    assert len(receiver.calls_to("/rec")) <= settled + 1  # at most the one in flight
    stopped = len(receiver.calls_to("/rec"))
    resumed_at = time.time()
    api("POST", f"/v1/tasks/{task['id']}/resume")
    assert pipeline.fire(until=lambda: len(receiver.calls_to("/rec")) >= stopped + 2, timeout=8)
    later = [parse(c.body["scheduled_for"]).timestamp() for c in receiver.calls_to("/rec")[stopped:]]
    assert min(later) >= resumed_at - 0.01  # skip: nothing missed while paused fires


def test_a_tick_skipped_for_five_minutes_loses_nothing(api, pipeline, receiver):
    from datetime import UTC, timedelta

    from shared.domain.schedules import At
    from shared.domain.tasks import HttpTarget, TaskSpec
    from shared.services.factory import build_task_service
    from shared.settings.environment import from_env
    from shared.store.pipeline import DynamoPipelineStore

    url = receiver.script("/outage", 200)
    settings = from_env()
    last_scan = datetime.now(UTC) - timedelta(minutes=6)
    store = DynamoPipelineStore(settings.retention_ms)
    for shard in range(settings.bucket_shards):
        mark = int(last_scan.timestamp() * 1000)  # the last scan, six minutes ago, ended here
        taken = store.begin_scan(shard, mark, 1_000)
        assert taken is not None
        assert store.end_scan(shard, taken[1], mark)
    # Registered before the outage, due during it (every 30 s for five minutes): no tick ran since.
    service = build_task_service(settings)
    service.stager, service.clock = None, lambda: last_scan
    due = [last_scan + timedelta(seconds=30 * k) for k in range(1, 11)]
    ids = {service.register("default", TaskSpec(At(t), (HttpTarget(url, timeout_seconds=1),))).id for t in due}
    pipeline.tick()  # the first tick after the outage catches up from the marks
    assert pipeline.fire(until=lambda: len(receiver.calls_to("/outage")) >= len(ids), timeout=15)
    pipeline.settle()
    fired = [c.body["task_id"] for c in receiver.calls_to("/outage")]
    assert sorted(fired) == sorted(ids)  # every one, once


def _strand(pipeline, task_id: str) -> None:
    """What AWS does to a message whose invocations were throttled (or stopped by recursive loop
    detection): it is received again and again without the trigger ever seeing it, until SQS
    moves it on after its queue's maxReceiveCount -- here two receives, one second apart."""
    from shared.topology import STRANDED

    stranded = pipeline.urls[STRANDED.name]
    for queue in (u for name, u in pipeline.urls.items() if name.startswith("delay-")):
        policy = {"deadLetterTargetArn": pipeline.arns[STRANDED.name], "maxReceiveCount": "2"}
        pipeline.sqs.set_queue_attributes(
            QueueUrl=queue, Attributes={"VisibilityTimeout": "1", "RedrivePolicy": json.dumps(policy)}
        )
    deadline = time.time() + 15
    while time.time() < deadline:
        waiting = pipeline.sqs.get_queue_attributes(QueueUrl=stranded, AttributeNames=["ApproximateNumberOfMessages"])
        if int(waiting["Attributes"]["ApproximateNumberOfMessages"]):
            return
        for queue in (u for name, u in pipeline.urls.items() if name.startswith("delay-")):
            pipeline.sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10, WaitTimeSeconds=1)
    raise AssertionError(f"task {task_id}'s message never reached the stranded queue")


def _recover(pipeline, until, timeout: float = 10) -> bool:
    """Tick until ``until()``: a tick that finds messages in the stranded queue asks for a drain,
    which the recovering trigger runs (no event source polls that queue)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if until():
            return True
        pipeline.tick()
    return until()


def test_a_message_that_ran_out_of_receives_unseen_is_fired_late_by_the_recovering_trigger(api, pipeline, receiver):
    url = receiver.script("/stranded", 200)
    task = register(api, url, schedule={"after_seconds": 1})  # one-shot: misfire fire_now
    _strand(pipeline, task["id"])
    assert receiver.calls_to("/stranded") == []
    assert _recover(pipeline, until=lambda: len(receiver.calls_to("/stranded")) == 1)
    assert pipeline.drains[0]["received"] == pipeline.drains[0]["deleted"] == 1  # the tick's first drain fired it
    pipeline.tick()  # the queue is empty now: no drain is asked for
    assert len(pipeline.drains) == 1
    (run,) = runs(api, task["id"])
    assert run["status"] == "succeeded"
    assert api("GET", f"/v1/tasks/{task['id']}").body["status"] == "completed"


def test_a_stranded_message_fired_late_that_fails_is_retried_as_usual(api, pipeline, receiver):
    """The recovering trigger fires as the trigger does: a failed call is retried through the delay
    queues (what is given up on a last delivery is an occurrence the trigger itself fails on:
    tests/unit/test_last_delivery.py)."""
    url = receiver.script("/stranded-retried", 503, 200)
    task = register(api, url, schedule={"after_seconds": 1}, retry={"max_attempts": 3, "interval_seconds": 1})
    _strand(pipeline, task["id"])
    assert _recover(pipeline, until=lambda: len(receiver.calls_to("/stranded-retried")) == 1)
    assert pipeline.fire(until=lambda: runs(api, task["id"])[0]["status"] == "succeeded")
    (run,) = runs(api, task["id"])
    assert run["attempts"] == 2
    assert [c.body["attempt"] for c in receiver.calls_to("/stranded-retried")] == [1, 2]


def test_an_idle_tick_and_empty_scans_send_no_custom_metric_and_a_scan_that_stages_sends_one(
    api, pipeline, receiver, monkeypatch
):
    """A custom metric costs $0.30 a month for each hour it is sent in (bench/bill.py): an idle
    stack's tick and scans send none."""
    from shared.observability import metrics

    sent: list[str] = []
    original = metrics.add_metric
    monkeypatch.setattr(metrics, "add_metric", lambda name, **kw: (sent.append(name), original(name=name, **kw)))
    pipeline.tick()
    pipeline.tick()
    assert sent == []
    url = receiver.script("/staged", 200)
    register(api, url, schedule={"after_seconds": 4})  # beyond the writers' window: staged by a scan
    sent.clear()  # the API's own
    pipeline.tick(at=time.time() + 2.3)
    assert sent == ["Staged"]


def test_an_idle_tick_asks_for_no_scan_and_a_shard_with_a_task_is_scanned_alone(api, pipeline, receiver, monkeypatch):
    """The tick looks before it asks (shared/services/firing/scan.py, ``Ticker``): the scans of
    empty shards were most of an idle stack's bill."""
    from shared.domain.ids import parse_task_id
    from shared.services.firing import Scanner

    scanned: list[int] = []
    original = Scanner.scan

    def counting(self, shard, tick_ms=None, since_ms=None):
        scanned.append(shard)
        return original(self, shard, tick_ms, since_ms)

    monkeypatch.setattr(Scanner, "scan", counting)
    pipeline.tick()  # the first: every shard's mark is set
    scanned.clear()
    pipeline.tick()
    assert scanned == []
    url = receiver.script("/looked", 200)
    task = register(api, url, schedule={"after_seconds": 4})  # beyond the writers' window
    pipeline.tick(at=time.time() + 2.3)
    assert scanned == [parse_task_id(task["id"]).shard]
    assert pipeline.fire(until=lambda: len(receiver.calls_to("/looked")) == 1, timeout=10)


def test_a_trigger_that_dies_while_re_arming_leaves_no_occurrence_unfound(api, pipeline, receiver, monkeypatch):
    """The re-arm writes the next occurrence's bucket item and arms the task in two requests: a
    trigger that died between them left the task armed for an occurrence no scan would find,
    and the task never fired again (`make chaos` found 12 such tasks after a restart). The bucket
    item now comes first: a death there is mended by the message's redelivery."""
    from shared.store import pipeline as store

    url = receiver.script("/rearm", 200)
    task = register(api, url, schedule={"every_seconds": 5})  # the next one is past the writer's own staging
    deaths = []
    pointer_of = store.occurrence_item

    def dying(*args, **kwargs):  # type: ignore[no-untyped-def]
        item = pointer_of(*args, **kwargs)
        if item is not None and not deaths:

            def die(*a, **k):  # type: ignore[no-untyped-def]
                deaths.append(time.time())
                raise RuntimeError("the trigger died while re-arming")

            item.save = die
        return item

    monkeypatch.setattr(store, "occurrence_item", dying)
    ticked = [0.0]

    def fired_twice() -> bool:  # with the minute rule's ticks, every second here (a scan stages the next one)
        if time.time() - ticked[0] >= 1:
            ticked[0] = time.time()
            pipeline.tick()
        return len({c.body["scheduled_for"] for c in receiver.calls_to("/rearm")}) >= 2

    assert pipeline.fire(until=fired_twice, timeout=30), (deaths, runs(api, task["id"]))
    assert deaths
