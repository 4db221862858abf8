"""The ``Idempotency-Key`` header (docs/api.md "Idempotency keys"): a retried POST gets the first answer.

Powertools' idempotency utility with its DynamoDB persistence layer (shared/store/idempotency.py)
does the work: the first request with a key runs and its answer (status and body) is stored for
a day; a retry with the same key and body gets that answer back without running again; the same
key with another body is refused (``422 idempotency_key_reused``); a retry while the first is
still running is told so (``409 idempotency_in_progress``). A request that fails (4xx, 5xx)
stores nothing: its retry runs again. When the store fails after the work ran, the work's own
answer (or error) is returned; only a retry after the in-progress record lapses (at the
function's timeout) would run again. Keys are per tenant and per route. A stored answer is at
most a batch of views whose payloads fit the 128 KB request limit: well under DynamoDB's 400 KB.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from typing import Any

from aws_lambda_powertools.utilities.idempotency import IdempotencyConfig, idempotent_function
from aws_lambda_powertools.utilities.idempotency.exceptions import (
    IdempotencyAlreadyInProgressError,
    IdempotencyPersistenceLayerError,
    IdempotencyValidationError,
)
from aws_lambda_powertools.utilities.idempotency.persistence.datarecord import DataRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from shared.domain.errors import IdempotencyInProgress, IdempotencyKeyReused, StorageUnavailable
from shared.observability import logger
from shared.store.idempotency import persistence_layer

EXPIRES_AFTER_S = 24 * 3600
Work = Callable[[], tuple[int, Any]]


def _mark_replayed(response: Any, idempotent_data: DataRecord) -> Any:
    return {**response, "replayed": True}


class Replay:
    """Built once per cold start; the persistence layer's client is made on first use."""

    def __init__(self, table_name: str, expires_after_s: int = EXPIRES_AFTER_S) -> None:
        self.table_name = table_name
        self.expires_after_s = expires_after_s

    @cached_property
    def config(self) -> IdempotencyConfig:
        return IdempotencyConfig(
            event_key_jmespath="[tenant, route, key]",
            payload_validation_jmespath="body",
            expires_after_seconds=self.expires_after_s,
            response_hook=_mark_replayed,
        )

    def register_context(self, context: LambdaContext) -> None:
        """Per invocation: a request cut off by the function's timeout then holds its key only
        until that timeout, not for the record's whole day (its retry runs again)."""
        self.config.register_lambda_context(context)

    @cached_property
    def _once(self) -> Callable[..., dict[str, Any]]:
        config = self.config

        def answer(request: dict[str, Any], work: Work) -> dict[str, Any]:
            status, body = work()
            return {"status": status, "body": body}

        wrapped: Callable[..., dict[str, Any]] = idempotent_function(
            data_keyword_argument="request", persistence_store=persistence_layer(self.table_name), config=config
        )(answer)
        return wrapped

    def __call__(self, *, tenant: str, route: str, key: str, body: Any, work: Work) -> tuple[int, Any, bool]:
        """(status, body, whether it is the stored answer of an earlier request)."""
        request = {"tenant": tenant, "route": route, "key": key, "body": body}
        ran: list[tuple[int, Any] | Exception] = []

        def recorded() -> tuple[int, Any]:
            try:
                result = work()
            except Exception as exc:
                ran.append(exc)
                raise
            ran.append(result)
            return result

        try:
            answer = self._once(request=request, work=recorded)
        except IdempotencyValidationError as exc:
            raise IdempotencyKeyReused(
                "this Idempotency-Key came with another request body; use a new key for a new request"
            ) from exc
        except IdempotencyAlreadyInProgressError as exc:
            raise IdempotencyInProgress(
                "the first request with this Idempotency-Key is still being answered; retry shortly"
            ) from exc
        except IdempotencyPersistenceLayerError as exc:
            if not ran:
                raise StorageUnavailable(f"the idempotency store did not answer: {exc}") from exc
            # The work is done; only its record was not written (or not cleared): the client
            # gets the work's own answer, not a 503 that would make it retry what succeeded.
            logger.warning("idempotency record not written", extra={"route": route, "error": str(exc)})
            outcome = ran[0]
            if isinstance(outcome, Exception):
                raise outcome from exc
            return outcome[0], outcome[1], False
        return int(answer["status"]), answer["body"], bool(answer.get("replayed"))
