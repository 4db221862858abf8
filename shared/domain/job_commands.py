"""Commands to a running job (``POST /v1/jobs/{job_id}/commands``, docs/jobs.md, section 8): a
client's message to the job's processor, kept on the job's item until a shard's next progress
report takes it, in the answer to that report. Each is delivered once, in the order sent, to
whichever shard reports first; what a processor does with it is its own (a Jarvis-style
SendCommandToJob: change a rate, skip an item, dump state)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from shared.domain.codec import compact_json
from shared.domain.errors import ValidationFailed

MAX_PENDING_COMMANDS = 20
"""Commands a job holds that no progress report has taken yet: a 21st is refused (409
``too_many_commands``) until a report takes them. A processor that reports no progress never
takes any, and a job's item stays small (each command at most about 4.2 KB, so 20 are under
DynamoDB's 400 KB item limit with room for the job's result: "Service, account, and table quotas
in Amazon DynamoDB", https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ServiceQuotas.html)."""
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

    def encoded(self) -> str:
        """How the job's item keeps it (one string of its pending list)."""
        return compact_json({"id": self.id, "command": self.command, "args": self.args, "sent_ms": self.sent_ms})

    @classmethod
    def decoded(cls, text: str) -> JobCommand:
        data = json.loads(text)
        return cls(str(data["id"]), str(data["command"]), dict(data.get("args") or {}), int(data["sent_ms"]))


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
