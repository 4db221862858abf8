"""`make bench ARGS="--chains"`: what one hop of a chain costs (docs/chains.md, section 4).

Starts hops with the code the trigger runs (``TaskService.start_chained``) against moto in this
process, and counts every AWS call each kind of hop makes (bench/capacity.py's ``CallCounter``:
DynamoDB capacity from the items as they are sent, a transaction's items twice, a refused one
billed as well): a hop started, the same hop started again (a duplicate delivery of the parent,
a retried recording step), and a hop skipped (its task paused). The parent's answer the child
carries is 0, 1 and 4 KB.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable
from datetime import timedelta

from bench.capacity import CallCounter
from shared.domain.chains import ChainStart

REGION = "us-east-1"


def chain_costs(hops: int) -> None:
    os.environ.setdefault("AWS_DEFAULT_REGION", REGION)
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        os.environ.setdefault(name, "testing")
    from moto import mock_aws

    counter = CallCounter()
    with mock_aws(), counter.active():  # every client is made inside: all of them are counted
        for response_bytes in (0, 1024, 4096):
            _measure(counter, max(hops, 1), response_bytes)


def _outcome(start: ChainStart) -> str:
    return "started" if start.run_id else "duplicate" if start.duplicate else "skipped"


def _measure(counter: CallCounter, hops: int, response_bytes: int) -> None:
    import boto3

    from local.queues import create_queues
    from shared.adapters.queues import SqsStager
    from shared.domain.chains import Branch, ChainLink, ParentRun
    from shared.domain.firing import run_id_for
    from shared.domain.schedules import Cron, Every
    from shared.domain.states import RunStatus
    from shared.domain.tasks import HttpTarget, TaskSpec
    from shared.services.tasks import TaskService
    from shared.store.dynamo import DynamoTaskRepository, ensure_table
    from shared.store.table import bind_table
    from shared.topology import queues

    table = f"sundial-bench-chains-{response_bytes}"
    bind_table(table)
    ensure_table(table)
    sqs = boto3.client("sqs", region_name=REGION)
    urls, _ = create_queues(sqs, queues(1, 180))
    service = TaskService(
        repository=DynamoTaskRepository(list_shards=4, retention=timedelta(days=7), default_max_tasks=1_000_000),
        bucket_shards=16,
        retention=timedelta(days=7),
        stager=SqsStager([urls["delay-0"]], urls["dead-letters"], 2000, client=lambda: sqs),
    )
    target = (HttpTarget("https://receiver.example/hook"),)
    child = service.register("bench", TaskSpec(Cron("0 0 1 1 *"), target, payload={"order_id": 123}))
    paused = service.register("bench", TaskSpec(Cron("0 0 1 1 *"), target, payload={"order_id": 123}))
    service.pause("bench", paused.id)
    parent = service.register("bench", TaskSpec(Every(60), target, on_success=(child.id,)))
    answer = "x" * max(response_bytes - 2, 0) or None  # a JSON string of that many bytes

    def link(i: int) -> ChainLink:
        run_id = run_id_for(parent.id, 1_800_000_000_000 + i * 60_000)
        return ChainLink(ParentRun(parent.id, run_id, RunStatus.SUCCEEDED), hop=1, response=answer)

    def series(name: str, start: Callable[[int], ChainStart]) -> str:
        usage = counter.usage
        calls, wru, rru = Counter(usage.calls), sum(usage.wru.values()), sum(usage.rru.values())
        outcomes = Counter(_outcome(start(i)) for i in range(hops))
        made = usage.calls - calls
        done = ", ".join(
            f"{count / hops:g} {service} {operation}" for (_, service, operation), count in sorted(made.items())
        )
        return (
            f"{name} ({', '.join(outcomes)}): {done}; {(sum(usage.rru.values()) - rru) / hops:g} RRU, "
            f"{(sum(usage.wru.values()) - wru) / hops:g} WRU"
        )

    rows = [
        series("a hop started", lambda i: service.start_chained(parent, link(i), child.id, Branch.SUCCESS)),
        series("the same hop again", lambda i: service.start_chained(parent, link(i), child.id, Branch.SUCCESS)),
        series(
            "a hop skipped (task paused)",
            lambda i: service.start_chained(parent, link(i), paused.id, Branch.SUCCESS),
        ),
    ]
    print(f"\nOne hop of a chain, per hop ({hops} hops each; the parent's answer {response_bytes} bytes):")
    for row in rows:
        print(f"  {row}")
