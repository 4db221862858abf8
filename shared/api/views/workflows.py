"""Workflows and their runs as the API answers them (shared/api/responses.py)."""

from __future__ import annotations

from shared.api.responses import (
    NodeRunOut,
    WorkflowEdgeOut,
    WorkflowNodeOut,
    WorkflowOut,
    WorkflowRunGraph,
    WorkflowRunOut,
)
from shared.api.views.forms import schedule_of, targets_shown
from shared.api.views.tasks import retry_view
from shared.domain.times import from_ms
from shared.domain.workflow_defs import Workflow
from shared.domain.workflows import Graph, WorkflowRun


def _edges(graph: Graph) -> list[WorkflowEdgeOut]:
    return [WorkflowEdgeOut.model_validate({"from": e.parent, "to": e.child, "on": e.on}) for e in graph.edges]


def workflow_view(workflow: Workflow) -> WorkflowOut:
    nodes = [
        WorkflowNodeOut.model_validate(
            {
                "id": node.id,
                **targets_shown(node.targets, node.multicast),
                "payload": node.payload,
                "retry": retry_view(node.retry),
                "join": workflow.graph.join_of(node.id),
            }
        )
        for node in workflow.nodes
    ]
    return WorkflowOut(
        id=workflow.id,
        name=workflow.name,
        version=workflow.version,
        nodes=nodes,
        edges=_edges(workflow.graph),
        schedule=schedule_of(workflow.schedule) if workflow.schedule is not None else None,
        schedule_task_id=workflow.schedule_task_id,
        created_at=workflow.created_at,
        updated_at=workflow.updated_at,
    )


def run_view(run: WorkflowRun) -> WorkflowRunOut:
    nodes = {}
    for node in run.graph.nodes:
        info = run.node(node)
        nodes[node] = NodeRunOut(
            status=run.status_of(node),
            attempt=run.attempts.get(node, 1),
            run_id=info.run_id,
            item_id=info.item_id,
            started_at=from_ms(info.started_ms) if info.started_ms is not None else None,
            ended_at=from_ms(info.ended_ms) if info.ended_ms is not None else None,
            error=info.error,
        )
    return WorkflowRunOut(
        run_id=run.run_id,
        workflow_id=run.workflow_id,
        version=run.version,
        status=run.status,
        nodes=nodes,
        graph=WorkflowRunGraph(nodes=list(run.graph.nodes), edges=_edges(run.graph), joins=dict(run.graph.joins)),
        created_at=from_ms(run.created_ms),
        ended_at=from_ms(run.ended_ms) if run.ended_ms is not None else None,
    )
