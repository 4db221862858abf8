"""The registration API: API Gateway (REST, proxy) -> Powertools resolver -> TaskService."""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import cache
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response, content_types
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from aws_lambda_powertools.event_handler.openapi.params import Query
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from functions.api.openapi import DESCRIPTION, RESPONSES, TITLE, VERSION
from shared.api.errors import InternalError, RouteNotFound, from_pydantic, response_for
from shared.api.hostile import refusal
from shared.api.models import (
    IDEMPOTENCY_KEY,
    MAX_IDEMPOTENCY_KEY,
    BatchIn,
    JobIn,
    Limit,
    PreviewIn,
    RedriveIn,
    TaskIn,
    TaskPatchIn,
    parse_version,
    spec_or_error,
)
from shared.api.replay import Replay
from shared.api.views import batch_view, dead_letter_view, error_view, job_view, redrive_view, run_view, task_view
from shared.domain import tasks as t
from shared.domain.calendars import Repeat, calendar_notes
from shared.domain.errors import PayloadTooLarge, SundialError, ValidationFailed
from shared.domain.registration import preview
from shared.domain.states import LetterStatus, TaskStatus
from shared.domain.tasks import MAX_BODY_BYTES, Task
from shared.domain.times import iso, truncate_ms
from shared.observability import logger, metrics, tracer
from shared.services.factory import build_job_service, build_task_service
from shared.services.jobs import JobService
from shared.services.tasks import Change, TaskService, utc_now
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


@cache
def replay() -> Replay:
    return Replay(from_env().idempotency_table)


def replayable(route: str, work: Callable[[], tuple[int, Any]]) -> Response[Any]:
    """Answer ``work()``; with an ``Idempotency-Key`` header, a retry gets the first answer."""
    event = app.current_event
    key = event.get_header_value(IDEMPOTENCY_KEY)
    if key is None:
        return json_response(*work())
    if not 1 <= len(key) <= MAX_IDEMPOTENCY_KEY or not key.isprintable():
        raise ValidationFailed.on(IDEMPOTENCY_KEY, f"is 1 to {MAX_IDEMPOTENCY_KEY} printable characters")
    body = json.loads(event.body) if event.body else None
    status, answer, replayed = replay()(tenant=tenant(), route=route, key=key, body=body, work=work)
    response = json_response(status, answer)
    if replayed:
        response.headers["Idempotent-Replayed"] = "true"
    return response


@app.post("/v1/tasks", status_code=201, responses=RESPONSES["create"], summary="Register a task")
def create_task(task: TaskIn) -> Response[Any]:
    def register() -> tuple[int, Any]:
        created = service().register(tenant(), task.to_spec())
        metrics.add_metric(name="TasksRegistered", unit=MetricUnit.Count, value=1)
        logger.info("task registered", extra={"task_id": created.id, "next_fire_at": str(created.next_fire_at)})
        return 201, task_view(created)

    return replayable("POST /v1/tasks", register)


@app.post("/v1/tasks:batch", responses=RESPONSES["batch"], summary="Register up to 100 tasks, each on its own")
def create_tasks(batch: BatchIn) -> Response[Any]:
    def register() -> tuple[int, Any]:
        answers = service().register_many(tenant(), [spec_or_error(raw) for raw in batch.tasks])
        metrics.add_metric(
            name="TasksRegistered", unit=MetricUnit.Count, value=sum(isinstance(a, Task) for a in answers)
        )
        return 200, batch_view(answers)

    return replayable("POST /v1/tasks:batch", register)


@app.post("/v1/schedules:preview", responses=RESPONSES["preview"], summary="The next occurrences of a schedule")
def preview_schedule(request: PreviewIn) -> Response[Any]:
    after = truncate_ms(request.after) if request.after else None
    schedule = request.schedule.to_domain()
    times = preview(schedule, request.count, truncate_ms(utc_now()), after)
    notes = calendar_notes(schedule, times) if isinstance(schedule, Repeat) else []
    return json_response(200, {"times": [iso(instant) for instant in times], "notes": notes})


@app.get("/v1/tasks", responses=RESPONSES["list"], summary="List tasks, newest first")
def list_tasks(
    status: Annotated[TaskStatus | None, Query()] = None,
    name_prefix: Annotated[str | None, Query(min_length=1, max_length=t.MAX_NAME_LENGTH)] = None,
    limit: Annotated[Limit, Query()] = 50,
    cursor: Annotated[str | None, Query(max_length=512)] = None,
) -> Response[Any]:
    page = service().list(tenant(), status=status, limit=limit, cursor=cursor, name_prefix=name_prefix)
    return json_response(200, {"items": [task_view(t) for t in page.items], "next_cursor": page.next_cursor})


@app.patch("/v1/tasks/<task_id>", responses=RESPONSES["update"], summary="Change a task (a new schedule re-arms it)")
def update_task(task_id: str, patch: TaskPatchIn) -> Response[Any]:
    def change(task: Task) -> Change:
        return Change(*patch.apply(task_view(task)))

    expected = app.current_event.get_header_value("If-Match")
    version = parse_version(expected) if expected is not None else None
    return json_response(200, task_view(service().update(tenant(), task_id, change, version)))


@app.post("/v1/tasks/<task_id>/run", status_code=202, responses=RESPONSES["run"], summary="Run a task once now")
def run_task(task_id: str) -> Response[Any]:
    def run() -> tuple[int, Any]:
        return 202, {"run_id": service().run_now(tenant(), task_id)}

    return replayable(f"POST /v1/tasks/{task_id.upper()}/run", run)


@app.get("/v1/dead-letters", responses=RESPONSES["list"], summary="Dead letters, newest first")
def list_dead_letters(
    status: Annotated[LetterStatus | None, Query()] = None,
    limit: Annotated[Limit, Query()] = 50,
    cursor: Annotated[str | None, Query(max_length=512)] = None,
) -> Response[Any]:
    page = service().dead_letters(tenant(), limit=limit, cursor=cursor, status=status)
    return json_response(200, {"items": [dead_letter_view(d) for d in page.items], "next_cursor": page.next_cursor})


@app.get("/v1/dead-letters/<letter_id>", responses=RESPONSES["dead_letter"], summary="One dead letter")
def get_dead_letter(letter_id: str) -> Response[Any]:
    return json_response(200, dead_letter_view(service().dead_letter(tenant(), letter_id)))


@app.post("/v1/dead-letters/redrive", responses=RESPONSES["redrive"], summary="Fire dead letters once more")
def redrive_dead_letters(request: RedriveIn) -> Response[Any]:
    def redrive() -> tuple[int, Any]:
        return 200, redrive_view(service().redrive(tenant(), request.chosen()))

    return replayable("POST /v1/dead-letters/redrive", redrive)


@app.post("/v1/jobs", status_code=201, responses=RESPONSES["create"], summary="Start a sharded batch job")
def create_job(job: JobIn) -> Response[Any]:
    def start() -> tuple[int, Any]:
        started = jobs().start(tenant(), job.to_request())
        logger.info("job started", extra={"job_id": started.id})
        return 201, job_view(started)

    return replayable("POST /v1/jobs", start)


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
    task = service().get(tenant(), task_id)
    response = json_response(200, task_view(task))
    response.headers["ETag"] = f'"{task.version}"'
    return response


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
    if (hostile := refusal(event.get("body"))) is not None:  # nesting, huge integers, lone surrogates
        return hostile
    replay().register_context(context)
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
