"""``/v1/tasks``: register (one or a batch), read, list, change, pause, resume, run now, cancel,
and a task's runs."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Query
from aws_lambda_powertools.metrics import MetricUnit

from functions.api.common import json_response, replayable, settings, tasks, tenant
from functions.api.openapi import RESPONSES, TaskId
from shared.api.models.headers import parse_version
from shared.api.models.tags import TAG_FILTER
from shared.api.models.task_patches import TaskPatchIn
from shared.api.models.tasks import MAX_PAGE, BatchIn, TaskIn, spec_or_error
from shared.api.paging import fitted
from shared.api.responses import BatchOut, RunPage, RunStarted, TaskOut, TaskPage
from shared.api.views.tasks import batch_view, run_view, task_view
from shared.domain import tags as tg
from shared.domain import tasks as t
from shared.domain.states import TaskFilter
from shared.domain.tasks import Task
from shared.observability import logger, metrics

router = Router()

PageSize = Annotated[int, Query(ge=1, le=MAX_PAGE, description=f"1 to {MAX_PAGE}.")]
Cursor = Annotated[str | None, Query(max_length=512, description="next_cursor of the previous page.")]


IAM_ROUTE = (
    " Deployed only: the request is signed with SigV4 by an AWS role that the deployment's "
    "grant_register granted, with no API key, and registers as the tenant granted to that role."
)


@router.post("/v1/tasks", status_code=201, responses=RESPONSES["create"], summary="Register a task")
@router.post(
    "/iam/v1/tasks",
    status_code=201,
    responses=RESPONSES["create"],
    summary="Register a task, as an AWS IAM role",
    description="As POST /v1/tasks." + IAM_ROUTE,
)
def create_task(task: TaskIn) -> Response[TaskOut]:
    def register() -> tuple[int, TaskOut]:
        created = tasks().register(tenant(), task.to_spec())
        metrics.add_metric(name="TasksRegistered", unit=MetricUnit.Count, value=1)
        logger.info("task registered", extra={"task_id": created.id, "next_fire_at": str(created.next_fire_at)})
        return 201, task_view(created, scheduled_now=True)

    return replayable(router, "POST /v1/tasks", register)


@router.post("/v1/tasks:batch", responses=RESPONSES["batch"], summary="Register up to 100 tasks, each on its own")
@router.post(
    "/iam/v1/tasks:batch",
    responses=RESPONSES["batch"],
    summary="Register up to 100 tasks, each on its own, as an AWS IAM role",
    description="As POST /v1/tasks:batch." + IAM_ROUTE,
)
def create_tasks(batch: BatchIn) -> Response[BatchOut]:
    def register() -> tuple[int, BatchOut]:
        answers = tasks().register_many(tenant(), [spec_or_error(raw) for raw in batch.tasks])
        metrics.add_metric(
            name="TasksRegistered", unit=MetricUnit.Count, value=sum(isinstance(a, Task) for a in answers)
        )
        return 200, batch_view(answers)

    return replayable(router, "POST /v1/tasks:batch", register)


@router.get("/v1/tasks", responses=RESPONSES["list"], summary="List tasks, newest first")
def list_tasks(
    status: Annotated[TaskFilter | None, Query()] = None,
    name_prefix: Annotated[str | None, Query(min_length=1, max_length=t.MAX_NAME_LENGTH)] = None,
    tag: Annotated[str | None, Query(pattern=tg.FILTER_PATTERN, description=TAG_FILTER)] = None,
    limit: PageSize = 50,
    cursor: Cursor = None,
) -> Response[TaskPage]:
    wanted = tg.parse_filter(tag) if tag is not None else None
    page = tasks().list(tenant(), status=status, limit=limit, cursor=cursor, name_prefix=name_prefix, tag=wanted)
    items, after = fitted(page.items, page.cursors, page.next_cursor, task_view, settings().page_bytes)
    return json_response(200, TaskPage(items=items, next_cursor=after))


@router.get("/v1/tasks/<task_id>", responses=RESPONSES["get"], summary="Read a task")
def get_task(task_id: TaskId) -> Response[TaskOut]:
    task = tasks().get(tenant(), task_id)
    response = json_response(200, task_view(task))
    response.headers["ETag"] = f'"{task.version}"'
    return response


@router.patch("/v1/tasks/<task_id>", responses=RESPONSES["update"], summary="Change a task (a new schedule re-arms it)")
def update_task(task_id: TaskId, patch: TaskPatchIn) -> Response[TaskOut]:
    expected = router.current_event.get_header_value("If-Match")
    version = parse_version(expected) if expected is not None else None
    changed = tasks().update(tenant(), task_id, patch.to_patch(), version)
    return json_response(200, task_view(changed, scheduled_now=patch.schedule is not None))


@router.delete("/v1/tasks/<task_id>", status_code=204, responses=RESPONSES["cancel"], summary="Cancel a task")
def cancel_task(task_id: TaskId) -> Response[None]:
    tasks().cancel(tenant(), task_id)
    return Response(status_code=204)


@router.post("/v1/tasks/<task_id>/pause", responses=RESPONSES["state"], summary="Pause a task")
def pause_task(task_id: TaskId) -> Response[TaskOut]:
    return json_response(200, task_view(tasks().pause(tenant(), task_id)))


@router.post("/v1/tasks/<task_id>/resume", responses=RESPONSES["state"], summary="Resume a paused task")
def resume_task(task_id: TaskId) -> Response[TaskOut]:
    return json_response(200, task_view(tasks().resume(tenant(), task_id)))


@router.post("/v1/tasks/<task_id>/run", status_code=202, responses=RESPONSES["run"], summary="Run a task once now")
def run_task(task_id: TaskId) -> Response[RunStarted]:
    def run() -> tuple[int, RunStarted]:
        return 202, RunStarted(run_id=tasks().run_now(tenant(), task_id))

    return replayable(router, f"POST /v1/tasks/{task_id.upper()}/run", run)


@router.get("/v1/tasks/<task_id>/runs", responses=RESPONSES["runs"], summary="A task's runs, newest first")
def list_runs(task_id: TaskId, limit: PageSize = 50, cursor: Cursor = None) -> Response[RunPage]:
    page = tasks().runs(tenant(), task_id, limit=limit, cursor=cursor)
    items, after = fitted(page.items, page.cursors, page.next_cursor, run_view, settings().page_bytes)
    return json_response(200, RunPage(items=items, next_cursor=after))
