"""`make bench ARGS="--workflows"`: what one workflow node costs (docs/workflows.md, section 4).

Registers workflows with the API's service and fires their runs with the trigger's code
(``Trigger.fire`` of each staged message, the node's end moving its run on through
``Recorder._node_ended``) against moto in this process, counting every AWS call as
bench/chains.py does (bench/capacity.py's ``CallCounter``: capacity from the item sizes sent,
an UpdateItem by the item it leaves, a transaction's items twice). Each call is put down to the
step that made it: a run's start, a node's end (its outcome item, the run item's update), a
child's start (its parents' outcomes, the definition's version, the ``create_run``
transaction, the run item's ``running``), a skip, the run's end, and the node's own run (its
claim and record as a run now's, the event source's receive and delete; each message fired in a
batch of its own). Three workflows: a 2-node chain, a 100-node fan-out/fan-in (the run item
grows from 7 to 15 KB and is rewritten on every node's end and start), and a node skipped;
then the same end delivered twice.
"""

from __future__ import annotations

import os
from collections import Counter, defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from bench.capacity import CallCounter, item_size, read_units, write_units
from local.attribution import current_function

REGION = "us-east-1"
TENANT = "bench"
FAN = 98
"""The fan-out's middle: a root, 98 nodes, a join of all of them (100 nodes)."""


@dataclass
class Call:
    step: str
    operation: str
    wru: float
    rru: float


class StepCounter(CallCounter):
    """A ``CallCounter`` that also keeps each DynamoDB call (its step, operation and capacity),
    bills a refused conditional UpdateItem by the item it was refused on (DynamoDB bills a
    failed conditional write as the write; the counter takes it as 1 WRU, its items being small
    elsewhere: here the run item is up to ~15 KB), and reads by the items read (the counter
    takes the answer's typed JSON, about twice the items of a large definition)."""

    def __init__(self) -> None:
        super().__init__()
        self.log: list[Call] = []
        self.reader: Any = None
        """A client made before counting: what it reads is not counted."""

    def _capacity(
        self, operation: str, params: dict[str, Any], parsed: dict[str, Any], response_bytes: int
    ) -> tuple[float, float]:
        wru, rru = super()._capacity(operation, params, parsed, response_bytes)
        if operation == "GetItem" and "Item" in parsed:  # from the item, not its typed JSON
            rru = read_units(item_size(parsed["Item"]), bool(params.get("ConsistentRead")))
        if operation == "BatchGetItem":
            consistent = any(t.get("ConsistentRead") for t in params.get("RequestItems", {}).values())
            found = [item for items in parsed.get("Responses", {}).values() for item in items]
            rru = sum(read_units(item_size(item), consistent) for item in found)
        if operation == "UpdateItem" and "Error" in parsed and self.reader is not None:
            found = self.reader.get_item(TableName=params["TableName"], Key=params["Key"]).get("Item")
            wru = write_units(item_size(found)) if found else 1
        self.log.append(Call(current_function.get(), operation, wru, rru))
        return wru, rru


@contextmanager
def step(name: str) -> Iterator[None]:
    token = current_function.set(name)
    try:
        yield
    finally:
        current_function.reset(token)


class Labelled:
    """``inner`` with each named method's AWS calls put down to its step."""

    def __init__(self, inner: Any, steps: dict[str, str]) -> None:
        self._inner, self._steps = inner, steps

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if name not in self._steps:
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            with step(self._steps[name]):
                return attr(*args, **kwargs)

        return call


OWN = "node's own run (claim, record)"
EVENTS = "node's own run: receive, delete"
STEPS = {
    "keep_outcome": "end: outcome item (PutItem)",
    "node_ended": "end: run item (UpdateItem ALL_NEW)",
    "outcomes": "child: parents' outcomes (BatchGetItem)",
    "version": "child: definition version (cached per process)",
    "start_node": "child: create_run (+ its SQS send)",
    "node_started": "child: run item running (UpdateItem)",
    "nodes_started": "children: run item running, all at once (UpdateItem)",
    "node_skipped": "skip: run item (UpdateItem)",
    "run_ended": "run's end: run item (UpdateItem)",
}
ORDER = [
    "start: workflow head (GetItem)",
    "start: run item (PutItem)",
    *STEPS.values(),
    "start: run read back (GetItem)",
    OWN,
    EVENTS,
]


def workflow_costs() -> None:
    os.environ.setdefault("AWS_DEFAULT_REGION", REGION)
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        os.environ.setdefault(name, "testing")
    os.environ["POWERTOOLS_LOG_LEVEL"] = "ERROR"
    import boto3
    from moto import mock_aws

    from local.receiver import running_receiver

    counter = StepCounter()
    with mock_aws(), running_receiver() as receiver:
        counter.reader = boto3.client("dynamodb", region_name=REGION)  # made before counting: not counted
        with counter.active():
            Bench(counter, receiver.url).measure()


@dataclass
class Bench:
    counter: StepCounter
    url: str
    seen: int = 0
    sqs: Any = None
    settings: Any = None
    trigger: Any = None
    service: Any = None
    queue: str = ""

    def setup(self) -> None:
        import boto3

        from local.queues import create_queues
        from shared.services.factory import build_trigger, build_workflow_service
        from shared.services.workflows import ItemNodeStarter, WorkflowRuns
        from shared.settings.environment import from_env
        from shared.store.dynamo import ensure_table
        from shared.store.workflows import DynamoWorkflowRuns, DynamoWorkflows
        from shared.topology import queues

        self.sqs = boto3.client("sqs", region_name=REGION)
        urls, _ = create_queues(self.sqs, queues(1, 180))
        self.settings = from_env().with_resources(
            table_name="sundial-bench-workflows",
            delay_queue_urls=(urls["delay-0"],),
            dead_letter_queue_url=urls["dead-letters"],
            allow_loopback_targets=True,
        )
        ensure_table(self.settings.table_name)
        self.queue = urls["delay-0"]
        self.service = build_workflow_service(self.settings)
        self.trigger = build_trigger(self.settings)
        # the trigger's runs, each call put down to its step
        tasks = self.trigger.recorder.chains
        store = Labelled(DynamoWorkflowRuns(), STEPS)
        definitions = Labelled(DynamoWorkflows(), STEPS)
        starter = ItemNodeStarter(definitions, Labelled(tasks, STEPS))
        runs = WorkflowRuns(store, starter, self.settings.bucket_shards)
        self.trigger.recorder.workflows = runs
        self.service.runs = runs  # a run's roots start as the trigger's children do
        self.service.definitions = Labelled(self.service.definitions, {"get": "start: workflow head (GetItem)"})
        self.service.runs_store = Labelled(
            self.service.runs_store, {"create": "start: run item (PutItem)", "get": "start: run read back (GetItem)"}
        )

    def register(self, nodes: list[str], edges: list[tuple[str, str, str]], joins: dict[str, str] | None = None) -> Any:
        from shared.domain.retry import RetryPolicy
        from shared.domain.tasks import HttpTarget
        from shared.domain.workflow_defs import NodeDef
        from shared.domain.workflows import Edge, Join, On, validated
        from shared.services.workflows import WorkflowDraft

        once = RetryPolicy(max_attempts=1)
        graph = validated(
            nodes,
            [Edge(p, c, On(on)) for p, c, on in edges],
            {n: Join(j) for n, j in (joins or {}).items()},
        )
        defs = tuple(NodeDef(n, (HttpTarget(f"{self.url}/{n}"),), retry=once) for n in nodes)
        with step("register"):
            return self.service.create(TENANT, WorkflowDraft(defs, graph))

    def fire_all(self) -> tuple[int, list[Any]]:
        """Fire every staged node until none is left; the messages fired (for a redelivery)."""
        from shared.messages import StagedMessage

        fired = 0
        messages: list[Any] = []
        while True:
            with step(EVENTS):
                got = self.sqs.receive_message(QueueUrl=self.queue, MaxNumberOfMessages=1, WaitTimeSeconds=0)
            if not got.get("Messages"):
                # the loop's last, empty, receive: the event source's polls are not a node's
                self.counter.usage.calls[(EVENTS, "sqs", "ReceiveMessage")] -= 1
                return fired, messages
            (message,) = got["Messages"]
            staged = StagedMessage.model_validate_json(message["Body"]).staged()
            with step(OWN):
                batch = self.trigger.new_batch()
                batch.fire(staged, message["MessageId"])
                batch.close()
            with step(EVENTS):
                self.sqs.delete_message(QueueUrl=self.queue, ReceiptHandle=message["ReceiptHandle"])
            fired += 1
            messages.append(staged)

    def calls(self) -> list[Call]:
        new = self.counter.log[self.seen :]
        self.seen = len(self.counter.log)
        return new

    def sqs_calls(self, before: Counter[tuple[str, str, str]]) -> Counter[str]:
        made = self.counter.usage.calls - before
        out: Counter[str] = Counter()
        for (fn, service, operation), n in made.items():
            if service == "sqs":
                out[f"{fn}|{operation}"] += n
        return out

    def measure(self) -> None:
        self.setup()
        print("\nOne workflow node, every AWS call counted against moto (capacity from item sizes):")
        for name, nodes, edges, joins in (
            ("a 2-node chain a -> b", ["a", "b"], [("a", "b", "success")], None),
            (
                f"a 100-node fan-out/fan-in a -> m0..m{FAN - 1} -> z",
                ["a", *[f"m{i}" for i in range(FAN)], "z"],
                [("a", f"m{i}", "success") for i in range(FAN)] + [(f"m{i}", "z", "success") for i in range(FAN)],
                None,
            ),
            (
                "a node skipped: a -> b (on success), a -> c (on failure)",
                ["a", "b", "c"],
                [("a", "b", "success"), ("a", "c", "failure")],
                None,
            ),
        ):
            self.scenario(name, nodes, edges, joins)
        self.twice()
        print(
            "\nOnce per process, not per node: the definition's version (1 GetItem; DynamoWorkflows keeps "
            "each version it read), the tenant's limits (1 Query; the trigger's limit cache)."
        )

    def scenario(self, name: str, nodes: list[str], edges: list[tuple[str, str, str]], joins: Any) -> None:
        workflow = self.register(nodes, edges, joins)
        self.calls()
        before = self.counter.usage.calls.copy()
        with step("start: the run (the API's start_run)"):
            run = self.service.start_run(TENANT, workflow.id)
        started = self.calls()
        sqs_start = self.sqs_calls(before)
        before = self.counter.usage.calls.copy()
        fired, _ = self.fire_all()
        per_node = self.calls()
        sqs_nodes = self.sqs_calls(before)
        final = self.service.run(TENANT, workflow.id, run.run_id)
        item = self.run_item(run.run_id)
        parts = ", ".join(
            f"{k} {item_size({k: v})}" for k, v in sorted(item.items(), key=lambda kv: -item_size(dict([kv])))
        )
        print(f"\n{name}: {fired} nodes fired, the run {final.status.value}")
        print(f"  its run item at the end: {item_size(item)} bytes ({parts})")
        print(f"  starting the run (its roots started: {len(final.graph.roots())}), per run:")
        show(started, 1, sqs_start)
        print(f"  per node fired (n = {fired}):")
        show(per_node, fired, sqs_nodes)
        writes = [c.wru for c in per_node if c.step.startswith(("end: run item", "child: run item", "skip:", "run's"))]
        if writes:
            print(
                f"  run item writes: {len(writes)}, {min(writes):g} to {max(writes):g} WRU each "
                f"({sum(writes) / fired:.2f} WRU per node fired)"
            )

    def twice(self) -> None:
        """The 2-node chain again, b's end delivered twice: its message redelivered after the
        end was recorded (dropped at the claim), and the end's steps repeated (a crash after the
        run moved on, before the node's run was recorded: the trigger repeats them)."""
        from shared.domain.workflows import NodeOutcome, NodeStatus

        workflow = self.register(["a", "b"], [("a", "b", "success")])
        run = self.service.start_run(TENANT, workflow.id)
        _, messages = self.fire_all()
        self.calls()
        before = self.counter.usage.calls.copy()
        with step(OWN):
            batch = self.trigger.new_batch()
            batch.fire(messages[0], "again")  # a's message again, after its end was recorded
            batch.close()
        print("\nthe same end delivered twice (the 2-node chain's a):")
        print("  its message again, after its end was recorded (dropped at the claim):")
        show(self.calls(), 1, self.sqs_calls(before))
        ran = self.service.run(TENANT, workflow.id, run.run_id)
        outcome = NodeOutcome("a", ran.node("a").run_id or "", NodeStatus.SUCCEEDED, {"ok": True}, None, 0)
        # a's end's steps repeated, as the trigger repeats them when it crashed before recording
        # a's run: the run item is put back (uncounted) as the crash left it
        for when, b in (
            ("after b was marked running", "running"),
            ("between b's create_run and its mark (b's item exists, b pending on the run)", "pending"),
        ):
            self.reopen(run.run_id, "b", b)
            self.calls()
            before = self.counter.usage.calls.copy()
            with step(OWN):
                self.trigger.recorder.workflows.node_ended(run.run_id, "a", NodeStatus.SUCCEEDED, outcome=outcome)
            print(f"  the end's steps repeated, the crash {when}:")
            show(self.calls(), 1, self.sqs_calls(before))

    def reopen(self, run_id: str, node: str, status: str) -> None:
        from shared.store.workflows import SK, run_pk

        self.counter.reader.update_item(
            TableName=self.settings.table_name,
            Key={"pk": {"S": run_pk(run_id)}, "sk": {"S": SK}},
            UpdateExpression="SET #n.#b = :b, #s = :r",
            ExpressionAttributeNames={"#n": "nodes", "#b": node, "#s": "status"},
            ExpressionAttributeValues={":b": {"S": status}, ":r": {"S": "running"}},
        )

    def run_item(self, run_id: str) -> dict[str, Any]:
        from shared.store.workflows import SK, run_pk

        item = self.counter.reader.get_item(
            TableName=self.settings.table_name, Key={"pk": {"S": run_pk(run_id)}, "sk": {"S": SK}}
        )["Item"]
        return dict(item)


def show(calls: list[Call], per: int, sqs: Counter[str]) -> None:
    by_step: dict[str, Counter[str]] = defaultdict(Counter)
    wru: dict[str, float] = defaultdict(float)
    rru: dict[str, float] = defaultdict(float)
    for c in calls:
        by_step[c.step][c.operation] += 1
        wru[c.step] += c.wru
        rru[c.step] += c.rru
    for key, n in sqs.items():
        fn, operation = key.split("|")
        by_step[fn][f"SQS {operation}"] += n
    steps = sorted(by_step, key=lambda s: ORDER.index(s) if s in ORDER else -1)
    total_w = total_r = 0.0
    for s in steps:
        ops = ", ".join(f"{n / per:g} {op}" for op, n in sorted(by_step[s].items()))
        total_w += wru[s]
        total_r += rru[s]
        most = max((c.wru for c in calls if c.step == s), default=0)
        largest = f" (the largest call {most:g})" if per > 1 and most > 1 and most * per > wru[s] + 1 else ""
        print(f"    {s:52} {ops}; {wru[s] / per:g} WRU{largest}, {rru[s] / per:g} RRU")
    print(f"    {'total':52} {total_w / per:.2f} WRU, {total_r / per:.2f} RRU")
