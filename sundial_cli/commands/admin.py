"""``sundial tenants`` and ``sundial keys``: the admin's commands (run them with the
deployment's admin key)."""

from __future__ import annotations

from typing import Any

import click

from sundial_cli import output
from sundial_cli.commands.common import Group, State, listing, options, paging, pass_state
from sundial_cli.output import field

TENANT_COLUMNS = (
    field("id", no_wrap=True),
    field("created_at", no_wrap=True),
    field("limits.requests_per_second", "requests/s"),
    field("limits.burst", "burst"),
    field("limits.max_tasks", "max_tasks"),
    field("live_tasks"),
)
KEY_COLUMNS = (field("id", no_wrap=True), field("created_at", no_wrap=True), field("revoked_at", no_wrap=True))


def limit_options(command: Any) -> Any:
    command = click.option("--max-tasks", type=int, help="Tasks that can still fire.")(command)
    command = click.option("--burst", type=int, help="Requests at once above the rate.")(command)
    return click.option("--requests-per-second", type=int, help="The tenant's API rate.")(command)


@click.group("tenants", cls=Group)
def tenants() -> None:
    """Tenants (admin key)."""


@tenants.command("create")
@click.argument("tenant_id")
@limit_options
@pass_state
def create(state: State, tenant_id: str, **limits: int | None) -> None:
    """Create a tenant, with its first API key and signing secret (shown this once).

    \b
    sundial --api-key "$ADMIN" tenants create acme --requests-per-second 20
    """
    given = options(**limits)
    body: dict[str, Any] = {"id": tenant_id, **({"limits": given} if given else {})}
    answer = state.client().create_tenant(body)
    state.show(answer, lambda: output.record(answer.model))


@tenants.command("list")
@paging
@pass_state
def list_(state: State, limit: int | None, cursor: str | None, all_pages: bool) -> None:
    """Tenants, by id."""
    listing(state, state.client().list_tenants, TENANT_COLUMNS, all_pages, **options(limit=limit, cursor=cursor))


@tenants.command("get")
@click.argument("tenant_id")
@pass_state
def get(state: State, tenant_id: str) -> None:
    """A tenant."""
    answer = state.client().get_tenant(tenant_id)
    state.show(answer, lambda: output.record(answer.model))


@tenants.command("update")
@click.argument("tenant_id")
@limit_options
@pass_state
def update(state: State, tenant_id: str, **limits: int | None) -> None:
    """Change a tenant's limits (those left out keep their value)."""
    given = options(**limits)
    if not given:
        raise click.UsageError("give --requests-per-second, --burst or --max-tasks")
    answer = state.client().update_tenant(tenant_id, {"limits": given})
    state.show(answer, lambda: output.record(answer.model))


@click.group("keys", cls=Group)
def keys() -> None:
    """A tenant's API keys (admin key)."""


@keys.command("create")
@click.argument("tenant_id")
@pass_state
def create_key(state: State, tenant_id: str) -> None:
    """Issue another API key (its secret is shown this once)."""
    answer = state.client().create_key(tenant_id)
    state.show(answer, lambda: output.record(answer.model))


@keys.command("list")
@click.argument("tenant_id")
@pass_state
def list_keys(state: State, tenant_id: str) -> None:
    """A tenant's keys, never a secret."""
    answer = state.client().list_keys(tenant_id)
    state.show(answer, lambda: output.table(answer.model.items, KEY_COLUMNS))


@keys.command("revoke")
@click.argument("tenant_id")
@click.argument("key_id")
@pass_state
def revoke(state: State, tenant_id: str, key_id: str) -> None:
    """Revoke a key (at once locally, within 60 s on AWS)."""
    state.client().revoke_key(tenant_id, key_id)
    if not state.json:
        output.note(f"revoked {key_id}")
