"""``/v1/workflows``: workflows (tasks joined in a graph, docs/workflows.md) and their runs:
register, read, list, change, delete; start a run, read and list runs, cancel and retry one.
``/v1/workflow-runs``: the tenant's runs of every workflow in a status somebody must look at."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Path, Query

from functions.api.common import json_response, replayable, settings, tenant, workflows
from functions.api.openapi import RESPONSES
from functions.api.routes.tasks import Cursor, PageSize
from shared.api.models.workflows import WorkflowIn, WorkflowPatch, graph_of, schedule_of
from shared.api.paging import fitted
from shared.api.responses import RunOut, WorkflowOut, WorkflowPage, WorkflowRunOut, WorkflowRunPage, WorkflowRunStarted
from shared.api.views.tasks import run_view as task_run_view
from shared.api.views.workflows import run_view, workflow_view
from shared.domain.workflows import NodeStatus, RunFilter
from shared.observability import logger
from shared.services.workflows import UNSET, WorkflowDraft

router = Router()

WorkflowId = Annotated[str, Path(min_length=1, max_length=64, description="The workflow's id.")]
RunId = Annotated[str, Path(min_length=1, max_length=64, description="The run's id.")]
NodeName = Annotated[str, Path(min_length=1, max_length=64, description="The node's id.")]


@router.post("/v1/workflows", status_code=201, responses=RESPONSES["create_workflow"], summary="Register a workflow")
def create_workflow(workflow: WorkflowIn) -> Response[WorkflowOut]:
    def create() -> tuple[int, WorkflowOut]:
        nodes, graph = graph_of(workflow.nodes, workflow.edges)
        draft = WorkflowDraft(nodes, graph, workflow.name, schedule_of(workflow.schedule))
        created = workflows().create(tenant(), draft)
        logger.info("workflow registered", extra={"workflow_id": created.id, "nodes": len(nodes)})
        return 201, workflow_view(created)

    return replayable(router, "POST /v1/workflows", create)


@router.get("/v1/workflows", responses=RESPONSES["list"], summary="List workflows, newest first")
def list_workflows(limit: PageSize = 50, cursor: Cursor = None) -> Response[WorkflowPage]:
    page = workflows().list(tenant(), limit, cursor)
    items, after = fitted(page.items, page.cursors, page.next_cursor, workflow_view, settings().page_bytes)
    return json_response(200, WorkflowPage(items=items, next_cursor=after))


@router.get("/v1/workflows/<workflow_id>", responses=RESPONSES["workflow"], summary="Read a workflow")
def get_workflow(workflow_id: WorkflowId) -> Response[WorkflowOut]:
    return json_response(200, workflow_view(workflows().get(tenant(), workflow_id)))


@router.patch("/v1/workflows/<workflow_id>", responses=RESPONSES["update_workflow"], summary="Change a workflow")
def update_workflow(workflow_id: WorkflowId, patch: WorkflowPatch) -> Response[WorkflowOut]:
    service, owner = workflows(), tenant()
    given = patch.model_fields_set
    nodes = graph = None
    if patch.nodes is not None and patch.edges is not None:
        nodes, graph = graph_of(patch.nodes, patch.edges, service.get(owner, workflow_id).nodes)
    changed = service.update(
        owner,
        workflow_id,
        name=patch.name if "name" in given else UNSET,
        nodes=nodes,
        graph=graph,
        schedule=schedule_of(patch.schedule) if "schedule" in given else UNSET,
    )
    logger.info("workflow changed", extra={"workflow_id": changed.id, "version": changed.version})
    return json_response(200, workflow_view(changed))


@router.delete(
    "/v1/workflows/<workflow_id>", status_code=204, responses=RESPONSES["delete_workflow"], summary="Delete a workflow"
)
def delete_workflow(workflow_id: WorkflowId) -> Response[None]:
    workflows().delete(tenant(), workflow_id)
    logger.info("workflow deleted", extra={"workflow_id": workflow_id})
    return Response(status_code=204)


@router.post(
    "/v1/workflows/<workflow_id>/run",
    status_code=202,
    responses=RESPONSES["start_workflow_run"],
    summary="Start a run of a workflow now",
)
def start_run(workflow_id: WorkflowId) -> Response[WorkflowRunStarted]:
    def start() -> tuple[int, WorkflowRunStarted]:
        run = workflows().start_run(tenant(), workflow_id)
        logger.info("workflow run started", extra={"workflow_id": run.workflow_id, "run_id": run.run_id})
        return 202, WorkflowRunStarted(run_id=run.run_id)

    return replayable(router, f"POST /v1/workflows/{workflow_id.upper()}/run", start)


@router.get(
    "/v1/workflows/<workflow_id>/runs", responses=RESPONSES["workflow_runs"], summary="A workflow's runs, newest first"
)
def list_runs(workflow_id: WorkflowId, limit: PageSize = 20, cursor: Cursor = None) -> Response[WorkflowRunPage]:
    page = workflows().runs_of(tenant(), workflow_id, limit, cursor)
    items, after = fitted(page.items, page.cursors, page.next_cursor, run_view, settings().page_bytes)
    return json_response(200, WorkflowRunPage(items=items, next_cursor=after))


@router.get(
    "/v1/workflow-runs",
    responses=RESPONSES["workflow_runs_by_status"],
    summary="The tenant's workflow runs of a status (failed), every workflow's, newest first",
)
def list_runs_by_status(
    status: Annotated[
        RunFilter,
        Query(description="The runs' status: failed (read through the status index: full pages)."),
    ],
    limit: PageSize = 20,
    cursor: Cursor = None,
) -> Response[WorkflowRunPage]:
    page = workflows().runs_by_status(tenant(), NodeStatus(status.value), limit, cursor)
    items, after = fitted(page.items, page.cursors, page.next_cursor, run_view, settings().page_bytes)
    return json_response(200, WorkflowRunPage(items=items, next_cursor=after))


@router.get("/v1/workflows/<workflow_id>/runs/<run_id>", responses=RESPONSES["workflow_run"], summary="A workflow run")
def get_run(workflow_id: WorkflowId, run_id: RunId) -> Response[WorkflowRunOut]:
    return json_response(200, run_view(workflows().run(tenant(), workflow_id, run_id)))


@router.post(
    "/v1/workflows/<workflow_id>/runs/<run_id>/cancel",
    responses=RESPONSES["cancel_workflow_run"],
    summary="Cancel a workflow run",
)
def cancel_run(workflow_id: WorkflowId, run_id: RunId) -> Response[WorkflowRunOut]:
    run = workflows().cancel_run(tenant(), workflow_id, run_id)
    logger.info("workflow run cancelled", extra={"workflow_id": run.workflow_id, "run_id": run.run_id})
    return json_response(200, run_view(run))


@router.post(
    "/v1/workflows/<workflow_id>/runs/<run_id>/retry",
    responses=RESPONSES["retry_workflow_run"],
    summary="Run a workflow run's failed nodes again",
)
def retry_run(workflow_id: WorkflowId, run_id: RunId) -> Response[WorkflowRunOut]:
    run = workflows().retry_run(tenant(), workflow_id, run_id)
    logger.info("workflow run retried", extra={"workflow_id": run.workflow_id, "run_id": run.run_id})
    return json_response(200, run_view(run))


@router.get(
    "/v1/workflows/<workflow_id>/runs/<run_id>/nodes/<node>",
    responses=RESPONSES["workflow_node_run"],
    summary="A node's run in a workflow run (attempts, lateness, last error)",
)
def get_node_run(workflow_id: WorkflowId, run_id: RunId, node: NodeName) -> Response[RunOut]:
    return json_response(200, task_run_view(workflows().node_run(tenant(), workflow_id, run_id, node)))
