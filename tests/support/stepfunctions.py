"""Run a synthesized Step Functions definition in moto, with its Lambda tasks answered in-process.

* **The definition** is the template's ``DefinitionString``: a ``Fn::Join`` of JSON text and
  intrinsics. :func:`resolve` turns it into plain text: ``Ref`` of a pseudo parameter
  (``AWS::Partition``, ``AWS::Region``, ``AWS::AccountId``) and ``Fn::GetAtt [<a Lambda
  function>, Arn]`` become this account's values; anything else is refused, so a new token in the
  definition fails loudly here rather than reaching Step Functions as ``[object Object]``.
* **moto's interpreter** runs the execution for real (``execute_state_machine``) in its own
  threads. Its ``lambda:invoke`` integration calls Lambda through boto3, which lands in
  ``LambdaSimpleBackend.invoke`` (no Docker); that is patched to call ``handler(event)``.
* **Errors** go back the way Lambda reports an unhandled exception: the payload
  ``{"errorType": <the exception's class name>, "errorMessage": ...}`` with the
  ``X-Amz-Function-Error: Unhandled`` header. moto then fails the task with error = ``errorType``
  (``StateTaskServiceLambda._from_error``), which is what ``Retry``/``Catch`` match on -- as in
  AWS, where ``raise ProcessorRetryable()`` in a Lambda surfaces as error ``ProcessorRetryable``.
"""

from __future__ import annotations

import functools
import json
import time
import traceback
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from unittest import mock

from aws_cdk import Stack
from aws_cdk.assertions import Template

ACCOUNT = "123456789012"
REGION = "us-east-1"
FUNCTION_NAME = "sundial-jobs"
FUNCTION_ARN = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{FUNCTION_NAME}"
ROLE_ARN = f"arn:aws:iam::{ACCOUNT}:role/sundial-jobs-state-machine"
PSEUDO = {"AWS::Partition": "aws", "AWS::Region": REGION, "AWS::AccountId": ACCOUNT, "AWS::URLSuffix": "amazonaws.com"}
MOTO_CONFIG: Any = {"stepfunctions": {"execute_state_machine": True}, "lambda": {"use_docker": False}}

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
    resources = Template.from_stack(stack).to_json()["Resources"]
    machines = [r for r in resources.values() if r["Type"] == "AWS::StepFunctions::StateMachine"]
    assert len(machines) == 1, f"expected one state machine, found {len(machines)}"
    attributes = {f"{lid}.Arn": function_arn for lid, r in resources.items() if r["Type"] == "AWS::Lambda::Function"}
    return definition_from_json(json.dumps(machines[0]["Properties"]["DefinitionString"]), attributes)


def definition_from_json(text: str, attributes: Mapping[str, str]) -> str:
    """A ``DefinitionString`` as JSON text (``Jobs.definition()``), its intrinsics resolved
    (``attributes`` as :func:`resolve` takes them)."""
    definition = resolve(json.loads(text), attributes)
    json.loads(definition)  # plain JSON now
    return definition


def _lambda_error(exc: BaseException) -> bytes:
    return json.dumps(
        {
            "errorType": type(exc).__name__,
            "errorMessage": str(exc),
            "stackTrace": traceback.format_exception(exc)[-3:],
        }
    ).encode()


def _dispatching_invoke(handlers: Mapping[str, Handler]) -> Callable[..., bytes | None]:
    def invoke(
        self: Any, function_name: str, qualifier: str | None, body: Any, headers: Any, response_headers: Any
    ) -> bytes | None:
        handler = handlers.get(function_name) or handlers.get(function_name.rsplit(":", 1)[-1])
        if handler is None:
            return None  # moto answers 404, as Lambda does for a function that does not exist
        event = json.loads(body) if body else {}
        try:
            answer = handler(event)
        except Exception as exc:
            response_headers["x-amz-function-error"] = "Unhandled"
            return _lambda_error(exc)
        return json.dumps(answer).encode()

    return invoke


@dataclass(frozen=True)
class Finished:
    status: str
    output: Any
    error: str | None
    cause: str | None
    seconds: float
    arn: str


@dataclass
class StateMachineRunner:
    arn: str
    client: Any

    def run(self, execution_input: Mapping[str, Any], *, timeout: float = 30, poll_s: float = 0.2) -> Finished:
        started = time.monotonic()
        execution_arn = self.client.start_execution(
            stateMachineArn=self.arn, name=f"run-{uuid.uuid4().hex}", input=json.dumps(execution_input)
        )["executionArn"]
        while True:
            described = self.client.describe_execution(executionArn=execution_arn)
            if described["status"] != "RUNNING":
                break
            if time.monotonic() - started > timeout:
                raise TimeoutError(f"execution still running after {timeout} s")
            time.sleep(poll_s)
        output = described.get("output")
        return Finished(
            status=described["status"],
            output=json.loads(output) if output else None,
            error=described.get("error"),
            cause=described.get("cause"),
            seconds=time.monotonic() - started,
            arn=execution_arn,
        )

    def history(self, execution_arn: str) -> list[dict[str, Any]]:
        pages = self.client.get_paginator("get_execution_history").paginate(executionArn=execution_arn)
        return [event for page in pages for event in page["events"]]


@contextmanager
def state_machine(
    definition: str, handler: Handler, *, function_name: str = FUNCTION_NAME
) -> Iterator[StateMachineRunner]:
    """A mocked account where ``definition`` is a Standard state machine whose Lambda tasks call
    ``handler(event)`` in-process (the function ``function_name``, by name or ARN)."""
    import boto3
    from moto import mock_aws
    from moto.awslambda_simple.models import LambdaSimpleBackend
    from moto.stepfunctions.parser.asl.component.state.exec.state_task import lambda_eval_utils
    from moto.stepfunctions.parser.asl.utils import json_path

    handlers = {function_name: handler, FUNCTION_ARN: handler}
    clients: dict[tuple[str, str], Any] = {}
    make_client = lambda_eval_utils.boto_client_for

    def cached_client(region: str, service: str, state_credentials: Any = None) -> Any:
        """moto builds a boto3 client for every Lambda task (~20 ms each); one per region
        and service is the same calls (clients are thread-safe), 5x faster over 1,000 shards."""
        key = (region, service)
        if key not in clients:
            clients[key] = make_client(region=region, service=service, state_credentials=state_credentials)
        return clients[key]

    with (
        mock_aws(config=MOTO_CONFIG),
        mock.patch.object(LambdaSimpleBackend, "invoke", _dispatching_invoke(handlers)),
        mock.patch.object(lambda_eval_utils, "boto_client_for", cached_client),
        # moto builds a JSONPath parser (a ply grammar) for every path it evaluates: parse each once.
        mock.patch.object(json_path, "parse", functools.lru_cache(maxsize=None)(json_path.parse)),
    ):
        client = boto3.client("stepfunctions", region_name=REGION)  # made under the mock
        arn = client.create_state_machine(name="sundial-jobs", definition=definition, roleArn=ROLE_ARN)[
            "stateMachineArn"
        ]
        yield StateMachineRunner(arn=arn, client=client)
