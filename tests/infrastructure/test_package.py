"""The deployed package is what the code needs: each function's handler, from the code asset the
synthesized stack ships, with a dependency layer and nothing else, answers a real event.

What runs is what deploys: the code directory is the assembly's own asset (found from the
template's ``Code.S3Key`` through the assembly's asset manifest), each function's handler string
and environment are the template's, and each function runs in a clean interpreter of its own
(``python -I -S``: no site-packages, none of the development requirements) with only the code
directory and the layer's ``python/`` on ``sys.path``, as Lambda puts ``/var/task`` and
``/opt/python`` (tests/support/sandbox.py, tests/support/lambda_bootstrap.py). Its AWS is a moto
server in a process of its own, reached through ``AWS_ENDPOINT_URL`` on loopback; its HTTP
targets are a loopback receiver run here. The canary, off by default, runs from the same code asset
with the handler and environment of a stack built with it on (the ``alarmed`` fixture).

One substitution, of necessity: the layer the stack ships is built for Lambda's platform
(Python 3.14 on arm64 by default), which cannot run on this machine. The layer used here is
built by the same recipe, ``infra.bundling.build_dependencies``, from the same requirements.txt,
for this machine's architecture and Python version (cached under .build/ as the stack's is; the
first run downloads its wheels from PyPI), and a test checks that it holds the same distributions
at the same versions as the shipped one. The environment differs from the template's in the
resources (moto's, where the template has references) and in one setting: loopback targets are
allowed, since the receiver is on loopback.

A module missing from requirements.txt (something only requirements-dev.txt provides) or from
the code asset (a file the bundler does not copy) fails these tests: the first tests show the
mechanism catching both, on a package made for the purpose.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from infra import bundling
from infra.settings import DeploymentSettings
from local.apigw import authorizer_event
from local.moto_server import FAKE_ENV, MotoServer
from local.sqs_lambda import sqs_event
from shared.settings.environment import env_name
from tests.infrastructure.conftest import Built, Synthesized
from tests.support.cloudformation import documented_request
from tests.support.events import api_event
from tests.support.receiver import Receiver, running_receiver
from tests.support.sandbox import RECOVER_FUNCTION, SCANNER_FUNCTION, Sandbox, provision

pytestmark = pytest.mark.infrastructure

ADMIN_KEY = "sk_admin_package-test"
FUNCTIONS = (
    "api",
    "authorizer",
    "scheduler",
    "tick",
    "scanner",
    "trigger",
    "trigger_high",
    "recover",
    "canary",
    "jobs",
)
"""Every handler under functions/ (a test checks the stack ships exactly these)."""


@pytest.fixture(scope="module")
def host_layer() -> Path:
    """The dependency layer by the stack's recipe, for this machine (see the module's docstring)."""
    return bundling.build_dependencies(architecture=bundling.host_architecture(), python=bundling.host_python()).path


@dataclass(frozen=True)
class Shipped:
    code: Path
    """The code asset's directory in the assembly (what CDK zips and uploads)."""
    layer: Path
    """The dependency layer's, built for Lambda's platform."""
    handlers: dict[str, str]
    """Function (its folder under functions/) -> the template's ``Handler``."""
    environments: dict[str, dict[str, Any]]
    """Function -> the template's ``Environment.Variables`` (strings, or references)."""
    timeouts_s: dict[str, int]
    """Function -> the template's ``Timeout``."""


def shipped(synthesized: Synthesized, *also: Built) -> Shipped:
    """The default stack's package, and the functions ``also`` (stacks built with other settings:
    the canary's, off by default) run from the same code asset."""
    manifest = json.loads((synthesized.outdir / f"{synthesized.stack.artifact_id}.assets.json").read_text())
    by_key = {
        destination["objectKey"]: synthesized.outdir / entry["source"]["path"]
        for entry in manifest["files"].values()
        for destination in entry["destinations"].values()
    }
    (layer,) = synthesized.resources("AWS::Lambda::LayerVersion").values()
    codes, handlers, environments, timeouts = set(), {}, {}, {}
    functions = [
        function for built in (synthesized, *also) for function in built.resources("AWS::Lambda::Function").values()
    ]
    for function in functions:
        properties = function["Properties"]
        if not str(properties.get("Runtime", "")).startswith("python"):
            continue  # CDK's own helpers (none today), not ours
        handler = properties["Handler"]
        name = handler.split(".")[1]
        handlers[name] = handler
        environments[name] = properties.get("Environment", {}).get("Variables", {})
        timeouts[name] = properties.get("Timeout", 3)  # Lambda's default
        codes.add(properties["Code"]["S3Key"])
    (code,) = codes  # one code asset, whatever the settings
    return Shipped(by_key[code], by_key[layer["Properties"]["Content"]["S3Key"]], handlers, environments, timeouts)


# --- the mechanism, on a package made for the purpose --------------------------------------------


def _package(root: Path, handler: str) -> Path:
    """A code asset built by the stack's bundler from one handler module (and a data file)."""
    (root / "functions" / "probe").mkdir(parents=True)
    (root / "functions" / "__init__.py").write_text("")
    (root / "functions" / "probe" / "__init__.py").write_text("")
    (root / "functions" / "probe" / "handler.py").write_text(handler)
    (root / "functions" / "probe" / "table.json").write_text("{}")
    return bundling.build_code(root=root, packages=["functions"], build_dir=root / ".build").path


def _probe(tmp_path: Path, layer: Path, handler: str) -> Any:
    sandbox = Sandbox("probe", "functions.probe.handler.handler", _package(tmp_path, handler), layer, {})
    try:
        return sandbox.invoke({})
    finally:
        sandbox.stop()


def test_a_handler_importing_a_package_only_the_dev_requirements_hold_fails(tmp_path: Path, host_layer: Path) -> None:
    import hypothesis  # noqa: F401  (here, in the development venv, it imports)

    outcome = _probe(tmp_path, host_layer, "import hypothesis\n\ndef handler(event, context):\n    return 1\n")
    assert outcome.error is not None
    assert (outcome.error["type"], outcome.error["message"]) == ("ModuleNotFoundError", "No module named 'hypothesis'")


def test_a_handler_reading_a_file_the_bundler_does_not_copy_fails(tmp_path: Path, host_layer: Path) -> None:
    handler = (
        "from pathlib import Path\n\n"
        "def handler(event, context):\n"
        "    return (Path(__file__).parent / 'table.json').read_text()\n"
    )
    outcome = _probe(tmp_path, host_layer, handler)
    assert outcome.error is not None
    assert outcome.error["type"] == "FileNotFoundError", outcome.error


def test_a_handler_using_the_layer_answers_and_loads_nothing_from_elsewhere(tmp_path: Path, host_layer: Path) -> None:
    handler = "import pydantic, boto3\n\ndef handler(event, context):\n    return pydantic.__version__\n"
    outcome = _probe(tmp_path, host_layer, handler)
    assert outcome.error is None, outcome.error
    assert f"pydantic=={outcome.result}" in bundling.REQUIREMENTS.read_text().splitlines()
    assert outcome.foreign == [], "only the layer, the code and the standard library are importable"


def test_a_module_loaded_from_outside_the_package_is_reported(tmp_path: Path, host_layer: Path) -> None:
    import hypothesis

    site = str(Path(hypothesis.__file__).parent.parent)  # the development venv's site-packages
    handler = (
        f"import sys\nsys.path.append({site!r})\nimport hypothesis\n\ndef handler(event, context):\n    return 1\n"
    )
    outcome = _probe(tmp_path, host_layer, handler)
    assert outcome.error is None, outcome.error
    assert any(line.startswith("hypothesis (") for line in outcome.foreign), outcome.foreign


# --- the stack's own package ----------------------------------------------------------------------


def _distributions(layer: Path) -> set[str]:
    return {path.name.removesuffix(".dist-info") for path in (layer / "python").glob("*.dist-info")}


def test_the_host_layer_holds_what_the_shipped_one_holds(synthesized: Synthesized, host_layer: Path) -> None:
    package = shipped(synthesized)
    assert _distributions(package.layer)
    assert _distributions(host_layer) == _distributions(package.layer)


def test_the_stack_ships_every_handler_from_one_code_asset(synthesized: Synthesized, alarmed: Built) -> None:
    """Every handler but the canary's at the defaults; the canary's too with ``sundial:canary``,
    from the same code asset."""
    assert sorted(shipped(synthesized).handlers) == sorted(set(FUNCTIONS) - {"canary"})
    package = shipped(synthesized, alarmed)
    assert sorted(package.handlers) == sorted(FUNCTIONS)
    on_disk = sorted(path.parent.name for path in Path("functions").glob("*/handler.py"))
    assert on_disk == sorted(FUNCTIONS)
    for name, handler in package.handlers.items():
        assert handler == f"functions.{name}.handler.handler"
        assert (package.code / "functions" / name / "handler.py").is_file()


class ScanEvents:
    """Lambda's side of the tick's asynchronous invocations of the scanner (and of the recovering
    trigger): moto forwards each (local/functions.py), and the event is kept for the shipped
    function to be run with."""

    def __init__(self) -> None:
        from local.functions import FunctionServer

        self.events: list[Any] = []
        self.drains: list[Any] = []
        self.server = FunctionServer()
        self.server.submit = lambda run: run()
        self.server.handlers[SCANNER_FUNCTION] = lambda event, context: self.events.append(event)
        self.server.handlers[RECOVER_FUNCTION] = lambda event, context: self.drains.append(event)


@pytest.fixture
def scan_events() -> Iterator[ScanEvents]:
    events = ScanEvents()
    events.server.start()
    try:
        yield events
    finally:
        events.server.stop()


@pytest.fixture
def moto(scan_events: ScanEvents) -> Iterator[MotoServer]:
    from local.settings import FUNCTIONS_URL_ENV

    server = MotoServer(env={FUNCTIONS_URL_ENV: scan_events.server.url})
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def xray() -> Iterator[socket.socket]:
    """Where the functions' X-Ray SDK sends its segments (Lambda's daemon address): tracing is on,
    as in Lambda, so its code runs too."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as daemon:
        daemon.bind(("127.0.0.1", 0))
        yield daemon


@dataclass
class Deployment:
    """The shipped functions on moto, each a :class:`Sandbox`, started on first use."""

    package: Shipped
    layer: Path
    resources: dict[str, str]
    common: dict[str, str]
    sandboxes: dict[str, Sandbox]
    xray: socket.socket

    def __getitem__(self, name: str) -> Sandbox:
        if name not in self.sandboxes:
            self.sandboxes[name] = Sandbox(
                name,
                self.package.handlers[name],
                self.package.code,
                self.layer,
                self.environment(name),
                function_timeout_ms=self.package.timeouts_s[name] * 1000,
            )
        return self.sandboxes[name]

    def environment(self, name: str) -> dict[str, str]:
        """The template's variables, references resolved to moto's resources."""
        env = {}
        for key, value in self.package.environments[name].items():
            if isinstance(value, str):
                env[key] = value
            else:
                assert key in self.resources, f"{name}'s {key} refers to a resource the sandbox does not provision"
                env[key] = self.resources[key]
        return {**env, **self.common}


@pytest.fixture
def deployment(
    synthesized: Synthesized, alarmed: Built, host_layer: Path, moto: MotoServer, xray: socket.socket
) -> Iterator[Deployment]:
    common = {
        **FAKE_ENV,
        "AWS_ENDPOINT_URL": moto.endpoint,
        "AWS_XRAY_DAEMON_ADDRESS": f"127.0.0.1:{xray.getsockname()[1]}",
        "AWS_XRAY_CONTEXT_MISSING": "LOG_ERROR",
        "_X_AMZN_TRACE_ID": "Root=1-67891233-abcdef012345678912345678;Parent=53995c3f42cd8ad8;Sampled=1",
        env_name("allow_loopback_targets"): "true",
    }
    running = Deployment(
        shipped(synthesized, alarmed), host_layer, provision(moto.endpoint, ADMIN_KEY), common, {}, xray
    )
    try:
        yield running
    finally:
        for sandbox in running.sandboxes.values():
            sandbox.stop()


def _api(deployment: Deployment, method: str, path: str, body: Any, key: str) -> tuple[int, Any]:
    """One request as API Gateway makes it: the authorizer's function, then the API's with the
    authorizer's context."""
    event = api_event(method, path, body, {"Authorization": f"Bearer {key}"})
    policy = deployment["authorizer"].succeed(authorizer_event(event))
    assert policy["policyDocument"]["Statement"][0]["Effect"] == "Allow"
    event["requestContext"]["authorizer"] = {**policy["context"], "principalId": policy["principalId"]}
    answer = deployment["api"].succeed(event)
    return answer["statusCode"], json.loads(answer["body"]) if answer.get("body") else None


def _sqs(deployment: Deployment) -> Any:
    import boto3

    return boto3.client("sqs", endpoint_url=deployment.common["AWS_ENDPOINT_URL"], region_name=FAKE_ENV["AWS_REGION"])


def _drain(deployment: Deployment, queue: str, count: int) -> list[dict[str, Any]]:
    """``count`` messages of a queue, as Lambda's poller receives them (long polls: no sleeping)."""
    sqs = _sqs(deployment)
    url = deployment.resources[queue]
    messages: list[dict[str, Any]] = []
    deadline = time.monotonic() + 20
    while len(messages) < count and time.monotonic() < deadline:
        answer = sqs.receive_message(
            QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=2, MessageSystemAttributeNames=["All"]
        )
        messages += answer.get("Messages", [])
    assert len(messages) >= count, f"{queue}: {len(messages)} of {count} messages"
    return messages


def _signed_url_event(key_id: str, secret: str) -> dict[str, Any]:
    """A ListSchedules signed as botocore signs it, as the function URL hands it on."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    from local.function_url import url_event

    host = "abcdefghijklmnopqrstuvwxyz012345.lambda-url.us-east-1.on.aws"
    request = AWSRequest(method="GET", url=f"https://{host}/schedules?MaxResults=5", headers={"Host": host})
    SigV4Auth(Credentials(key_id, secret), "scheduler", "us-east-1").add_auth(request)
    headers = [(name, value.decode() if isinstance(value, bytes) else value) for name, value in request.headers.items()]
    return url_event("GET", "/schedules", "MaxResults=5", headers, None, scheme="https")


def _arn(url: str) -> str:
    return f"arn:aws:sqs:us-east-1:123456789012:{url.rsplit('/', 1)[-1]}"


def test_every_shipped_handler_answers_a_real_event(
    deployment: Deployment, receiver: Receiver, scan_events: ScanEvents
) -> None:
    # the admin makes a tenant (authorizer and API), the tenant registers two tasks and a job
    status, tenant = _api(deployment, "POST", "/v1/tenants", {"id": "acme"}, ADMIN_KEY)
    assert status == 201, tenant
    key = tenant["key"]["secret"]
    hook, high, process = (receiver.script(path, 200) for path in ("/hook", "/high", "/process"))
    status, task = _api(
        deployment, "POST", "/v1/tasks", {"schedule": {"after_seconds": 1}, "target": {"http": {"url": hook}}}, key
    )
    assert status == 201, task
    urgent = {"schedule": {"after_seconds": 1}, "target": {"http": {"url": high}}, "priority": "high"}
    status, urgent_task = _api(deployment, "POST", "/v1/tasks", urgent, key)
    assert status == 201, urgent_task
    status, job = _api(deployment, "POST", "/v1/jobs", {"processor": {"http": {"url": process}}, "data": [[1]]}, key)
    assert status == 201, job

    # the EventBridge Scheduler API's function URL: a request signed with the tenant's access key
    status, access = _api(deployment, "POST", "/v1/tenants/acme/access-keys", None, ADMIN_KEY)
    assert status == 201, access
    listed = deployment["scheduler"].succeed(_signed_url_event(access["access_key_id"], access["secret_access_key"]))
    assert listed["statusCode"] == 200, listed
    assert json.loads(listed["body"])["Schedules"] == []

    # the minute rule's event; the scanner invocations it asked Lambda for (through moto's Invoke)
    shards = deployment["tick"].succeed({"source": "aws.events", "detail-type": "Scheduled Event", "detail": {}})
    every = int(deployment.package.environments["tick"][env_name("bucket_shards")])
    assert shards == {"shards": every}
    assert len(scan_events.events) == min(every, DeploymentSettings().scanner_max_concurrency)
    for event in scan_events.events:
        answer = deployment["scanner"].succeed(event)
        assert answer["left"] == [], answer
    assert sorted(shard for event in scan_events.events for shard in (r["shard"] for r in event["requests"])) == list(
        range(every)
    )

    # each lane's trigger fires its occurrence at the receiver
    for function, queue, path in (
        ("trigger", env_name("delay_queue_urls"), "/hook"),
        ("trigger_high", env_name("high_priority_queue_url"), "/high"),
    ):
        url = deployment.resources[queue]
        answer = deployment[function].succeed(sqs_event(_drain(deployment, queue, 1), _arn(url)))
        assert answer == {"batchItemFailures": []}
        assert len(receiver.calls_to(path)) == 1, function
    status, runs = _api(deployment, "GET", f"/v1/tasks/{task['id']}/runs", None, key)
    assert status == 200, runs
    assert [run["status"] for run in runs["items"]] == ["succeeded"]

    # the recovering trigger fires a message that ran out of receives unseen (from the stranded queue)
    late = receiver.script("/stranded", 200)
    status, stranded = _api(
        deployment, "POST", "/v1/tasks", {"schedule": {"after_seconds": 1}, "target": {"http": {"url": late}}}, key
    )
    assert status == 201, stranded
    # its message moved to the stranded queue as SQS moves it; the tick finds it there and invokes
    # the recovering trigger (through moto's Invoke), which drains the queue
    assert scan_events.drains == []  # the first tick found the stranded queue empty
    [message] = _drain(deployment, env_name("delay_queue_urls"), 1)
    sqs = _sqs(deployment)
    sqs.send_message(QueueUrl=deployment.resources[env_name("stranded_queue_url")], MessageBody=message["Body"])
    deployment["tick"].succeed({"source": "aws.events", "detail-type": "Scheduled Event", "detail": {}})
    assert scan_events.drains == [{"drain": True}]
    answer = deployment["recover"].succeed(scan_events.drains[0])
    assert answer == {"receives": 2, "received": 1, "deleted": 1, "failed": 0}
    assert len(receiver.calls_to("/stranded")) == 1

    # the canary: its custom resource registers it (answering at the request's URL), its target times it
    receiver.script("/cloudformation", 200)
    canary_arn = "arn:aws:lambda:us-east-1:123456789012:function:Sundial-Canary"
    registered = deployment["canary"].succeed(
        documented_request(
            "Create",
            ResponseURL=receiver.url + "/cloudformation",
            ResourceProperties={"ServiceToken": canary_arn, "FunctionArn": canary_arn},
        )
    )
    assert registered["status"] == "SUCCESS", registered
    assert receiver.calls_to("/cloudformation")[0].body["Status"] == "SUCCESS"
    timed = deployment["canary"].succeed(
        {"scheduled_for": "2026-11-26T10:00:00.000Z", "fired_at": "2026-11-26T10:00:00.007Z", "run_id": "R"}
    )
    assert timed == {"lateness_ms": 7}

    # the job state machine's first step: pre, which calls the processor
    planned = deployment["jobs"].succeed({"step": "pre", "job_id": job["id"]})
    assert [level["shard_count"] for level in planned["levels"]] == [1]
    assert [call.body["phase"] for call in receiver.calls_to("/process")] == ["pre"]

    assert sorted(deployment.sandboxes) == sorted(FUNCTIONS)
    written = [*deployment.layer.rglob("__pycache__"), *deployment.package.code.rglob("__pycache__")]
    assert written == [], "the functions ran as from read-only directories (python -B)"
    deployment.xray.setblocking(False)
    segment = deployment.xray.recv(65_536)  # tracing ran (as in Lambda), and sent its segments
    assert b'"trace_id": "1-67891233-abcdef012345678912345678"' in segment.replace(b'":"', b'": "'), segment[:300]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with running_receiver() as running:
        yield running
