"""The whole bill of a one-shot task, and of a stack that does nothing (docs/measured.md, "What
it costs"; docs/deploy.md, section 11).

Per million one-shot tasks, four parts, each from what `make bench` counted on the local runtime
(botocore hooks on every client, DynamoDB capacity from item sizes: bench/capacity.py) priced with
bench/prices.py:

* **register one by one**: one ``POST /v1/tasks`` a task: API Gateway's request, the API
  function's invocation and time, its writes (the task, the tenant's rate limit and task counter);
* **register in batches**: ``POST /v1/tasks:batch`` of 100, the same per task;
* **fire**: the trigger's calls as counted, the tick and the scans as AWS runs them (one a minute
  per shard), the queues' requests, each invocation's log lines;
* **keep the run**: the task's item and its run, stored for the run retention.

And **idle**, per month: what a deployed stack costs with no task at all, from its template (the
alarms, dashboards, keys, secrets, event source mappings, tracing and metrics it declares) and the
tick's and an empty scan's calls as counted.

What is estimated rather than counted says so in its line: the log bytes of an invocation, the
requests an idle event source mapping makes, X-Ray's traces. Free tiers are not taken off.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from bench import prices

MONTH_HOURS = 730
"""AWS's month in its pricing examples."""
MONTH_MINUTES = MONTH_HOURS * 60

INVOCATION_LOG_BYTES = 1_000
"""Estimated: what one Lambda invocation writes to CloudWatch Logs at the default log level: the
platform's START, END and REPORT lines (about 350 bytes) and Powertools' metrics object (about
500), a few short lines besides."""
ACCESS_LOG_BYTES = 700
"""Estimated: one line of the REST API's access log (infra/api.py's 22-field JSON, filled)."""
IDLE_POLLS_PER_MINUTE = 15
"""Estimated: the ReceiveMessage calls Lambda's pollers make on an empty queue, per event source
mapping and minute. Lambda does not publish it; its SQS page says it long-polls (20 s) and starts
with five pollers; five pollers each returning after 20 s is 15 a minute (about 650,000 a month).
Billed as SQS requests: an idle queue an event source mapping reads costs its empty receives
(AWS Knowledge Center, "Why are my Amazon SQS charges higher than expected?": "even if the SQS
queue isn't used, ... results in empty receives and associated charges";
https://repost.aws/knowledge-center/sqs-high-charges)."""
XRAY_RESERVOIR_PER_S = 1.0
XRAY_FIXED_RATE = 0.05
"""Lambda's active tracing samples the first request each second and 5 % of the others (X-Ray's
default rule; a function's own rate cannot be set)."""
KEPT_ITEM_OVERHEAD_BYTES = 100
"""DynamoDB bills 100 bytes of every item's storage besides its attributes (index items too)."""


@dataclass(frozen=True)
class Line:
    """One line of a bill: ``amount`` of ``unit`` (per task, or per month when idle)."""

    item: str
    amount: float
    unit: str
    price: float
    """Dollars per unit, on-demand."""
    provisioned_price: float | None = None
    """Dollars per unit on provisioned DynamoDB capacity (None: the same as on-demand)."""
    note: str = ""

    def cost(self, provisioned: bool = False) -> float:
        price = self.provisioned_price if provisioned and self.provisioned_price is not None else self.price
        return self.amount * price


@dataclass(frozen=True)
class Section:
    name: str
    lines: tuple[Line, ...]

    def total(self, provisioned: bool = False) -> float:
        return sum(line.cost(provisioned) for line in self.lines)


WRU = prices.ON_DEMAND_PER_MILLION_WRU / 1e6
RRU = prices.ON_DEMAND_PER_MILLION_RRU / 1e6
WRU_PROVISIONED = prices.provisioned_per_million_writes() / 1e6
RRU_PROVISIONED = prices.provisioned_per_million_reads() / 1e6
SQS = prices.SQS_PER_MILLION / 1e6
LAMBDA = prices.LAMBDA_PER_MILLION / 1e6
GB_S = prices.LAMBDA_GB_SECOND
LOG_BYTE = prices.LOGS_INGESTION_PER_GB / 1e9


def dynamodb_lines(wru: float, rru: float, what: str) -> list[Line]:
    return [
        Line("DynamoDB writes", wru, "WRU", WRU, WRU_PROVISIONED, what),
        Line("DynamoDB reads", rru, "RRU", RRU, RRU_PROVISIONED, what),
    ]


@dataclass(frozen=True)
class Counted:
    """What one path cost per task, as counted on the local runtime."""

    wru: float
    rru: float
    sqs: float
    invocations: float
    """Lambda invocations of the path's functions."""
    seconds: float
    """Their run time, in seconds."""
    memory_gb: float
    api_requests: float = 0.0
    calls: dict[str, float] = field(default_factory=dict)
    """``service operation`` -> calls per task, for the printout."""


def registration(counted: Counted, what: str) -> Section:
    """Registering one task through the REST API. The authorizer's answer is cached 60 s per key
    by API Gateway, so a key in steady use runs it about once a minute, not per request (priced in
    the idle bill's terms: about 44,000 runs a month per busy key)."""
    return Section(
        what,
        (
            Line(
                "API Gateway (REST)",
                counted.api_requests,
                "requests",
                prices.API_REST_PER_MILLION / 1e6,
                note="an HTTP API would be $1.00 a million",
            ),
            Line("Lambda requests", counted.invocations, "invocations", LAMBDA, note="the API function"),
            Line("Lambda time", counted.seconds * counted.memory_gb, "GB-s", GB_S, note="as run locally"),
            *dynamodb_lines(counted.wru, counted.rru, "the task, the tenant's rate limit and task counter"),
            Line(
                "CloudWatch Logs",
                counted.invocations * INVOCATION_LOG_BYTES + counted.api_requests * ACCESS_LOG_BYTES,
                "bytes",
                LOG_BYTE,
                note="estimated: the function's lines and the access log's",
            ),
        ),
    )


def firing(rows: Iterable[tuple[str, float, str, float, float | None, str]], invocations: float) -> Section:
    """The firing path's lines (bench/__main__.py's ``aws_cost`` rows) and their log lines."""
    lines = [
        Line(item, amount, unit, price, provisioned, note) for item, amount, unit, price, provisioned, note in rows
    ]
    lines.append(
        Line(
            "CloudWatch Logs",
            invocations * INVOCATION_LOG_BYTES,
            "bytes",
            LOG_BYTE,
            note="estimated: each invocation's lines",
        )
    )
    return Section("fire", tuple(lines))


def keeping(kept_bytes: float, items: float, retention_days: int) -> Section:
    """Storing what a fired one-shot task leaves (its item, its run) for the run retention."""
    months = retention_days / 30
    stored = kept_bytes + items * KEPT_ITEM_OVERHEAD_BYTES
    return Section(
        f"keep the run ({retention_days} days)",
        (
            Line(
                "DynamoDB storage",
                stored / 1e9 * months,
                "GB-months",
                prices.STORAGE_PER_GB_MONTH,
                note=f"{stored:.0f} bytes a task ({items:.1f} items with their 100-byte overhead)",
            ),
        ),
    )


STATUS_INDEX_SHARE = 0.01
"""The share of one-shot tasks that fail, for the status index's line per million tasks: the
index costs nothing for a task that never fails or pauses (docs/status-index.md)."""


def status_index(entry_bytes: int, retention_days: int, share: float = STATUS_INDEX_SHARE) -> Section:
    """What the status index ``by_status`` adds per task that enters a watched status (a failed
    one-shot): its entry written with the failure and deleted when the task leaves the status or
    expires (one write unit each: keys only, under 1 KB), and the entry stored meanwhile (for at most
    the run retention, its 100-byte overhead included); per task of a workload where ``share`` of the
    tasks fail."""
    months = retention_days / 30
    stored = entry_bytes + KEPT_ITEM_OVERHEAD_BYTES
    return Section(
        f"status index ({share:.0%} of the tasks failing; nothing for the others)",
        (
            Line(
                "DynamoDB writes",
                2 * share,
                "WRU",
                WRU,
                WRU_PROVISIONED,
                "the entry written with the failure, deleted with its leaving or its expiry",
            ),
            Line(
                "DynamoDB storage",
                stored / 1e9 * months * share,
                "GB-months",
                prices.STORAGE_PER_GB_MONTH,
                note=f"{stored} bytes an entry (its keys and the overhead), kept {retention_days} days at most",
            ),
        ),
    )


def status_entry_bytes(list_shards: int) -> int:
    """The size DynamoDB bills of a failed task's entry in ``by_status``: its table keys and its two
    index keys, as the store writes them (shared/store/items.py)."""
    from bench.capacity import item_size
    from shared.domain.registration import new_task
    from shared.domain.schedules import At
    from shared.domain.states import TaskStatus
    from shared.domain.tasks import HttpTarget, TaskSpec
    from shared.domain.times import utc_now
    from shared.store.items import status_keys
    from shared.store.keys import task_key

    now = utc_now()
    task = new_task(
        TaskSpec(At(now), (HttpTarget("https://example.com/hook"),)), tenant="a-tenant-name", now=now, shard=0
    )
    keys = status_keys(task, list_shards, TaskStatus.FAILED)
    assert keys is not None
    pk, sk = task_key(task.id)
    return item_size(
        {name: {"S": value} for name, value in zip(("pk", "sk", "spk", "ssk"), (pk, sk, *keys), strict=True)}
    )


@dataclass(frozen=True)
class IdleCounted:
    """What the idle local runtime counted per tick and per scan of one empty shard."""

    tick: Counted
    scan: Counted
    metrics: int = 0
    """Custom metrics (name and dimensions) the tick and the scans sent."""
    shards: int = 1
    """The shards the counted tick looked at: its reads, calls and time grow with them (a look
    at each), its one write does not."""


def idle(template: dict[str, Any], counted: IdleCounted, shards: int) -> Section:
    """A month of a deployed stack with no task, from its template's resources and the tick's and
    empty scans' counted calls (one tick a minute, one scan per shard a tick)."""
    resources = template.get("Resources", {})
    types = Counter(resource["Type"] for resource in resources.values())
    ticks = _scheduled_per_month(resources)
    scans = ticks * shards
    functions = [r for r in resources.values() if r["Type"] == "AWS::Lambda::Function"]
    traced = [f for f in functions if f.get("Properties", {}).get("TracingConfig", {}).get("Mode") == "Active"]
    looks = shards / counted.shards  # the tick's reads and time, per AWS shard
    idle_invocations = ticks * counted.tick.invocations + scans * counted.scan.invocations
    lines = [
        Line(
            "Lambda requests",
            idle_invocations,
            "invocations",
            LAMBDA,
            note=f"{ticks:.0f} ticks; of {scans:.0f} shard-minutes, the scans an idle stack still makes",
        ),
        Line(
            "Lambda time",
            ticks * counted.tick.seconds * counted.tick.memory_gb * looks
            + scans * counted.scan.seconds * counted.scan.memory_gb,
            "GB-s",
            GB_S,
            note="as run locally, the tick's in proportion to the shards it looks at",
        ),
        *dynamodb_lines(
            ticks * counted.tick.wru + scans * counted.scan.wru,
            ticks * counted.tick.rru * looks + scans * counted.scan.rru,
            "the tick's look at every shard and its W#clean; scans of shards with work",
        ),
        Line(
            "SQS (tick and scans)",
            ticks * counted.tick.sqs + scans * counted.scan.sqs,
            "requests",
            SQS,
            note="what they sent (the tick invokes the scanner: no queue between them)",
        ),
        Line(
            "SQS (idle pollers)",
            types["AWS::Lambda::EventSourceMapping"] * IDLE_POLLS_PER_MINUTE * MONTH_MINUTES,
            "requests",
            SQS,
            note=f"estimated: {types['AWS::Lambda::EventSourceMapping']} event source mappings' empty long polls",
        ),
        Line(
            "X-Ray traces",
            _traces(ticks, counted.tick.invocations) * (1 if _is_traced(resources, "tick", traced) else 0)
            + _traces(scans, counted.scan.invocations) * (1 if _is_traced(resources, "scanner", traced) else 0),
            "traces",
            prices.XRAY_PER_MILLION_TRACES / 1e6,
            note=f"{len(traced)} of {len(functions)} functions on active tracing",
        ),
        Line(
            "CloudWatch metrics",
            float(counted.metrics),
            "metrics",
            prices.CUSTOM_METRIC_MONTH,
            note="custom metrics the idle functions send every hour",
        ),
        Line(
            "CloudWatch Logs",
            idle_invocations * INVOCATION_LOG_BYTES,
            "bytes",
            LOG_BYTE,
            note="estimated: each invocation's lines",
        ),
        Line("CloudWatch alarms", float(types["AWS::CloudWatch::Alarm"]), "alarms", prices.ALARM_MONTH),
        Line("CloudWatch dashboards", float(types["AWS::CloudWatch::Dashboard"]), "dashboards", prices.DASHBOARD_MONTH),
        Line("KMS keys", float(types["AWS::KMS::Key"]), "keys", prices.KMS_KEY_MONTH),
        Line("Secrets Manager", float(types["AWS::SecretsManager::Secret"]), "secrets", prices.SECRET_MONTH),
    ]
    if types["Custom::SundialCanary"]:
        lines.append(
            Line(
                "the canary",
                float(MONTH_MINUTES),
                "fires",
                CANARY_FIRE,
                note="a task a minute: its fire and its function (docs/deploy.md, section 15)",
            )
        )
    return Section("idle", tuple(lines))


CANARY_FIRE = 0.65 / MONTH_MINUTES
"""docs/deploy.md, section 15's estimate of the canary without its two alarms (the alarms line
counts those from the template): about $0.65 a month."""


def _scheduled_per_month(resources: dict[str, Any]) -> float:
    """Invocations a month of the template's scheduled rules (``rate(1 minute)``: one a minute)."""
    total = 0.0
    for resource in resources.values():
        if resource["Type"] != "AWS::Events::Rule":
            continue
        expression = resource.get("Properties", {}).get("ScheduleExpression")
        if isinstance(expression, str) and expression.startswith("rate("):
            count, unit = expression[5:-1].split()
            minutes = {"minute": 1, "minutes": 1, "hour": 60, "hours": 60, "day": 1440, "days": 1440}[unit]
            total += MONTH_MINUTES / (int(count) * minutes)
    return total


def _is_traced(resources: dict[str, Any], role: str, traced: list[dict[str, Any]]) -> bool:
    """Whether the function whose description names ``role`` (its profile, infra/pipeline.py) is
    on active tracing."""
    return any(
        str(f.get("Properties", {}).get("Description", "")).lower().startswith(f"sundial {role}") for f in traced
    )


def _traces(invocations_per_month: float, per_event: float) -> float:
    """Traces X-Ray records of invocations spread evenly over a month: all of them up to one a
    second, 5 % of the rest."""
    per_second = invocations_per_month * per_event / (MONTH_HOURS * 3600)
    recorded = min(per_second, XRAY_RESERVOIR_PER_S) + XRAY_FIXED_RATE * max(0.0, per_second - XRAY_RESERVOIR_PER_S)
    return recorded * MONTH_HOURS * 3600


def print_section(section: Section, per: str) -> None:
    print(f"\n  {section.name} ({per}):")
    for line in section.lines:
        amount = f"{line.amount:12.4f}" if line.amount < 1e5 else f"{line.amount:12.3g}"
        print(f"    {line.item:22} {amount} {line.unit:11} ${line.cost():9.3f}  ${line.cost(True):9.3f}   {line.note}")
    print(f"    {'total':22} {'':24} ${section.total():9.3f}  ${section.total(True):9.3f}")


def print_bill(
    one_by_one: Section, batched: Section, fire: Section, keep: Section, idle_month: Section, statuses: Section
) -> None:
    """The four parts per million tasks, the two totals against EventBridge Scheduler's, the
    status index beside them (what failing tasks add), idle."""
    print("\nThe whole bill, per million one-shot tasks (on-demand, provisioned DynamoDB); prices: bench/prices.py")
    for section in (one_by_one, batched, fire, keep):
        print_section(_per_million(section), "per million tasks")
    for name, register in (("one by one", one_by_one), ("in batches of 100", batched)):
        total = register.total() + fire.total() + keep.total()
        provisioned = register.total(True) + fire.total(True) + keep.total(True)
        print(
            f"  registered {name}, fired and kept: ${total * 1e6:.2f} on-demand, ${provisioned * 1e6:.2f} provisioned "
            f"(EventBridge Scheduler: ${prices.EVENTBRIDGE_SCHEDULER_PER_MILLION:.2f})"
        )
    print_section(_per_million(statuses), "per million tasks")
    print_section(idle_month, "a month")


def _per_million(section: Section) -> Section:
    return Section(section.name, tuple(_scaled(line, 1e6) for line in section.lines))


def _scaled(line: Line, factor: float) -> Line:
    return Line(line.item, line.amount * factor, line.unit, line.price, line.provisioned_price, line.note)
