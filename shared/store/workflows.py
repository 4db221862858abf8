"""Workflow runs in DynamoDB (docs/workflows.md, section 2): an adapter of the port
``WorkflowRunStore`` (shared/services/workflows.py). Each write is one conditional UpdateItem of
the run's item, so a repeated step or two triggers at once change nothing twice."""

from __future__ import annotations

import json
from typing import Any

from pynamodb.exceptions import DoesNotExist, PutError, UpdateError

from shared.domain.codec import compact_json
from shared.domain.workflows import NodeStatus, WorkflowRun, graph_from_dict, graph_to_dict
from shared.store.models import WorkflowRunItem, is_conflict

SK = "R"


def run_pk(run_id: str) -> str:
    return f"WR#{run_id}"


class DynamoWorkflowRuns:
    def create(self, run: WorkflowRun) -> bool:
        """The run's item, only if it does not exist (a duplicate start starts nothing)."""
        item = WorkflowRunItem(
            run_pk(run.run_id),
            SK,
            workflow_id=run.workflow_id,
            tenant=run.tenant,
            graph=compact_json(graph_to_dict(run.graph)),
            status=run.status.value,
            nodes={node: status.value for node, status in run.statuses.items()},
            items={},
            attempts=dict(run.attempts),
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

    def node_ended(self, run_id: str, node: str, status: NodeStatus) -> WorkflowRun | None:
        path = WorkflowRunItem.nodes[node]
        item = WorkflowRunItem(run_pk(run_id), SK)
        condition = (WorkflowRunItem.status == NodeStatus.RUNNING.value) & (
            (path == NodeStatus.RUNNING.value) | (path == status.value)
        )
        if not _update(item, [path.set(status.value)], condition):
            return None
        return _run(item)  # pynamodb's update reads the item back (ALL_NEW)

    def node_started(self, run_id: str, node: str, item_id: str) -> bool:
        path = WorkflowRunItem.nodes[node]
        actions = [path.set(NodeStatus.RUNNING.value), WorkflowRunItem.items[node].set(item_id)]
        return _update(WorkflowRunItem(run_pk(run_id), SK), actions, path == NodeStatus.PENDING.value)

    def node_skipped(self, run_id: str, node: str) -> bool:
        path = WorkflowRunItem.nodes[node]
        return _update(
            WorkflowRunItem(run_pk(run_id), SK), [path.set(NodeStatus.SKIPPED.value)], path == NodeStatus.PENDING.value
        )

    def run_ended(self, run_id: str, status: NodeStatus) -> bool:
        return _update(
            WorkflowRunItem(run_pk(run_id), SK),
            [WorkflowRunItem.status.set(status.value)],
            WorkflowRunItem.status == NodeStatus.RUNNING.value,
        )

    def cancel(self, run_id: str) -> bool:
        return self.run_ended(run_id, NodeStatus.CANCELLED)


def _update(item: WorkflowRunItem, actions: list[Any], condition: Any) -> bool:
    try:
        item.update(actions=actions, condition=condition)
    except UpdateError as error:
        if is_conflict(error):
            return False
        raise
    return True


def _run(item: WorkflowRunItem) -> WorkflowRun:
    return WorkflowRun(
        run_id=item.pk.removeprefix("WR#"),
        workflow_id=item.workflow_id,
        tenant=item.tenant,
        graph=graph_from_dict(json.loads(item.graph)),
        statuses={node: NodeStatus(status) for node, status in item.nodes.as_dict().items()},
        status=NodeStatus(item.status),
        attempts={node: int(n) for node, n in item.attempts.as_dict().items()},
    )
