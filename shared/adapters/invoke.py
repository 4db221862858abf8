"""Lambda's asynchronous invocation (``InvocationType=Event``), as the tick invokes the scanner
and the recovering trigger, and the API the job function: Lambda puts the event on its own queue
and answers 202 ("Invoking a Lambda function asynchronously", Lambda developer guide). What Lambda
then does with a failed or throttled event is each function's ``EventInvokeConfig``
(infra/pipeline.py, infra/job_runner.py), which the local runtime models (local/functions.py).
The adapters of shared/adapters/scans.py, shared/adapters/stranded.py and
shared/adapters/job_notify.py send through it."""

from __future__ import annotations

from functools import cache
from typing import Any

import boto3
from botocore.exceptions import BotoCoreError, ClientError

from shared.domain.errors import StorageUnavailable

ACCEPTED = 202
"""Invoke's status for an event Lambda has queued."""
MAX_ASYNC_PAYLOAD_BYTES = 256 * 1024
"""An asynchronous invocation's event is at most 256 KB (Lambda quotas, "Invocation payload")."""


@cache
def lambda_client() -> Any:
    return boto3.client("lambda")


def invoke_event(client: Any, function_name: str, payload: bytes, what: str) -> None:
    """Queue ``payload`` for ``function_name``; :class:`StorageUnavailable` naming ``what`` when
    Lambda refused it or did not answer 202 (moto's server answers 200 for a function it lacks)."""
    try:
        answer = client.invoke(FunctionName=function_name, InvocationType="Event", Payload=payload)
    except (BotoCoreError, ClientError) as exc:
        raise StorageUnavailable(f"{what}: {exc}") from exc
    if answer.get("StatusCode") != ACCEPTED:
        raise StorageUnavailable(f"{what}: Invoke answered {answer.get('StatusCode')}")
