"""``sundial tasks backfill``, ``backfills`` and ``backfill-cancel``: fire a recurring task's past
occurrences at a bounded pace, read how far a backfill got, cancel it (docs/backfill.md)."""

from __future__ import annotations

from typing import Any

import click

from sundial_cli import output
from sundial_cli.commands.common import State, listing, options, paging, pass_state
from sundial_cli.output import Column, field

BACKFILL_COLUMNS = (
    field("backfill_id", no_wrap=True),
    field("status"),
    field("from", no_wrap=True),
    field("to", no_wrap=True),
    field("per_second"),
    field("occurrences"),
    Column("left_out", lambda b: ", ".join(f"{k}: {v}" for k, v in sorted(b["left_out"].items()))),
    field("last_fire_at", no_wrap=True),
)


def show(state: State, answer: Any) -> None:
    state.show(answer, lambda: output.record(answer.model))


@click.command("backfill")
@click.argument("task_id")
@click.option("--from", "start", required=True, metavar="TIME", help="The window's start, included (ISO 8601).")
@click.option("--to", "end", required=True, metavar="TIME", help="The window's end, excluded; not after now.")
@click.option("--per-second", type=float, required=True, metavar="N", help="At most N occurrences a second (0.01-100).")
@click.option("--idempotency-key", metavar="KEY")
@pass_state
def backfill(state: State, task_id: str, start: str, end: str, per_second: float, idempotency_key: str | None) -> None:
    """Fire a recurring task's occurrences in a past window, oldest first, at most N a second, each
    once, as runs of the task with their own scheduled_for.

    \b
    sundial tasks backfill 01J... --from 2026-03-01T00:00:00Z --to 2026-03-02T00:00:00Z --per-second 2
    """
    body = {"from": start, "to": end, "per_second": per_second}
    show(state, state.client().start_backfill(task_id, body, idempotency_key))


@click.command("backfills")
@click.argument("task_id")
@click.argument("backfill_id", required=False)
@paging
@pass_state
def backfills(
    state: State, task_id: str, backfill_id: str | None, limit: int | None, cursor: str | None, all_pages: bool
) -> None:
    """A task's backfills, newest first; with BACKFILL_ID, that one and how far it got."""
    client = state.client()
    if backfill_id is not None:
        show(state, client.get_backfill(task_id, backfill_id))
        return

    def fetch(**params: Any) -> Any:
        return client.list_backfills(task_id, **params)

    listing(state, fetch, BACKFILL_COLUMNS, all_pages, **options(limit=limit, cursor=cursor))


@click.command("backfill-cancel")
@click.argument("task_id")
@click.argument("backfill_id")
@pass_state
def backfill_cancel(state: State, task_id: str, backfill_id: str) -> None:
    """Cancel a backfill: none of its runs not fired yet fires (their occurrences can be backfilled again)."""
    show(state, state.client().cancel_backfill(task_id, backfill_id))
