"""What the OpenAPI document says beyond the models: the title, the limits, the error answers."""

from __future__ import annotations

import json
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver
from aws_lambda_powertools.event_handler.openapi.models import OpenAPI
from aws_lambda_powertools.event_handler.openapi.params import Path
from aws_lambda_powertools.event_handler.openapi.types import OpenAPIResponse

from shared.api.models.headers import MAX_IDEMPOTENCY_KEY
from shared.api.models.schedules import MAX_PREVIEW
from shared.api.models.tasks import MAX_BATCH
from shared.api.responses import ErrorOut
from shared.domain import backfills as bf
from shared.domain import limits as lim
from shared.domain import schedules as sched
from shared.domain import tags as tg
from shared.domain import tasks as t
from shared.domain.bulk import MAX_STEP
from shared.domain.calendars import MAX_INTERVAL
from shared.domain.job_commands import MAX_ARGS_BYTES, MAX_COMMAND_LENGTH, MAX_PENDING_COMMANDS
from shared.domain.retry import MAX_AGE_SECONDS, MAX_ATTEMPTS, MAX_DELAY_SECONDS, MIN_AGE_SECONDS
from shared.domain.tenants import MAX_BURST, MAX_REQUESTS_PER_SECOND
from shared.services.tasks import MAX_REDRIVE
from shared.topology import PAGE_BYTES

TITLE = "Sundial"
VERSION = "1.0.0"
DESCRIPTION = f"""
Serverless task scheduler: register a task, Sundial calls its target on time, exactly once,
retries what fails and keeps the history.

Times are ISO 8601 with an offset or `Z`, millisecond precision, returned in UTC.
Every error answer is `{{"error": {{"code", "message", "details": [{{"field", "message"}}]}}}}`;
bad input is `400 validation_error` naming the field, an unknown id `404 task_not_found`.
Optional members may be left out or sent as `null` (the same thing); answers leave out members
documented as optional when they have no value.

**Limits**
- request body: {t.MAX_BODY_BYTES} bytes (`413 payload_too_large` above it);
- `payload`: {t.MAX_PAYLOAD_BYTES} bytes as compact JSON;
- `name`: {t.MAX_NAME_LENGTH} characters;
- HTTP target: URL {t.MAX_URL_LENGTH} characters, at most {t.MAX_HEADERS} headers (names up to
  {t.MAX_HEADER_NAME}, values up to {t.MAX_HEADER_VALUE} characters; `Content-Type`, `Host`,
  `Idempotency-Key` and `Sundial-*` are Sundial's), timeout up to {t.MAX_TIMEOUT_SECONDS} s;
- `targets`: 1 to {t.MAX_TARGETS} (multicast);
- `schedule.at` and `schedule.after_seconds`: at most {sched.MAX_AHEAD.days} days ahead; an `at`
  in the past fires at once (misfire `fire_now`, the one-shot default) if it is at most 24 hours
  old, and is rejected when misfire is `skip` or when it is older;
- `schedule.every_seconds`: at least {sched.MIN_EVERY_SECONDS} s; the first fire of any
  schedule lies at most {sched.MAX_AHEAD.days} days ahead;
- `schedule.cron`: 5 fields (`min hour dom mon dow`) or 6 with seconds first, in `timezone`
  (IANA, default UTC); a wall time skipped by a DST change fires at the end of the gap, a
  repeated one fires once; the day fields combine as in Linux (Vixie) cron: both restricted,
  a day matches if either does (`30 4 1,15 * 5`: the 1st, the 15th and every Friday); either
  starting with `*` (even `*/5`) or `?`, a day must match both (`0 0 */5 * 1`: the Mondays on
  the 1st, 6th, 11th, ... of a month);
- `retry.max_attempts`: 1 to {MAX_ATTEMPTS}; a retry waits at most {int(MAX_DELAY_SECONDS)} s;
  `retry.max_age_seconds` {MIN_AGE_SECONDS} to {MAX_AGE_SECONDS} (no attempt after the occurrence is that old);
- `schedule.repeat`: `interval` 1 to {MAX_INTERVAL}; `days` for `week` (1-7) and `month` (1-31)
  only; `time` not on `hour`; `calendar` (a country code of the `holidays` package) on
  `workday` only;
- limits per destination (`PUT /v1/limits/{{name}}`): at most {lim.MAX_LIMITS} a tenant, one per
  origin; `name` 1 to 64 of a-z, 0-9, `.`, `_`, `-`; `per_second` {lim.MIN_PER_SECOND} to
  {lim.MAX_PER_SECOND}; `burst` 1 to {lim.MAX_BURST}; `max_in_flight` 1 to {lim.MAX_IN_FLIGHT};
- list `limit`: 1 to 100 (default 50); a page also stops at {PAGE_BYTES // (1024 * 1024)} MiB of items (Lambda
  answers at most 6 MB) and after a bounded read (a filtered list): a short page, even an empty
  one, with a `next_cursor` is normal; lists are eventually consistent (reads by id are not);
- `POST /v1/dead-letters/redrive` `{{"all": true}}`: up to {MAX_REDRIVE} letters a call, then call again
  with `next_cursor` as `cursor` until it is null;
- a tenant's `requests_per_second` and `burst`: 1 to {MAX_REQUESTS_PER_SECOND} and 1 to {MAX_BURST};
- `tags`: {tg.RULES}; `GET /v1/tasks?tag=key:value`;
- `POST /v1/tasks:pause`, `:resume`, `:cancel`: one selector (`name_prefix`, one `tag`, or `status`), up to
  {MAX_STEP} tasks a call, then call again with `next_cursor` as `cursor` until it is null;
- `POST /v1/tasks/{{task_id}}/backfill`: a window at most {bf.MAX_AGE.days} days back and not after now,
  holding at most {bf.MAX_OCCURRENCES} occurrences; `per_second` {bf.MIN_PER_SECOND} to {bf.MAX_PER_SECOND};
- `POST /v1/tasks:batch`: 1 to {MAX_BATCH} specs;
  `POST /v1/schedules:preview`: `count` 1 to {MAX_PREVIEW};
- `POST /v1/jobs/{{job_id}}/commands`: `command` 1 to {MAX_COMMAND_LENGTH} characters, `args` at most
  {MAX_ARGS_BYTES} bytes as JSON; at most {MAX_PENDING_COMMANDS} a job that no progress report has taken yet;
- `Idempotency-Key`: 1 to {MAX_IDEMPOTENCY_KEY} printable characters, remembered for 24 hours per
  route; `If-Match` on `PATCH`: the task's `version` (its `ETag`).
"""

TaskId = Annotated[str, Path(min_length=1, max_length=64, description="The task's id (a ULID).")]

_ERROR: Any = {"application/json": {"model": ErrorOut}}


def _errors(*codes: int) -> dict[int, OpenAPIResponse]:
    meaning = {
        400: "validation_error: the field named in details",
        401: "unauthorized: no API key, an unknown or a revoked one",
        403: (
            "forbidden: a tenant key on an admin route, or the admin key on a tenant route; on /iam/v1: "
            "identity_not_granted (the signing role is not granted) or iam_route_unavailable (no AWS IAM "
            "authorization: the local runtime)"
        ),
        404: (
            "task_not_found, job_not_found, dead_letter_not_found, tenant_not_found, key_not_found, limit_not_found, "
            "backfill_not_found"
        ),
        409: (
            "invalid_state, concurrent_update, idempotency_in_progress, tenant_exists, origin_taken, "
            "too_many_limits, job_finished, too_many_commands"
        ),
        412: "version_mismatch: If-Match named another version",
        413: "payload_too_large",
        422: "idempotency_key_reused: the Idempotency-Key came with another body",
        429: "rate_limited (with Retry-After: seconds) or quota_exceeded (max_tasks; nothing stored)",
        500: "internal_error: logged; not the client's fault",
        503: "storage_unavailable: try again",
    }
    return {
        code: {"description": meaning[code], "content": _ERROR} for code in sorted({*codes, 401, 403, 429, 500, 503})
    }


RESPONSES: dict[str, dict[int, OpenAPIResponse]] = {
    "create": {201: {"description": "The task, registered."}, **_errors(400, 409, 422)},
    "batch": {200: {"description": "Each spec's task or error, by index."}, **_errors(400, 409, 422)},
    "preview": {200: {"description": "The next times; notes warn of holiday data not yet published."}, **_errors(400)},
    "run": {
        202: {"description": "One extra run, now (skipped if the task is paused or cancelled first)."},
        **_errors(400, 404, 409, 422),
    },
    "dead_letter": {200: {"description": "The dead letter."}, **_errors(400, 404)},
    "redrive": {200: {"description": "The runs started, one per letter."}, **_errors(400, 404, 409, 422)},
    "list": {200: {"description": "A page, newest first."}, **_errors(400)},
    "get": {200: {"description": "The task."}, **_errors(400, 404)},
    "cancel": {204: {"description": "Cancelled: no occurrence fires from now on."}, **_errors(400, 404, 409)},
    "state": {200: {"description": "The task, paused or resumed."}, **_errors(400, 404, 409)},
    "update": {
        200: {"description": "The task, changed (re-armed on a new schedule)."},
        **_errors(400, 404, 409, 412),
    },
    "runs": {200: {"description": "A page of runs, newest first."}, **_errors(400, 404)},
    "backfill": {
        202: {"description": "The backfill, planned and written: its runs fire at their pace (its id reads how far)."},
        **_errors(400, 404, 409, 422),
    },
    "backfills": {200: {"description": "A page of the task's backfills, newest first."}, **_errors(400, 404)},
    "get_backfill": {200: {"description": "The backfill and its progress."}, **_errors(400, 404)},
    "cancel_backfill": {
        200: {"description": "The backfill, cancelled: none of its runs not fired yet fires."},
        **_errors(400, 404),
    },
    "bulk": {
        200: {"description": "What this step did (dry run: would do), and the cursor of the next step."},
        **_errors(400, 409, 422),
    },
    "create_job": {201: {"description": "The job, started."}, **_errors(400, 409, 422)},
    "get_job": {200: {"description": "The job and its progress."}, **_errors(400, 404)},
    "cancel_job": {
        202: {"description": "The job, cancelled: no shard starts from now on and post is not called."},
        **_errors(400, 404, 409),
    },
    "job_progress": {
        202: {
            "description": "Taken: whether the job is cancelled (then stop the shard's work), and the commands sent "
            "to it that no report took yet (each in one answer only)."
        },
        **_errors(400, 401),
    },
    "job_command": {
        202: {"description": "The command, kept for the answer to a shard's next progress report."},
        **_errors(400, 404, 409),
    },
    "create_workflow": {201: {"description": "The workflow, registered."}, **_errors(400, 409, 422)},
    "workflow": {200: {"description": "The workflow."}, **_errors(400, 404)},
    "update_workflow": {200: {"description": "The workflow, at its next version."}, **_errors(400, 404, 409)},
    "delete_workflow": {
        204: {"description": "Deleted (its schedule's task cancelled; runs going on finish)."},
        **_errors(400, 404),
    },
    "start_workflow_run": {
        202: {"description": "The run, started: its roots are on their way."},
        **_errors(400, 404, 409, 422),
    },
    "workflow_runs": {200: {"description": "A page of the workflow's runs, newest first."}, **_errors(400, 404)},
    "overview": {200: {"description": "The tenant's counts of what needs looking at."}, **_errors()},
    "workflow_runs_by_status": {
        200: {"description": "A page of the tenant's runs of that status, each naming its workflow, newest first."},
        **_errors(400),
    },
    "workflow_run": {200: {"description": "The run and each node's status."}, **_errors(400, 404)},
    "workflow_node_run": {200: {"description": "The node's run."}, **_errors(400, 404)},
    "cancel_workflow_run": {
        200: {"description": "The run, cancelled: no node starts from now on."},
        **_errors(400, 404, 409),
    },
    "retry_workflow_run": {
        200: {"description": "The run, running again: its failed nodes started anew, its skipped ones decided again."},
        **_errors(400, 404, 409),
    },
    "put_limit": {
        200: {"description": "The limit, created or replaced (its version one more)."},
        **_errors(400, 409),
    },
    "limits": {200: {"description": "The tenant's limits per destination, by name."}, **_errors()},
    "limit": {200: {"description": "The limit."}, **_errors(400, 404)},
    "delete_limit": {204: {"description": "Deleted: it holds no call from now on."}, **_errors(400, 404, 409)},
    "signing_secrets": {200: {"description": "The tenant's signing secrets, without their values."}, **_errors()},
    "rotate_signing_secret": {
        201: {"description": "The new secret, with its value (shown this once)."},
        **_errors(400, 409),
    },
    "create_tenant": {
        201: {"description": "The tenant, with its first API key and signing secret (shown this once)."},
        **_errors(400, 409),
    },
    "tenants": {200: {"description": "A page of tenants, by id."}, **_errors(400)},
    "tenant": {200: {"description": "The tenant."}, **_errors(400, 404)},
    "create_key": {201: {"description": "The new key, with its secret (shown this once)."}, **_errors(400, 404)},
    "keys": {200: {"description": "The tenant's keys, without their secrets."}, **_errors(400, 404)},
    "revoke_key": {204: {"description": "Revoked."}, **_errors(400, 404)},
    "create_access_key": {
        201: {"description": "The new access key, with its secret (shown this once)."},
        **_errors(400, 404, 503),
    },
    "revoke_access_key": {204: {"description": "Revoked."}, **_errors(400, 404, 503)},
}


_POWERTOOLS_ONLY = {"HTTPValidationError", "ValidationError", "ResponseValidationError"}


def _ours(document: dict[str, Any]) -> dict[str, Any]:
    """Powertools documents a ``422`` of its own on every route, a ``500`` of its own for a
    response that fails validation and JSON content on a ``204``; Sundial answers none of them:
    bad input is a ``400`` and any failure a ``500``, both in the error format, and a ``204`` has
    no body. Replace them with what the API answers, and document on every operation that takes a
    body the ``413`` the handler answers to one over the limit, whichever route it was for."""
    error = {"description": _errors()[500]["description"], "content": {"application/json": {"schema": _ERROR_REF}}}
    for operations in document.get("paths", {}).values():
        for operation in operations.values():
            responses = operation.get("responses", {})
            if "requestBody" in operation:  # any body over the limit, before the route is known
                responses.setdefault("413", {**error, "description": _errors(413)[413]["description"]})
            if "204" in responses:  # no content: Powertools adds an empty JSON one
                responses["204"].pop("content", None)
            for code, response in list(responses.items()):
                ref = json.dumps(response.get("content", {}))
                if any(name in ref for name in _POWERTOOLS_ONLY):
                    if str(code) == "500":
                        responses[code] = error
                    else:
                        del responses[code]
    schemas = document.get("components", {}).get("schemas", {})
    for name in _POWERTOOLS_ONLY:
        schemas.pop(name, None)
    return document


_ERROR_REF = {"$ref": "#/components/schemas/ErrorOut"}


class RouteResolver(APIGatewayRestResolver):
    """Powertools' REST resolver whose OpenAPI document (``/v1/openapi.json`` and Swagger UI)
    shows the answers Sundial gives."""

    def get_openapi_schema(self, **kwargs: Any) -> OpenAPI:
        document = super().get_openapi_schema(**kwargs).model_dump(mode="json", by_alias=True, exclude_none=True)
        return OpenAPI.model_validate(_ours(document))
