"""``sundial admin-key``: the deployment's admin key, made on this machine and stored as its hash
in the stack's table with the operator's own AWS credentials (no API call: the API has no admin
until this has run). The one command that writes the table directly (shared/store/admin_key.py)."""

from __future__ import annotations

from typing import Any

import click
from botocore.exceptions import BotoCoreError, ClientError

from shared.domain.errors import StorageUnavailable
from shared.domain.tenants import key_hash, new_admin_key
from shared.store.admin_key import AdminKeyChanged, AdminKeyExists, AdminKeyStore
from sundial_cli import output

STACK_NAME = "Sundial"
"""The stack ``make deploy`` deploys (infra/names.py ``STACK_NAME``)."""
OUTPUT_TABLE_NAME = "TableName"
"""Its output naming the task table (infra/names.py ``OUTPUT_TABLE_NAME``)."""
CACHE_SECONDS = 60
"""How long API Gateway keeps the authorizer's answer for one key (infra/auth.py ``RESULTS_CACHE_TTL``)."""


class AwsFailed(click.ClickException):
    exit_code = output.EXIT_FAILED


class Refused(click.ClickException):
    exit_code = output.EXIT_REFUSED


def _session(region: str | None) -> Any:
    import boto3  # noqa: PLC0415 (a third of a second: only when this command runs)

    return boto3.session.Session(region_name=region)


def table_of(session: Any, stack: str) -> str:
    """The task table named in the stack's ``TableName`` output."""
    try:
        stacks = session.client("cloudformation").describe_stacks(StackName=stack)["Stacks"]
    except (ClientError, BotoCoreError) as exc:
        raise AwsFailed(f"cannot read the stack {stack!r}'s outputs: {exc} (or give --table)") from exc
    for found in stacks[0].get("Outputs", []):
        if found.get("OutputKey") == OUTPUT_TABLE_NAME:
            return str(found["OutputValue"])
    raise AwsFailed(f"the stack {stack!r} has no {OUTPUT_TABLE_NAME} output (or give --table)")


def _write(region: str | None, stack: str, table: str | None, *, rotate: bool, if_missing: bool = False) -> None:
    session = _session(region)
    table = table or table_of(session, stack)
    store = AdminKeyStore(session.client("dynamodb"), table)
    key = new_admin_key()
    try:
        if rotate:
            store.rotate(key_hash(key))
        else:
            store.create(key_hash(key))
    except AdminKeyExists as exc:
        if if_missing:
            output.note(f"the table {table} has an admin key already (`sundial admin-key rotate` replaces it)")
            return
        raise Refused(f"the table {table} has an admin key already: `sundial admin-key rotate` replaces it") from exc
    except AdminKeyChanged as exc:
        raise Refused(str(exc)) from exc
    except StorageUnavailable as exc:
        raise AwsFailed(str(exc)) from exc
    click.echo(key)
    output.note(
        f"the admin key of {table}, shown this once (only its SHA-256 is stored): "
        "Authorization: Bearer <key> on /v1/tenants"
    )
    if rotate:
        output.note(f"the previous admin key is refused from now on (within {CACHE_SECONDS} s: API Gateway's cache)")


def _target(command: Any) -> Any:
    command = click.option(
        "--region", metavar="REGION", help="The stack's Region (default: your AWS configuration's)."
    )(command)
    command = click.option(
        "--table", metavar="NAME", help=f"The task table (default: the stack's {OUTPUT_TABLE_NAME} output)."
    )(command)
    return click.option("--stack", metavar="NAME", default=STACK_NAME, show_default=True, help="The deployed stack.")(
        command
    )


@click.group("admin-key")
def admin_key() -> None:
    """The deployment's admin key: made here, its hash written to the stack's table with your AWS
    credentials (dynamodb:GetItem and TransactWriteItems on the table; cloudformation:DescribeStacks
    without --table). The key is printed once, alone on stdout."""


@admin_key.command("create")
@_target
@click.option("--if-missing", is_flag=True, help="An admin key exists already: say so and succeed (make deploy).")
def create(stack: str, table: str | None, region: str | None, if_missing: bool) -> None:
    """A new admin key, when the deployment has none (refused when it has one).

    \b
    ADMIN_KEY=$(sundial admin-key create)
    """
    _write(region, stack, table, rotate=False, if_missing=if_missing)


@admin_key.command("rotate")
@_target
def rotate(stack: str, table: str | None, region: str | None) -> None:
    """A new admin key replacing the current one (which stops working within 60 s); with none, a first one."""
    _write(region, stack, table, rotate=True)
