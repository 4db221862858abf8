"""The admin key's items (shared/store/admin_key.py) and ``sundial admin-key`` against moto: only a
hash is stored, a second create is refused, two creates racing make one admin key, a rotation
replaces the old key (the authorizer refuses it from its next read) and two racing replace it once."""

from __future__ import annotations

import json
import threading
from typing import Any

import boto3
import pytest
from click.testing import CliRunner

from shared.domain.tenants import ADMIN_KEY_LENGTH, ADMIN_KEY_PREFIX, key_hash, new_admin_key
from shared.settings.environment import from_env
from shared.store.admin_key import AdminKeyChanged, AdminKeyExists, AdminKeyStore
from sundial_cli.main import cli

pytestmark = pytest.mark.integration


def store() -> AdminKeyStore:
    return AdminKeyStore(boto3.client("dynamodb"), from_env().table_name)


def role_of(key: str) -> str | None:
    """What the authorizer's read makes of a key: "admin", "tenant" or None (refused)."""
    from shared.services.factory import build_authenticator

    caller = build_authenticator(from_env()).caller(f"Bearer {key}")
    return None if caller is None else caller.role.value


def items() -> list[dict[str, Any]]:
    return boto3.client("dynamodb").scan(TableName=from_env().table_name)["Items"]


def test_a_new_admin_key_is_letters_and_digits_after_its_prefix():
    keys = {new_admin_key() for _ in range(50)}
    assert len(keys) == 50
    for key in keys:
        random = key.removeprefix(ADMIN_KEY_PREFIX)
        assert key.startswith(ADMIN_KEY_PREFIX)
        assert len(random) == ADMIN_KEY_LENGTH == 64
        assert random.isascii()
        assert random.isalnum()


def test_create_stores_the_hash_only_and_refuses_a_second(aws):
    key, other = new_admin_key(), new_admin_key()
    store().create(key_hash(key))
    assert role_of(key) == "admin"
    assert key not in json.dumps(items())
    with pytest.raises(AdminKeyExists):
        store().create(key_hash(other))
    assert role_of(key) == "admin"
    assert role_of(other) is None
    assert store().current_hash() == key_hash(key)


def test_two_creates_racing_make_one_admin_key(aws):
    keys = [new_admin_key() for _ in range(8)]
    outcomes: list[str] = []
    start = threading.Barrier(len(keys))
    client = boto3.client("dynamodb")  # one client: boto3's default session is not thread-safe

    def create(key: str) -> None:
        start.wait()
        try:
            AdminKeyStore(client, from_env().table_name).create(key_hash(key))
        except AdminKeyExists:
            outcomes.append("refused")
        else:
            outcomes.append(key)

    threads = [threading.Thread(target=create, args=(key,)) for key in keys]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    (winner,) = [outcome for outcome in outcomes if outcome != "refused"]
    assert outcomes.count("refused") == len(keys) - 1
    assert [role_of(key) for key in keys] == [("admin" if key == winner else None) for key in keys]
    assert len([item for item in items() if item["pk"]["S"].startswith("K#")]) == 1


def test_a_rotation_replaces_the_old_key(aws):
    old, new = new_admin_key(), new_admin_key()
    store().create(key_hash(old))
    store().rotate(key_hash(new))
    assert role_of(new) == "admin"
    assert role_of(old) is None
    assert {item["pk"]["S"] for item in items()} == {"ADMIN", f"K#{key_hash(new)}"}


def test_a_rotation_with_no_admin_key_creates_one(aws):
    key = new_admin_key()
    store().rotate(key_hash(key))
    assert role_of(key) == "admin"


def test_a_rotation_that_lost_a_race_changes_nothing(aws):
    first, winner, loser = new_admin_key(), new_admin_key(), new_admin_key()
    store().create(key_hash(first))
    stale = store()
    stale_view = stale.current_hash()
    store().rotate(key_hash(winner))
    object.__setattr__(stale, "current_hash", lambda: stale_view)  # it read before the winner wrote
    with pytest.raises(AdminKeyChanged):
        stale.rotate(key_hash(loser))
    assert [role_of(key) for key in (first, winner, loser)] == [None, "admin", None]


def test_a_tenant_key_is_never_taken_for_the_admin(aws, api):
    from tests.integration.conftest import ADMIN_KEY

    created = api("POST", "/v1/tenants", {"id": "acme"}, {"Authorization": f"Bearer {ADMIN_KEY}"})
    assert created.status == 201
    assert role_of(created.body["key"]["secret"]) == "tenant"
    assert role_of(ADMIN_KEY) == "admin"


# --- sundial admin-key ---------------------------------------------------------------------------


def deployed_stack(table: str) -> None:
    """A stack named Sundial whose TableName output names ``table`` (as make deploy leaves it)."""
    template = {
        "Resources": {"Topic": {"Type": "AWS::SNS::Topic"}},
        "Outputs": {"TableName": {"Value": table}},
    }
    boto3.client("cloudformation").create_stack(StackName="Sundial", TemplateBody=json.dumps(template))


def run(*args: str) -> Any:
    return CliRunner().invoke(cli, ["admin-key", *args], catch_exceptions=False)


def test_the_cli_creates_a_key_in_the_stacks_table_and_prints_it_alone(aws):
    deployed_stack(from_env().table_name)
    created = run("create")
    assert created.exit_code == 0, created.output
    key = created.stdout.strip()
    assert key.startswith(ADMIN_KEY_PREFIX)
    assert created.stdout == f"{key}\n"
    assert "shown this once" in created.stderr
    assert role_of(key) == "admin"


def test_the_cli_refuses_to_create_over_an_admin_key_unless_asked_to_rotate(aws):
    table = from_env().table_name
    first = run("create", "--table", table).stdout.strip()
    again = run("create", "--table", table)
    assert again.exit_code == 1
    assert again.stdout == ""
    assert "admin-key rotate" in again.stderr
    assert role_of(first) == "admin"

    quiet = run("create", "--table", table, "--if-missing")  # make deploy's
    assert (quiet.exit_code, quiet.stdout) == (0, "")
    assert role_of(first) == "admin"

    rotated = run("rotate", "--table", table)
    assert rotated.exit_code == 0, rotated.output
    new = rotated.stdout.strip()
    assert "60 s" in rotated.stderr
    assert (role_of(first), role_of(new)) == (None, "admin")


def test_the_cli_without_the_stack_says_what_to_do(aws):
    answer = run("create", "--stack", "NoSuchStack")
    assert answer.exit_code == 5
    assert "--table" in answer.stderr
    assert store().current_hash() is None
