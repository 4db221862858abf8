"""Commands to a running job (``POST /v1/jobs/{job_id}/commands``, docs/jobs.md, section 8): a
client's message to the job's processor, kept on the job's item until a report acknowledges it.
A shard's next progress report is offered it, in the answer to that report; the report after
acknowledges the ids it received and they are dropped. One not acknowledged within
:data:`COMMAND_LEASE_MS` is offered again to whichever report comes next, so an answer lost on
its way never loses a command (at least once; the receiver kit hands each id out once). What a
processor does with it is its own (a Jarvis-style SendCommandToJob: change a rate, skip an item,
dump state)."""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

from shared.domain.codec import compact_json
from shared.domain.errors import ValidationFailed

MAX_PENDING_COMMANDS = 20
"""Commands a job holds that no report has acknowledged yet, pending or offered: a 21st is refused
(409 ``too_many_commands``) until a report acknowledges some. A processor that reports no progress
(or a kit that never acknowledges) frees none, and a job's item stays small (each command at most
about 4.2 KB, so 20 are under DynamoDB's 400 KB item limit with room for the job's result:
"Service, account, and table quotas in Amazon DynamoDB", https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ServiceQuotas.html)."""
COMMAND_LEASE_MS = 60_000
"""How long an offered command waits for its acknowledgment before the next report is offered it
again: well over a report's round trip (the receiver kit gives one 5 s) and the API function's
own timeout, so an answer still on its way is not overtaken by a re-offer to another shard."""
MAX_ACKNOWLEDGED = 100
"""Ids one progress report may acknowledge (a job holds at most :data:`MAX_PENDING_COMMANDS`)."""
MAX_COMMAND_ID_LENGTH = 64
MAX_ARGS_BYTES = 4096
"""A command's ``args`` as compact JSON (UTF-8), at most."""
MAX_COMMAND_LENGTH = 64
COMMAND_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:-]*$"
"""A command's name: a letter or digit, then letters, digits, ``_ . : -``."""


class Refusal(StrEnum):
    """Why a command was not kept."""

    NO_JOB = "no_job"
    NOT_RUNNING = "not_running"
    FULL = "full"


@dataclass(frozen=True)
class JobCommand:
    id: str
    command: str
    args: dict[str, Any]
    sent_ms: int
    offered_ms: int | None = None
    """When a report's answer last carried it (None: pending, never offered yet)."""

    def encoded(self) -> str:
        """How the job's item keeps it (one string of its ``commands`` list)."""
        data: dict[str, Any] = {"id": self.id, "command": self.command, "args": self.args, "sent_ms": self.sent_ms}
        if self.offered_ms is not None:
            data["offered_ms"] = self.offered_ms
        return compact_json(data)

    @classmethod
    def decoded(cls, text: str) -> JobCommand:
        data = json.loads(text)
        offered = data.get("offered_ms")
        return cls(
            str(data["id"]),
            str(data["command"]),
            dict(data.get("args") or {}),
            int(data["sent_ms"]),
            int(offered) if offered is not None else None,
        )

    def due(self, now_ms: int, lease_ms: int = COMMAND_LEASE_MS) -> bool:
        """A report may be offered it now: never offered, or its lease is over unacknowledged."""
        return self.offered_ms is None or self.offered_ms + lease_ms <= now_ms


def offer(
    held: Sequence[JobCommand], acknowledged: Collection[str], now_ms: int, lease_ms: int = COMMAND_LEASE_MS
) -> tuple[list[JobCommand], list[JobCommand]]:
    """What a report does to a job's ``held`` commands: the list to keep (the acknowledged ones
    dropped, the due ones marked offered at ``now_ms``) and the ones offered to it, oldest first
    (as sent, without their offer time)."""
    kept: list[JobCommand] = []
    offered: list[JobCommand] = []
    for command in held:
        if command.id in acknowledged:
            continue
        if command.due(now_ms, lease_ms):
            offered.append(replace(command, offered_ms=None))
            kept.append(replace(command, offered_ms=now_ms))
        else:
            kept.append(command)
    return kept, offered


def checked_args(args: dict[str, Any]) -> dict[str, Any]:
    """``args`` if its compact JSON fits :data:`MAX_ARGS_BYTES`; else refused at ``args``."""
    size = len(compact_json(args).encode())
    if size > MAX_ARGS_BYTES:
        raise ValidationFailed.on("args", f"is {size} bytes as JSON, more than {MAX_ARGS_BYTES}")
    return args


def checked_command(command: str) -> str:
    if not 1 <= len(command) <= MAX_COMMAND_LENGTH or not re.fullmatch(COMMAND_PATTERN, command):
        raise ValidationFailed.on(
            "command",
            f"1 to {MAX_COMMAND_LENGTH} characters: a letter or digit, then letters, digits, '_', '.', ':' or '-'",
        )
    return command
