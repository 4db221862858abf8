"""``/v1/jobs``: sharded batch jobs on Step Functions: start one, read its progress, list them,
cancel one, send its processor a command."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Path, Query

from functions.api.common import base_url, jobs, json_response, replayable, settings, tenant
from functions.api.openapi import RESPONSES
from functions.api.routes.tasks import Cursor, PageSize
from shared.api.models.jobs import CommandIn, CommandOut, JobIn, ProgressIn, ProgressOut
from shared.api.paging import fitted
from shared.api.responses import JobOut, JobPage
from shared.api.views.jobs import command_view, job_view
from shared.domain.jobs import JobStatus
from shared.domain.tenants import bearer
from shared.observability import logger

router = Router()

JobId = Annotated[str, Path(min_length=1, max_length=64, description="The job's id.")]


@router.post("/v1/jobs", status_code=201, responses=RESPONSES["create_job"], summary="Start a sharded batch job")
def create_job(job: JobIn) -> Response[JobOut]:
    def start() -> tuple[int, JobOut]:
        started = jobs().start(tenant(), job.to_request(), api_url=base_url(router.current_event.raw_event))
        logger.info("job started", extra={"job_id": started.id})
        return 201, job_view(started)

    return replayable(router, "POST /v1/jobs", start)


@router.get("/v1/jobs", responses=RESPONSES["list"], summary="List jobs, newest first")
def list_jobs(
    status: Annotated[
        JobStatus | None,
        Query(description="Only the jobs of this status (a page may then come back short: follow next_cursor)."),
    ] = None,
    limit: PageSize = 50,
    cursor: Cursor = None,
) -> Response[JobPage]:
    page = jobs().list(tenant(), limit, cursor, status)
    items, after = fitted(page.items, page.cursors, page.next_cursor, job_view, settings().page_bytes)
    return json_response(200, JobPage(items=items, next_cursor=after))


@router.get("/v1/jobs/<job_id>", responses=RESPONSES["get_job"], summary="Read a job and its progress")
def get_job(job_id: JobId) -> Response[JobOut]:
    return json_response(200, job_view(jobs().get(tenant(), job_id)))


@router.post(
    "/v1/jobs/<job_id>/cancel", status_code=202, responses=RESPONSES["cancel_job"], summary="Cancel a running job"
)
def cancel_job(job_id: JobId) -> Response[JobOut]:
    cancelled = jobs().cancel(tenant(), job_id)
    logger.info("job cancelled", extra={"job_id": job_id})
    return json_response(202, job_view(cancelled))


@router.post(
    "/v1/jobs/<job_id>/progress",
    status_code=202,
    responses=RESPONSES["job_progress"],
    summary="Report a running shard's progress (with the token its shard call carried)",
)
def report_progress(job_id: JobId, report: ProgressIn) -> Response[ProgressOut]:
    token = bearer(router.current_event.get_header_value("Authorization")) or ""
    cancelled, commands = jobs().progress(job_id, token, report.done_items, report.acknowledged)
    if commands:
        logger.info("job commands offered", extra={"job_id": job_id, "commands": [c.id for c in commands]})
    return json_response(202, ProgressOut(cancelled=cancelled, commands=[command_view(c) for c in commands]))


@router.post(
    "/v1/jobs/<job_id>/commands",
    status_code=202,
    responses=RESPONSES["job_command"],
    summary="Send a command to a running job's processor (in the answer to a shard's next progress report)",
)
def send_command(job_id: JobId, sent: CommandIn) -> Response[CommandOut]:
    kept = jobs().send_command(tenant(), job_id, sent.command, sent.args)
    logger.info("job command sent", extra={"job_id": job_id, "command_id": kept.id, "command": kept.command})
    return json_response(202, command_view(kept))
