"""`make bench ARGS="--eventbridge"`: how precisely schedules made through the EventBridge
Scheduler API fire (docs/eventbridge.md).

Starts the local runtime (moto as its own process), creates ``--tasks`` one-time schedules
(``at()`` in UTC, whole seconds, spread over ``--window`` seconds after a lead-in) through boto3's
``scheduler`` client, each targeting one moto SQS queue with an ``Input`` that carries
``<aws.scheduler.scheduled-time>``, and reads every message back. A fire's lateness is the
message's ``SentTimestamp`` (moto's clock when the trigger's SendMessage arrived) minus the
schedule's time. The service itself fires "within the minute" (its schedules have 60 s
precision); this measures Sundial's.
"""

from __future__ import annotations

import json
import os
import statistics
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

LEAD_IN_S = 8.0


def eventbridge_bench(count: int, window: float) -> None:
    import boto3

    from bench.capacity import percentile
    from local.moto_server import FAKE_ENV, free_port
    from local.runtime import Runtime
    from local.settings import LocalSettings

    os.environ["POWERTOOLS_LOG_LEVEL"] = "ERROR"
    runtime = Runtime(LocalSettings.from_env(port=free_port(), delay_queues=1))
    runtime.start()
    try:
        keys = {
            "region_name": "us-east-1",
            "aws_access_key_id": FAKE_ENV["AWS_ACCESS_KEY_ID"],
            "aws_secret_access_key": FAKE_ENV["AWS_SECRET_ACCESS_KEY"],
        }
        sqs: Any = boto3.client("sqs", endpoint_url=runtime.moto.endpoint, **keys)
        url = sqs.create_queue(QueueName="eventbridge-bench")["QueueUrl"]
        scheduler: Any = boto3.client("scheduler", endpoint_url=f"http://127.0.0.1:{runtime.port}/scheduler", **keys)
        first = (datetime.now(UTC) + timedelta(seconds=LEAD_IN_S)).replace(microsecond=0)
        template = '{"at": "<aws.scheduler.scheduled-time>", "run": "<aws.scheduler.execution-id>"}'
        target = {
            "Arn": "arn:aws:sqs:us-east-1:123456789012:eventbridge-bench",
            "RoleArn": "arn:aws:iam::123456789012:role/bench",
            "Input": template,
        }
        started = time.perf_counter()
        for i in range(count):
            due = first + timedelta(seconds=int(window * i / count))
            scheduler.create_schedule(
                Name=f"bench-{i}",
                ScheduleExpression=f"at({due.strftime('%Y-%m-%dT%H:%M:%S')})",
                ScheduleExpressionTimezone="UTC",
                FlexibleTimeWindow={"Mode": "OFF"},
                Target=target,
            )
        created_s = time.perf_counter() - started
        if datetime.now(UTC) > first:
            print(f"  the schedules took {created_s:.1f} s to create, past the first due time: lower --tasks")
        late_ms: list[float] = []
        runs: Counter[str] = Counter()
        deadline = time.time() + LEAD_IN_S + window + 30
        while len(runs) < count and time.time() < deadline:
            answer = sqs.receive_message(
                QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=2, AttributeNames=["All"]
            )
            for message in answer.get("Messages", []):
                body = json.loads(message["Body"])
                scheduled = datetime.strptime(body["at"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
                late_ms.append(int(message["Attributes"]["SentTimestamp"]) - scheduled.timestamp() * 1000)
                runs[body["run"]] += 1
                sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
        time.sleep(2)  # a duplicate, if any, arrives now
        for message in sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1).get("Messages", []):
            runs[json.loads(message["Body"])["run"]] += 1
    finally:
        runtime.stop()
    twice = sum(n - 1 for n in runs.values())
    early = sum(1 for ms in late_ms if ms < 0)
    print(f"\nEventBridge Scheduler API, {count} at() schedules over {window:.0f} s into one SQS queue:")
    print(f"  created in {created_s:.1f} s ({count / created_s:.0f} a second through boto3's scheduler client)")
    print(f"  fired {len(runs)} of {count}   twice {twice}   early {early}")
    if late_ms:
        print(
            f"  lateness ms (SentTimestamp - scheduled time): p50 {statistics.median(late_ms):.0f}  "
            f"p95 {percentile(late_ms, 95):.0f}  p99 {percentile(late_ms, 99):.0f}  max {max(late_ms):.0f}"
        )
    if len(runs) < count or twice or early:
        raise SystemExit(f"FAILED: fired {len(runs)} of {count}, {twice} twice, {early} early")
