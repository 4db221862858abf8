"""``sundial dead-letters``, ``jobs``, ``limits`` and ``signing-secrets``: a tenant's other
resources."""

from __future__ import annotations

from typing import Any

import click

from shared.api.responses import RedriveOut
from shared.domain.jobs import JobStatus
from shared.domain.states import LetterStatus
from sundial_cli import output
from sundial_cli.client import Answer
from sundial_cli.commands.common import (
    Group,
    State,
    choice,
    json_value,
    listing,
    options,
    paging,
    pass_state,
    read_object,
)
from sundial_cli.output import Column, field


def _letter_task(letter: dict[str, Any]) -> Any:
    """A task's id; none for a workflow node's letter (its task_id is the workflow's)."""
    return None if letter.get("workflow") else letter.get("task_id")


def _letter_node(letter: dict[str, Any]) -> Any:
    """A workflow node's letter: ``WORKFLOW_ID RUN_ID NODE``, as ``sundial workflows node-run`` takes them."""
    workflow = letter.get("workflow")
    if not isinstance(workflow, dict):
        return None
    return f"{workflow.get('id')} {workflow.get('run_id')} {workflow.get('node')}"


LETTER_COLUMNS = (
    field("id", no_wrap=True),
    Column("task_id", _letter_task, no_wrap=True),
    Column("workflow node", _letter_node, no_wrap=True),
    field("name"),
    field("status"),
    field("failed_at", no_wrap=True),
    field("attempts"),
    field("reason"),
)
JOB_COLUMNS = (
    field("id", no_wrap=True),
    field("name"),
    field("status"),
    field("progress.percent", "percent"),
    field("progress.done_shards", "done"),
    field("progress.total_shards", "shards"),
    field("progress.done_items", "items done"),
    field("progress.total_items", "items"),
    field("created_at", no_wrap=True),
    field("error"),
)
LIMIT_COLUMNS = (
    field("name", no_wrap=True),
    field("origin"),
    field("per_second"),
    field("burst"),
    field("max_in_flight"),
    field("version"),
    field("updated_at", no_wrap=True),
)
SECRET_COLUMNS = (field("id", no_wrap=True), field("created_at", no_wrap=True), field("expires_at", no_wrap=True))


def show_one(state: State, answer: Any) -> None:
    state.show(answer, lambda: output.record(answer.model))


# --- dead letters ---------------------------------------------------------------------


@click.group("dead-letters", cls=Group)
def dead_letters() -> None:
    """Runs that failed every attempt: inspect and redrive them."""


@dead_letters.command("list")
@click.option("--status", type=choice(LetterStatus))
@paging
@pass_state
def list_letters(state: State, status: str | None, limit: int | None, cursor: str | None, all_pages: bool) -> None:
    """Dead letters, newest first."""
    client = state.client()
    listing(
        state, client.list_dead_letters, LETTER_COLUMNS, all_pages, **options(status=status, limit=limit, cursor=cursor)
    )


@dead_letters.command("get")
@click.argument("letter_id")
@pass_state
def get_letter(state: State, letter_id: str) -> None:
    """One dead letter: why it failed, what it fired."""
    show_one(state, state.client().get_dead_letter(letter_id))


@dead_letters.command("redrive")
@click.option("--id", "ids", multiple=True, metavar="ID", help="A dead letter to fire again (repeat, up to 100).")
@click.option(
    "--all",
    "every",
    is_flag=True,
    help="Every dead letter not redriven yet (a call per step of up to 100, until done).",
)
@click.option("--idempotency-key", metavar="KEY")
@pass_state
def redrive(state: State, ids: tuple[str, ...], every: bool, idempotency_key: str | None) -> None:
    """Fire dead letters once more, as they were recorded.

    \b
    sundial dead-letters redrive --all
    """
    if bool(ids) == every:
        raise click.UsageError("give --id (one or more) or --all")
    body: dict[str, Any] = {"all": True} if every else {"ids": list(ids)}
    client = state.client()
    answer = client.redrive(body, idempotency_key)
    if every:  # the API redrives all a step at a time: follow next_cursor until it is null
        steps = [answer]
        while (cursor := steps[-1].model.next_cursor) is not None:
            # each step's body differs (its cursor): a key of its own, the same on a retry of the command
            key = f"{idempotency_key[:240]}:{len(steps)}" if idempotency_key else None
            steps.append(client.redrive({"all": True, "cursor": cursor}, key))
        runs = [run for step in steps for run in step.model.runs]
        data = {
            "redriven": len(runs),
            "runs": [run for step in steps for run in step.data["runs"]],
            "next_cursor": None,
        }
        answer = Answer(RedriveOut(redriven=len(runs), runs=runs, next_cursor=None), data, steps[-1].headers)

    def render() -> None:
        output.table(answer.model.runs, (field("id", no_wrap=True), field("task_id"), field("run_id")))
        output.note(f"redriven: {answer.model.redriven}")

    state.show(answer, render)


# --- jobs -----------------------------------------------------------------------------


@click.group("jobs", cls=Group)
def jobs() -> None:
    """Sharded batch jobs."""


@jobs.command("create")
@click.option("--file", "-f", "path", required=True, metavar="FILE", help="A job spec in JSON or YAML ('-': stdin).")
@click.option("--name", help="The job's name (overrides the file's).")
@click.option("--idempotency-key", metavar="KEY")
@pass_state
def create_job(state: State, path: str, name: str | None, idempotency_key: str | None) -> None:
    """Start a sharded batch job.

    \b
    sundial jobs create --file reindex.yaml
    """
    spec = {**read_object(path), **options(name=name)}
    show_one(state, state.client().create_job(spec, idempotency_key))


@jobs.command("get")
@click.argument("job_id")
@pass_state
def get_job(state: State, job_id: str) -> None:
    """A job and its progress."""
    show_one(state, state.client().get_job(job_id))


@jobs.command("cancel")
@click.argument("job_id")
@pass_state
def cancel_job(state: State, job_id: str) -> None:
    """Cancel a running job: no shard starts from now on and post is not called."""
    show_one(state, state.client().cancel_job(job_id))


@jobs.command("command")
@click.argument("job_id")
@click.argument("command")
@click.option("--args", "args", metavar="JSON", help="The command's arguments, a JSON object (default {}).")
@pass_state
def send_job_command(state: State, job_id: str, command: str, args: str | None) -> None:
    """Send a command to a running job's processor: a shard's next progress report is answered
    with it (the receiver kit's ctx.commands()), once.

    \b
    sundial jobs command 01JOB... rate --args '{"per_second": 5}'
    """
    body = {"command": command, **({"args": json_value(args, "--args")} if args is not None else {})}
    show_one(state, state.client().send_job_command(job_id, body))


@jobs.command("list")
@click.option("--status", type=choice(JobStatus))
@paging
@pass_state
def list_jobs(state: State, status: str | None, limit: int | None, cursor: str | None, all_pages: bool) -> None:
    """Jobs, newest first. A job just created may take a moment to be listed (lists are
    eventually consistent); `jobs get ID` reads it at once."""
    params = options(status=status, limit=limit, cursor=cursor)
    listing(state, state.client().list_jobs, JOB_COLUMNS, all_pages, **params)


# --- limits per destination -----------------------------------------------------------


@click.group("limits", cls=Group)
def limits() -> None:
    """Limits per destination: how fast, and how many at once, targets may call a receiver."""


@limits.command("put")
@click.argument("name")
@click.option("--file", "-f", "path", metavar="FILE", help="The limit in JSON or YAML (flags override).")
@click.option("--origin", metavar="URL", help="scheme://host[:port]: every target with this origin is held.")
@click.option("--per-second", type=float, help="Calls a second on average (0.0001 to 10000).")
@click.option("--burst", type=int, help="Calls at once above the rate after a quiet spell (default 1).")
@click.option("--max-in-flight", type=int, help="Calls outstanding at once (default: no cap).")
@pass_state
def put_limit(
    state: State,
    name: str,
    path: str | None,
    origin: str | None,
    per_second: float | None,
    burst: int | None,
    max_in_flight: int | None,
) -> None:
    """Create or replace a limit, as a whole.

    \b
    sundial limits put payments --origin http://127.0.0.1:9000 --per-second 20 --burst 5 --max-in-flight 5
    """
    body = {
        **read_object(path),
        **options(origin=origin, per_second=per_second, burst=burst, max_in_flight=max_in_flight),
    }
    show_one(state, state.client().put_limit(name, body))


@limits.command("get")
@click.argument("name")
@pass_state
def get_limit(state: State, name: str) -> None:
    """A limit."""
    show_one(state, state.client().get_limit(name))


@limits.command("list")
@pass_state
def list_limits(state: State) -> None:
    """The tenant's limits, by name."""
    answer = state.client().list_limits()
    state.show(answer, lambda: output.table(answer.model.items, LIMIT_COLUMNS))


@limits.command("delete")
@click.argument("name")
@pass_state
def delete_limit(state: State, name: str) -> None:
    """Delete a limit: the targets it held are no longer held."""
    state.client().delete_limit(name)
    if not state.json:
        output.note(f"deleted {name}")


# --- signing secrets ------------------------------------------------------------------


@click.group("signing-secrets", cls=Group)
def signing_secrets() -> None:
    """The secrets callbacks are signed with (Standard Webhooks)."""


@signing_secrets.command("list")
@pass_state
def list_secrets(state: State) -> None:
    """The secrets, newest first, never their values."""
    answer = state.client().list_signing_secrets()
    state.show(answer, lambda: output.table(answer.model.items, SECRET_COLUMNS))


@signing_secrets.command("rotate")
@click.option(
    "--previous-expires-in",
    type=click.IntRange(0, 604800),
    metavar="SECONDS",
    help="How long the previous secrets keep signing too (default 86400).",
)
@pass_state
def rotate(state: State, previous_expires_in: int | None) -> None:
    """A new signing secret: its value is shown this once."""
    show_one(state, state.client().rotate_signing_secret(previous_expires_in))
