"""Workflows and their runs in DynamoDB (docs/workflows.md, section 2).

:class:`DynamoWorkflows` keeps the definitions: the head item ``WF#<id>`` / ``WF`` (what the API
reads and lists) and one item per version ``V#<version>``, written once, that a run follows.
:class:`DynamoWorkflowRuns` is the adapter of the port ``WorkflowRunStore``
(shared/services/workflows.py): each write is one conditional UpdateItem of the run's item
(``WR#<run id>`` / ``R``), so a repeated step or two triggers at once change nothing twice; a
node's outcome is an item of its own beside it (``N#<node>#<attempt>``)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from pynamodb.exceptions import DoesNotExist, PutError, PynamoDBException, TransactWriteError, UpdateError
from pynamodb.transactions import TransactWrite

from shared.domain.codec import (
    compact_json,
    retry_from_dict,
    retry_to_dict,
    schedule_from_dict,
    schedule_to_dict,
    target_from_dict,
    target_to_dict,
)
from shared.domain.errors import ConcurrentUpdate, StorageUnavailable, WorkflowNotFound
from shared.domain.tasks import Page
from shared.domain.times import from_ms, to_ms, utc_now
from shared.domain.workflow_defs import NodeDef, Workflow
from shared.domain.workflows import (
    WATCHED_RUNS,
    NodeOutcome,
    NodeRun,
    NodeStart,
    NodeStatus,
    WorkflowRun,
    graph_from_dict,
    graph_to_dict,
)
from shared.store import status_index
from shared.store.keys import decode_cursor, encode_cursor, list_sk, status_pk
from shared.store.models import (
    LIST_INDEX_NAME,
    NodeOutcomeItem,
    WorkflowItem,
    WorkflowRunItem,
    WorkflowVersionItem,
    is_conflict,
)

SK = "R"
HEAD = "WF"


def run_pk(run_id: str) -> str:
    return f"WR#{run_id}"


def workflow_pk(workflow_id: str) -> str:
    return f"WF#{workflow_id}"


def version_sk(version: int) -> str:
    return f"V#{version:06d}"


# --- definitions ------------------------------------------------------------------------------


def definition_json(workflow: Workflow) -> str:
    """The nodes and the graph, as the items keep them."""
    nodes = [
        {
            "id": node.id,
            "targets": [target_to_dict(target) for target in node.targets],
            "multicast": node.multicast,
            "payload": node.payload,
            "retry": retry_to_dict(node.retry),
        }
        for node in workflow.nodes
    ]
    return compact_json({"nodes": nodes, "graph": graph_to_dict(workflow.graph)})


def _definition(text: str) -> tuple[tuple[NodeDef, ...], Any]:
    data = json.loads(text)
    nodes = tuple(
        NodeDef(
            node["id"],
            tuple(target_from_dict(target) for target in node["targets"]),
            bool(node.get("multicast")),
            node.get("payload"),
            retry_from_dict(node["retry"]),
        )
        for node in data["nodes"]
    )
    return nodes, graph_from_dict(data["graph"])


def _workflow(item: WorkflowItem, workflow_id: str) -> Workflow:
    nodes, graph = _definition(item.definition)
    return Workflow(
        id=workflow_id,
        tenant=item.tenant,
        nodes=nodes,
        graph=graph,
        created_at=from_ms(int(item.created_ms)),
        updated_at=from_ms(int(item.updated_ms)),
        name=item.name,
        schedule=schedule_from_dict(json.loads(item.schedule)) if item.schedule else None,
        schedule_task_id=item.schedule_task_id,
        version=int(item.version),
    )


class DynamoWorkflows:
    """The definitions. A version's item never changes, so a process keeps those it read."""

    def __init__(self, retention: timedelta = timedelta(days=30)) -> None:
        self.retention = retention
        self._versions: dict[tuple[str, int], Workflow] = {}

    def create(self, workflow: Workflow) -> None:
        head = self._head(workflow)
        try:
            with TransactWrite(connection=_connection()) as transaction:
                transaction.save(head, condition=WorkflowItem.pk.does_not_exist())
                transaction.save(self._version_item(workflow))
        except TransactWriteError as exc:
            if is_conflict(exc):
                raise ConcurrentUpdate(f"workflow {workflow.id} exists already") from exc
            raise StorageUnavailable(f"workflow {workflow.id}: {exc.msg}") from exc

    def update(self, workflow: Workflow, *, was: int) -> None:
        """The new version (``workflow.version``), only if the head is still at version ``was``."""
        head = self._head(workflow)
        try:
            with TransactWrite(connection=_connection()) as transaction:
                transaction.save(head, condition=WorkflowItem.version == was)
                transaction.save(self._version_item(workflow))
        except TransactWriteError as exc:
            if is_conflict(exc):
                raise ConcurrentUpdate(f"workflow {workflow.id} was changed meanwhile") from exc
            raise StorageUnavailable(f"workflow {workflow.id}: {exc.msg}") from exc

    def get(self, tenant: str, workflow_id: str) -> Workflow:
        """The workflow as it stands; another tenant's is not found, as a missing one."""
        try:
            item = WorkflowItem.get(workflow_pk(workflow_id), HEAD, consistent_read=True)
        except DoesNotExist:
            raise WorkflowNotFound(f"workflow {workflow_id!r} not found") from None
        except PynamoDBException as exc:
            raise StorageUnavailable(f"workflow {workflow_id}: {exc.msg}") from exc
        if item.tenant != tenant:
            raise WorkflowNotFound(f"workflow {workflow_id!r} not found")
        return _workflow(item, workflow_id)

    def exists(self, tenant: str, workflow_id: str) -> bool:
        """The tenant has this workflow (one strongly consistent read of its tenant)."""
        try:
            item = WorkflowItem.get(
                workflow_pk(workflow_id.upper()), HEAD, consistent_read=True, attributes_to_get=["tenant"]
            )
        except DoesNotExist:
            return False
        except PynamoDBException as exc:
            raise StorageUnavailable(f"workflow {workflow_id}: {exc.msg}") from exc
        return item.tenant == tenant

    def version(self, workflow_id: str, version: int) -> Workflow:
        """One version's nodes and graph (the rest of the workflow as it was at that version is not
        kept: a run needs only these)."""
        key = (workflow_id, version)
        if key not in self._versions:
            try:
                item = WorkflowVersionItem.get(workflow_pk(workflow_id), version_sk(version))
            except DoesNotExist:
                raise WorkflowNotFound(f"workflow {workflow_id!r} has no version {version}") from None
            nodes, graph = _definition(item.definition)
            self._versions[key] = Workflow(
                workflow_id, item.tenant, nodes, graph, from_ms(0), from_ms(0), version=version
            )
        return self._versions[key]

    def delete(self, tenant: str, workflow_id: str, now_ms: int) -> None:
        """The head goes; its versions are kept for the retention, for the runs still going."""
        try:
            WorkflowItem(workflow_pk(workflow_id), HEAD).delete(condition=WorkflowItem.tenant == tenant)
        except PynamoDBException as exc:
            if is_conflict(exc):
                raise WorkflowNotFound(f"workflow {workflow_id!r} not found") from exc
            raise StorageUnavailable(f"workflow {workflow_id}: {exc.msg}") from exc
        expires = from_ms(now_ms) + self.retention
        for item in WorkflowVersionItem.query(workflow_pk(workflow_id), WorkflowVersionItem.sk.startswith("V#")):
            item.update(actions=[WorkflowVersionItem.expires_at.set(expires)])

    def list(self, tenant: str, limit: int, cursor: str | None) -> Page[Workflow]:
        entries = _entries(f"LW#{tenant}", cursor, limit + 1)
        items = {item.pk: item for item in WorkflowItem.batch_get([(pk, HEAD) for _, pk in entries[:limit]])}
        found = [
            (lsk, _workflow(items[pk], pk.removeprefix("WF#")))
            for lsk, pk in entries[:limit]
            if pk in items and items[pk].tenant == tenant
        ]
        after = encode_cursor(entries[limit - 1][0]) if len(entries) > limit else None
        return Page([w for _, w in found], after, tuple(encode_cursor(lsk) for lsk, _ in found))

    def _head(self, workflow: Workflow) -> WorkflowItem:
        created = to_ms(workflow.created_at)
        return WorkflowItem(
            workflow_pk(workflow.id),
            HEAD,
            tenant=workflow.tenant,
            name=workflow.name,
            version=workflow.version,
            definition=definition_json(workflow),
            schedule=compact_json(schedule_to_dict(workflow.schedule)) if workflow.schedule is not None else None,
            schedule_task_id=workflow.schedule_task_id,
            created_ms=created,
            updated_ms=to_ms(workflow.updated_at),
            lpk=f"LW#{workflow.tenant}",
            lsk=f"{created:013d}#{workflow.id}",
        )

    def _version_item(self, workflow: Workflow) -> WorkflowVersionItem:
        return WorkflowVersionItem(
            workflow_pk(workflow.id),
            version_sk(workflow.version),
            tenant=workflow.tenant,
            definition=definition_json(workflow),
        )


def _connection() -> Any:
    return WorkflowItem._get_connection().connection


def _entries(lpk: str, cursor: str | None, count: int) -> list[tuple[str, str]]:
    """Up to ``count`` (lsk, pk) of the list ``lpk`` before ``cursor``, newest first."""
    before = decode_cursor(cursor) if cursor else None
    page = WorkflowItem._get_connection().query(
        lpk,
        range_key_condition=WorkflowItem.lsk < before if before is not None else None,
        index_name=LIST_INDEX_NAME,
        scan_index_forward=False,
        limit=count,
    )
    return [(raw["lsk"]["S"], raw["pk"]["S"]) for raw in page.get("Items", [])]


# --- runs -------------------------------------------------------------------------------------

RUN_LIST_SHARDS = 1
"""A tenant's failed workflow runs share one partition of the status index (docs/status-index.md):
a run fails once, at its end, and runs start from the rate-limited API or a schedule's occurrence."""
LIST_READ_BUDGET = 200
"""Index entries one status page reads at most (an entry whose run left the status since is
skipped): past them the page is answered with a cursor."""


def status_keys(tenant: str, run_id: str, created_ms: int, status: NodeStatus) -> tuple[str, str] | None:
    """A run's keys in the status index (``spk``, ``ssk``) once it is ``status``: failed
    (``WATCHED_RUNS``); None for a status the index does not hold. Its position is
    ``<created ms>#<run id>``."""
    if status not in WATCHED_RUNS:
        return None
    return status_pk(tenant, "workflow_run", status.value, run_id, RUN_LIST_SHARDS), list_sk(created_ms, run_id)


class DynamoWorkflowRuns:
    def __init__(self, retention: timedelta = timedelta(days=30)) -> None:
        self.retention = retention

    def create(self, run: WorkflowRun) -> bool:
        """The run's item, only if it does not exist (a duplicate start starts nothing)."""
        spk, ssk = status_keys(run.tenant, run.run_id, run.created_ms, run.status) or (None, None)
        item = WorkflowRunItem(
            run_pk(run.run_id),
            SK,
            workflow_id=run.workflow_id,
            tenant=run.tenant,
            graph=compact_json(graph_to_dict(run.graph)),
            version=run.version,
            status=run.status.value,
            nodes={node: status.value for node, status in run.statuses.items()},
            items={},
            attempts=dict(run.attempts),
            created_ms=run.created_ms,
            revision=0,
            lpk=f"LR#{run.workflow_id}",
            lsk=run.run_id,
            spk=spk,
            ssk=ssk,
            expires_at=from_ms(run.created_ms) + self.retention if run.created_ms else None,
        )
        try:
            item.save(condition=WorkflowRunItem.pk.does_not_exist())
        except PutError as error:
            if is_conflict(error):
                return False
            raise
        return True

    def get(self, run_id: str) -> WorkflowRun | None:
        try:
            return _run(WorkflowRunItem.get(run_pk(run_id), SK, consistent_read=True))
        except DoesNotExist:
            return None

    def list(self, workflow_id: str, limit: int, cursor: str | None) -> Page[WorkflowRun]:
        entries = _entries(f"LR#{workflow_id}", cursor, limit + 1)
        keys = [(pk, SK) for _, pk in entries[:limit]]
        items = {item.pk: item for item in WorkflowRunItem.batch_get(keys)}
        runs = [_run(items[pk]) for _, pk in entries[:limit] if pk in items]
        after = encode_cursor(entries[limit - 1][0]) if len(entries) > limit else None
        return Page(runs, after, tuple(encode_cursor(run.run_id) for run in runs))

    def by_status(self, tenant: str, status: NodeStatus, limit: int, cursor: str | None) -> Page[WorkflowRun]:
        """The tenant's runs (of every workflow) in ``status``, one the status index holds
        (failed), newest first: a full page whatever its other runs, the items read by key and
        checked again (the index is eventually consistent: a run retried since is left out and the
        page reads on), for at most ``LIST_READ_BUDGET`` entries. ValueError for another status."""
        self._check_watched(status)
        now = utc_now()
        try:
            found, after = status_index.page(
                WorkflowRunItem,
                tenant,
                "workflow_run",
                [status.value],
                RUN_LIST_SHARDS,
                lambda item: item.tenant == tenant and item.status == status.value and not item.expired(now),
                limit,
                decode_cursor(cursor) if cursor else None,
                LIST_READ_BUDGET,
            )
        except PynamoDBException as exc:
            raise StorageUnavailable(f"workflow runs: {exc.msg}") from exc
        return _status_page([(at, _run(item)) for at, item in found], after)

    def count(self, tenant: str, status: NodeStatus) -> int:
        """How many of the tenant's runs are ``status``, one the status index holds (failed):
        exact, whatever the number of its other runs; ValueError for another status."""
        self._check_watched(status)
        try:
            return status_index.count(tenant, "workflow_run", [status.value], RUN_LIST_SHARDS)
        except PynamoDBException as exc:
            raise StorageUnavailable(f"workflow runs: {exc.msg}") from exc

    @staticmethod
    def _check_watched(status: NodeStatus) -> None:
        if status not in WATCHED_RUNS:
            raise ValueError(f"{status.value} runs are not listed by status: the status index holds no such run")

    def keep_outcome(self, run_id: str, attempt: int, outcome: NodeOutcome) -> None:
        """The node's outcome for its children, kept once (a repeat keeps the first)."""
        item = NodeOutcomeItem(
            run_pk(run_id),
            f"N#{outcome.node}#{attempt}",
            outcome=compact_json(outcome.to_dict()),
            expires_at=from_ms(outcome.ended_ms) + self.retention,
        )
        try:
            item.save(condition=NodeOutcomeItem.pk.does_not_exist())
        except PutError as error:
            if not is_conflict(error):
                raise

    def outcomes(self, run_id: str, keys: Sequence[tuple[str, int]]) -> dict[str, NodeOutcome]:
        """The kept outcomes of these (node, attempt), by node (one BatchGetItem a hundred)."""
        found = NodeOutcomeItem.batch_get([(run_pk(run_id), f"N#{node}#{attempt}") for node, attempt in keys])
        outcomes = [NodeOutcome.from_dict(json.loads(item.outcome)) for item in found]
        return {outcome.node: outcome for outcome in outcomes}

    def node_ended(
        self,
        run_id: str,
        node: str,
        status: NodeStatus,
        *,
        attempt: int = 1,
        ended_ms: int | None = None,
        error: str | None = None,
        item_id: str | None = None,
        node_run_id: str | None = None,
    ) -> WorkflowRun | None:
        """The node's end, in a running run, for the node's current attempt, from ``pending`` (its
        item was created and its run ended before the start was marked: the mark then finds it
        ended), ``running``, or ``status`` already (a repeat)."""
        path = WorkflowRunItem.nodes[node]
        item = WorkflowRunItem(run_pk(run_id), SK)
        attempts = WorkflowRunItem.attempts[node]
        current = attempts == attempt if attempt > 1 else (attempts.does_not_exist() | (attempts == 1))
        condition = (
            (WorkflowRunItem.status == NodeStatus.RUNNING.value)
            & path.is_in(NodeStatus.PENDING.value, NodeStatus.RUNNING.value, status.value)
            & current
        )
        actions: list[Any] = [path.set(status.value)]
        if ended_ms is not None:
            actions.append(WorkflowRunItem.ended[node].set(ended_ms))
        if error is not None:
            actions.append(WorkflowRunItem.errors[node].set(error[:1000]))
        if item_id is not None:
            actions.append(WorkflowRunItem.items[node].set(item_id))
        if node_run_id is not None:
            actions.append(WorkflowRunItem.runs[node].set(node_run_id))
        if not _update(item, actions, condition):
            return None
        return _run(item)  # pynamodb's update reads the item back (ALL_NEW)

    def node_started(
        self, run_id: str, node: str, item_id: str, *, node_run_id: str | None = None, started_ms: int | None = None
    ) -> bool:
        """``pending`` -> ``running`` in a running run; False otherwise (started already, or the
        run was cancelled meanwhile)."""
        path = WorkflowRunItem.nodes[node]
        actions: list[Any] = [path.set(NodeStatus.RUNNING.value), WorkflowRunItem.items[node].set(item_id)]
        if node_run_id is not None:
            actions.append(WorkflowRunItem.runs[node].set(node_run_id))
        if started_ms is not None:
            actions.append(WorkflowRunItem.started[node].set(started_ms))
        condition = (path == NodeStatus.PENDING.value) & (WorkflowRunItem.status == NodeStatus.RUNNING.value)
        return _update(WorkflowRunItem(run_pk(run_id), SK), actions, condition)

    def nodes_started(self, run_id: str, starts: Sequence[NodeStart], *, started_ms: int) -> bool:
        actions: list[Any] = []
        conditions: list[Any] = [WorkflowRunItem.status == NodeStatus.RUNNING.value]
        for start in starts:
            path = WorkflowRunItem.nodes[start.node]
            actions += [
                path.set(NodeStatus.RUNNING.value),
                WorkflowRunItem.items[start.node].set(start.item_id),
                WorkflowRunItem.runs[start.node].set(start.run_id),
                WorkflowRunItem.started[start.node].set(started_ms),
            ]
            conditions.append(path == NodeStatus.PENDING.value)
        return _update(WorkflowRunItem(run_pk(run_id), SK), actions, _all(conditions))

    def node_skipped(self, run_id: str, node: str) -> bool:
        path = WorkflowRunItem.nodes[node]
        return _update(
            WorkflowRunItem(run_pk(run_id), SK), [path.set(NodeStatus.SKIPPED.value)], path == NodeStatus.PENDING.value
        )

    def run_ended(
        self, run_id: str, status: NodeStatus, *, ended_ms: int | None = None, run: WorkflowRun | None = None
    ) -> bool:
        """``running`` -> ``status``; a failed run is put in the status index in the same write
        (docs/status-index.md), its keys from ``run`` (the run as read) or, without it, from its
        item's tenant and creation time, which never change."""
        keys = None
        if status in WATCHED_RUNS:
            placed = (run.tenant, run.created_ms) if run is not None else self._placed(run_id)
            if placed is None:
                return False  # no such run: nothing to end
            keys = status_keys(placed[0], run_id, placed[1], status)
        actions: list[Any] = [WorkflowRunItem.status.set(status.value), *status_index.actions(WorkflowRunItem, keys)]
        if ended_ms is not None:
            actions.append(WorkflowRunItem.ended_ms.set(ended_ms))
        return _update(WorkflowRunItem(run_pk(run_id), SK), actions, WorkflowRunItem.status == NodeStatus.RUNNING.value)

    def _placed(self, run_id: str) -> tuple[str, int] | None:
        try:
            item = WorkflowRunItem.get(
                run_pk(run_id), SK, consistent_read=True, attributes_to_get=["tenant", "created_ms"]
            )
        except DoesNotExist:
            return None
        return item.tenant, int(item.created_ms or 0)

    def replace(self, before: WorkflowRun, after: WorkflowRun) -> bool:
        """Write ``after``'s statuses, attempts and nodes over the run (a cancel, a retry), only if
        nothing was written since ``before`` was read."""
        actions: list[Any] = [
            WorkflowRunItem.status.set(after.status.value),
            WorkflowRunItem.nodes.set({node: status.value for node, status in after.statuses.items()}),
            WorkflowRunItem.attempts.set(dict(after.attempts)),
            WorkflowRunItem.items.set({n: r.item_id for n, r in after.nodes.items() if r.item_id}),
            WorkflowRunItem.runs.set({n: r.run_id for n, r in after.nodes.items() if r.run_id}),
            WorkflowRunItem.started.set({n: r.started_ms for n, r in after.nodes.items() if r.started_ms is not None}),
            WorkflowRunItem.ended.set({n: r.ended_ms for n, r in after.nodes.items() if r.ended_ms is not None}),
            WorkflowRunItem.errors.set({n: r.error for n, r in after.nodes.items() if r.error is not None}),
        ]
        actions.append(
            WorkflowRunItem.ended_ms.set(after.ended_ms)
            if after.ended_ms is not None
            else WorkflowRunItem.ended_ms.remove()
        )
        # on the failed list or off it with its new status (a retry: running again)
        actions += status_index.actions(
            WorkflowRunItem, status_keys(before.tenant, before.run_id, before.created_ms, after.status)
        )
        return _update(WorkflowRunItem(run_pk(before.run_id), SK), actions, WorkflowRunItem.revision == before.revision)


def _status_page(found: list[tuple[str, WorkflowRun]], after: str | None) -> Page[WorkflowRun]:
    """A status page: its runs, the cursor after it (a position), each run's own cursor."""
    return Page(
        [run for _, run in found],
        encode_cursor(after) if after is not None else None,
        tuple(encode_cursor(ssk) for ssk, _ in found),
    )


def _all(conditions: list[Any]) -> Any:
    """The conditions joined by AND as a balanced tree (a chain of a hundred is too deep for
    PynamoDB, which copies conditions recursively)."""
    while len(conditions) > 1:
        pairs = [conditions[i] & conditions[i + 1] for i in range(0, len(conditions) - 1, 2)]
        conditions = pairs + ([conditions[-1]] if len(conditions) % 2 else [])
    return conditions[0]


def _update(item: WorkflowRunItem, actions: list[Any], condition: Any) -> bool:
    try:
        item.update(actions=[*actions, WorkflowRunItem.revision.add(1)], condition=condition)
    except UpdateError as error:
        if is_conflict(error):
            return False
        raise
    return True


def _run(item: WorkflowRunItem) -> WorkflowRun:
    def number(mapping: Any, node: str) -> int | None:
        value = mapping.get(node)
        return int(value) if value is not None else None

    items, runs, started, ended, errors = (
        _as_dict(item.items),
        _as_dict(item.runs),
        _as_dict(item.started),
        _as_dict(item.ended),
        _as_dict(item.errors),
    )
    statuses = {node: NodeStatus(status) for node, status in item.nodes.as_dict().items()}
    nodes = {
        node: NodeRun(items.get(node), runs.get(node), number(started, node), number(ended, node), errors.get(node))
        for node in statuses
        if node in items or node in errors or node in ended
    }
    return WorkflowRun(
        run_id=item.pk.removeprefix("WR#"),
        workflow_id=item.workflow_id,
        tenant=item.tenant,
        graph=graph_from_dict(json.loads(item.graph)),
        statuses=statuses,
        status=NodeStatus(item.status),
        attempts={node: int(n) for node, n in item.attempts.as_dict().items()},
        version=int(item.version or 1),
        nodes=nodes,
        created_ms=int(item.created_ms or 0),
        ended_ms=int(item.ended_ms) if item.ended_ms is not None else None,
        revision=int(item.revision or 0),
    )


def _as_dict(value: Any) -> dict[str, Any]:
    """A map attribute as a dict (absent on items written before it existed: empty)."""
    if value is None:
        return {}
    return value.as_dict() if hasattr(value, "as_dict") else dict(value)
