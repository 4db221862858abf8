"""``sundial tasks bulk``: pause, resume or cancel every task a selector picks (a name prefix, a tag
or a status), a step at a time to the end; ``--dry-run`` counts what would change (docs/bulk.md)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from shared.api.operations import BulkOut
from shared.domain.bulk import BulkAction
from shared.domain.states import TaskFilter
from sundial_cli import output
from sundial_cli.client import Answer
from sundial_cli.commands.common import Group, State, choice, pass_state
from sundial_cli.output import Column, field


def tag_pair(text: str) -> dict[str, str]:
    """``KEY:VALUE`` (split at the first colon) as a one-tag map; a usage error otherwise."""
    key, separator, value = text.partition(":")
    if not separator or not key:
        raise click.BadParameter(f"takes KEY:VALUE (team:orders), not {text!r}", param_hint="--tag")
    return {key: value}


@click.group("bulk", cls=Group)
def bulk() -> None:
    """Pause, resume or cancel every task a selector picks."""


def selector_options(command: Callable[..., Any]) -> Callable[..., Any]:
    for decorator in reversed(
        (
            click.option("--name-prefix", metavar="PREFIX", help="The tasks whose name starts with it."),
            click.option("--tag", metavar="KEY:VALUE", help="The tasks that have this tag."),
            click.option("--status", type=choice(TaskFilter), help="The tasks in this status."),
            click.option("--dry-run", is_flag=True, help="Change nothing: count what would change."),
            click.option("--idempotency-key", metavar="KEY", help="Step i sends KEY:i (a retried command replays)."),
        )
    ):
        command = decorator(command)
    return command


def run(
    state: State,
    action: BulkAction,
    name_prefix: str | None,
    tag: str | None,
    status: str | None,
    dry_run: bool,
    idempotency_key: str | None,
) -> None:
    given = {"name_prefix": name_prefix, "tag": tag_pair(tag) if tag else None, "status": status}
    selector = {name: value for name, value in given.items() if value is not None}
    if len(selector) != 1:
        raise click.UsageError("give one of --name-prefix, --tag, --status")
    client = state.client()
    send = {BulkAction.PAUSE: client.pause_tasks, BulkAction.RESUME: client.resume_tasks}.get(
        action, client.cancel_tasks
    )
    steps: list[Answer[BulkOut]] = []
    cursor: str | None = None
    while True:
        body: dict[str, Any] = {"selector": selector, "dry_run": dry_run, **({"cursor": cursor} if cursor else {})}
        key = f"{idempotency_key[:240]}:{len(steps)}" if idempotency_key else None
        steps.append(send(body, key))
        cursor = steps[-1].model.next_cursor
        if cursor is None:
            break
    data = {
        "action": action.value,
        "dry_run": dry_run,
        "selected": sum(step.model.selected for step in steps),
        "changed": sum(step.model.changed for step in steps),
        "unchanged": sum(step.model.unchanged for step in steps),
        "changed_ids": [task_id for step in steps for task_id in step.model.changed_ids],
        "errors": [error for step in steps for error in step.data["errors"]],
        "next_cursor": None,
    }
    answer = Answer(BulkOut.model_validate(data), data, steps[-1].headers)

    def render() -> None:
        if answer.model.errors:
            columns = (
                field("task_id", no_wrap=True),
                Column("error", lambda e: f"{e['error']['code']}: {e['error']['message']}"),
            )
            output.table(answer.data["errors"], columns)
        verb = {"pause": "paused", "resume": "resumed", "cancel": "cancelled"}[action.value]
        said = f"would be {verb}" if dry_run else verb
        output.note(
            f"{said}: {answer.model.changed}; unchanged: {answer.model.unchanged}; errors: {len(answer.model.errors)} "
            f"({answer.model.selected} selected in {len(steps)} step{'s' if len(steps) != 1 else ''})"
        )

    state.show(answer, render)


@bulk.command("pause")
@selector_options
@pass_state
def pause(state: State, **flags: Any) -> None:
    """Pause every scheduled task the selector picks.

    \b
    sundial tasks bulk pause --tag team:orders --dry-run
    """
    run(state, BulkAction.PAUSE, **flags)


@bulk.command("resume")
@selector_options
@pass_state
def resume(state: State, **flags: Any) -> None:
    """Resume every paused task the selector picks (what each missed follows its misfire)."""
    run(state, BulkAction.RESUME, **flags)


@bulk.command("cancel")
@selector_options
@pass_state
def cancel(state: State, **flags: Any) -> None:
    """Cancel every task the selector picks that can still fire (or failed)."""
    run(state, BulkAction.CANCEL, **flags)
