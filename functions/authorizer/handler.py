"""The API's Lambda REQUEST authorizer (docs/tenancy.md, section 2): the bearer key in
``Authorization`` decides the caller, a tenant or the admin, and API Gateway hands that to the
API function in ``requestContext.authorizer``; the API reads the tenant from there only.

API Gateway caches an answer per ``Authorization`` value for ``AUTHORIZER_CACHE_SECONDS``
(infra/auth.py), so the policy allows every method and path of the stage: a cached answer is
used for the next request whatever it asks. No key, an unknown or a revoked one: ``Unauthorized``,
which API Gateway answers ``401`` (its gateway response carries the API's error format).
"""

from __future__ import annotations

from functools import cache
from typing import Any

from aws_lambda_powertools.utilities.data_classes.api_gateway_authorizer_event import (
    APIGatewayAuthorizerRequestEvent,
)
from aws_lambda_powertools.utilities.typing import LambdaContext

from shared.domain.progress import PROGRESS_ROLE, token_shard
from shared.domain.tenants import Principal, bearer
from shared.observability import logger
from shared.services.factory import build_authenticator
from shared.services.tenants import Authenticator
from shared.settings.environment import from_env


class Unauthorized(Exception):
    def __init__(self) -> None:
        super().__init__("Unauthorized")


@cache
def authenticator() -> Authenticator:
    return build_authenticator(from_env())


def context_of(caller: Principal) -> dict[str, str | int]:
    """What the API reads from ``requestContext.authorizer`` (values: strings and numbers only)."""
    context: dict[str, str | int] = {"role": caller.role.value}
    if caller.tenant is not None:
        context["tenant"] = caller.tenant
    if caller.limits is not None:
        context["requests_per_second"] = caller.limits.requests_per_second
        context["burst"] = caller.limits.burst
    return context


def stage_arn(method_arn: str) -> str:
    """``arn:aws:execute-api:<region>:<account>:<api>/<stage>/<method>/<path>`` -> every method
    and path of that stage."""
    api, _, rest = method_arn.partition("/")
    stage = rest.split("/", 1)[0]
    return f"{api}/{stage}/*"


def authorize(event: dict[str, Any], anonymous: str | None = None) -> dict[str, Any]:
    """The policy for a REQUEST authorizer event. ``anonymous``: the tenant of a request with no
    ``Authorization`` header (the local runtime's one difference; API Gateway never calls the
    authorizer without the header)."""
    request = APIGatewayAuthorizerRequestEvent(event)
    authorization = request.headers.get("Authorization")  # whatever the client's spelling
    token = bearer(authorization)
    if token is not None and token_shard(token) is not None:
        # A shard's progress token (docs/jobs.md, section 7): the API function checks it against
        # its job, and opens only that job's progress route to it.
        return _allow(request, PROGRESS_ROLE, {"role": PROGRESS_ROLE})
    service = authenticator()
    if authorization is None and anonymous is not None:
        caller: Principal | None = service.anonymous(anonymous)
    else:
        caller = service.caller(authorization)
    if caller is None:
        raise Unauthorized
    return _allow(request, caller.tenant or caller.role.value, context_of(caller))


def _allow(request: APIGatewayAuthorizerRequestEvent, principal: str, context: dict[str, Any]) -> dict[str, Any]:
    return {
        "principalId": principal,
        "policyDocument": {
            "Version": "2012-10-17",
            "Statement": [
                {"Action": "execute-api:Invoke", "Effect": "Allow", "Resource": stage_arn(request.method_arn)}
            ],
        },
        "context": context,
    }


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    answer = authorize(event)
    logger.info("authorized", extra={"principal": answer["principalId"]})  # never the key
    return answer
