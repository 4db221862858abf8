"""The HTTP client: one method per route of the API, each answer read into the pydantic model
the OpenAPI document is generated from (shared/api/responses.py), never a copy of it.

Request bodies are plain dicts sent as JSON: the API validates them and names the field at fault.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from typing import Any, Generic, TypeVar
from urllib.parse import quote

import httpx
from pydantic import BaseModel, ValidationError

from shared.api.models.jobs import CommandOut, ProgressOut
from shared.api.operations import BackfillOut, BackfillPage, BulkOut
from shared.api.responses import (
    BatchOut,
    DeadLetterOut,
    DeadLetterPage,
    DestinationLimitList,
    DestinationLimitOut,
    ErrorOut,
    JobOut,
    JobPage,
    KeyList,
    NewAccessKeyOut,
    NewKeyOut,
    NewSigningSecretOut,
    NewTenantOut,
    OverviewOut,
    PreviewOut,
    RedriveOut,
    RunOut,
    RunPage,
    RunStarted,
    SigningSecretList,
    TaskOut,
    TaskPage,
    TenantOut,
    TenantPage,
    WorkflowOut,
    WorkflowPage,
    WorkflowRunOut,
    WorkflowRunPage,
    WorkflowRunStarted,
)

M = TypeVar("M", bound=BaseModel)

UNREACHABLE = "unreachable"
UNEXPECTED = "unexpected_answer"


class ApiError(Exception):
    """The API refused or failed a request (``status`` 0: it could not be reached)."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        details: Sequence[tuple[str, str]] = (),
        retry_after: str | None = None,
    ) -> None:
        super().__init__(f"{code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.details = list(details)
        self.retry_after = retry_after


@dataclass(frozen=True)
class Answer(Generic[M]):
    """An answer read into its model, with the JSON as it came (what ``--output json`` prints)."""

    model: M
    data: Any
    headers: Mapping[str, str]


def tolerant(model: type[M], data: Any) -> M:
    """``model`` validated from ``data``, leaving out the members a newer server added: the
    models refuse unknown members (``extra="forbid"``), so each ``extra_forbidden`` location is
    dropped from a copy of the data and it is validated again. Any other error is raised."""
    current = data
    for _ in range(100):
        try:
            return model.model_validate(current)
        except ValidationError as exc:
            extras = [error["loc"] for error in exc.errors() if error["type"] == "extra_forbidden"]
            if not extras:
                raise
            if current is data:
                current = copy.deepcopy(data)
            if not all(_drop(current, loc) for loc in extras):
                raise
    return model.model_validate(current)


def _drop(data: Any, loc: Sequence[int | str]) -> bool:
    """Delete the member at a pydantic error location. Locations also name union members (tags
    such as ``~http``) and validators, which are not in the data: those parts are skipped."""
    node = data
    for part in loc[:-1]:
        in_dict = isinstance(node, dict) and isinstance(part, str) and part in node
        in_list = isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node)
        if in_dict or in_list:
            node = node[part]
    last = loc[-1] if loc else None
    if isinstance(node, dict) and isinstance(last, str) and last in node:
        del node[last]
        return True
    return False


def _agent() -> str:
    try:
        return f"sundial-cli/{version('sundial-scheduler')}"
    except PackageNotFoundError:
        return "sundial-cli"


def _id(value: str) -> str:
    return quote(value, safe="")


def _query(**params: Any) -> dict[str, Any]:
    return {name: value for name, value in params.items() if value is not None}


class Client:
    """Sundial's API at ``url`` (a stage path such as ``/prod`` is kept: routes are appended)."""

    def __init__(
        self,
        url: str,
        api_key: str | None = None,
        timeout: float = 30.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        headers = {"User-Agent": _agent(), "Accept": "application/json"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        self.url = url.rstrip("/")
        self._http = httpx.Client(
            base_url=self.url + "/",
            headers=headers,
            timeout=httpx.Timeout(timeout, connect=min(timeout, 10.0)),
            transport=transport,
        )

    def close(self) -> None:
        self._http.close()

    # --- plumbing -----------------------------------------------------------------------

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        params: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> httpx.Response:
        sent_headers = dict(headers or {})
        content = None
        if body is not None:
            content = json.dumps(body).encode()
            sent_headers["Content-Type"] = "application/json"
        try:
            response = self._http.request(
                method, path.lstrip("/"), content=content, params=dict(params or {}), headers=sent_headers
            )
        except httpx.TimeoutException as exc:
            raise ApiError(0, UNREACHABLE, f"{self.url} did not answer in time ({type(exc).__name__})") from exc
        except httpx.TransportError as exc:
            raise ApiError(0, UNREACHABLE, f"could not reach {self.url}: {exc}") from exc
        if response.status_code >= 400:
            raise error_from(response)
        return response

    def _call(
        self,
        model: type[M],
        method: str,
        path: str,
        body: Any = None,
        params: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Answer[M]:
        response = self.request(method, path, body, params, headers)
        try:
            data = response.json()
        except ValueError as exc:
            raise ApiError(response.status_code, UNEXPECTED, f"the answer is not JSON: {response.text[:200]}") from exc
        try:
            parsed = tolerant(model, data)
        except ValidationError as exc:
            raise ApiError(
                response.status_code, UNEXPECTED, f"the answer is not a {model.__name__}: {exc.errors()[0]['msg']}"
            ) from exc
        return Answer(parsed, data, response.headers)

    def pages(self, fetch: Callable[..., Answer[Any]], **params: Any) -> Iterator[Answer[Any]]:
        """Every page of a list, following ``next_cursor``."""
        cursor = params.pop("cursor", None)
        while True:
            page = fetch(cursor=cursor, **params)
            yield page
            cursor = page.model.next_cursor
            if not cursor:
                return

    # --- tasks --------------------------------------------------------------------------

    def create_task(self, spec: Mapping[str, Any], idempotency_key: str | None = None) -> Answer[TaskOut]:
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else None
        return self._call(TaskOut, "POST", "/v1/tasks", spec, headers=headers)

    def create_tasks(self, specs: Sequence[Any], idempotency_key: str | None = None) -> Answer[BatchOut]:
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else None
        return self._call(BatchOut, "POST", "/v1/tasks:batch", {"tasks": list(specs)}, headers=headers)

    def get_task(self, task_id: str) -> Answer[TaskOut]:
        return self._call(TaskOut, "GET", f"/v1/tasks/{_id(task_id)}")

    def list_tasks(
        self,
        status: str | None = None,
        name_prefix: str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
        tag: str | None = None,
    ) -> Answer[TaskPage]:
        params = _query(status=status, name_prefix=name_prefix, tag=tag, limit=limit, cursor=cursor)
        return self._call(TaskPage, "GET", "/v1/tasks", params=params)

    def update_task(self, task_id: str, patch: Mapping[str, Any], if_match: int | None = None) -> Answer[TaskOut]:
        headers = {"If-Match": f'"{if_match}"'} if if_match is not None else None
        return self._call(TaskOut, "PATCH", f"/v1/tasks/{_id(task_id)}", patch, headers=headers)

    def cancel_task(self, task_id: str) -> None:
        self.request("DELETE", f"/v1/tasks/{_id(task_id)}")

    def pause_task(self, task_id: str) -> Answer[TaskOut]:
        return self._call(TaskOut, "POST", f"/v1/tasks/{_id(task_id)}/pause")

    def resume_task(self, task_id: str) -> Answer[TaskOut]:
        return self._call(TaskOut, "POST", f"/v1/tasks/{_id(task_id)}/resume")

    def run_task(self, task_id: str, idempotency_key: str | None = None) -> Answer[RunStarted]:
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else None
        return self._call(RunStarted, "POST", f"/v1/tasks/{_id(task_id)}/run", headers=headers)

    def list_runs(self, task_id: str, limit: int | None = None, cursor: str | None = None) -> Answer[RunPage]:
        params = _query(limit=limit, cursor=cursor)
        return self._call(RunPage, "GET", f"/v1/tasks/{_id(task_id)}/runs", params=params)

    def start_backfill(
        self, task_id: str, body: Mapping[str, Any], idempotency_key: str | None = None
    ) -> Answer[BackfillOut]:
        """``{"from", "to", "per_second"}``: the task's past occurrences fired (docs/backfill.md)."""
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else None
        return self._call(BackfillOut, "POST", f"/v1/tasks/{_id(task_id)}/backfill", body, headers=headers)

    def list_backfills(self, task_id: str, limit: int | None = None, cursor: str | None = None) -> Answer[BackfillPage]:
        params = _query(limit=limit, cursor=cursor)
        return self._call(BackfillPage, "GET", f"/v1/tasks/{_id(task_id)}/backfills", params=params)

    def get_backfill(self, task_id: str, backfill_id: str) -> Answer[BackfillOut]:
        return self._call(BackfillOut, "GET", f"/v1/tasks/{_id(task_id)}/backfills/{_id(backfill_id)}")

    def cancel_backfill(self, task_id: str, backfill_id: str) -> Answer[BackfillOut]:
        return self._call(BackfillOut, "POST", f"/v1/tasks/{_id(task_id)}/backfills/{_id(backfill_id)}/cancel")

    def pause_tasks(self, body: Mapping[str, Any], idempotency_key: str | None = None) -> Answer[BulkOut]:
        """One step of a bulk pause: ``{"selector", "dry_run", "cursor"}`` (docs/bulk.md)."""
        return self._bulk("pause", body, idempotency_key)

    def resume_tasks(self, body: Mapping[str, Any], idempotency_key: str | None = None) -> Answer[BulkOut]:
        return self._bulk("resume", body, idempotency_key)

    def cancel_tasks(self, body: Mapping[str, Any], idempotency_key: str | None = None) -> Answer[BulkOut]:
        return self._bulk("cancel", body, idempotency_key)

    def _bulk(self, action: str, body: Mapping[str, Any], idempotency_key: str | None) -> Answer[BulkOut]:
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else None
        return self._call(BulkOut, "POST", f"/v1/tasks:{action}", body, headers=headers)

    def preview(self, body: Mapping[str, Any]) -> Answer[PreviewOut]:
        return self._call(PreviewOut, "POST", "/v1/schedules:preview", body)

    # --- dead letters -------------------------------------------------------------------

    def list_dead_letters(
        self, status: str | None = None, limit: int | None = None, cursor: str | None = None
    ) -> Answer[DeadLetterPage]:
        params = _query(status=status, limit=limit, cursor=cursor)
        return self._call(DeadLetterPage, "GET", "/v1/dead-letters", params=params)

    def get_dead_letter(self, letter_id: str) -> Answer[DeadLetterOut]:
        return self._call(DeadLetterOut, "GET", f"/v1/dead-letters/{_id(letter_id)}")

    def redrive(self, body: Mapping[str, Any], idempotency_key: str | None = None) -> Answer[RedriveOut]:
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else None
        return self._call(RedriveOut, "POST", "/v1/dead-letters/redrive", body, headers=headers)

    # --- jobs ---------------------------------------------------------------------------

    def create_job(self, spec: Mapping[str, Any], idempotency_key: str | None = None) -> Answer[JobOut]:
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else None
        return self._call(JobOut, "POST", "/v1/jobs", spec, headers=headers)

    def get_job(self, job_id: str) -> Answer[JobOut]:
        return self._call(JobOut, "GET", f"/v1/jobs/{_id(job_id)}")

    def cancel_job(self, job_id: str) -> Answer[JobOut]:
        return self._call(JobOut, "POST", f"/v1/jobs/{_id(job_id)}/cancel")

    def send_job_command(self, job_id: str, body: Mapping[str, Any]) -> Answer[CommandOut]:
        """A command to the running job's processor, answered in a shard's next progress report."""
        return self._call(CommandOut, "POST", f"/v1/jobs/{_id(job_id)}/commands", body)

    def report_progress(self, job_id: str, token: str, done_items: int) -> Answer[ProgressOut]:
        """A running shard's progress, with the token its shard call carried (not an API key):
        what a processor does (the receiver kit's ``ctx.report_progress`` does it for one)."""
        return self._call(
            ProgressOut,
            "POST",
            f"/v1/jobs/{_id(job_id)}/progress",
            {"done_items": done_items},
            headers={"Authorization": f"Bearer {token}"},
        )

    def list_jobs(
        self, status: str | None = None, limit: int | None = None, cursor: str | None = None
    ) -> Answer[JobPage]:
        return self._call(JobPage, "GET", "/v1/jobs", params=_query(status=status, limit=limit, cursor=cursor))

    # --- workflows ----------------------------------------------------------------------

    def create_workflow(self, spec: Mapping[str, Any], idempotency_key: str | None = None) -> Answer[WorkflowOut]:
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else None
        return self._call(WorkflowOut, "POST", "/v1/workflows", spec, headers=headers)

    def list_workflows(self, limit: int | None = None, cursor: str | None = None) -> Answer[WorkflowPage]:
        return self._call(WorkflowPage, "GET", "/v1/workflows", params=_query(limit=limit, cursor=cursor))

    def get_workflow(self, workflow_id: str) -> Answer[WorkflowOut]:
        return self._call(WorkflowOut, "GET", f"/v1/workflows/{_id(workflow_id)}")

    def update_workflow(self, workflow_id: str, patch: Mapping[str, Any]) -> Answer[WorkflowOut]:
        return self._call(WorkflowOut, "PATCH", f"/v1/workflows/{_id(workflow_id)}", patch)

    def delete_workflow(self, workflow_id: str) -> None:
        self.request("DELETE", f"/v1/workflows/{_id(workflow_id)}")

    def run_workflow(self, workflow_id: str, idempotency_key: str | None = None) -> Answer[WorkflowRunStarted]:
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else None
        return self._call(WorkflowRunStarted, "POST", f"/v1/workflows/{_id(workflow_id)}/run", headers=headers)

    def list_workflow_runs(
        self, workflow_id: str, limit: int | None = None, cursor: str | None = None
    ) -> Answer[WorkflowRunPage]:
        params = _query(limit=limit, cursor=cursor)
        return self._call(WorkflowRunPage, "GET", f"/v1/workflows/{_id(workflow_id)}/runs", params=params)

    def list_runs_by_status(
        self, status: str, limit: int | None = None, cursor: str | None = None
    ) -> Answer[WorkflowRunPage]:
        """Every workflow's runs of a status (``failed``), newest first."""
        params = _query(status=status, limit=limit, cursor=cursor)
        return self._call(WorkflowRunPage, "GET", "/v1/workflow-runs", params=params)

    def get_workflow_run(self, workflow_id: str, run_id: str) -> Answer[WorkflowRunOut]:
        return self._call(WorkflowRunOut, "GET", f"/v1/workflows/{_id(workflow_id)}/runs/{_id(run_id)}")

    def get_node_run(self, workflow_id: str, run_id: str, node: str) -> Answer[RunOut]:
        path = f"/v1/workflows/{_id(workflow_id)}/runs/{_id(run_id)}/nodes/{_id(node)}"
        return self._call(RunOut, "GET", path)

    def cancel_workflow_run(self, workflow_id: str, run_id: str) -> Answer[WorkflowRunOut]:
        return self._call(WorkflowRunOut, "POST", f"/v1/workflows/{_id(workflow_id)}/runs/{_id(run_id)}/cancel")

    def retry_workflow_run(self, workflow_id: str, run_id: str) -> Answer[WorkflowRunOut]:
        return self._call(WorkflowRunOut, "POST", f"/v1/workflows/{_id(workflow_id)}/runs/{_id(run_id)}/retry")

    # --- overview -----------------------------------------------------------------------

    def overview(self) -> Answer[OverviewOut]:
        return self._call(OverviewOut, "GET", "/v1/overview")

    # --- limits per destination ---------------------------------------------------------

    def put_limit(self, name: str, body: Mapping[str, Any]) -> Answer[DestinationLimitOut]:
        return self._call(DestinationLimitOut, "PUT", f"/v1/limits/{_id(name)}", body)

    def get_limit(self, name: str) -> Answer[DestinationLimitOut]:
        return self._call(DestinationLimitOut, "GET", f"/v1/limits/{_id(name)}")

    def list_limits(self) -> Answer[DestinationLimitList]:
        return self._call(DestinationLimitList, "GET", "/v1/limits")

    def delete_limit(self, name: str) -> None:
        self.request("DELETE", f"/v1/limits/{_id(name)}")

    # --- signing secrets ----------------------------------------------------------------

    def list_signing_secrets(self) -> Answer[SigningSecretList]:
        return self._call(SigningSecretList, "GET", "/v1/signing-secrets")

    def rotate_signing_secret(self, previous_expires_in: int | None = None) -> Answer[NewSigningSecretOut]:
        body = {} if previous_expires_in is None else {"previous_expires_in_seconds": previous_expires_in}
        return self._call(NewSigningSecretOut, "POST", "/v1/signing-secrets:rotate", body)

    # --- tenants and keys (the admin key) -----------------------------------------------

    def create_tenant(self, body: Mapping[str, Any]) -> Answer[NewTenantOut]:
        return self._call(NewTenantOut, "POST", "/v1/tenants", body)

    def list_tenants(self, limit: int | None = None, cursor: str | None = None) -> Answer[TenantPage]:
        return self._call(TenantPage, "GET", "/v1/tenants", params=_query(limit=limit, cursor=cursor))

    def get_tenant(self, tenant_id: str) -> Answer[TenantOut]:
        return self._call(TenantOut, "GET", f"/v1/tenants/{_id(tenant_id)}")

    def update_tenant(self, tenant_id: str, body: Mapping[str, Any]) -> Answer[TenantOut]:
        return self._call(TenantOut, "PATCH", f"/v1/tenants/{_id(tenant_id)}", body)

    def create_key(self, tenant_id: str) -> Answer[NewKeyOut]:
        return self._call(NewKeyOut, "POST", f"/v1/tenants/{_id(tenant_id)}/keys")

    def list_keys(self, tenant_id: str) -> Answer[KeyList]:
        return self._call(KeyList, "GET", f"/v1/tenants/{_id(tenant_id)}/keys")

    def revoke_key(self, tenant_id: str, key_id: str) -> None:
        self.request("DELETE", f"/v1/tenants/{_id(tenant_id)}/keys/{_id(key_id)}")

    def create_access_key(self, tenant_id: str) -> Answer[NewAccessKeyOut]:
        return self._call(NewAccessKeyOut, "POST", f"/v1/tenants/{_id(tenant_id)}/access-keys")

    def revoke_access_key(self, tenant_id: str, access_key_id: str) -> None:
        self.request("DELETE", f"/v1/tenants/{_id(tenant_id)}/access-keys/{_id(access_key_id)}")


def error_from(response: httpx.Response) -> ApiError:
    """The API's error body (``{"error": {"code", "message", "details"}}``) as an :class:`ApiError`;
    an answer in another form (a gateway's, a proxy's) keeps its status and text."""
    retry_after = response.headers.get("Retry-After")
    try:
        error = tolerant(ErrorOut, response.json()).error
    except (ValueError, ValidationError):
        text = response.text.strip()[:300] or response.reason_phrase
        return ApiError(response.status_code, f"http_{response.status_code}", text, retry_after=retry_after)
    details = [(detail.field, detail.message) for detail in error.details or ()]
    return ApiError(response.status_code, error.code, error.message, details, retry_after)
