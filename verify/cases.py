"""The situations the explorer drives through every order of their steps (verify/explorer.py).

Each starts with a task registered through the product's task service and the copies of its
first occurrence's message waiting in SQS (two copies: SQS delivered it twice); its checks say
what the API must show at the end, whatever the order and wherever a trigger died."""

from __future__ import annotations

from collections.abc import Iterable

from shared.delivery import Outcome
from shared.domain.firing import Staged, staged_for
from shared.domain.patches import TaskPatch
from shared.domain.retry import Backoff, RetryPolicy
from shared.domain.schedules import FROM_END, At, Every
from shared.domain.states import RunStatus, TaskStatus
from shared.domain.tasks import HttpTarget, Task, TaskSpec
from shared.domain.times import from_ms, to_ms
from shared.domain.workflow_defs import NodeDef, Workflow
from shared.domain.workflows import Edge, NodeStatus, WorkflowRun, validated
from shared.services.firing.call import LOOK_BEFORE_MS
from shared.topology import DELAY_MAX_RECEIVES
from verify.engine import Violation
from verify.explorer import Case
from verify.world import Message, World

URL = "http://receiver.test/hook"
CHILD_URL = "http://receiver.test/child"
FIXED_2S = RetryPolicy(max_attempts=3, backoff=Backoff.FIXED, interval_seconds=2)
FINAL_RUNS = {RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.DEAD_LETTERED, RunStatus.SKIPPED}


def _register(world: World, spec: TaskSpec) -> Task:
    task = world.service.register(world.tenant, spec)
    world.subject = task
    return task


def _first(task: Task) -> Staged:
    return staged_for(task.id, to_ms(task.due_at), one_shot=not task.recurring, priority=task.priority)


def _copies(world: World, staged: Staged, copies: int = 2) -> None:
    """``copies`` deliveries of the occurrence's message, visible a lead before its due time."""
    world.sqs.waiting.clear()  # the service staged it: the case says how often SQS delivers it
    visible = staged.due_ms - world.timing.lead_ms
    first = Message("m0", staged, visible)
    world.sqs.waiting.append(first)
    for _ in range(copies - 1):
        world.sqs.copy(first)
    world.clock.now = visible


def _same_task_runs(world: World, message: Message) -> bool:
    """The messages of the task's first occurrence (its retries, copies): not its next one's."""
    return message.staged.run_id == world.first_run_id


def _extra_runs_of(world: World, task_id: str) -> list[Task]:
    """The items of a task's extra runs (a chained hop's, a redrive's)."""
    return [t for t in world.repository._tasks.values() if t.parent_id == task_id]


def _is_extra_run_of(world: World, message: Message, task_id: str) -> bool:
    item = world.repository._tasks.get(message.staged.task_id)
    return item is not None and item.parent_id == task_id


def _each_final(world: World, items: list[Task], what: str) -> Iterable[Violation]:
    """Every one of these extra runs ended, as the API reads their items."""
    for item in items:
        run = world.repository.item_task(item.id).run
        if run is None or run.status not in FINAL_RUNS:
            yield Violation("final state", f"the {what} run {item.id} is {run.status.value if run else 'not run'}")


def _task(world: World) -> Task:
    assert world.subject is not None
    return world.repository.get(world.tenant, world.subject.id)


def _one_shot_ended(world: World, *, allowed: set[TaskStatus] | None = None) -> Iterable[Violation]:
    """The one-shot's final state, read as the API reads it: the task ended and its run final."""
    task = _task(world)
    allowed = allowed or {TaskStatus.COMPLETED, TaskStatus.FAILED}
    if task.status not in allowed:
        yield Violation(
            "final state", f"the task is {task.status.value}, not one of {sorted(s.value for s in allowed)}"
        )
    if task.status is not TaskStatus.CANCELLED and (task.run is None or task.run.status not in FINAL_RUNS):
        yield Violation("final state", f"its run is {task.run.status.value if task.run else 'missing'}")


def _recurring_moved_on(world: World) -> Iterable[Violation]:
    """A recurring task's first occurrence ended on record (its run in the task's runs, final)
    and the task armed for a later one."""
    task = _task(world)
    runs = world.repository.runs(task, limit=10, cursor=None).items
    mine = [run for run in runs if run.run_id == world.first_run_id]
    if len(mine) != 1 or mine[0].status not in FINAL_RUNS:
        yield Violation("final state", f"the occurrence's run is {[r.status.value for r in mine]} in its runs")
    if task.status is TaskStatus.SCHEDULED and to_ms(task.due_at) <= world.first_due_ms:
        yield Violation("final state", "the task is still armed for the occurrence that ended")


def _start(world: World, spec: TaskSpec, copies: int = 2) -> Staged:
    task = _register(world, spec)
    staged = _first(task)
    world.first_run_id, world.first_due_ms = staged.run_id, staged.due_ms
    _copies(world, staged, copies)
    return staged


def one_shot(world: World) -> None:
    _start(world, TaskSpec(At(from_ms(world.clock() + 5_000)), (HttpTarget(URL),), retry=FIXED_2S))


def three_copies(world: World) -> None:
    """A one-shot whose message SQS delivers three times (and a receiver that answers 500 first)."""
    world.receiver.scripts[URL] = [Outcome.retry("HTTP 500", status=500), Outcome.success(200)]
    _start(world, TaskSpec(At(from_ms(world.clock() + 5_000)), (HttpTarget(URL),), retry=FIXED_2S), copies=3)


def one_shot_retrying(world: World) -> None:
    world.receiver.scripts[URL] = [Outcome.retry("HTTP 500", status=500), Outcome.success(200)]
    one_shot(world)


def retry_after(world: World) -> None:
    """A receiver that answers 429 with Retry-After: 300 s, then 200: the retry's start is past
    the staging lead, so its message comes back early and is sent on."""
    world.receiver.scripts[URL] = [Outcome.of_status(429, retry_after_s=300), Outcome.success(200)]
    one_shot(world)


def recurring(world: World) -> None:
    _start(world, TaskSpec(Every(60), (HttpTarget(URL),), retry=FIXED_2S))


def recurring_retrying(world: World) -> None:
    world.receiver.scripts[URL] = [Outcome.retry("HTTP 500", status=500), Outcome.success(200)]
    recurring(world)


def fixed_delay_retrying(world: World) -> None:
    """A task due 60 s after each run ends (``after: end``), its receiver answering 500 then 200."""
    world.receiver.scripts[URL] = [Outcome.retry("HTTP 500", status=500), Outcome.success(200)]
    _start(world, TaskSpec(Every(60, after=FROM_END), (HttpTarget(URL),), retry=FIXED_2S))


def _fixed_delay_checks(world: World) -> Iterable[Violation]:
    """As any recurring task's, and every re-arm (so the task's next occurrence) is the period
    after the occurrence's last call: armed once its run ended, never while an attempt was to come."""
    yield from _recurring_moved_on(world)
    calls = [call.at_ms for call in world.receiver.calls if call.run_id == world.first_run_id]
    for run_id, due in world.events.rearmed:
        if run_id == world.first_run_id and calls and (due is None or due < max(calls) + 60_000):
            yield Violation(
                "a fixed delay counts from the run's end", f"re-armed for {due}, its last call at {max(calls)}"
            )


def _client(world: World, what: str, call: object) -> None:
    """A client's API call as an actor, answered when its body returns (the step noted)."""

    def body() -> None:
        call()  # type: ignore[operator]
        world.events.acknowledged.append((what, len(world.stage.log)))

    world.stage.add(f"client {what}", body)


def cancelled_one_shot(world: World) -> None:
    one_shot(world)
    assert world.subject is not None
    task_id = world.subject.id
    _client(world, "cancel", lambda: world.service.cancel(world.tenant, task_id))


def cancelled_recurring(world: World) -> None:
    recurring(world)
    assert world.subject is not None
    task_id = world.subject.id
    _client(world, "cancel", lambda: world.service.cancel(world.tenant, task_id))


def nothing_called_after_cancel(world: World) -> Iterable[Violation]:
    """No call after a cancel's answer, but one whose trigger looked at the task before the cancel
    and called within LOOK_BEFORE_MS of that look (the window between the look and the call,
    which no read can close)."""
    for what, answered in world.events.acknowledged:
        if what != "cancel":
            continue
        for call in world.receiver.calls:
            if call.step <= answered:
                continue
            looked = call.looked
            if looked is None or looked[0] > answered or call.at_ms - looked[1] > LOOK_BEFORE_MS:
                yield Violation(
                    "nothing called after a cancel",
                    f"{call.actor} called {call.url} at step {call.step}, after the cancel's answer at step "
                    f"{answered}; its last look at the task: {looked} (step, ms), the call at {call.at_ms} ms",
                )


def _cancelled_checks(world: World) -> Iterable[Violation]:
    yield from nothing_called_after_cancel(world)
    task = _task(world)
    answered = any(what == "cancel" for what, _ in world.events.acknowledged)
    if answered and task.status is not TaskStatus.CANCELLED:
        yield Violation("final state", f"the task is {task.status.value} after its cancel was answered")


def _paused_and_resumed(world: World) -> None:
    """An every-minute task paused, then resumed, by one client at any point of its occurrence's
    firing (two calls: the resume after the pause's answer)."""
    recurring(world)
    assert world.subject is not None
    task_id = world.subject.id

    def pause_then_resume() -> None:
        world.service.pause(world.tenant, task_id)
        world.events.acknowledged.append(("pause", len(world.stage.log)))
        world.service.resume(world.tenant, task_id)

    _client(world, "resume", pause_then_resume)


def _resumed_checks(world: World) -> Iterable[Violation]:
    """Once the resume was answered the task is scheduled and has moved on: its occurrence ended
    on record (fired, or skipped while paused) and it is armed for a later one, never left armed for
    an occurrence whose run has ended (no message would ever fire it again)."""
    if not any(what == "resume" for what, _ in world.events.acknowledged):
        return
    task = _task(world)
    if task.status is not TaskStatus.SCHEDULED:
        yield Violation("final state", f"the task is {task.status.value} after its resume was answered")
    yield from _recurring_moved_on(world)


def _patched(world: World) -> None:
    """An every-minute task rescheduled (every 2 minutes) at any point of its occurrence's firing."""
    recurring(world)
    assert world.subject is not None
    task_id = world.subject.id

    def patch() -> None:
        world.patched = world.service.update(world.tenant, task_id, TaskPatch(schedule=Every(120)))

    _client(world, "patch", patch)


def _patch_checks(world: World) -> Iterable[Violation]:
    """The client's schedule wins: once its change was answered, the task stays armed as that
    answer said, whenever the occurrence's re-arm came (a late re-arm never overwrites it). An
    occurrence the change came before is no longer the task's: it is dropped, never called."""
    answer = world.patched
    dropped = answer is not None and not world.receiver.calls and not world.events.ended
    if not dropped:
        yield from _recurring_moved_on(world)
    task = _task(world)
    if answer is not None and task.due_at != answer.due_at:
        yield Violation("the client's change kept", f"armed for {task.due_at}, the PATCH answered {answer.due_at}")


def _patched_earlier(world: World) -> None:
    """A one-shot due in an hour (nothing staged yet), rescheduled by a client to a second from
    now: its writer stages the new occurrence before its write, so a trigger can receive the
    message while the task is still armed an hour later."""
    task = _register(world, TaskSpec(At(from_ms(world.clock() + 3_600_000)), (HttpTarget(URL),), retry=FIXED_2S))
    world.sqs.waiting.clear()
    world.first_due_ms = to_ms(task.due_at)

    def patch() -> None:
        world.patched = world.service.update(
            world.tenant, task.id, TaskPatch(schedule=At(from_ms(world.clock() + 1_000)))
        )

    _client(world, "patch", patch)


def _patched_earlier_checks(world: World) -> Iterable[Violation]:
    """Once the task is armed for the earlier time (the PATCH's write landed) that occurrence
    fires and ends: never left armed for a time no message fires. Armed still an hour on (the
    client died before its write), nothing was called."""
    task = _task(world)
    if to_ms(task.due_at) == world.first_due_ms and task.status is TaskStatus.SCHEDULED:
        if world.receiver.calls:
            yield Violation("final state", "the task is armed as before the PATCH, yet its target was called")
        return
    yield from _one_shot_ended(world)


def _this_task(world: World, message: Message) -> bool:
    return world.subject is not None and message.staged.task_id == world.subject.id


def _chained(world: World) -> None:
    """A one-shot whose success starts a chained task (its child runs once per parent occurrence)."""
    child = world.service.register(
        world.tenant, TaskSpec(At(from_ms(world.clock() + 86_400_000)), (HttpTarget(CHILD_URL),))
    )
    world.child = child
    _start(
        world, TaskSpec(At(from_ms(world.clock() + 5_000)), (HttpTarget(URL),), retry=FIXED_2S, on_success=(child.id,))
    )


def _follows_chain(world: World, message: Message) -> bool:
    assert world.child is not None
    return message.staged.run_id == world.first_run_id or _is_extra_run_of(world, message, world.child.id)


def _chain_checks(world: World) -> Iterable[Violation]:
    yield from _one_shot_ended(world)
    parent = _task(world)
    assert world.child is not None
    children = _extra_runs_of(world, world.child.id)
    succeeded = parent.run is not None and parent.run.status is RunStatus.SUCCEEDED
    if succeeded and len(children) != 1:
        yield Violation("a hop runs once", f"the parent succeeded and its child has {len(children)} chained runs")
    runs = {call.run_id for call in world.receiver.calls if call.url == CHILD_URL}
    if len(runs) > 1:
        yield Violation("a hop runs once", f"the child was called for {len(runs)} runs: {sorted(runs)}")
    yield from _each_final(world, children, "chained")


def _redriven(world: World) -> None:
    """A dead letter redriven by two clients at once: its new run fires once."""
    world.receiver.scripts[URL] = [Outcome.retry("HTTP 500", status=500), Outcome.success(200)]
    staged = _start(
        world, TaskSpec(At(from_ms(world.clock() + 5_000)), (HttpTarget(URL),), retry=RetryPolicy(max_attempts=1)), 1
    )
    (message,) = world.sqs.waiting
    world.sqs.waiting.clear()
    message.receives = 1
    world.deliver(message)()  # before any actor runs: no gate stops it
    assert [letter.run_id for letter in world.dead_letters.letters.values()] == [staged.run_id]
    world.first_run_id = ""  # the redrive's run is followed now
    for n in (1, 2):
        _client(world, f"redrive {n}", lambda: world.service.redrive(world.tenant, [staged.run_id]))


def _follows_redrive(world: World, message: Message) -> bool:
    assert world.subject is not None
    return _is_extra_run_of(world, message, world.subject.id)


def _redrive_checks(world: World) -> Iterable[Violation]:
    assert world.subject is not None
    extra = _extra_runs_of(world, world.subject.id)
    answered = [what for what, _ in world.events.acknowledged]
    if answered and len(extra) != 1:
        yield Violation("a letter redriven once", f"{len(extra)} runs made by {answered}")
    runs = {call.run_id for call in world.receiver.calls[1:]}
    if len(runs) > 1:
        yield Violation("a letter redriven once", f"the target was called for {len(runs)} redriven runs")
    yield from _each_final(world, extra, "redriven")


def _last_delivery(world: World) -> None:
    """A one-shot whose message is delivered twice, one of them its last delivery (the stranded
    queue's drain, or a fifth receive), while the trigger fails on it (a bug in delivery): the
    last delivery gives the occurrence up as a dead letter the API can redrive."""
    world.receiver.scripts[URL] = [RuntimeError("a bug in delivery")]
    one_shot(world)
    world.sqs.waiting[1].receives = DELAY_MAX_RECEIVES - 1


DIAMOND = validated(["a", "b", "c", "d"], [Edge("a", "b"), Edge("a", "c"), Edge("b", "d"), Edge("c", "d")])
WORKFLOW_RUN = "01KA0000000000000000000000"


def _node_url(node: str) -> str:
    return f"http://receiver.test/{node}"


def _diamond(world: World) -> None:
    """A workflow run of a diamond (a, then b and c, then d), a done: b's and c's runs fire on
    triggers of their own, b's message delivered twice; whatever the order, d starts once."""
    now = from_ms(world.clock())
    nodes = tuple(NodeDef(node, (HttpTarget(_node_url(node)),), retry=FIXED_2S) for node in DIAMOND.nodes)
    world.definitions["wf"] = Workflow("wf", world.tenant, nodes, DIAMOND, now, now)
    run = WorkflowRun(WORKFLOW_RUN, "wf", world.tenant, DIAMOND, dict.fromkeys(DIAMOND.nodes, NodeStatus.PENDING))
    world.workflow_runs.create(run)
    world.workflows.started(run)  # before any actor runs: a's item and its message
    (first,) = world.sqs.waiting
    world.sqs.waiting.clear()
    world.clock.now = first.staged.due_ms
    first.receives = 1
    world.deliver(first)()  # a fires and ends: b and c start
    assert len(world.sqs.waiting) == 2
    world.sqs.copy(next(m for m in world.sqs.waiting if _node_of(world, m) == "b"))


def _node_of(world: World, message: Message) -> str | None:
    item = world.repository._tasks.get(message.staged.task_id)
    return item.workflow.node if item is not None and item.workflow is not None else None


def _follows_workflow(world: World, message: Message) -> bool:
    return _node_of(world, message) is not None


def _diamond_checks(world: World) -> Iterable[Violation]:
    run = world.workflow_runs.get(WORKFLOW_RUN)
    assert run is not None
    items = [t for t in world.repository._tasks.values() if t.workflow is not None and t.workflow.node == "d"]
    if len(items) != 1:
        yield Violation("a join fires once", f"the join d has {len(items)} runs")
    called = {call.run_id for call in world.receiver.calls if call.url == _node_url("d")}
    if len(called) > 1:
        yield Violation("a join fires once", f"d was called for {len(called)} runs")
    if run.status is not NodeStatus.SUCCEEDED:
        yield Violation("final state", f"the workflow run is {run.status.value}: {dict(run.statuses)}")


CASES: dict[str, Case] = {
    case.name: case
    for case in [
        Case(
            "one-shot",
            one_shot,
            _one_shot_ended,
            _same_task_runs,
            description="a one-shot, its message delivered twice",
        ),
        Case(
            "three-copies",
            three_copies,
            _one_shot_ended,
            _same_task_runs,
            preemptions=1,  # two: make verify ARGS=--deep
            description="a one-shot delivered three times at once, its receiver answering 500 then 200",
        ),
        Case(
            "retrying",
            one_shot_retrying,
            _one_shot_ended,
            _same_task_runs,
            description="a one-shot whose receiver answers 500 then 200",
        ),
        Case(
            "retry-after",
            retry_after,
            _one_shot_ended,
            _same_task_runs,
            description="a one-shot whose receiver answers 429 with Retry-After: 300, then 200",
        ),
        Case(
            "recurring",
            recurring,
            _recurring_moved_on,
            _same_task_runs,
            description="an every-minute task's occurrence, delivered twice, re-armed once",
        ),
        Case(
            "recurring-retrying",
            recurring_retrying,
            _recurring_moved_on,
            _same_task_runs,
            description="an every-minute task whose receiver answers 500 then 200",
        ),
        Case(
            "fixed-delay-retrying",
            fixed_delay_retrying,
            _fixed_delay_checks,
            _same_task_runs,
            description="a task due 60 s after each run ends, its receiver answering 500 then 200",
        ),
        Case(
            "cancel-one-shot",
            cancelled_one_shot,
            _cancelled_checks,
            _same_task_runs,
            description="a one-shot cancelled at any point of its firing",
        ),
        Case(
            "cancel-recurring",
            cancelled_recurring,
            _cancelled_checks,
            _same_task_runs,
            description="an every-minute task cancelled at any point of its occurrence's firing",
        ),
        Case(
            "pause-resume-recurring",
            _paused_and_resumed,
            _resumed_checks,
            _same_task_runs,
            crashes=0,  # a client dying between its pause and its resume leaves the task paused, as answered
            description="an every-minute task paused and resumed at any point of its occurrence's firing",
        ),
        Case(
            "patch-recurring",
            _patched,
            _patch_checks,
            _same_task_runs,
            description="an every-minute task rescheduled at any point of its occurrence's firing",
        ),
        Case(
            "patch-earlier",
            _patched_earlier,
            _patched_earlier_checks,
            _this_task,
            description="a one-shot due in an hour rescheduled to a second from now",
        ),
        Case(
            "chain",
            _chained,
            _chain_checks,
            _follows_chain,
            preemptions=1,  # two: about 15 times the schedules (make verify ARGS=--deep)
            description="a one-shot whose success starts a chained task: the child runs once",
        ),
        Case(
            "redrive",
            _redriven,
            _redrive_checks,
            _follows_redrive,
            description="a dead letter redriven by two clients at once: its new run fires once",
        ),
        Case(
            "last-delivery",
            _last_delivery,
            _one_shot_ended,
            _same_task_runs,
            description="a trigger failing on an occurrence, one copy on its last delivery: given up once",
        ),
        Case(
            "workflow-join",
            _diamond,
            _diamond_checks,
            _follows_workflow,
            preemptions=1,  # two: make verify ARGS=--deep
            description="a diamond workflow's b and c end on triggers of their own: the join d fires once",
        ),
    ]
}
