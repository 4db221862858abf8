"""The registration API: API Gateway (REST, proxy) -> Powertools resolver -> TaskService."""

from __future__ import annotations

import json
from functools import cache
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response, content_types
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from aws_lambda_powertools.event_handler.openapi.params import Query
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from functions.api.openapi import DESCRIPTION, RESPONSES, TITLE, VERSION
from shared.api.errors import InternalError, RouteNotFound, from_pydantic, response_for
from shared.api.models import JobIn, Limit, TaskIn
from shared.api.views import error_view, job_view, run_view, task_view
from shared.domain.errors import PayloadTooLarge, SundialError
from shared.domain.states import TaskStatus
from shared.domain.tasks import MAX_BODY_BYTES
from shared.observability import logger, metrics, tracer
from shared.services.factory import build_job_service, build_task_service
from shared.services.jobs import JobService
from shared.services.tasks import TaskService
from shared.settings import from_env

app = APIGatewayRestResolver(enable_validation=True)
app.configure_openapi(title=TITLE, version=VERSION, description=DESCRIPTION)
app.enable_swagger(path="/v1/docs", title=TITLE, version=VERSION, description=DESCRIPTION)


@cache
def service() -> TaskService:
    return build_task_service(from_env())


@cache
def jobs() -> JobService:
    return build_job_service(from_env())


def tenant() -> str:
    """The caller's tenant. Until authentication lands every caller is the default tenant."""
    return from_env().default_tenant


JSON_HEADERS = {"Content-Type": content_types.APPLICATION_JSON}


def json_response(status: int, body: Any) -> Response[Any]:
    return Response(status_code=status, content_type=content_types.APPLICATION_JSON, body=body)


@app.post("/v1/tasks", status_code=201, responses=RESPONSES["create"], summary="Register a task")
def create_task(task: TaskIn) -> Response[Any]:
    created = service().register(tenant(), task.to_spec())
    metrics.add_metric(name="TasksRegistered", unit=MetricUnit.Count, value=1)
    logger.info("task registered", extra={"task_id": created.id, "next_fire_at": str(created.next_fire_at)})
    return json_response(201, task_view(created))


@app.get("/v1/tasks", responses=RESPONSES["list"], summary="List tasks, newest first")
def list_tasks(
    status: Annotated[TaskStatus | None, Query()] = None,
    limit: Annotated[Limit, Query()] = 50,
    cursor: Annotated[str | None, Query(max_length=512)] = None,
) -> Response[Any]:
    page = service().list(tenant(), status=status, limit=limit, cursor=cursor)
    return json_response(200, {"items": [task_view(t) for t in page.items], "next_cursor": page.next_cursor})


@app.post("/v1/jobs", status_code=201, responses=RESPONSES["create"], summary="Start a sharded batch job")
def create_job(job: JobIn) -> Response[Any]:
    started = jobs().start(tenant(), job.to_request())
    logger.info("job started", extra={"job_id": started.id})
    return json_response(201, job_view(started))


@app.get("/v1/jobs", responses=RESPONSES["list"], summary="List jobs, newest first")
def list_jobs(
    limit: Annotated[Limit, Query()] = 50,
    cursor: Annotated[str | None, Query(max_length=512)] = None,
) -> Response[Any]:
    page = jobs().list(tenant(), limit, cursor)
    return json_response(200, {"items": [job_view(j) for j in page.items], "next_cursor": page.next_cursor})


@app.get("/v1/jobs/<job_id>", responses=RESPONSES["get"], summary="Read a job and its progress")
def get_job(job_id: str) -> Response[Any]:
    return json_response(200, job_view(jobs().get(tenant(), job_id)))


@app.get("/v1/tasks/<task_id>", responses=RESPONSES["get"], summary="Read a task")
def get_task(task_id: str) -> Response[Any]:
    return json_response(200, task_view(service().get(tenant(), task_id)))


@app.delete("/v1/tasks/<task_id>", status_code=204, responses=RESPONSES["cancel"], summary="Cancel a task")
def cancel_task(task_id: str) -> Response[Any]:
    service().cancel(tenant(), task_id)
    return Response(status_code=204)


@app.post("/v1/tasks/<task_id>/pause", responses=RESPONSES["state"], summary="Pause a task")
def pause_task(task_id: str) -> Response[Any]:
    return json_response(200, task_view(service().pause(tenant(), task_id)))


@app.post("/v1/tasks/<task_id>/resume", responses=RESPONSES["state"], summary="Resume a paused task")
def resume_task(task_id: str) -> Response[Any]:
    return json_response(200, task_view(service().resume(tenant(), task_id)))


@app.get("/v1/tasks/<task_id>/runs", responses=RESPONSES["runs"], summary="A task's runs, newest first")
def list_runs(
    task_id: str,
    limit: Annotated[Limit, Query()] = 50,
    cursor: Annotated[str | None, Query(max_length=512)] = None,
) -> Response[Any]:
    page = service().runs(tenant(), task_id, limit=limit, cursor=cursor)
    return json_response(200, {"items": [run_view(r) for r in page.items], "next_cursor": page.next_cursor})


@app.get("/v1/openapi.json", include_in_schema=False)
def openapi() -> Response[Any]:
    return Response(
        200,
        content_types.APPLICATION_JSON,
        app.get_openapi_json_schema(title=TITLE, version=VERSION, description=DESCRIPTION),
    )


@app.exception_handler(SundialError)
def domain_error(error: SundialError) -> Response[Any]:
    return response_for(error)


@app.exception_handler(RequestValidationError)
def invalid_request(error: RequestValidationError) -> Response[Any]:
    return response_for(from_pydantic(error.errors()))


@app.not_found
def no_route(_: Exception) -> Response[Any]:
    return response_for(RouteNotFound(f"no route {app.current_event.http_method} {app.current_event.path}"))


@app.exception_handler(Exception)
def unexpected(error: Exception) -> Response[Any]:
    logger.exception("unhandled error")
    return response_for(InternalError("Sundial failed to answer this request; it has been logged"))


@logger.inject_lambda_context(correlation_id_path="requestContext.requestId")
@metrics.log_metrics
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    if len((event.get("body") or "").encode()) > MAX_BODY_BYTES:  # before anything parses it
        too_large = PayloadTooLarge(f"the request body is over {MAX_BODY_BYTES} bytes")
        return {"statusCode": 413, "headers": JSON_HEADERS, "body": json.dumps(error_view(too_large))}
    return app.resolve(as_json(event), context)


def as_json(event: dict[str, Any]) -> dict[str, Any]:
    """The API speaks JSON whatever Content-Type a client sends (curl -d says form-urlencoded)."""
    headers = {k: v for k, v in (event.get("headers") or {}).items() if k.lower() != "content-type"}
    multi = {k: v for k, v in (event.get("multiValueHeaders") or {}).items() if k.lower() != "content-type"}
    return {
        **event,
        "headers": {**headers, "Content-Type": "application/json"},
        "multiValueHeaders": {**multi, "Content-Type": ["application/json"]},
    }
