"""The jobs state machine on moto: its definition synthesized from the stack's own construct
(infra/jobs.py), and moto's Step Functions interpreter made to call the real job function.

* **The definition** is the template's ``DefinitionString``: a ``Fn::Join`` of JSON text and
  intrinsics. :func:`resolve` turns it into plain text: ``Ref`` of a pseudo parameter
  (``AWS::Partition``, ``AWS::Region``, ``AWS::AccountId``) and ``Fn::GetAtt [<a Lambda
  function>, Arn]`` become this account's values; anything else is refused, so a new token in the
  definition fails loudly here rather than reaching Step Functions as ``[object Object]``.
  :func:`jobs_definition` synthesizes the ``Jobs`` construct in a throwaway stack (about 2 s, most
  of it importing the CDK); ``python -m local.stepfunctions`` prints it, which is how the local
  runtime gets it (:class:`JobsDefinition`) without keeping the CDK (and its node process) in its
  own, cached in .build/ until anything it is built from changes (:func:`definition_key`: infra/,
  shared/, this module, the CDK libraries' versions).
* **moto's interpreter** runs an execution for real (``execute_state_machine``) in its own
  threads. Its ``lambda:invoke`` integration calls Lambda through boto3, which lands in
  ``LambdaSimpleBackend.invoke`` (no Docker); the tests patch that with
  :func:`dispatching_invoke` (an in-process handler), the local runtime with a forwarder
  (local/functions.py).
* **Errors** go back the way Lambda reports an unhandled exception: the payload
  ``{"errorMessage": ..., "errorType": <the exception's class name>, "requestId": ..., ...}`` with the
  ``X-Amz-Function-Error: Unhandled`` header (:func:`lambda_error`). moto then fails the task with
  error = ``errorType`` (``StateTaskServiceLambda._from_error``), which is what ``Retry``/``Catch``
  match on -- as in AWS, where ``raise ProcessorRetryable()`` in a Lambda surfaces as error
  ``ProcessorRetryable``.
"""

from __future__ import annotations

import datetime
import fcntl
import functools
import hashlib
import json
import os
import subprocess
import sys
import traceback
import uuid
from collections.abc import Callable, Mapping
from importlib import metadata
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any
from unittest import mock

if TYPE_CHECKING:
    from aws_cdk import Stack

ACCOUNT = "123456789012"
REGION = "us-east-1"
FUNCTION_NAME = "sundial-jobs"
FUNCTION_ARN = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{FUNCTION_NAME}"
ROLE_ARN = f"arn:aws:iam::{ACCOUNT}:role/sundial-jobs-state-machine"
STATE_MACHINE_NAME = "sundial-jobs"
PSEUDO = {"AWS::Partition": "aws", "AWS::Region": REGION, "AWS::AccountId": ACCOUNT, "AWS::URLSuffix": "amazonaws.com"}
MOTO_CONFIG: Any = {"stepfunctions": {"execute_state_machine": True}, "lambda": {"use_docker": False}}
PROJECT_ROOT = Path(__file__).resolve().parent.parent
BUILD_DIR = PROJECT_ROOT / ".build"
THIS_MODULE = Path(__file__).resolve()

Handler = Callable[[dict[str, Any]], Any]


def resolve(value: Any, attributes: Mapping[str, str]) -> Any:
    """A CloudFormation value with its intrinsics replaced: ``attributes`` maps
    ``"<logical id>.<attribute>"`` to a string; pseudo parameters are this account's."""
    if isinstance(value, list):
        return [resolve(item, attributes) for item in value]
    if not isinstance(value, dict):
        return value
    if set(value) == {"Fn::Join"}:
        separator, parts = value["Fn::Join"]
        return separator.join(str(resolve(part, attributes)) for part in parts)
    if set(value) == {"Ref"}:
        name = value["Ref"]
        if name in PSEUDO:
            return PSEUDO[name]
        if name in attributes:
            return attributes[name]
        raise KeyError(f"no value for Ref {name}")
    if set(value) == {"Fn::GetAtt"}:
        logical_id, attribute = value["Fn::GetAtt"]
        key = f"{logical_id}.{attribute}"
        if key not in attributes:
            raise KeyError(f"no value for Fn::GetAtt {key}")
        return attributes[key]
    if any(key.startswith("Fn::") for key in value):
        raise ValueError(f"unsupported intrinsic {sorted(value)}")
    return {key: resolve(item, attributes) for key, item in value.items()}


def definition_from_stack(stack: Stack, function_arn: str = FUNCTION_ARN) -> str:
    """The one state machine's definition in ``stack``'s template, every Lambda function's ARN
    resolved to ``function_arn``."""
    from aws_cdk.assertions import Template

    resources = Template.from_stack(stack).to_json()["Resources"]
    machines = [r for r in resources.values() if r["Type"] == "AWS::StepFunctions::StateMachine"]
    assert len(machines) == 1, f"expected one state machine, found {len(machines)}"
    attributes = {f"{lid}.Arn": function_arn for lid, r in resources.items() if r["Type"] == "AWS::Lambda::Function"}
    return definition_from_json(json.dumps(machines[0]["Properties"]["DefinitionString"]), attributes)


def definition_from_json(text: str, attributes: Mapping[str, str]) -> str:
    """A ``DefinitionString`` as JSON text (``Jobs.definition()``), its intrinsics resolved
    (``attributes`` as :func:`resolve` takes them)."""
    definition = resolve(json.loads(text), attributes)
    if not isinstance(definition, str):
        raise TypeError(f"a definition resolves to text, not {type(definition).__name__}")
    json.loads(definition)  # plain JSON now
    return definition


def jobs_definition(function_arn: str = FUNCTION_ARN) -> str:
    """The ``Jobs`` construct's definition with the deployment's default settings, synthesized in a
    throwaway stack around the function ``function_arn`` (a plain ARN: no template needed)."""
    from aws_cdk import App
    from aws_cdk import Stack as CdkStack
    from aws_cdk import aws_lambda as lambda_

    from infra.jobs import Jobs
    from infra.settings import DeploymentSettings

    stack = CdkStack(App(), "SundialLocalJobs")
    function = lambda_.Function.from_function_arn(stack, "JobFunction", function_arn)
    return definition_from_json(Jobs(stack, "Jobs", settings=DeploymentSettings(), function=function).definition(), {})


DEFINITION_PACKAGES = ("infra", "shared")
"""The project's code the definition is built from: the ``Jobs`` construct and what it imports."""
DEFINITION_DISTRIBUTIONS = ("aws-cdk-lib", "constructs", "jsii")
"""The libraries that synthesize it."""


def definition_key(root: Path = PROJECT_ROOT, module: Path = THIS_MODULE) -> str:
    """A hash of everything the cached definition is built from: every ``.py`` file under
    ``DEFINITION_PACKAGES`` (name and content), this module, and the versions of
    ``DEFINITION_DISTRIBUTIONS``. Any change to one of them makes a new key (the next ``make run``
    synthesizes again); nothing else does."""
    digest = hashlib.sha256()
    for distribution in DEFINITION_DISTRIBUTIONS:
        digest.update(f"{distribution}=={metadata.version(distribution)}".encode() + b"\0")
    sources = [path for package in DEFINITION_PACKAGES for path in (root / package).rglob("*.py")]
    for source in sorted([*sources, module]):
        name = source.relative_to(root) if source.is_relative_to(root) else Path(source.name)
        digest.update(name.as_posix().encode() + b"\0" + source.read_bytes() + b"\0")
    return digest.hexdigest()


class JobsDefinition:
    """:func:`jobs_definition`, read from .build/ when it was synthesized from the same inputs
    (:func:`definition_key`); else synthesized by a subprocess started now (so it runs while the
    caller does something else) and cached when it succeeds. One process at a time synthesizes
    it (a lock file beside the cache): runtimes started together on a fresh checkout (the test
    suites start four) wait for the first one's instead of each spending its own 10 to 20 s of
    CPU on the same synthesis."""

    def __init__(self) -> None:
        self.path = BUILD_DIR / f"local-jobs-definition-{definition_key()[:20]}.json"
        self._process: subprocess.Popen[str] | None = None
        self._lock: IO[str] | None = None
        if self.path.exists():
            return
        BUILD_DIR.mkdir(exist_ok=True)
        self._lock = self.path.with_suffix(".lock").open("w")
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return  # another process synthesizes it: result() waits for its lock
        if not self.path.exists():  # (written between the first look and the lock)
            self._process = self._synthesize()

    @staticmethod
    def _synthesize() -> subprocess.Popen[str]:
        env = {"JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20", "CDK_DISABLE_VERSION_CHECK": "1"}
        return subprocess.Popen(
            [sys.executable, "-W", "ignore", "-m", "local.stepfunctions"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**env, **os.environ},
            cwd=PROJECT_ROOT,
        )

    def result(self, timeout: float = 120) -> str:
        try:
            if self._process is None and self._lock is not None:
                fcntl.flock(self._lock, fcntl.LOCK_EX)  # the other process's synthesis ends (or it died)
                if not self.path.exists():  # it failed: this one synthesizes it
                    self._process = self._synthesize()
            if self._process is None:
                return self.path.read_text()
            definition, errors = self._process.communicate(timeout=timeout)
            if self._process.returncode != 0:
                raise RuntimeError(f"synthesizing the jobs state machine failed:\n{errors[-3000:]}")
            json.loads(definition)
            partial = self.path.with_suffix(f".{os.getpid()}.tmp")
            partial.write_text(definition)
            partial.replace(self.path)
            return definition
        finally:
            if self._lock is not None:
                self._lock.close()  # and with it the lock
                self._lock = None


def lambda_error(exc: BaseException) -> bytes:
    """Lambda's payload for an unhandled exception (sent with ``X-Amz-Function-Error: Unhandled``),
    with the keys Python's runtime gives it: a Task state's caught error carries it whole as its
    ``Cause`` (tests/data/aws/stepfunctions-lambda-error-caught.json), and the job function's fail
    step reads it (shared/messages.py, ``cause_message``)."""
    return json.dumps(
        {
            "errorMessage": str(exc),
            "errorType": type(exc).__name__,
            "requestId": str(uuid.uuid4()),
            "stackTrace": traceback.format_exception(exc)[-3:],
        }
    ).encode()


def function_name_of(name_or_arn: str) -> str:
    """``sundial-jobs`` for the function's name or ARN (``arn:aws:lambda:<region>:<account>:function:<name>``)."""
    return name_or_arn.split(":")[6] if name_or_arn.startswith("arn:") else name_or_arn


def dispatching_invoke(handlers: Mapping[str, Handler]) -> Callable[..., bytes | None]:
    """A ``LambdaSimpleBackend.invoke`` that calls ``handlers[<function name>](event)`` in-process."""

    def invoke(
        self: Any, function_name: str, qualifier: str | None, body: Any, headers: Any, response_headers: Any
    ) -> bytes | None:
        handler = handlers.get(function_name) or handlers.get(function_name_of(function_name))
        if handler is None:
            return None  # moto answers 404, as Lambda does for a function that does not exist
        event = json.loads(body) if body else {}
        try:
            answer = handler(event)
        except Exception as exc:
            response_headers["x-amz-function-error"] = "Unhandled"
            return lambda_error(exc)
        return json.dumps(answer).encode()

    return invoke


def interpreter_speedups() -> list[Any]:
    """Patches (``mock.patch.object``, to enter or ``start()``) that make moto's interpreter cheaper
    per state, the same calls otherwise:

    * moto builds a boto3 client for every Lambda task (~20 ms each); one per region and service
      does (clients are thread-safe), 5x faster over 1,000 shards;
    * moto builds a JSONPath parser (a ply grammar) for every path it evaluates: parse each once.
    """
    from moto.stepfunctions.parser.asl.component.state.exec.state_task import lambda_eval_utils
    from moto.stepfunctions.parser.asl.utils import json_path

    clients: dict[tuple[str, str], Any] = {}
    make_client = lambda_eval_utils.boto_client_for

    def cached_client(region: str, service: str, state_credentials: Any = None) -> Any:
        key = (region, service)
        if key not in clients:
            clients[key] = make_client(region=region, service=service, state_credentials=state_credentials)
        return clients[key]

    return [
        mock.patch.object(lambda_eval_utils, "boto_client_for", cached_client),
        mock.patch.object(json_path, "parse", functools.lru_cache(maxsize=None)(json_path.parse)),
    ]


def aws_time(moment: datetime.datetime | str) -> str:
    """A time as Step Functions writes one into the context object (``Execution.StartTime``,
    ``State.EnteredTime``): UTC to the millisecond, ``2019-03-26T20:14:13.192Z`` ("Accessing
    execution data from the Context object in Step Functions",
    https://docs.aws.amazon.com/step-functions/latest/dg/input-output-contextobject.html; and
    LocalStack's test_execution_dateformat, tests/aws/services/stepfunctions/v2/base/test_base.py,
    marked as validated against AWS, which holds the start time to that form and to the
    execution's startDate; it records no snapshot)."""
    if isinstance(moment, str):
        moment = datetime.datetime.fromisoformat(moment)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return moment.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def context_object_as_aws() -> list[Any]:
    """Patches (``mock.patch.object``, to enter or ``start()``) that make the context object of
    moto's interpreter the one Step Functions hands a state (the recordings in tests/data/aws/
    stepfunctions-context-object*.json; tests/integration/test_context_object.py):

    * ``Execution.StartTime`` is :func:`aws_time` text; moto put the execution's start as a
      ``datetime`` there, which broke its own DescribeExecution of an execution whose output
      held it (and read as ``2026-01-05T09:00:00.123456+00:00`` where it reached a task);
    * ``Execution.RedriveCount`` is there (0: moto redrives nothing);
    * ``State.EnteredTime`` is :func:`aws_time` text (moto's had microseconds and ``+00:00``).

    What Sundial's definition reads of it (``$$.Execution.Input``, ``$$.State.RetryCount``,
    ``$$.Map.Item.Value``) moto already gave as AWS does."""
    from moto.stepfunctions.parser.asl.component.state import state
    from moto.stepfunctions.parser.asl.eval.states import StateData
    from moto.stepfunctions.parser.backend.execution_worker import ExecutionWorker

    environment = ExecutionWorker._get_evaluation_environment

    def evaluation_environment(self: Any) -> Any:
        env: Any = environment(self)
        execution = env.states.context_object.context_object_data["Execution"]
        execution["StartTime"] = aws_time(execution["StartTime"])
        execution.setdefault("RedriveCount", 0)
        return env

    def state_data(**fields: Any) -> Any:
        return StateData(**{**fields, "EnteredTime": aws_time(fields["EnteredTime"])})  # type: ignore[typeddict-item]

    return [
        mock.patch.object(ExecutionWorker, "_get_evaluation_environment", evaluation_environment),
        mock.patch.object(state, "StateData", state_data),
    ]


STATUS_CHANGE = "Step Functions Execution Status Change"
REDRIVABLE = ("FAILED", "TIMED_OUT", "ABORTED")
"""A Standard execution that ended so can be redriven (for 14 days): "Redriving executions in
Step Functions", https://docs.aws.amazon.com/step-functions/latest/dg/redrive-executions.html."""


def _epoch_ms(moment: datetime.datetime | None) -> int | None:
    return None if moment is None else round(moment.timestamp() * 1000)


def status_change_event(
    execution: Mapping[str, Any], *, event_id: str | None = None, at: datetime.datetime | None = None
) -> dict[str, Any]:
    """The "Step Functions Execution Status Change" event EventBridge delivers for the execution
    ``execution`` describes (a DescribeExecution answer as boto3 gives it, its dates datetimes):
    what the stack's rule hands the job function when a job's execution ends without it
    (infra/job_runner.py). moto's Step Functions sends no events; the tests build this one.

    Every key AWS records (tests/data/aws/stepfunctions-execution-status-change.json, held by
    tests/integration/test_job_handler.py), with the values the Step Functions developer guide's
    event examples give the types of ("Automating Step Functions event delivery with
    EventBridge", https://docs.aws.amazon.com/step-functions/latest/dg/cw-events.html): the
    dates in epoch milliseconds, ``input`` and ``output`` as strings of JSON (``output`` and
    ``outputDetails`` null unless it succeeded), ``time`` in whole seconds. An execution that
    ended otherwise is redrivable (:data:`REDRIVABLE`); the reason a running or succeeded one is
    not is AWS's recorded text."""
    arn = str(execution["executionArn"])
    region, account = arn.split(":")[3:5]
    status = str(execution["status"])
    output = execution.get("output") if status == "SUCCEEDED" else None
    redrivable = status in REDRIVABLE
    moment = at or datetime.datetime.now(datetime.UTC)
    return {
        "version": "0",
        "id": event_id or str(uuid.uuid4()),
        "detail-type": STATUS_CHANGE,
        "source": "aws.states",
        "account": account,
        "time": moment.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": region,
        "resources": [arn],
        "detail": {
            "executionArn": arn,
            "stateMachineArn": execution["stateMachineArn"],
            "name": execution["name"],
            "status": status,
            "startDate": _epoch_ms(execution["startDate"]),
            "stopDate": _epoch_ms(execution.get("stopDate")),
            "input": execution.get("input", "{}"),
            "output": output,
            "stateMachineVersionArn": execution.get("stateMachineVersionArn"),
            "stateMachineAliasArn": execution.get("stateMachineAliasArn"),
            "redriveCount": execution.get("redriveCount", 0),
            "redriveDate": _epoch_ms(execution.get("redriveDate")),
            "redriveStatus": "REDRIVABLE" if redrivable else "NOT_REDRIVABLE",
            "redriveStatusReason": None if redrivable else f"Execution is {status} and cannot be redriven",
            "inputDetails": {"included": True},
            "outputDetails": {"included": True} if output is not None else None,
            "error": execution.get("error"),
            "cause": execution.get("cause"),
        },
    }


if __name__ == "__main__":
    sys.stdout.write(jobs_definition())
