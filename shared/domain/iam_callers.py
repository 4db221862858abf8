"""Callers authorized by AWS IAM: the registration routes' IAM twins and who may call them
(docs/construct.md, section 1a: ``grant_register``).

API Gateway evaluates a SigV4-signed request's IAM policies on a method whose authorization type
is ``AWS_IAM`` and hands the function the verified caller in ``requestContext.identity``
(``userArn``, ``accountId``, ``caller``...; "Input format of a Lambda function for proxy
integration", https://docs.aws.amazon.com/apigateway/latest/developerguide/set-up-lambda-proxy-integrations.html#api-gateway-simple-proxy-for-lambda-input-format).
A role's session appears there as ``arn:aws:sts::<account>:assumed-role/<role name>/<session>``,
without the role's path ("IAM identifiers", ARNs,
https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_identifiers.html#identifiers-arns),
while the role the deployment granted is ``arn:aws:iam::<account>:role/<path/><role name>``: a
caller is matched to a granted role by account and role name.

The grants reach the API function as one setting (``iam_roles``): ``<tenant>=<role ARN>``
entries separated by spaces (neither a tenant id nor a role ARN holds a space; a role name may
hold a comma).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from shared.domain.tenants import TENANT_ID

IAM_PREFIX = "/iam"
"""Where the IAM-authorized routes live: beside ``/v1``, never under it (``/v1/{proxy+}`` is the
API keys' authorizer's)."""
REGISTER_PATHS = ("/v1/tasks", "/v1/tasks:batch")
"""The bearer routes that register tasks, whose IAM twins are :data:`IAM_REGISTER_PATHS`."""
IAM_REGISTER_PATHS = tuple(f"{IAM_PREFIX}{path}" for path in REGISTER_PATHS)
"""``POST /iam/v1/tasks`` and ``POST /iam/v1/tasks:batch``: what ``grant_register`` names."""

ROLE_ARN = re.compile(r"^arn:aws[a-z-]*:iam::(\d{12}):role/(?:[!-~]*/)?([\w+=,.@-]{1,64})$")
"""An IAM role's ARN: account, optional path, name (IAM's CreateRole: a path is ``/`` or
``/<printable ASCII>/``, a name 1 to 64 of letters, digits and ``+=,.@_-``)."""
ASSUMED_ROLE_ARN = re.compile(r"^arn:aws[a-z-]*:sts::(\d{12}):assumed-role/([\w+=,.@-]{1,64})/[\w+=,.@-]+$")
"""A role's session, as STS and API Gateway name it."""


@dataclass(frozen=True)
class RoleKey:
    """A role by what both of its ARNs hold: its account and its name."""

    account: str
    name: str


def role_key(role_arn: str) -> RoleKey:
    """The role an IAM role ARN names; ValueError for anything else."""
    found = ROLE_ARN.match(role_arn)
    if found is None:
        raise ValueError(f"{role_arn!r} is no IAM role ARN (arn:aws:iam::<account>:role/<path/><name>)")
    return RoleKey(found[1], found[2])


def caller_role(user_arn: str) -> RoleKey | None:
    """The role whose session ``user_arn`` (``requestContext.identity.userArn``) is; None for an
    IAM user, a root user or anything else."""
    found = ASSUMED_ROLE_ARN.match(user_arn)
    return RoleKey(found[1], found[2]) if found is not None else None


def grant_entry(tenant: str, role_arn: str) -> str:
    """One grant as the setting holds it (``role_arn`` may be a CDK token, checked at deploy)."""
    if not TENANT_ID.match(tenant):
        raise ValueError(f"tenant {tenant!r} must be 1 to 64 of a-z, 0-9 and '-'")
    return f"{tenant}={role_arn}"


def parse_grants(text: str) -> dict[RoleKey, str]:
    """The setting's grants: each role's tenant. ValueError for an entry that is not
    ``<tenant>=<role ARN>`` or a role given two tenants."""
    grants: dict[RoleKey, str] = {}
    for entry in text.split():
        tenant, _, arn = entry.partition("=")
        grant_entry(tenant, arn)
        key = role_key(arn)
        if grants.setdefault(key, tenant) != tenant:
            raise ValueError(f"role {key.name} of account {key.account} is granted two tenants")
    return grants
