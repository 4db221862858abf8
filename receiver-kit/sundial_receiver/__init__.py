"""Receive Sundial's callbacks: verify them (Standard Webhooks), parse them, drop repeats.

from sundial_receiver import Receiver, MemoryStore
receiver = Receiver("whsec_...", MemoryStore())
answer = receiver.handle(body_bytes, headers, lambda callback: ...)
# answer.status, answer.body: send them back
"""

from sundial_receiver.callback import Callback, InvalidCallback, Parent
from sundial_receiver.dedupe import DEFAULT_TTL_SECONDS, DynamoDBStore, MemoryStore, RedisStore, Store
from sundial_receiver.receiver import Answer, Receiver, process
from sundial_receiver.verify import (
    BadSignature,
    Headers,
    MissingHeader,
    TimestampTooNew,
    TimestampTooOld,
    VerificationError,
    Verifier,
    sign,
)

__all__ = [
    "DEFAULT_TTL_SECONDS",
    "Answer",
    "BadSignature",
    "Callback",
    "DynamoDBStore",
    "Headers",
    "InvalidCallback",
    "MemoryStore",
    "MissingHeader",
    "Parent",
    "Receiver",
    "RedisStore",
    "Store",
    "TimestampTooNew",
    "TimestampTooOld",
    "VerificationError",
    "Verifier",
    "process",
    "sign",
]
