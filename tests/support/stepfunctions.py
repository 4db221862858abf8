"""Run a synthesized Step Functions definition in moto, with its Lambda tasks answered in-process.

How the definition's tokens are resolved, how moto's interpreter is made to call a handler and how
errors travel back (as Lambda's ``errorType``, which ``Retry``/``Catch`` match) is
local/stepfunctions.py, shared with the local runtime; this module adds the mocked account.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any
from unittest import mock

from local.stepfunctions import (
    ACCOUNT,
    FUNCTION_ARN,
    FUNCTION_NAME,
    MOTO_CONFIG,
    PSEUDO,
    REGION,
    ROLE_ARN,
    Handler,
    context_object_as_aws,
    definition_from_json,
    definition_from_stack,
    dispatching_invoke,
    interpreter_speedups,
    resolve,
)
from tests.support.eventually import until

__all__ = [
    "ACCOUNT",
    "FUNCTION_ARN",
    "FUNCTION_NAME",
    "PSEUDO",
    "REGION",
    "ROLE_ARN",
    "Finished",
    "StateMachineRunner",
    "definition_from_json",
    "definition_from_stack",
    "resolve",
    "state_machine",
]


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
        described = until(
            lambda: (now := self.client.describe_execution(executionArn=execution_arn))["status"] != "RUNNING" and now,
            timeout,
            poll=poll_s,
        )
        if not described:
            raise TimeoutError(f"execution still running after {timeout} s")
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

    handlers = {function_name: handler, FUNCTION_ARN: handler}
    with ExitStack() as patches:
        patches.enter_context(mock_aws(config=MOTO_CONFIG))
        patches.enter_context(mock.patch.object(LambdaSimpleBackend, "invoke", dispatching_invoke(handlers)))
        for patch in (*interpreter_speedups(), *context_object_as_aws()):
            patches.enter_context(patch)
        client = boto3.client("stepfunctions", region_name=REGION)  # made under the mock
        arn = client.create_state_machine(name="sundial-jobs", definition=definition, roleArn=ROLE_ARN)[
            "stateMachineArn"
        ]
        yield StateMachineRunner(arn=arn, client=client)


def sundial_definition() -> str:
    """The state machine of the Sundial stack itself, as `cdk deploy` would create it: the local
    runtime's definition (local/stepfunctions.py), which tests/infrastructure/test_jobs.py holds
    equal to the whole app's. It is synthesized once per checkout and kept in .build/ (one
    process synthesizes it while the others wait): each test module that synthesized the app for
    it spent 10 to 20 s of CPU, on every worker that ran one of its tests."""
    from local.stepfunctions import JobsDefinition

    return JobsDefinition().result()
