"""``sundial tasks`` and ``sundial schedules``: register (one, or a batch), read, list, change,
pause, resume, run now, cancel, a task's runs; a schedule's next occurrences."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, get_args

import click

from shared.api.models.calls import HttpCall
from shared.domain.retry import Backoff
from shared.domain.states import TaskFilter
from shared.domain.tasks import Misfire, Priority
from sundial_cli import output
from sundial_cli.commands.bulk import tag_pair
from sundial_cli.commands.common import (
    Group,
    State,
    choice,
    json_value,
    listing,
    options,
    paging,
    pass_state,
    read_document,
    read_object,
)
from sundial_cli.output import Column, field
from sundial_cli.specs import SpecError, summary, task_body

F = TypeVar("F", bound=Callable[..., Any])

TASK_COLUMNS = (
    field("id", no_wrap=True),
    field("name"),
    field("status"),
    field("last_run.status", "last_run", no_wrap=True),
    field("next_fire_at", no_wrap=True),
    Column("schedule", lambda task: summary(task["schedule"])),
)
RUN_COLUMNS = (
    field("run_id", no_wrap=True),
    field("scheduled_for", no_wrap=True),
    field("status"),
    field("attempts"),
    field("lateness_ms"),
    field("last_error"),
    Column("started", lambda run: " ".join(run.get("started") or ()), no_wrap=True),
    Column("parent", lambda run: (run.get("parent") or {}).get("run_id") or "", no_wrap=True),
)


def schedule_options(command: F) -> F:
    for decorator in reversed(
        (
            click.option("--at", metavar="TIME", help="Fire once at this ISO 8601 time (with an offset or Z)."),
            click.option("--after", type=float, metavar="SECONDS", help="Fire once, this long from now."),
            click.option("--cron", metavar="EXPR", help="A cron expression (5 fields, or 6 with seconds first)."),
            click.option("--every", type=float, metavar="SECONDS", help="Fire at a fixed rate."),
            click.option(
                "--after-end",
                is_flag=True,
                default=None,
                help="With --every: a fixed delay, each run the period after the one before ended (after: end).",
            ),
            click.option("--timezone", metavar="IANA", help="The cron's (or a calendar rule's) time zone."),
            click.option("--start", metavar="TIME", help="No occurrence before it (cron, every)."),
            click.option("--end", metavar="TIME", help="No occurrence after it (cron, every)."),
        )
    ):
        command = decorator(command)
    return command


def spec_options(command: F) -> F:
    """The flags that make a task spec (create) or a patch (update)."""
    for decorator in reversed(
        (
            click.option("--file", "-f", "path", metavar="FILE", help="A task spec in JSON or YAML ('-': stdin)."),
            click.option("--name", help="The task's name."),
            click.option("--url", metavar="URL", help="The HTTP target's URL."),
            click.option("--method", type=choice(get_args(HttpCall.model_fields["method"].annotation))),
            click.option("--header", "headers", multiple=True, metavar="NAME=VALUE", help="A target header (repeat)."),
            click.option("--payload", metavar="JSON", help="The JSON value handed to the target."),
            click.option(
                "--state-machine",
                metavar="ARN",
                help="Start an execution of this Step Functions state machine (a stepfunctions target).",
            ),
            click.option(
                "--execution-input", metavar="JSON", help="The execution's input (default: Sundial's envelope)."
            ),
            click.option("--max-attempts", type=int, help="Attempts in all, the first included."),
            click.option("--backoff", type=choice(Backoff)),
            click.option("--interval", type=float, metavar="SECONDS", help="The retry interval."),
            click.option("--misfire", type=choice(Misfire)),
            click.option("--priority", type=choice(Priority)),
            click.option("--pause-after-failures", type=int, metavar="N", help="Pause after N failures in a row."),
            click.option(
                "--on-success", multiple=True, metavar="TASK_ID", help="Run this task once after each success (repeat)."
            ),
            click.option(
                "--on-failure",
                multiple=True,
                metavar="TASK_ID",
                help="Run this task once after each final failure (repeat).",
            ),
            click.option(
                "--tag",
                "tags",
                multiple=True,
                metavar="KEY:VALUE",
                help="A tag (repeat); on update, the tags given replace the task's.",
            ),
        )
    ):
        command = decorator(command)
    return schedule_options(command)


def schedule_flags(flags: dict[str, Any]) -> dict[str, Any]:
    """The schedule options taken out of ``flags``, named as the API's schedule members."""
    names = {"at": "at", "after": "after_seconds", "cron": "cron", "every": "every_seconds"}
    names.update({name: name for name in ("timezone", "start", "end")})
    members = {member: flags.pop(option) for option, member in names.items()}
    members["after"] = "end" if flags.pop("after_end") else None
    return members


def body_from(flags: dict[str, Any]) -> dict[str, Any]:
    """A spec from ``--file`` and the flags (the flags win)."""
    payload = flags.pop("payload")
    execution_input = flags.pop("execution_input")
    for chain in ("on_success", "on_failure"):
        flags[chain] = list(flags.pop(chain)) or None  # not given: the file's (or none)
    given_tags = [tag_pair(text) for text in flags.pop("tags")]
    flags["tags"] = {key: value for pair in given_tags for key, value in pair.items()} or None
    try:
        return task_body(
            read_object(flags.pop("path")),
            schedule=schedule_flags(flags),
            url=flags.pop("url"),
            method=flags.pop("method"),
            headers=flags.pop("headers"),
            state_machine=flags.pop("state_machine"),
            execution_input=json_value(execution_input, "--execution-input") if execution_input is not None else None,
            retry={
                "max_attempts": flags.pop("max_attempts"),
                "backoff": flags.pop("backoff"),
                "interval_seconds": flags.pop("interval"),
            },
            members={**flags, "payload": json_value(payload, "--payload") if payload is not None else None},
        )
    except SpecError as exc:
        raise click.UsageError(str(exc)) from exc


def show_task(state: State, answer: Any) -> None:
    """A task as a record; what the API noticed about the write (an ``at`` already past fires at
    once) on stderr after it."""

    def render() -> None:
        model = answer.model
        output.record(model.model_copy(update={"notices": None}))
        for notice in model.notices or ():
            output.note(f"notice: {notice.field}: {notice.message}")

    state.show(answer, render)


@click.group("tasks", cls=Group)
def tasks() -> None:
    """Register, read, list, change and run tasks."""


@tasks.command("create")
@spec_options
@click.option("--idempotency-key", metavar="KEY", help="Send Idempotency-Key: a retry gets the first answer.")
@pass_state
def create(state: State, idempotency_key: str | None, **flags: Any) -> None:
    """Register a task from flags and/or a file (flags override the file's members).

    \b
    sundial tasks create --name close-order-123 --after 10 \\
        --url http://127.0.0.1:9000/hook --header X-Team=orders --payload '{"order_id": 123}'
    """
    answer = state.client().create_task(body_from(flags), idempotency_key)
    show_task(state, answer)
    if answer.headers.get("Idempotent-Replayed") == "true" and not state.json:
        output.note("(replayed: the first answer for this Idempotency-Key)")


@tasks.command("batch")
@click.option("--file", "-f", "path", required=True, metavar="FILE", help="{tasks: [...]} or a list of specs.")
@click.option("--idempotency-key", metavar="KEY")
@pass_state
def batch(state: State, path: str, idempotency_key: str | None) -> None:
    """Register up to 100 tasks, each on its own: each gets its task or its error."""
    data = read_document(path)
    specs = data.get("tasks") if isinstance(data, dict) else data
    if not isinstance(specs, list):
        raise click.BadParameter("must hold a list of task specs, or {tasks: [...]}", param_hint="--file")
    answer = state.client().create_tasks(specs, idempotency_key)

    def render() -> None:
        columns = (
            field("index"),
            field("task.id", "task", no_wrap=True),
            Column("status", lambda item: item["task"]["status"] if "task" in item else "error"),
            Column("error", _batch_error),
        )
        output.table(answer.model.items, columns)

    state.show(answer, render)


def _batch_error(item: dict[str, Any]) -> str | None:
    error = item.get("error")
    if error is None:
        return None
    fields = "; ".join(f"{d['field']}: {d['message']}" for d in error.get("details") or ())
    return f"{error['code']}: {fields or error['message']}"


@tasks.command("get")
@click.argument("task_id")
@pass_state
def get(state: State, task_id: str) -> None:
    """Read a task."""
    show_task(state, state.client().get_task(task_id))


@tasks.command("list")
@click.option(
    "--status",
    type=choice(TaskFilter),
    help="Tasks of this status; paused_after_failures: those Sundial paused after failures in a row.",
)
@click.option("--name-prefix", metavar="PREFIX", help="Tasks whose name starts with it.")
@click.option("--tag", metavar="KEY:VALUE", help="Tasks that have this tag.")
@paging
@pass_state
def list_(
    state: State,
    status: str | None,
    name_prefix: str | None,
    tag: str | None,
    limit: int | None,
    cursor: str | None,
    all_pages: bool,
) -> None:
    """List tasks, newest first: a page of --limit, read on past a filtered page that came back
    short (then `more: --cursor ...` says how to go on). A task just written may take a moment to
    be listed (lists are eventually consistent); `tasks get ID` reads it at once."""
    client = state.client()
    params = options(status=status, name_prefix=name_prefix, tag=tag, limit=limit, cursor=cursor)
    listing(state, client.list_tasks, TASK_COLUMNS, all_pages, **params)


@tasks.command("update")
@click.argument("task_id")
@spec_options
@click.option("--if-match", type=int, metavar="VERSION", help="Change only this version (412 otherwise).")
@pass_state
def update(state: State, task_id: str, if_match: int | None, **flags: Any) -> None:
    """Change a task: the members given replace the task's (a new schedule re-arms it; a target
    flag replaces the target, a retry flag the retry).

    \b
    sundial tasks update 01J... --after 30
    """
    patch = body_from(flags)
    if not patch:
        raise click.UsageError("nothing to change: give --file or a flag")
    show_task(state, state.client().update_task(task_id, patch, if_match))


@tasks.command("pause")
@click.argument("task_id")
@pass_state
def pause(state: State, task_id: str) -> None:
    """Pause a task: nothing fires while it is paused."""
    show_task(state, state.client().pause_task(task_id))


@tasks.command("resume")
@click.argument("task_id")
@pass_state
def resume(state: State, task_id: str) -> None:
    """Resume a paused task (what it missed follows its misfire)."""
    show_task(state, state.client().resume_task(task_id))


@tasks.command("run")
@click.argument("task_id")
@click.option("--idempotency-key", metavar="KEY")
@pass_state
def run(state: State, task_id: str, idempotency_key: str | None) -> None:
    """One extra run of the task, now (the schedule does not move)."""
    answer = state.client().run_task(task_id, idempotency_key)
    state.show(answer, lambda: output.record(answer.model))


@tasks.command("cancel")
@click.argument("task_id")
@pass_state
def cancel(state: State, task_id: str) -> None:
    """Cancel a task: nothing fires from now on (it stays readable)."""
    state.client().cancel_task(task_id)
    if not state.json:
        output.note(f"cancelled {task_id}")


@tasks.command("runs")
@click.argument("task_id")
@paging
@pass_state
def runs(state: State, task_id: str, limit: int | None, cursor: str | None, all_pages: bool) -> None:
    """A task's runs (its occurrences), newest first."""
    client = state.client()

    def fetch(**params: Any) -> Any:
        return client.list_runs(task_id, **params)

    listing(state, fetch, RUN_COLUMNS, all_pages, **options(limit=limit, cursor=cursor))


@click.group("schedules", cls=Group)
def schedules() -> None:
    """Try schedules out without registering anything."""


@schedules.command("preview")
@schedule_options
@click.option("--file", "-f", "path", metavar="FILE", help="{schedule: ...} or a task spec, in JSON or YAML.")
@click.option("--count", type=click.IntRange(1, 100), help="How many occurrences (default 5).")
@click.option("--from", "from_", metavar="TIME", help="The occurrences after this time (default: now).")
@pass_state
def preview(state: State, path: str | None, count: int | None, from_: str | None, **flags: Any) -> None:
    """The next occurrences of a schedule.

    \b
    sundial schedules preview --cron '0 9 * * 1-5' --timezone Asia/Shanghai --count 3
    """
    base = read_object(path)
    try:
        body = task_body(
            {"schedule": base["schedule"]} if "schedule" in base else {},
            schedule=schedule_flags(flags),
            members={"count": count or base.get("count"), "after": from_ or base.get("after")},
        )
    except SpecError as exc:
        raise click.UsageError(str(exc)) from exc
    if "schedule" not in body:
        raise click.UsageError("give a schedule: --at, --after, --cron, --every or --file")
    answer = state.client().preview(body)

    def render() -> None:
        output.table([{"time": time} for time in answer.data["times"]], (field("time"),))
        for text in answer.model.notes:
            output.note(f"note: {text}")

    state.show(answer, render)
