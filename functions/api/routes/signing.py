"""``/v1/signing-secrets``: the secrets the caller's callbacks are signed with (Standard
Webhooks v1, docs/tenancy.md, section 4). Values are answered once, by the rotation that makes them."""

from __future__ import annotations

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router

from functions.api.common import json_response, signing, tenant
from functions.api.openapi import RESPONSES
from shared.api.models.signing import SigningRotateIn
from shared.api.responses import NewSigningSecretOut, SigningSecretList
from shared.api.views.signing import new_signing_secret_view, signing_secret_view
from shared.domain.signing import CACHE_SECONDS

router = Router()


@router.get(
    "/v1/signing-secrets",
    responses=RESPONSES["signing_secrets"],
    summary="The secrets callbacks are signed with, without their values",
)
def list_signing_secrets() -> Response[SigningSecretList]:
    items = [signing_secret_view(info) for info in signing().list(tenant())]
    return json_response(200, SigningSecretList(items=items))


@router.post(
    "/v1/signing-secrets:rotate",
    responses=RESPONSES["rotate_signing_secret"],
    summary="A new signing secret",
    description=(
        "Makes a new signing secret and answers its value, this once. Every HTTP callback and job "
        "processor call is signed (Standard Webhooks v1: webhook-id, webhook-timestamp, "
        "webhook-signature) with the new secret and, until `previous_expires_in_seconds` have "
        "passed, with the previous ones too (one more `v1,` signature each). Signers keep a "
        f"tenant's secrets for {CACHE_SECONDS} s, so the rotation takes effect within {CACHE_SECONDS} s."
    ),
)
def rotate_signing_secret(request: SigningRotateIn) -> Response[NewSigningSecretOut]:
    # Not replayable (Idempotency-Key): a replay would need the value stored in the clear in the
    # idempotency table. A client that lost the answer rotates again.
    created = signing().rotate(tenant(), request.previous_expires_in_seconds)
    return json_response(201, new_signing_secret_view(created))
