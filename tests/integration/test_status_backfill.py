"""Items written before the status index (docs/status-index.md, section 5): a table made by an
earlier version gains the index (shared/store/dynamo.py ``ensure_table``, as a deployment's gains it
from CloudFormation), and the backfill gives its failed and paused tasks their keys, once, never
undoing a write that moved an item meanwhile."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import boto3
import pytest

from shared.domain.registration import new_task
from shared.domain.schedules import Every
from shared.domain.states import TaskFilter, TaskStatus
from shared.domain.tasks import HttpTarget, TaskSpec
from shared.settings.environment import from_env
from shared.store.dynamo import DynamoTaskRepository, ensure_table
from shared.store.keys import task_key
from shared.store.models import STATUS_INDEX_NAME
from shared.store.status_backfill import backfill, backfill_once
from tests.support.eventually import eventually

pytestmark = pytest.mark.integration

NOW = datetime(2026, 11, 22, 10, 0, tzinfo=UTC)


def _older_table(client: object, table: str) -> None:
    """The table as an earlier version made it: the listing index, no status index."""
    client.delete_table(TableName=table)  # type: ignore[attr-defined]
    client.create_table(  # type: ignore[attr-defined]
        TableName=table,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[{"AttributeName": name, "AttributeType": "S"} for name in ("pk", "sk", "lpk", "lsk")],
        GlobalSecondaryIndexes=[
            {
                "IndexName": "by_tenant",
                "KeySchema": [
                    {"AttributeName": "lpk", "KeyType": "HASH"},
                    {"AttributeName": "lsk", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "KEYS_ONLY"},
            }
        ],
        BillingMode="PAY_PER_REQUEST",
    )


def test_an_older_table_gains_the_index_and_its_failed_and_paused_tasks_their_keys(aws: None) -> None:
    table = from_env().table_name
    client = boto3.client("dynamodb")
    _older_table(client, table)
    ensure_table(table)
    indexes = {i["IndexName"] for i in client.describe_table(TableName=table)["Table"]["GlobalSecondaryIndexes"]}
    assert indexes == {"by_tenant", STATUS_INDEX_NAME}

    repo = DynamoTaskRepository(list_shards=2)
    made = []
    for minutes, status, reason in [
        (1, TaskStatus.FAILED, None),
        (2, TaskStatus.PAUSED, "3 failures in a row"),
        (3, TaskStatus.PAUSED, None),
        (4, TaskStatus.SCHEDULED, None),
    ]:
        spec = TaskSpec(Every(60, start=NOW + timedelta(minutes=minutes)), (HttpTarget("https://example.com/a"),))
        task = repo.create(new_task(spec, tenant="acme", now=NOW + timedelta(seconds=minutes), shard=0))
        made.append(repo.update(replace(task, status=status, paused_reason=reason)))
    for task in made:  # written as an earlier version wrote them: no keys in the status index
        client.update_item(TableName=table, Key=_key(task.id), UpdateExpression="REMOVE spk, ssk")
    assert repo.list("acme", status=TaskFilter.FAILED, limit=10, cursor=None).items == []

    # one moved meanwhile by the running deployment (its own write gave it its keys): left alone
    moved = made[2]
    client.update_item(
        TableName=table,
        Key=_key(moved.id),
        UpdateExpression="SET #s = :s",
        ExpressionAttributeNames={"#s": "status"},
        ExpressionAttributeValues={":s": {"S": "scheduled"}},
    )
    written = backfill(client, table, 2)
    assert written == {"task": 2}

    def listed() -> None:
        assert [t.id for t in repo.list("acme", status=TaskFilter.FAILED, limit=10, cursor=None).items] == [made[0].id]
        paused = repo.list("acme", status=TaskFilter.PAUSED_AFTER_FAILURES, limit=10, cursor=None).items
        assert [t.id for t in paused] == [made[1].id]
        assert repo.count("acme", TaskFilter.PAUSED) == 1

    eventually(listed)
    assert backfill(client, table, 2) == {}  # twice: nothing more


def test_the_local_runtime_backfills_once(aws: None) -> None:
    table = from_env().table_name
    client = boto3.client("dynamodb")
    assert backfill_once(client, table, 1) == {}
    assert backfill_once(client, table, 1) is None  # the table says it was done


def _key(task_id: str) -> dict[str, dict[str, str]]:
    pk, sk = task_key(task_id)
    return {"pk": {"S": pk}, "sk": {"S": sk}}


def test_the_cli_backfills_a_deployment_s_table_with_the_operator_s_credentials(aws: None) -> None:
    """``sundial status-index backfill --table``: what it wrote, as JSON; again, nothing."""
    import json

    from click.testing import CliRunner

    from sundial_cli.main import cli

    table = from_env().table_name
    client = boto3.client("dynamodb")
    repo = DynamoTaskRepository(list_shards=4)
    spec = TaskSpec(Every(60, start=NOW + timedelta(minutes=1)), (HttpTarget("https://example.com/a"),))
    task = repo.create(new_task(spec, tenant="acme", now=NOW, shard=0))
    repo.update(replace(task, status=TaskStatus.FAILED))
    client.update_item(TableName=table, Key=_key(task.id), UpdateExpression="REMOVE spk, ssk")

    def run() -> dict[str, int]:
        done = CliRunner().invoke(cli, ["status-index", "backfill", "--table", table], catch_exceptions=False)
        assert done.exit_code == 0, done.output
        answer: dict[str, int] = json.loads(done.output)
        return answer

    assert run() == {"task": 1}
    assert run() == {}
    eventually(lambda: _failed_are(repo, [task.id]))


def _failed_are(repo: DynamoTaskRepository, ids: list[str]) -> None:
    assert [t.id for t in repo.list("acme", status=TaskFilter.FAILED, limit=10, cursor=None).items] == ids


def test_jobs_letters_and_workflow_runs_of_an_earlier_version_are_put_in_too(aws: None) -> None:
    """A failed job, a waiting dead letter and a failed workflow run as an earlier version wrote
    them (no keys): counted by the index once backfilled, each in its kind's partitions."""
    from shared.store import status_index

    table = from_env().table_name
    client = boto3.client("dynamodb")
    raw = {
        "job": {"pk": "J#JOB1", "sk": "J", "tenant": "acme", "status": "failed", "created_ms": 1_700_000_000_000},
        "running job": {"pk": "J#JOB2", "sk": "J", "tenant": "acme", "status": "running", "created_ms": 1},
        "letter": {"pk": "DL#acme", "sk": "01KAZ0000000000000000000L1", "tenant": "acme", "status": "dead_lettered"},
        "redriven": {"pk": "DL#acme", "sk": "01KAZ0000000000000000000L2", "tenant": "acme", "status": "redriven"},
        "run": {"pk": "WR#RUN1", "sk": "R", "tenant": "acme", "status": "failed", "created_ms": 1_700_000_000_000},
        "succeeded run": {"pk": "WR#RUN2", "sk": "R", "tenant": "acme", "status": "succeeded", "created_ms": 2},
    }
    for item in raw.values():
        client.put_item(
            TableName=table,
            Item={k: ({"N": str(v)} if isinstance(v, int) else {"S": v}) for k, v in item.items()},
        )
    assert backfill(client, table, 2) == {"job": 2, "letter": 1, "workflow_run": 1}

    def counted() -> None:
        assert status_index.count("acme", "job", ["failed"], 1) == 1
        assert status_index.count("acme", "job", ["running"], 1) == 1
        assert status_index.count("acme", "letter", ["dead_lettered"], 2) == 1
        assert status_index.count("acme", "workflow_run", ["failed"], 1) == 1

    eventually(counted)
