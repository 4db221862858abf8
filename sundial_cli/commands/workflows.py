"""``sundial workflows``: register (from a file), read, list, change and delete workflows; start
a run (and wait for its end), list runs, a run's nodes, a node's run, cancel and retry a run."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

import click

from shared.domain.workflows import NodeStatus, RunFilter
from sundial_cli import output
from sundial_cli.client import Answer, Client
from sundial_cli.commands.common import Group, State, choice, listing, options, paging, pass_state, read_object
from sundial_cli.commands.tasks import schedule_flags, schedule_options
from sundial_cli.output import Column, field
from sundial_cli.specs import SpecError, summary, task_body

F = TypeVar("F", bound=Callable[..., Any])

WORKFLOW_COLUMNS = (
    field("id", no_wrap=True),
    field("name"),
    field("version"),
    Column("nodes", lambda workflow: len(workflow["nodes"])),
    Column("edges", lambda workflow: len(workflow["edges"])),
    Column("schedule", lambda workflow: summary(workflow["schedule"]) if workflow.get("schedule") else None),
    field("updated_at", no_wrap=True),
)
RUN_COLUMNS = (
    field("run_id", no_wrap=True),
    field("status"),
    field("version"),
    Column("nodes", lambda run: node_counts(run["nodes"])),
    field("created_at", no_wrap=True),
    field("ended_at", no_wrap=True),
)
TENANT_RUN_COLUMNS = (RUN_COLUMNS[0], field("workflow_id", no_wrap=True), *RUN_COLUMNS[1:])
NODE_COLUMNS = (
    field("node", no_wrap=True),
    field("status"),
    field("attempt"),
    field("started_at", "started", no_wrap=True),
    field("ended_at", "ended", no_wrap=True),
    field("error"),
)

WAIT_FIRST_POLL = 0.2
WAIT_MOST_POLL = 2.0


def node_counts(nodes: dict[str, Any]) -> str:
    """How many nodes are in each status: ``succeeded 3, running 1``."""
    counts: dict[str, int] = {}
    for node in nodes.values():
        counts[node["status"]] = counts.get(node["status"], 0) + 1
    return ", ".join(f"{status} {count}" for status, count in counts.items())


def body_from(path: str | None, name: str | None, flags: dict[str, Any]) -> dict[str, Any]:
    """A workflow spec (or patch): the file's object, ``--name`` and the schedule flags over it."""
    try:
        return task_body(read_object(path), schedule=schedule_flags(flags), members=options(name=name))
    except SpecError as exc:
        raise click.UsageError(str(exc)) from exc


def show_run(state: State, answer: Answer[Any]) -> None:
    """A run: its nodes as a table (in the graph's order), the run's own status on stderr."""

    def render() -> None:
        run = answer.data
        order = [*run["graph"]["nodes"], *(name for name in run["nodes"] if name not in run["graph"]["nodes"])]
        output.table([{"node": name, **run["nodes"][name]} for name in order if name in run["nodes"]], NODE_COLUMNS)
        ended = f", ended {run['ended_at']}" if run.get("ended_at") else ""
        output.note(f"run {run['run_id']}: {run['status']} (version {run['version']}{ended})")

    state.show(answer, render)


def waited(client: Client, workflow_id: str, run_id: str, timeout: float) -> Answer[Any]:
    """The run once it has ended, or as it stands when ``timeout`` seconds have passed (polled,
    from 0.2 s apart up to 2 s apart)."""
    deadline = time.monotonic() + timeout
    pause = WAIT_FIRST_POLL
    while True:
        answer = client.get_workflow_run(workflow_id, run_id)
        left = deadline - time.monotonic()
        if answer.model.status is not NodeStatus.RUNNING or left <= 0:
            return answer
        time.sleep(min(pause, left))
        pause = min(pause * 1.5, WAIT_MOST_POLL)


def wait_options(command: F) -> F:
    command = click.option(
        "--wait-timeout",
        type=click.FloatRange(min=0),
        default=600.0,
        show_default=True,
        metavar="SECONDS",
        help="How long --wait waits.",
    )(command)
    return click.option(
        "--wait",
        is_flag=True,
        help=f"Wait for the run to end and print it: exit 0 when it succeeded, {output.EXIT_RUN_FAILED} when it "
        f"failed or was cancelled, {output.EXIT_STILL_RUNNING} when it is still running at --wait-timeout.",
    )(command)


def finish(state: State, workflow_id: str, run_id: str, timeout: float) -> None:
    """Wait for the run, print it, and exit with what it came to."""
    answer = waited(state.client(), workflow_id, run_id, timeout)
    show_run(state, answer)
    status = answer.model.status
    if status is NodeStatus.SUCCEEDED:
        return
    if status is NodeStatus.RUNNING:
        output.note(f"still running after {timeout:g} s")
        click.get_current_context().exit(output.EXIT_STILL_RUNNING)
    click.get_current_context().exit(output.EXIT_RUN_FAILED)


@click.group("workflows", cls=Group)
def workflows() -> None:
    """Tasks joined in a graph: register, change, run, follow, cancel and retry."""


@workflows.command("create")
@click.option(
    "--file", "-f", "path", required=True, metavar="FILE", help="{name?, nodes, edges, schedule?} ('-': stdin)."
)
@click.option("--name", help="The workflow's name (overrides the file's).")
@schedule_options
@click.option("--idempotency-key", metavar="KEY", help="Send Idempotency-Key: a retry gets the first answer.")
@pass_state
def create(state: State, path: str, name: str | None, idempotency_key: str | None, **flags: Any) -> None:
    """Register a workflow from a JSON or YAML file (schedule flags override the file's).

    \b
    sundial workflows create --file nightly.yaml --cron '0 2 * * *' --timezone Europe/Paris
    """
    answer = state.client().create_workflow(body_from(path, name, flags), idempotency_key)
    state.show(answer, lambda: output.record(answer.model))
    if answer.headers.get("Idempotent-Replayed") == "true" and not state.json:
        output.note("(replayed: the first answer for this Idempotency-Key)")


@workflows.command("list")
@paging
@pass_state
def list_(state: State, limit: int | None, cursor: str | None, all_pages: bool) -> None:
    """Workflows, newest first (a workflow just written may take a moment to be listed)."""
    listing(state, state.client().list_workflows, WORKFLOW_COLUMNS, all_pages, **options(limit=limit, cursor=cursor))


@workflows.command("get")
@click.argument("workflow_id")
@pass_state
def get(state: State, workflow_id: str) -> None:
    """A workflow: its nodes, edges and schedule."""
    answer = state.client().get_workflow(workflow_id)
    state.show(answer, lambda: output.record(answer.model))


@workflows.command("update")
@click.argument("workflow_id")
@click.option("--file", "-f", "path", metavar="FILE", help="A patch: name, nodes with edges, schedule (null: none).")
@click.option("--name", help="The workflow's new name.")
@schedule_options
@pass_state
def update(state: State, workflow_id: str, path: str | None, name: str | None, **flags: Any) -> None:
    """Change a workflow: what is given replaces what was (nodes and edges together); the next
    run follows the new version.

    \b
    sundial workflows update 01K... --file graph.yaml
    """
    patch = body_from(path, name, flags)
    if not patch:
        raise click.UsageError("nothing to change: give --file, --name or a schedule flag")
    answer = state.client().update_workflow(workflow_id, patch)
    state.show(answer, lambda: output.record(answer.model))


@workflows.command("delete")
@click.argument("workflow_id")
@pass_state
def delete(state: State, workflow_id: str) -> None:
    """Delete a workflow (and its schedule)."""
    state.client().delete_workflow(workflow_id)
    if not state.json:
        output.note(f"deleted {workflow_id}")


@workflows.command("run")
@click.argument("workflow_id")
@click.option("--idempotency-key", metavar="KEY")
@wait_options
@pass_state
def run(state: State, workflow_id: str, idempotency_key: str | None, wait: bool, wait_timeout: float) -> None:
    """Start a run now: its run id, or with --wait the run once it has ended.

    \b
    sundial workflows run 01K... --wait
    """
    answer = state.client().run_workflow(workflow_id, idempotency_key)
    if not wait:
        state.show(answer, lambda: output.record(answer.model))
        return
    if not state.json:
        output.note(f"run {answer.model.run_id} started: waiting for it to end")
    finish(state, workflow_id, answer.model.run_id, wait_timeout)


@workflows.command("runs")
@click.argument("workflow_id")
@paging
@pass_state
def runs(state: State, workflow_id: str, limit: int | None, cursor: str | None, all_pages: bool) -> None:
    """A workflow's runs, newest first."""
    client = state.client()

    def fetch(**params: Any) -> Any:
        return client.list_workflow_runs(workflow_id, **params)

    listing(state, fetch, RUN_COLUMNS, all_pages, **options(limit=limit, cursor=cursor))


@workflows.command("run-status")
@click.argument("workflow_id")
@click.argument("run_id")
@wait_options
@pass_state
def run_status(state: State, workflow_id: str, run_id: str, wait: bool, wait_timeout: float) -> None:
    """A run, node by node: status, attempt, when it started and ended, why it failed."""
    if wait:
        finish(state, workflow_id, run_id, wait_timeout)
    else:
        show_run(state, state.client().get_workflow_run(workflow_id, run_id))


@workflows.command("node-run")
@click.argument("workflow_id")
@click.argument("run_id")
@click.argument("node")
@pass_state
def node_run(state: State, workflow_id: str, run_id: str, node: str) -> None:
    """A node's run in a workflow run: attempts, lateness, last error."""
    answer = state.client().get_node_run(workflow_id, run_id, node)
    state.show(answer, lambda: output.record(answer.model))


@workflows.command("cancel")
@click.argument("workflow_id")
@click.argument("run_id")
@pass_state
def cancel(state: State, workflow_id: str, run_id: str) -> None:
    """Cancel a run: every node not ended is cancelled and none starts after it."""
    show_run(state, state.client().cancel_workflow_run(workflow_id, run_id))


@workflows.command("retry")
@click.argument("workflow_id")
@click.argument("run_id")
@wait_options
@pass_state
def retry(state: State, workflow_id: str, run_id: str, wait: bool, wait_timeout: float) -> None:
    """Run a failed or cancelled run's failed, cancelled and skipped nodes again (those that
    succeeded do not run again)."""
    answer = state.client().retry_workflow_run(workflow_id, run_id)
    if wait:
        finish(state, workflow_id, run_id, wait_timeout)
    else:
        show_run(state, answer)


@click.group("workflow-runs", cls=Group)
def workflow_runs() -> None:
    """Every workflow's runs of a status (failed), newest first."""


@workflow_runs.command("list")
@click.option("--status", type=choice(RunFilter), default=RunFilter.FAILED.value, show_default=True)
@paging
@pass_state
def list_runs_by_status(state: State, status: str, limit: int | None, cursor: str | None, all_pages: bool) -> None:
    """The failed runs of every workflow, newest first, each naming its workflow (`workflows
    run-status WORKFLOW_ID RUN_ID` shows one node by node)."""
    params = options(status=status, limit=limit, cursor=cursor)
    listing(state, state.client().list_runs_by_status, TENANT_RUN_COLUMNS, all_pages, **params)
