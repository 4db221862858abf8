"""Chains of tasks (docs/chains.md): ``on_success`` / ``on_failure`` on a task name tasks that
run once, now, when one of its occurrences succeeds or fails for good. Pure: no I/O.

A child run is an extra run of the child task (as run now makes) whose item id is derived from
the parent's run id, the child task and the branch: every start of one hop (a duplicate
delivery of the parent, a retried recording step, two triggers racing) writes the same item,
and the store writes an item only if it does not exist, so the child runs once."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from shared.domain.errors import ValidationFailed
from shared.domain.ids import ID_LENGTH, MAX_SHARDS, new_task_id, parse_task_id, random_part
from shared.domain.states import RunStatus

MAX_CHILDREN = 5
"""Tasks one list (``on_success`` or ``on_failure``) names at most."""
MAX_HOPS = 10
"""A chained run is at most this many hops from the occurrence that began the chain; a child
one hop further is skipped (``chain stopped after 10 hops``)."""
MAX_RESPONSE_BYTES = 4096
"""The parent's answer a child receives: at most this much of its body."""


class Branch(StrEnum):
    SUCCESS = "on_success"
    FAILURE = "on_failure"


def branch_of(status: RunStatus) -> Branch | None:
    """The list an occurrence that ended so starts: ``on_success`` after a success,
    ``on_failure`` after a final failure (failed at once, or dead-lettered after its retries);
    nothing after a skip."""
    if status is RunStatus.SUCCEEDED:
        return Branch.SUCCESS
    if status in (RunStatus.FAILED, RunStatus.DEAD_LETTERED):
        return Branch.FAILURE
    return None


@dataclass(frozen=True)
class ParentRun:
    """The parent occurrence as a chained run shows it (``GET /v1/tasks/{id}/runs``)."""

    task_id: str
    run_id: str
    status: RunStatus


@dataclass(frozen=True)
class ChainLink:
    """What a chained run knows of its parent: it is in the child's callback body as ``parent``."""

    parent: ParentRun
    hop: int
    """1 for a child of an occurrence that is not itself chained."""
    response: Any = None
    """Up to :data:`MAX_RESPONSE_BYTES` of the parent's answer: JSON when it parses, else text;
    None when the target gives no answer (queues, topics, buses, an asynchronous Lambda)."""
    error: str | None = None
    """Why the parent failed (its run's last error); None after a success."""

    def body(self) -> dict[str, Any]:
        """The ``parent`` member of the child's callback body."""
        body: dict[str, Any] = {
            "task_id": self.parent.task_id,
            "run_id": self.parent.run_id,
            "status": self.parent.status.value,
            "response": self.response,
        }
        if self.error is not None:
            body["error"] = self.error
        return body

    def to_dict(self) -> dict[str, Any]:
        """As the child's item keeps it."""
        return {**self.body(), "hop": self.hop}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ChainLink:
        return cls(
            ParentRun(str(data["task_id"]), str(data["run_id"]), RunStatus(data["status"])),
            int(data["hop"]),
            data.get("response"),
            data.get("error"),
        )


@dataclass(frozen=True)
class ChainStart:
    """What starting one hop did: started ``run_id``; found it started already
    (``duplicate``); or skipped it, and why."""

    child_id: str
    run_id: str | None = None
    duplicate: bool = False
    skipped: str | None = None


def response_of(body: bytes) -> Any:
    """The parent's answer as a child receives it: the first :data:`MAX_RESPONSE_BYTES`, as JSON
    when they parse (a longer body is cut, and then is text), else as text; None when empty."""
    if not body:
        return None
    cut = body[:MAX_RESPONSE_BYTES]
    text = cut.decode("utf-8", errors="replace")
    try:
        return json.loads(text)
    except ValueError:
        return text


def chained_item_id(parent_run_id: str, child_task_id: str, branch: Branch, shards: int) -> str:
    """The id of the one-shot item a hop writes: the same for every start of the hop. Its time
    is the parent run id's (a ULID), its shard and random bits a hash of the three."""
    if not 0 < shards <= MAX_SHARDS:
        raise ValueError(f"shards must be in [1, {MAX_SHARDS}]")
    digest = hashlib.sha256(f"{parent_run_id}|{child_task_id}|{branch.value}".encode()).digest()
    shard = int.from_bytes(digest[10:14], "big") % shards
    return new_task_id(parse_task_id(parent_run_id).due_ms, shard, lambda n: digest[:n])


def check_children(member: str, ids: Sequence[str]) -> tuple[str, ...]:
    """A list as registration takes it: at most :data:`MAX_CHILDREN` task ids, none twice
    (upper-cased: ids are case-insensitive); a :class:`ValidationFailed` names ``member[i]``."""
    if len(ids) > MAX_CHILDREN:
        raise ValidationFailed.on(member, f"names {len(ids)} tasks; at most {MAX_CHILDREN}")
    seen: dict[str, int] = {}
    for index, raw in enumerate(ids):
        task_id = raw.upper()
        if len(task_id) != ID_LENGTH:
            raise ValidationFailed.on(f"{member}[{index}]", "is not a task id (26 characters)")
        try:
            random_part(task_id)  # the form of an id; one past year 9999 is well formed and names no task
        except ValueError as exc:
            raise ValidationFailed.on(f"{member}[{index}]", f"is not a task id: {exc}") from exc
        if task_id in seen:
            raise ValidationFailed.on(f"{member}[{index}]", f"names the task of {member}[{seen[task_id]}] again")
        seen[task_id] = index
    return tuple(seen)
