"""``sundial status-index backfill``: puts a deployment's items written before the status index
into it (docs/status-index.md, section 5), once after the upgrade that brought the index: a Scan of
the stack's table with the operator's own AWS credentials, as ``sundial admin-key`` writes the
admin key (shared/store/status_backfill.py; no API call: the API never scans)."""

from __future__ import annotations

import json

import click

from shared.domain.errors import StorageUnavailable
from shared.store.status_backfill import backfill
from sundial_cli.commands.admin_key import AwsFailed, _session, _target, table_of

DEFAULT_LIST_SHARDS = 4
"""The stack's ``sundial:listShards`` unless a deployment set another (shared/settings/tuning.py)."""


@click.group("status-index")
def status_index() -> None:
    """The status index of the deployment's table (failed and paused tasks, running and failed jobs,
    waiting dead letters, failed workflow runs: docs/status-index.md)."""


@status_index.command("backfill")
@_target
@click.option(
    "--list-shards",
    type=click.IntRange(min=1),
    default=DEFAULT_LIST_SHARDS,
    show_default=True,
    help="The deployment's sundial:listShards (cdk.json).",
)
def backfill_command(stack: str, table: str | None, region: str | None, list_shards: int) -> None:
    """Give every item in a status the index holds, written before the index existed, its keys.

    Run once after deploying the version that brought the index; running it again writes nothing.
    Needs dynamodb:Scan and dynamodb:UpdateItem on the table (and cloudformation:DescribeStacks
    without --table). Prints how many items of each kind it wrote, as JSON.
    """
    session = _session(region)
    table = table or table_of(session, stack)
    try:
        written = backfill(session.client("dynamodb"), table, list_shards)
    except StorageUnavailable as exc:
        raise AwsFailed(str(exc)) from exc
    click.echo(json.dumps(dict(written), sort_keys=True))
