"""Scheduler: the EventBridge Scheduler API behind its Lambda function URL (auth type NONE; the
stack's ``SchedulerFunctionUrl`` output, `make run`'s ``/scheduler``). Its events are the function
URL's (payload 2.0); what it does with them is functions/api/scheduler.py's, which the API function
also runs for ``/scheduler/{proxy+}`` of the REST API: the signature verified, the operation bound,
the scheduler service called. This API's operations and nothing else: the native API's routes
need API Gateway's authorizer, which a function URL does not run."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from functions.api.scheduler import from_url, serve
from shared.observability import logger, tracer


@logger.inject_lambda_context(correlation_id_path="requestContext.requestId")
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return serve(from_url(event), context)
