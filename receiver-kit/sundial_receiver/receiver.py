"""Verify, parse, de-duplicate and process one HTTP callback, whatever the web framework:
:meth:`Receiver.handle` takes the exact body bytes and the headers, and answers the status and
JSON body to send back."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from sundial_receiver.callback import Callback, InvalidCallback
from sundial_receiver.dedupe import DEFAULT_TTL_SECONDS, MemoryStore, Store
from sundial_receiver.verify import Headers, VerificationError, Verifier

log = logging.getLogger("sundial_receiver")

Handler = Callable[[Callback], Any]


@dataclass(frozen=True)
class Answer:
    """What to answer Sundial: 200 (processed, or a duplicate skipped), 400 (not a callback: not
    retried), 401 (not verified: not retried) or 500 (the handler failed: Sundial retries)."""

    status: int
    body: dict[str, Any]
    callback: Callback | None = field(default=None, compare=False)
    raw: bytes | None = None
    """The exact bytes to send, when they are not ``body`` as JSON (a job step's answer)."""
    headers: tuple[tuple[str, str], ...] = ()
    """Headers to send besides ``Content-Type: application/json`` (``Retry-After``)."""

    @property
    def duplicate(self) -> bool:
        return self.body.get("status") == "duplicate"

    def content(self) -> bytes:
        """The body to send: ``raw`` as it is, or ``body`` as JSON."""
        return self.raw if self.raw is not None else json.dumps(self.body).encode("utf-8")


class Receiver:
    """``Receiver(secrets, store)``: ``secrets`` is the tenant's ``whsec_`` signing secret, or
    several during a rotation (or a :class:`Verifier`); ``store`` remembers processed run ids
    (a :class:`MemoryStore` by default; a :class:`DynamoDBStore` or :class:`RedisStore` when
    several processes receive)."""

    def __init__(
        self,
        secrets: str | bytes | Iterable[str | bytes] | Verifier,
        store: Store | None = None,
        ttl: int = DEFAULT_TTL_SECONDS,
    ) -> None:
        self.verifier = secrets if isinstance(secrets, Verifier) else Verifier(secrets)
        self.store: Store = store if store is not None else MemoryStore()
        self.ttl = ttl

    def handle(self, body: bytes | str, headers: Headers, handler: Handler) -> Answer:
        """Verify ``body`` (the exact bytes received), parse it, and call ``handler`` once per run
        id: a repeat is answered 200 without calling it; a handler that raises releases the run
        id and is answered 500, so Sundial's retry runs it again."""
        try:
            self.verifier.verify(body, headers)
        except VerificationError as exc:
            return Answer(401, {"error": exc.reason, "message": str(exc)})
        try:
            callback = Callback.parse(body)
        except InvalidCallback as exc:
            return Answer(400, {"error": "invalid_callback", "message": str(exc)})
        return process(callback, self.store, handler, self.ttl)


def process(callback: Callback, store: Store, handler: Handler, ttl: int = DEFAULT_TTL_SECONDS) -> Answer:
    """Claim ``callback.run_id``, run ``handler``; on an exception release the claim (answer 500)."""
    if not store.claim(callback.run_id, ttl):
        return Answer(200, {"status": "duplicate", "run_id": callback.run_id}, callback)
    try:
        handler(callback)
    except Exception:
        log.exception("processing run %s failed: released for Sundial's retry", callback.run_id)
        store.release(callback.run_id)
        return Answer(500, {"error": "processing_failed", "run_id": callback.run_id}, callback)
    return Answer(200, {"status": "processed", "run_id": callback.run_id}, callback)
