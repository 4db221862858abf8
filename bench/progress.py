"""`make bench ARGS="--progress"`: what one progress report of a running shard costs
(docs/jobs.md, section 7).

Takes reports with the code the API runs (``JobService.report``) against moto in this process,
and counts every AWS call they make (bench/capacity.py's ``CallCounter``: DynamoDB capacity from
the items as they are sent and read). The job item grows with the shards that have reported, so
the same report is priced on a job of 10 shards and of 800 (the most a job has), each shard
having reported once before. API Gateway's request and the API function's invocation come on top
(bench/prices.py); the authorizer's answer is cached per token.
"""

from __future__ import annotations

import os
from collections import Counter

from bench import prices
from bench.capacity import CallCounter

REGION = "us-east-1"


def progress_costs(reports: int) -> None:
    os.environ.setdefault("AWS_DEFAULT_REGION", REGION)
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        os.environ.setdefault(name, "testing")
    from moto import mock_aws

    counter = CallCounter()
    with mock_aws(), counter.active():  # every client is made inside: all of them are counted
        print(f"\nOne progress report, per report ({reports} reports each):")
        for shards in (10, 800):
            _measure(counter, max(reports, 1), shards)


def _measure(counter: CallCounter, reports: int, shards: int) -> None:
    from shared.domain.jobs import NewJobRecord
    from shared.domain.progress import ShardRef, new_progress_key, progress_token
    from shared.domain.sharding import Sharding
    from shared.services.jobs import JobService
    from shared.store.dynamo import ensure_table
    from shared.store.jobs import DynamoJobStore
    from shared.store.table import bind_table

    table = f"sundial-bench-progress-{shards}"
    bind_table(table)
    ensure_table(table)
    store = DynamoJobStore()
    key, job_id = new_progress_key(), f"01KBENCH{shards:018d}"
    store.create(NewJobRecord(job_id, "bench", None, {"http": {"url": "https://p.example"}}, Sharding(), 10, 0, key))
    store.planned(job_id, [shards], total_items=shards * 1000)
    service = JobService(store, None, None, clock=lambda: 0, new_id=str)  # type: ignore[arg-type]
    tokens = [progress_token(key, ShardRef(job_id, 0, shard)) for shard in range(shards)]
    for token in tokens:  # every shard has reported once: the item at its size while they run
        service.report(job_id, token, 1)
    usage = counter.usage
    calls, wru, rru = Counter(usage.calls), sum(usage.wru.values()), sum(usage.rru.values())
    for i in range(reports):
        service.report(job_id, tokens[i % shards], 2 + i)
    made = usage.calls - calls
    per_wru = (sum(usage.wru.values()) - wru) / reports
    per_rru = (sum(usage.rru.values()) - rru) / reports
    done = ", ".join(f"{count / reports:g} {svc} {op}" for (_, svc, op), count in sorted(made.items()))
    dynamodb = per_wru * prices.ON_DEMAND_PER_MILLION_WRU + per_rru * prices.ON_DEMAND_PER_MILLION_RRU
    print(
        f"  a job of {shards} shards: {done}; {per_rru:g} RRU, {per_wru:g} WRU; per million reports "
        f"${dynamodb:.2f} of DynamoDB on-demand, ${prices.API_REST_PER_MILLION:.2f} of API Gateway (REST), "
        f"${prices.LAMBDA_PER_MILLION:.2f} of Lambda requests and the API function's time"
    )
