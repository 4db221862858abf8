"""``make smoke`` (``python -m sundial_cli.smoke``): does a running Sundial fire? Checked from
outside, through its public HTTP API only.

It registers six tasks (five where the retry check is skipped) and reads back their run history
(``GET /v1/tasks/{id}/runs``: status, attempts, ``lateness_ms``, ``fired_at``) and the dead
letters (``GET /v1/dead-letters``):

* **one-shot**: a task due a few seconds after registration fires once, on time;
* **recurring**: an ``every_seconds`` task fires several times, each on time (then it is cancelled);
* **retry**: a target answering 500 and then 200 succeeds at the second attempt;
* **dead letter**: a target that always fails ends in the dead letters;
* **chain**: a task's ``on_success`` child runs after it, with the parent named in its run.

"On time" is a lateness (first attempt's start after the due time) under ``--max-lateness-ms``.

Where the targets are: against a Sundial on loopback (``make run``), a receiver this command
starts on 127.0.0.1 (answering as each check needs, and recording the calls, which are checked
too). A deployed stack cannot reach this machine's loopback, and refuses loopback targets anyway;
there the targets are the stack's own API: ``GET <url>/v1/openapi.json`` (public: 200) for the
succeeding calls, ``GET <url>/v1/smoke-no-such-route`` (a 4xx, which is final: no retry) for the
dead letter; the retry check needs an answer that changes (500, then 200), which no public route
gives, so it is skipped and says so. ``--targets`` chooses either way explicitly.

With an access key of the EventBridge Scheduler API (``--access-key-id`` and
``--secret-access-key``, or ``SUNDIAL_ACCESS_KEY_ID`` and ``SUNDIAL_SECRET_ACCESS_KEY``) it also
makes a signed round trip with boto3's ``scheduler`` client: ``ListScheduleGroups`` (the default
group's ARN names the account and Region a target must be in), ``CreateSchedule`` (a disabled
one-shot a month ahead, at a queue that need not exist), ``GetSchedule`` and ``DeleteSchedule``,
against the API's ``/scheduler`` or the function URL given (``--scheduler-url``,
``SUNDIAL_SCHEDULER_URL``: the stack's ``SchedulerFunctionUrl`` output). A signature the endpoint
refuses is named plainly, with the endpoint to use instead (:func:`scheduler_round_trip`).

One line per check (``ok``, ``FAILED`` or ``skipped``, with its figures); the exit status is 1 when
any check failed (or the API could not be reached), else 0. What it leaves behind: its tasks,
named ``smoke-<id>-*`` (the recurring one and the chain's child cancelled, the others completed),
and one dead letter; the round trip deletes its schedule.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from shared.domain.states import RunStatus
from sundial_cli.client import ApiError, Client
from sundial_cli.settings import ConfigError, resolve

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
FINISHED = frozenset({RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.DEAD_LETTERED, RunStatus.SKIPPED})
POLL_S = 0.5
"""How often the run history is read while checks are pending (it is all the API offers)."""
OK, FAILED, SKIPPED = "ok", "FAILED", "skipped"


@dataclass(frozen=True)
class Verdict:
    check: str
    outcome: str
    detail: str

    def line(self) -> str:
        return f"{self.outcome:<7} {self.check}: {self.detail}"


@dataclass
class Call:
    path: str
    at: float
    body: Any


@dataclass
class Receiver:
    """Loopback HTTP receiver: each path answers its scripted statuses in turn (the last one
    repeating; 200 when not scripted) and every call is recorded."""

    url: str = ""
    scripts: dict[str, list[int]] = field(default_factory=dict)
    calls: list[Call] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def answer(self, path: str, body: Any) -> int:
        with self.lock:
            served = sum(1 for call in self.calls if call.path == path)
            self.calls.append(Call(path, time.time(), body))
            script = self.scripts.get(path) or [200]
            return script[min(served, len(script) - 1)]

    def calls_to(self, path: str) -> list[Call]:
        with self.lock:
            return [call for call in self.calls if call.path == path]


@contextmanager
def running_receiver() -> Iterator[Receiver]:
    receiver = Receiver()

    class Handle(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = raw.decode(errors="replace")
            status = receiver.answer(self.path, body)
            payload = b'{"ok": true}'
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        do_GET = do_POST = do_PUT = _serve

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handle)
    server.daemon_threads = True
    receiver.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()


class Targets:
    """Where the smoke's tasks call: ``succeeding`` answers 200, ``flaky`` 500 then 200 (None: no
    such target here), ``failing`` always fails; ``calls`` what a receiver saw (None: no receiver)."""

    description = ""

    def succeeding(self, path: str) -> dict[str, Any]:
        raise NotImplementedError

    def flaky(self, path: str) -> dict[str, Any] | None:
        raise NotImplementedError

    def failing(self, path: str) -> dict[str, Any]:
        raise NotImplementedError

    def calls(self, path: str) -> list[Call] | None:
        return None


class ReceiverTargets(Targets):
    def __init__(self, receiver: Receiver) -> None:
        self.receiver = receiver
        self.description = f"a receiver on {receiver.url}"

    def _at(self, path: str, *statuses: int) -> dict[str, Any]:
        self.receiver.scripts[path] = list(statuses)
        return {"http": {"url": self.receiver.url + path}}

    def succeeding(self, path: str) -> dict[str, Any]:
        return self._at(path, 200)

    def flaky(self, path: str) -> dict[str, Any] | None:
        return self._at(path, 500, 200)

    def failing(self, path: str) -> dict[str, Any]:
        return self._at(path, 500)

    def calls(self, path: str) -> list[Call]:
        return self.receiver.calls_to(path)


class ApiTargets(Targets):
    """The stack's own public routes: reachable wherever the API is."""

    def __init__(self, url: str) -> None:
        self.url = url.rstrip("/")
        self.description = f"the API's own routes ({self.url}/v1/openapi.json; no receiver)"

    def succeeding(self, path: str) -> dict[str, Any]:
        return {"http": {"url": f"{self.url}/v1/openapi.json", "method": "GET"}}

    def flaky(self, path: str) -> dict[str, Any] | None:
        return None

    def failing(self, path: str) -> dict[str, Any]:
        return {"http": {"url": f"{self.url}/v1/smoke-no-such-route", "method": "GET"}}


@dataclass
class Smoke:
    client: Client
    targets: Targets
    max_lateness_ms: int
    after_s: float = 3.0
    every_s: int = 2
    fires: int = 3
    prefix: str = field(default_factory=lambda: f"smoke-{secrets.token_hex(4)}")
    cleanup: list[str] = field(default_factory=list)
    """Tasks to cancel at the end (the recurring one, the chain's child)."""

    # --- reading back ---------------------------------------------------------------------

    def runs(self, task_id: str) -> list[dict[str, Any]]:
        """The task's runs, oldest first."""
        items: list[dict[str, Any]] = self.get(f"/v1/tasks/{task_id}/runs", limit=100)["items"]
        return sorted(items, key=lambda run: run["scheduled_for"])

    def finished(self, task_id: str) -> dict[str, Any] | None:
        done = [run for run in self.runs(task_id) if run["status"] in FINISHED]
        return done[0] if done else None

    def on_time(self, run: dict[str, Any]) -> str | None:
        """What is wrong with a run that should have succeeded on time (None: nothing)."""
        if run["status"] != RunStatus.SUCCEEDED:
            return f"run {run['run_id']} {run['status']} ({run.get('last_error')})"
        if run["fired_at"] is None or run["lateness_ms"] is None:
            return f"run {run['run_id']} has no fired_at/lateness_ms"
        if run["lateness_ms"] > self.max_lateness_ms:
            return f"run {run['run_id']} {run['lateness_ms']} ms late (bound {self.max_lateness_ms} ms)"
        return None

    def received(self, path: str, expected: int) -> str | None:
        calls = self.targets.calls(path)
        if calls is None or len(calls) == expected:
            return None
        return f"the receiver saw {len(calls)} call(s) to {path}, not {expected}"

    def register(self, name: str, spec: dict[str, Any]) -> str:
        task: dict[str, Any] = self.client.request(
            "POST", "/v1/tasks", {"name": f"{self.prefix}-{name}", **spec}
        ).json()
        return str(task["id"])

    def get(self, path: str, **params: Any) -> dict[str, Any]:
        """The API's JSON answer (the fields the checks read, as they came: no model between)."""
        answer: dict[str, Any] = self.client.request("GET", path, params=params).json()
        return answer

    def dead_letters(self) -> Iterator[dict[str, Any]]:
        cursor = None
        while True:
            page = self.get("/v1/dead-letters", limit=100, **({"cursor": cursor} if cursor else {}))
            yield from page["items"]
            if not (cursor := page.get("next_cursor")):
                return

    # --- the checks: each registers, then answers a verdict when there is one ---------------

    def one_shot(self) -> Callable[[], Verdict | None]:
        task = self.register(
            "one-shot", {"schedule": {"after_seconds": self.after_s}, "target": self.succeeding("/one")}
        )

        def verdict() -> Verdict | None:
            run = self.finished(task)
            if run is None:
                return None
            problem = self.on_time(run) or (run["attempts"] != 1 and f"{run['attempts']} attempts, not 1")
            problem = problem or self.received("/one", 1)
            detail = f"task {task} fired at {run['fired_at']}, {run['lateness_ms']} ms late, {run['attempts']} attempt"
            return Verdict("one-shot", FAILED if problem else OK, f"{problem}; {detail}" if problem else detail)

        return verdict

    def recurring(self) -> Callable[[], Verdict | None]:
        spec = {"schedule": {"every_seconds": self.every_s}, "target": self.succeeding("/every")}
        task = self.register("recurring", spec)
        self.cleanup.append(task)

        def verdict() -> Verdict | None:
            runs = [run for run in self.runs(task) if run["status"] in FINISHED]
            if len(runs) < self.fires:
                return None
            self.client.request("DELETE", f"/v1/tasks/{task}")
            runs = runs[: self.fires]
            problems = [problem for run in runs if (problem := self.on_time(run))]
            calls = self.targets.calls("/every")
            if calls is not None and len(calls) < self.fires:
                problems.append(f"the receiver saw {len(calls)} call(s), not {self.fires} or more")
            lateness = [run["lateness_ms"] for run in runs]
            detail = f"task {task} every {self.every_s} s: {len(runs)} fires, lateness {lateness} ms"
            return Verdict("recurring", FAILED if problems else OK, "; ".join([*problems, detail]))

        return verdict

    def retry(self) -> Callable[[], Verdict | None]:
        target = self.targets.flaky("/retry")
        if target is None:
            skipped = Verdict(
                "retry", SKIPPED, f"needs a target answering 500 then 200, which {self.targets.description} cannot be"
            )
            return lambda: skipped
        retry = {"max_attempts": 3, "backoff": "fixed", "interval_seconds": 1}
        task = self.register("retry", {"schedule": {"after_seconds": self.after_s}, "target": target, "retry": retry})

        def verdict() -> Verdict | None:
            run = self.finished(task)
            if run is None:
                return None
            problem = None
            if run["status"] != RunStatus.SUCCEEDED or run["attempts"] != 2:
                problem = f"{run['status']} after {run['attempts']} attempt(s), not succeeded after 2"
            problem = problem or self.received("/retry", 2)
            # the run's lateness_ms is its last attempt's (it came a retry interval later): the
            # first attempt's, held to the bound, is the receiver's first call after scheduled_for
            calls = self.targets.calls("/retry")
            late = round(calls[0].at * 1000 - _ms(run["scheduled_for"])) if calls else None
            if problem is None and late is not None and late > self.max_lateness_ms:
                problem = f"the first attempt came {late} ms late (bound {self.max_lateness_ms} ms)"
            detail = (
                f"task {task} {run['status']} after {run['attempts']} attempts (500, then 200), first attempt "
                f"{late} ms late by the receiver's clock, the run's lateness_ms {run['lateness_ms']} "
                "(its last attempt's)"
            )
            return Verdict("retry", FAILED if problem else OK, f"{problem}; {detail}" if problem else detail)

        return verdict

    def dead_letter(self) -> Callable[[], Verdict | None]:
        retry = {"max_attempts": 2, "backoff": "fixed", "interval_seconds": 1}
        spec = {"schedule": {"after_seconds": self.after_s}, "target": self.failing("/dead"), "retry": retry}
        task = self.register("dead-letter", spec)

        def verdict() -> Verdict | None:
            run = self.finished(task)
            if run is None:
                return None
            letters = [letter for letter in self.dead_letters() if letter["task_id"] == task]
            if run["status"] not in (RunStatus.FAILED, RunStatus.DEAD_LETTERED):
                return Verdict("dead letter", FAILED, f"task {task}'s run {run['status']}, not failed")
            if not letters:
                return None  # the run has ended; its letter is listed next
            letter = letters[0]
            detail = (
                f"task {task}'s run {run['status']}, listed by GET /v1/dead-letters after "
                f"{letter['attempts']} attempt(s): {letter['reason']}"
            )
            return Verdict("dead letter", OK, detail)

        return verdict

    def chain(self) -> Callable[[], Verdict | None]:
        child = self.register("chain-child", {"schedule": {"cron": "0 0 1 1 *"}, "target": self.succeeding("/child")})
        self.cleanup.append(child)
        spec = {
            "schedule": {"after_seconds": self.after_s},
            "target": self.succeeding("/parent"),
            "on_success": [child],
        }
        parent = self.register("chain-parent", spec)

        def verdict() -> Verdict | None:
            chained = [
                run
                for run in self.runs(child)
                if (run.get("parent") or {}).get("task_id") == parent and run["status"] in FINISHED
            ]
            if not chained:
                return None
            run = chained[0]
            problem = None
            if run["status"] != RunStatus.SUCCEEDED:
                problem = f"the child's run {run['status']} ({run.get('last_error')})"
            calls = self.targets.calls("/child")
            if calls is not None and [(call.body or {}).get("parent", {}).get("task_id") for call in calls] != [parent]:
                problem = problem or f"the receiver's calls to the child name {len(calls)} parent(s), not {parent} once"
            detail = f"parent {parent} succeeded, child {child} ran at {run['fired_at']} (its run names the parent)"
            return Verdict("chain", FAILED if problem else OK, f"{problem}; {detail}" if problem else detail)

        return verdict

    def succeeding(self, path: str) -> dict[str, Any]:
        return self.targets.succeeding(path)

    def failing(self, path: str) -> dict[str, Any]:
        return self.targets.failing(path)

    # --- running --------------------------------------------------------------------------

    def run(self, timeout_s: float, say: Callable[[str], None] = print) -> list[Verdict]:
        checks: dict[str, Callable[[], Verdict | None]] = {}
        verdicts: dict[str, Verdict] = {}
        names = ("one-shot", "recurring", "retry", "dead letter", "chain")
        makers = (self.one_shot, self.recurring, self.retry, self.dead_letter, self.chain)
        try:
            for name, make in zip(names, makers, strict=True):
                try:
                    checks[name] = make()
                except (ApiError, ValueError, KeyError) as exc:  # refused, or not the API's JSON
                    verdicts[name] = Verdict(name, FAILED, f"registering failed: {type(exc).__name__}: {exc}")
                    say(verdicts[name].line())
            deadline = time.monotonic() + timeout_s
            while checks and time.monotonic() < deadline:
                for name, check in list(checks.items()):
                    try:
                        verdict = check()
                    except (ApiError, ValueError, KeyError) as exc:
                        verdict = Verdict(name, FAILED, f"reading back failed: {type(exc).__name__}: {exc}")
                    if verdict is not None:
                        verdicts[name] = verdict
                        del checks[name]
                        say(verdict.line())
                if checks:
                    time.sleep(POLL_S)
            for name in checks:
                verdicts[name] = Verdict(name, FAILED, f"no verdict within {timeout_s:g} s")
                say(verdicts[name].line())
        finally:
            for task in self.cleanup:
                with suppress(ApiError):  # already cancelled, or the API is gone: nothing more to do
                    self.client.request("DELETE", f"/v1/tasks/{task}")
        return [verdicts[name] for name in names if name in verdicts]


# --- the EventBridge Scheduler API, signed -------------------------------------------------------

ACCESS_KEY_ENV = "SUNDIAL_ACCESS_KEY_ID"
SECRET_KEY_ENV = "SUNDIAL_SECRET_ACCESS_KEY"  # noqa: S105 (a variable's name, not a secret)
SCHEDULER_URL_ENV = "SUNDIAL_SCHEDULER_URL"
FUNCTION_URL_OUTPUT = "SchedulerFunctionUrl"
"""The stack's output naming the function URL (``sundial:schedulerFunctionUrl``)."""
FUNCTION_URL_SETTING = "sundial:schedulerFunctionUrl"
SIGNATURE_ERRORS = frozenset({"InvalidSignatureException", "SignatureDoesNotMatch", "IncompleteSignatureException"})
UNKNOWN_KEY_ERRORS = frozenset({"UnrecognizedClientException", "InvalidClientTokenId"})
REGION_IN_HOST = re.compile(r"\.(?:execute-api|lambda-url)\.([a-z0-9-]+)\.(?:amazonaws\.com|on\.aws)$")
EVENTBRIDGE = "eventbridge"


def scheduler_region(endpoint: str, env: Mapping[str, str]) -> str:
    """The Region requests are signed for: the one in an API Gateway or function URL host, else
    ``AWS_REGION`` / ``AWS_DEFAULT_REGION``, else us-east-1 (``make run`` takes any)."""
    found = REGION_IN_HOST.search(urlsplit(endpoint).hostname or "")
    if found:
        return found.group(1)
    return env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or "us-east-1"


def _error_code(exc: Exception) -> str | None:
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        return str((response.get("Error") or {}).get("Code") or "") or None
    return None


def refusal_advice(code: str, endpoint: str, function_url: bool) -> str:
    """What to do about an endpoint that refused the request's credentials, in words."""
    if code in UNKNOWN_KEY_ERRORS:
        return (
            f"{endpoint} does not know this access key (revoked, mistyped, or another deployment's): issue one with "
            "POST /v1/tenants/{id}/access-keys"
        )
    if function_url:
        return (
            f"{endpoint} (the function URL) refused the signature too: check the secret access key and this "
            "machine's clock (at most 5 minutes off)"
        )
    return (
        f"{endpoint} refused the signature: API Gateway may not hand the request's SigV4 Authorization header on "
        f'as it was signed. Use the function URL instead: deploy with "{FUNCTION_URL_SETTING}": true and give '
        f"the stack's {FUNCTION_URL_OUTPUT} output as --scheduler-url (or {SCHEDULER_URL_ENV}); if that refuses "
        "it too, check the secret and this machine's clock"
    )


def scheduler_round_trip(
    client: Any, endpoint: str, *, function_url: bool, name: str, now: Callable[[], datetime] | None = None
) -> Verdict:
    """``ListScheduleGroups``, ``CreateSchedule``, ``GetSchedule`` and ``DeleteSchedule`` through
    ``client`` (boto3's ``scheduler`` client, or a stand-in), each signed; the verdict, saying
    which endpoint to use when one refuses the signature."""
    now = now or (lambda: datetime.now(UTC))
    step = "ListScheduleGroups"
    created = False
    try:
        groups = client.list_schedule_groups(MaxResults=1)["ScheduleGroups"]
        arn = next(group["Arn"] for group in groups if group["Name"] == "default")
        partition, region, account = arn.split(":")[1], arn.split(":")[3], arn.split(":")[4]
        target = {
            "Arn": f"arn:{partition}:sqs:{region}:{account}:smoke-eventbridge-target",
            "RoleArn": f"arn:{partition}:iam::{account}:role/smoke-eventbridge",
            "Input": json.dumps({"smoke": name}),
        }
        expression = f"at({(now() + timedelta(days=30)).strftime('%Y-%m-%dT%H:%M:%S')})"
        step = "CreateSchedule"
        client.create_schedule(
            Name=name,
            ScheduleExpression=expression,
            FlexibleTimeWindow={"Mode": "OFF"},
            State="DISABLED",
            Target=target,
        )
        created = True
        step = "GetSchedule"
        read = client.get_schedule(Name=name)
        problems = [
            f"{member} came back {read.get(member)!r}, not {wanted!r}"
            for member, wanted in (("ScheduleExpression", expression), ("State", "DISABLED"))
            if read.get(member) != wanted
        ]
        if (read.get("Target") or {}).get("Arn") != target["Arn"]:
            problems.append(f"Target.Arn came back {(read.get('Target') or {}).get('Arn')!r}")
        step = "DeleteSchedule"
        client.delete_schedule(Name=name)
        created = False
    except Exception as exc:
        code = _error_code(exc)
        if created:
            with suppress(Exception):
                client.delete_schedule(Name=name)
        if code in SIGNATURE_ERRORS or code in UNKNOWN_KEY_ERRORS:
            detail = f"{step} refused ({code}): {refusal_advice(code, endpoint, function_url)}"
        else:
            detail = f"{step} against {endpoint} failed: {type(exc).__name__}: {exc}"
        return Verdict(EVENTBRIDGE, FAILED, detail)
    via = "the function URL" if function_url else "the API's /scheduler"
    detail = f"schedule {name} created, read back and deleted through {via} ({endpoint}), signed for {region}"
    if problems:
        return Verdict(EVENTBRIDGE, FAILED, "; ".join([*problems, detail]))
    return Verdict(EVENTBRIDGE, OK, detail)


def scheduler_client(endpoint: str, region: str, access_key_id: str, secret_access_key: str) -> Any:
    """boto3's ``scheduler`` client, signing with the access key for ``region``, at ``endpoint``."""
    import boto3  # noqa: PLC0415 (a third of a second: only when the round trip runs)
    from botocore.config import Config  # noqa: PLC0415

    return boto3.session.Session().client(
        "scheduler",
        endpoint_url=endpoint,
        region_name=region,
        aws_access_key_id=access_key_id,
        aws_secret_access_key=secret_access_key,
        config=Config(retries={"mode": "standard", "max_attempts": 2}, connect_timeout=10, read_timeout=30),
    )


def eventbridge_check(
    args: argparse.Namespace,
    url: str,
    env: Mapping[str, str],
    prefix: str,
    make_client: Callable[[str, str, str, str], Any] = scheduler_client,
) -> Verdict:
    """The round trip when the smoke has an access key (flags, else the environment), skipped and
    saying how otherwise."""
    key_id = args.access_key_id or env.get(ACCESS_KEY_ENV)
    secret = args.secret_access_key or env.get(SECRET_KEY_ENV)
    if not key_id or not secret:
        return Verdict(
            EVENTBRIDGE,
            SKIPPED,
            f"no access key ({ACCESS_KEY_ENV} and {SECRET_KEY_ENV}, or --access-key-id and --secret-access-key) "
            "for the signed round trip",
        )
    given = args.scheduler_url or env.get(SCHEDULER_URL_ENV)
    endpoint = (given or f"{url}/scheduler").rstrip("/")
    region = args.region or scheduler_region(endpoint, env)
    client = make_client(endpoint, region, key_id, secret)
    return scheduler_round_trip(client, endpoint, function_url=bool(given), name=f"{prefix}-eventbridge")


def base_url(url: str) -> str:
    """The API's base, routes appended to it: the stack's ``ApiUrl`` output (``.../prod/v1``) is
    taken as it is printed, without its ``/v1``."""
    url = url.rstrip("/")
    return url.removesuffix("/v1")


def _ms(instant: str) -> float:
    """An API instant (``2026-11-24T10:53:32.778Z``) in milliseconds since the epoch."""
    return datetime.fromisoformat(instant.replace("Z", "+00:00")).timestamp() * 1000


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m sundial_cli.smoke", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--url", help="the Sundial to check (default: $SUNDIAL_URL, else the CLI's profile, else make run's)"
    )
    parser.add_argument("--api-key", help="a tenant's key (default: $SUNDIAL_API_KEY; none on make run)")
    parser.add_argument("--profile", help="a profile of the CLI's config file")
    parser.add_argument(
        "--targets",
        choices=("auto", "receiver", "api"),
        default="auto",
        help="receiver: a loopback receiver started here; api: the API's own routes; auto: the receiver "
        "when the URL is on loopback, else the API",
    )
    parser.add_argument("--max-lateness-ms", type=int, default=1000, help="on time means at most this late (1000)")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds the checks may take in all (60)")
    parser.add_argument(
        "--access-key-id",
        help=f"an EventBridge Scheduler API access key (default: ${ACCESS_KEY_ENV}): the signed check",
    )
    parser.add_argument("--secret-access-key", help=f"its secret (default: ${SECRET_KEY_ENV})")
    parser.add_argument(
        "--scheduler-url",
        help=f"the scheduler API's endpoint (default: ${SCHEDULER_URL_ENV}, else the URL + /scheduler): the stack's "
        f"{FUNCTION_URL_OUTPUT} output",
    )
    parser.add_argument("--region", help="the Region to sign for (default: the endpoint's host's, else $AWS_REGION)")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(argv)
    try:
        settings = resolve(args.url, args.api_key, args.profile)
    except ConfigError as exc:
        print(f"FAILED  settings: {exc}")
        return 1
    url = base_url(settings.url)
    on_loopback = urlsplit(url).hostname in LOOPBACK_HOSTS
    use_receiver = args.targets == "receiver" or (args.targets == "auto" and on_loopback)
    client = Client(url, settings.api_key)
    try:
        with running_receiver() as receiver:
            targets: Targets = ReceiverTargets(receiver) if use_receiver else ApiTargets(url)
            print(f"smoke: {url}, targets: {targets.description}, on time: at most {args.max_lateness_ms} ms late")
            smoke = Smoke(client, targets, args.max_lateness_ms)
            verdicts = smoke.run(args.timeout)
    finally:
        client.close()
    signed = eventbridge_check(args, url, os.environ, smoke.prefix)
    print(signed.line())
    verdicts.append(signed)
    failed = [verdict for verdict in verdicts if verdict.outcome == FAILED]
    passed = sum(verdict.outcome == OK for verdict in verdicts)
    print(f"smoke: {passed} ok, {len(failed)} failed, {len(verdicts) - passed - len(failed)} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
