"""Receive Sundial's callbacks: verify them (Standard Webhooks), parse them, drop repeats.

from sundial_receiver import Receiver, MemoryStore
receiver = Receiver("whsec_...", MemoryStore())
answer = receiver.handle(body_bytes, headers, lambda callback: ...)
# answer.status, answer.body: send them back

A job's processor (sundial_receiver.jobs): subclass ShardingProcessor, serve it with
JobProcessorReceiver("whsec_...", MyProcessor(), store).handle(body_bytes, headers).
"""

from sundial_receiver.callback import Callback, InvalidCallback, Parent
from sundial_receiver.dedupe import DEFAULT_TTL_SECONDS, AnswerStore, DynamoDBStore, MemoryStore, RedisStore, Store
from sundial_receiver.jobs import AnswerTooLarge, JobAnswer, JobContext, JobProcessorReceiver, ShardingProcessor
from sundial_receiver.jobs import Command as JobCommand
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
    "AnswerStore",
    "AnswerTooLarge",
    "BadSignature",
    "Callback",
    "DynamoDBStore",
    "Headers",
    "InvalidCallback",
    "JobAnswer",
    "JobCommand",
    "JobContext",
    "JobProcessorReceiver",
    "MemoryStore",
    "MissingHeader",
    "Parent",
    "Receiver",
    "RedisStore",
    "ShardingProcessor",
    "Store",
    "TimestampTooNew",
    "TimestampTooOld",
    "VerificationError",
    "Verifier",
    "process",
    "sign",
]
