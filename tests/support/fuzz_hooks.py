"""Schemathesis hooks for Sundial's API, loaded by ``schemathesis.toml``.

``positive_data_acceptance`` fails when the API refuses a request its OpenAPI document allows.
Most such refusals are gaps in the document (a rule the schema could state but does not), and
those must stay failures. A few rules cannot be written in JSON Schema at all: each is listed in
:data:`ACCEPTED` with its reason, and a refusal is dropped only when it is a 400
``validation_error`` whose every detail matches an accepted rule for that operation. Nothing else
is filtered.

With ``FUZZ_REJECTIONS`` set to a file, every refusal of schema-valid data is appended to it
as one JSON line (operation, status, error details, the accepted rule's reason or null), so a run
says what it dropped and why.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from typing import Any

import requests
import schemathesis
import schemathesis.transport.asgi  # imported on the main thread: see below
from schemathesis.openapi.checks import RejectedPositiveData

# schemathesis picks a case's transport on its worker thread, and the ASGI transport's first
# import brings in anyio, whose lazy importer compiles anyio's source to an AST. CPython 3.11's AST
# constructor counts its recursion depth in the interpreter's state, not the thread's, so two
# threads building ASTs at once can fail one of them with "SystemError: AST constructor recursion
# depth mismatch" (CPython's Python-ast.c, PyAST_mod2obj). A `make test` run's tenant run failed
# so. Imported here, it is compiled once, on the main thread, before the workers start.


@dataclass(frozen=True)
class Accepted:
    operations: str
    """A regular expression for the operations' labels (``GET /v1/tasks``)."""
    field: str
    """A regular expression for the refused field, as the API names it (``targets[0].http.url``)."""
    message: str
    """A regular expression for the detail's message."""
    reason: str
    """Why no schema can say it."""

    def matches(self, operation: str, detail: dict[str, Any]) -> bool:
        return bool(
            re.fullmatch(self.operations, operation)
            and re.fullmatch(self.field, str(detail.get("field", "")))
            and re.search(self.message, str(detail.get("message", "")))
        )


LISTS = (
    r"GET /v1/(tasks|jobs|dead-letters|tasks/\{task_id\}/runs|tenants|workflows|workflows/\{workflow_id\}/runs"
    r"|workflow-runs|tasks/\{task_id\}/backfills)"
    r"|POST /v1/dead-letters/redrive|POST /v1/tasks:(pause|resume|cancel)"
)
WORKFLOWS = r"POST /v1/workflows|PATCH /v1/workflows/\{workflow_id\}"
SCHEDULES = rf"POST /v1/tasks|PATCH /v1/tasks/\{{task_id\}}|POST /v1/schedules:preview|{WORKFLOWS}"
TASKS = rf"POST /v1/tasks|PATCH /v1/tasks/\{{task_id\}}|{WORKFLOWS}"
"""Where targets are given: a task's, and a workflow's nodes."""
JOBS = r"POST /v1/jobs"
LIMITS = r"PUT /v1/limits/\{name\}"
TARGETS = r"((nodes\[\d+\]\.)?(target|targets\[\d+\]))"

ACCEPTED: tuple[Accepted, ...] = (
    Accepted(
        r"POST /v1/dead-letters/redrive",
        "cursor",
        r"goes with \{\"all\": true\} only",
        "a member allowed only with another is a rule between members; the document says it in the member's "
        "description rather than as nested not/allOf, which a generator can only meet by filtering",
    ),
    Accepted(
        LISTS,
        "cursor",
        "is not a cursor this API returned",
        "a cursor is an opaque token from the previous page's next_cursor; a schema can bound its length but "
        "cannot say which strings the API issued",
    ),
    Accepted(
        SCHEDULES,
        r"schedule\.\w+",
        r"more than 24 hours in the past|is in the past and misfire is skip|more than \d+ days ahead"
        r"|has no occurrence from now on",
        "when a schedule first fires is measured from the time of the request (not more than a day in the past, "
        "not more than a year ahead, at least once from now): a schema has no clock",
    ),
    Accepted(
        r"POST /v1/tasks/\{task_id\}/backfill",
        r"from|to",
        r"is after now|must be after from|days back|more than \d+ occurrences",
        "a backfill's window is measured from the time of the request (not after now, at most a year back), "
        "compares two of its members (from before to) and counts the task's occurrences in it: a schema has no "
        "clock and knows no task's schedule",
    ),
    Accepted(
        SCHEDULES,
        r"schedule(\.repeat)?\.end",
        "must be after start",
        "end after start compares two values of the request; JSON Schema constrains values one at a time",
    ),
    Accepted(
        SCHEDULES,
        r"schedule\.cron",
        r"^the [a-z ]+ field .* is not valid|^the fields do not make a schedule|"
        r"^this reads as (an EventBridge Scheduler|a Quartz) cron expression",
        "each cron field's values, ranges, steps and names (croniter's grammar) are beyond a pattern anyone could "
        "maintain (how many fields there are is a pattern, and that refusal is not accepted here)",
    ),
    Accepted(
        SCHEDULES,
        r"schedule\.cron",
        r"^cron\(.*\): (?!a cron expression has six fields)",
        "EventBridge Scheduler's cron grammar (each field's values, ranges, steps and names; which day field is "
        "?; L, W and # and where they may stand) is beyond a pattern anyone could maintain (its six fields are "
        "a pattern, and that refusal is not accepted here)",
    ),
    Accepted(
        SCHEDULES,
        r"schedule(\.repeat)?\.timezone",
        "unknown time zone",
        "the IANA zone names are those of the installed tz database, which changes with its releases",
    ),
    Accepted(
        SCHEDULES,
        r"schedule\.repeat\.calendar",
        "unknown calendar",
        "the holiday calendars are the countries the installed holidays package knows, which changes with it",
    ),
    Accepted(
        TASKS,
        r"(nodes\[\d+\]\.)?payload",
        r"bytes as JSON; the limit is",
        "the payload limit is on its size as JSON text; JSON Schema can bound a string's length, not the size "
        "of an arbitrary value's serialization",
    ),
    Accepted(
        r".*",
        "body",
        r"nests arrays and objects more than \d+ levels deep|has an integer of more than \d+ digits",
        "the limits that keep a body from breaking the parsers (shared/api/hostile.py) apply inside free-form "
        "values too (payload, job data); JSON Schema has no nesting limit, and no bound on the numbers of any JSON",
    ),
    Accepted(
        rf"{JOBS}|{TASKS}",
        r".*\.http\.url",
        r"has no valid host",
        "a bracketed host must be an IPv6 address, and a host beyond ASCII must have an IDNA form (the form "
        "Sundial's HTTP client calls); which strings those are is beyond a pattern (the document's pattern "
        "admits the characters, the parser decides)",
    ),
    Accepted(
        rf"{JOBS}|{TASKS}",
        r".*\.http\.url",
        r"points at a cloud metadata endpoint",
        "a URL whose host is a metadata endpoint written as an IP literal in any of the forms a resolver "
        "reads (decimal, octal, hex, IPv4-mapped, NAT64) is refused; no pattern can list them all",
    ),
    Accepted(
        rf"{JOBS}|{TASKS}",
        r".*(function_arn|queue_url|topic_arn)",
        r"is one of this Sundial deployment's own",
        "the deployment's own functions, queues and topics are refused as targets; their names are the "
        "deployment's (its prefix and account), which the published document does not know",
    ),
    Accepted(
        rf"{JOBS}|{TASKS}",
        rf"({TARGETS}|processor|alert\.target)\.http\.headers",
        r"is set by Sundial and cannot be overridden",
        "header names are case-insensitive: the names Sundial sets itself (Content-Type, Host, Sundial-*...) "
        "would need a case-insensitive pattern, which the document's regular expressions cannot say",
    ),
    Accepted(
        TASKS,
        rf"{TARGETS}\.http\.limit",
        r"which this tenant does not have",
        "a target's limit must name one of the tenant's limits per destination, which depends on what the "
        "tenant has put (PUT /v1/limits/{name}); a schema describes values, not what is stored",
    ),
    Accepted(
        TASKS,
        rf"({TARGETS}|alert\.target)\.(http|job\.processor\.http)\.headers\..+",
        r"send the value itself",
        'a secret header\'s "[redacted]" stands for the value the task stores for that target (a PATCH keeps it, '
        "a new target or one moved to another origin has none): it depends on what is stored",
    ),
    Accepted(
        TASKS,
        r"on_(success|failure)\[\d+\]",
        r"names no task of yours|is cancelled",
        "a chain's task must be one of the tenant's tasks, not cancelled: that depends on what is stored, "
        "which a schema does not describe",
    ),
    Accepted(
        TASKS,
        rf"{TARGETS}\.workflow\.id",
        r"names no workflow of yours",
        "a workflow target must name one of the tenant's workflows, which depends on what is stored",
    ),
    Accepted(
        WORKFLOWS,
        r"edges(\[\d+\](\.(from|to))?)?|nodes(\[\d+\]\.id)?",
        r"names no node|to itself|a cycle|the id of another node|nodes and edges are changed together",
        "a workflow's graph is checked whole: an edge names nodes by id, ids are unique, there is no cycle, and "
        "a change gives nodes and edges together; a schema describes each member, not how they refer to each other",
    ),
    Accepted(
        LIMITS,
        "origin",
        r"has no valid host",
        "a bracketed host must be an IPv6 address, and a host must stay one under Unicode normalization; "
        "which strings those are is beyond a pattern (the document's pattern admits the characters)",
    ),
    Accepted(
        TASKS,
        rf"{TARGETS}\.stepfunctions\.input",
        r"bytes as JSON; the limit is",
        "an execution's input is held to a payload's size as JSON text; JSON Schema can bound a string's "
        "length, not the size of an arbitrary value's serialization",
    ),
    Accepted(
        TASKS,
        rf"{TARGETS}\.stepfunctions\.state_machine_arn",
        r"is one of this Sundial deployment's own",
        "the deployment's own state machines are refused as targets; their names are the deployment's (its "
        "prefix and account), which the published document does not know",
    ),
    Accepted(
        TASKS,
        rf"{TARGETS}\.ecs\.task_definition_arn",
        r"is in another (Region|account) than the cluster",
        "a task definition in the cluster's Region and account compares two values of the request; JSON Schema "
        "constrains values one at a time",
    ),
    Accepted(
        TASKS,
        rf"{TARGETS}\.ecs\.overrides(\.containers\[\d+\]\.(name|environment))?",
        r"names the container .* twice|come to \d+ characters",
        "RunTask's overrides are at most 8,192 characters as JSON with the occurrence's variables added, and "
        "name each container once: the size of a serialization, and a member unique across items, which JSON "
        "Schema cannot say",
    ),
    Accepted(
        rf"{JOBS}|{TASKS}",
        rf"({TARGETS}\.job\.)?sharding(\.\w+)?",
        r"must not exceed max_items_per_shard|need \d+ shards|shards in all",
        "how many shards a job needs depends on its data and on two sharding values together",
    ),
)


def accepted_reason(operation: str, status: int, body: Any) -> str | None:
    """The reason a refusal is expected, when every one of its details matches an accepted rule."""
    if status != 400 or not isinstance(body, dict) or not isinstance(body.get("error"), dict):
        return None
    error = body["error"]
    details = error.get("details") or [{"field": "", "message": error.get("message", "")}]
    if error.get("code") != "validation_error" or not isinstance(details, list):
        return None
    reasons = []
    for detail in details:
        rule = next((rule for rule in ACCEPTED if isinstance(detail, dict) and rule.matches(operation, detail)), None)
        if rule is None:
            return None
        reasons.append(rule.reason)
    return "; ".join(dict.fromkeys(reasons))


def _body(response: Any) -> Any:
    try:
        return response.json()
    except ValueError:
        return None


def _at(document: Any, path: str) -> Any:
    """The value at an API field path (``targets[0].sqs.queue_url``) of a request body, or None."""
    value = document
    for name, index in re.findall(r"([^.\[\]]+)|\[(\d+)\]", path):
        try:
            value = value[int(index)] if index else value[name]
        except (KeyError, IndexError, TypeError, ValueError):
            return None
    return value


TRAILING_NEWLINE = (
    "a pattern's $ also matches before a final newline in Python's re, which generates the fuzzer's data; in "
    "JSON Schema's dialect (ECMA-262) and the API's it matches only at the end, so such a value is not schema-valid"
)


PATTERN_REFUSAL = r"the pattern|control characters|line breaks"
"""A refusal by a field's pattern: the API's own message for a pattern (``does not have the form this
field takes (the pattern ...)``), or the words of a field whose validator checks the document's
pattern itself and says why (an HTTP URL, a limit's origin, a cron expression)."""


def trailing_newline_reason(case_body: Any, body: Any) -> str | None:
    """Every refused field a pattern's, and its value ending in a newline that only Python's $ lets through."""
    error = body.get("error") if isinstance(body, dict) else None
    details = error.get("details") if isinstance(error, dict) else None
    if not details or not all(
        isinstance(detail, dict)
        and re.search(PATTERN_REFUSAL, str(detail.get("message", "")))
        and (
            # a map's key (a tag's) refused by its pattern: the field names it, newline and all
            str(detail.get("field", "")).endswith("\n")
            or (isinstance(value := _at(case_body, str(detail.get("field", ""))), str) and value.endswith("\n"))
        )
        for detail in details
    ):
        return None
    return TRAILING_NEWLINE


@schemathesis.hook
def filter_failure(context: Any, failure: Any, case: Any, response: Any) -> bool:
    if not isinstance(failure, RejectedPositiveData):
        return True
    operation = case.operation.label
    body = _body(response)
    reason = accepted_reason(operation, response.status_code, body) or trailing_newline_reason(case.body, body)
    log = os.environ.get("FUZZ_REJECTIONS")
    if log:
        error = body.get("error") if isinstance(body, dict) else None
        with open(log, "a", encoding="utf-8") as out:
            out.write(
                json.dumps({"operation": operation, "status": response.status_code, "error": error, "accepted": reason})
                + "\n"
            )
    return reason is None


def created_task_ids(operation: str, status: int, body: Any) -> list[str]:
    """The ids of the tasks a POST /v1/tasks or /v1/tasks:batch answer says it registered."""
    if operation == "POST /v1/tasks" and status == 201 and isinstance(body, dict) and "id" in body:
        return [str(body["id"])]
    if operation == "POST /v1/tasks:batch" and status == 200 and isinstance(body, dict):
        items = body.get("items") if isinstance(body.get("items"), list) else []
        tasks = [item.get("task") for item in items if isinstance(item, dict)]
        return [str(task["id"]) for task in tasks if isinstance(task, dict)]
    return []


@schemathesis.hook
def after_call(context: Any, case: Any, response: Any) -> None:
    """Tasks registered by the coverage and fuzzing phases are cancelled at once. They are there to
    check the answer to the registration; left alone, the hundreds of schedules that fire every
    second from a start in the past would keep the runtime (and moto under it) busy firing for the
    rest of the run, and time every later request out. The stateful phase keeps its tasks: it goes
    on to read, pause, resume and run them."""
    base = os.environ.get("FUZZ_BASE_URL")
    if base is None or case.meta is None or case.meta.phase.name == "stateful":
        return
    authorization = os.environ.get("FUZZ_AUTHORIZATION")  # the run's caller: its tasks are its own
    headers = {"Authorization": authorization} if authorization else {}
    for task_id in created_task_ids(case.operation.label, response.status_code, _body(response)):
        requests.delete(f"{base}/v1/tasks/{task_id}", headers=headers, timeout=30)


SEEDED_LIMIT = "fuzz-seed"
"""The caller's limit per destination fuzz_run.py seeds, and schemathesis.toml points the reads of
one limit at."""


def seeded(parameter: str) -> str | None:
    """The seeded resource's id behind a path parameter (a workflow's, a limit's), if one is seeded."""
    if parameter == "name":
        return SEEDED_LIMIT
    return os.environ.get("FUZZ_WORKFLOW_ID") if parameter == "workflow_id" else None


@schemathesis.hook
def before_call(context: Any, case: Any, kwargs: dict[str, Any]) -> None:
    """A DELETE never removes a seeded workflow or limit: the operations that read one read the
    seeded one (schemathesis.toml), and the configuration keeps DELETE on made-up ids, but the
    stateful phase follows a link from a read of the seed (its id in the answer) to a DELETE. Once
    it had deleted the seeded workflow, every later read of it answered 404, which schemathesis
    took for a workflow it had just created and could not find (ST302, seen with a fresh seed).
    Such a DELETE is sent for a made-up id instead, as the configuration intends."""
    if case.method.upper() != "DELETE" or not case.path_parameters:
        return
    for parameter, value in list(case.path_parameters.items()):
        if value is not None and value == seeded(parameter):
            case.path_parameters[parameter] = f"{value}-not-seeded"
