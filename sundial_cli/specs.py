"""Request bodies built from a file's object and the flags (flags win). Pure: no I/O.

The bodies are sent as they are; the API validates them and names any field at fault, so this
module checks nothing the API checks."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

SCHEDULE_KINDS = ("at", "after_seconds", "cron", "every_seconds")


class SpecError(ValueError):
    """Flags that cannot make a body (the API never sees it)."""


def schedule_from(base: Any, flags: Mapping[str, Any]) -> Any:
    """A schedule from the flags (``at``, ``after_seconds``, ``cron``, ``every_seconds``, with
    ``timezone``, ``start``, ``end`` and ``after``). A kind flag replaces ``base``; ``timezone``,
    ``start``, ``end`` and ``after`` alone change ``base``'s."""
    given = {name: value for name, value in flags.items() if value is not None}
    kinds = [kind for kind in SCHEDULE_KINDS if kind in given]
    if len(kinds) > 1:
        raise SpecError("give one of --at, --after, --cron and --every")
    if kinds:
        return given
    if not given:
        return base
    if not isinstance(base, dict):
        raise SpecError("--timezone, --start and --end need a schedule (--at, --after, --cron, --every or a file's)")
    return {**base, **given}


def headers_from(pairs: Sequence[str]) -> dict[str, str]:
    headers: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise SpecError(f"--header takes NAME=VALUE, not {pair!r}")
        headers[name.strip()] = value
    return headers


def task_body(
    base: Mapping[str, Any],
    *,
    schedule: Mapping[str, Any] | None = None,
    url: str | None = None,
    method: str | None = None,
    headers: Sequence[str] = (),
    retry: Mapping[str, Any] | None = None,
    members: Mapping[str, Any] | None = None,
    state_machine: str | None = None,
    execution_input: Any = None,
) -> dict[str, Any]:
    """A task spec (or patch): ``base`` (a file's object) with the flags laid over it.

    ``schedule``: the schedule flags (:func:`schedule_from`). ``url``, ``method`` and ``headers``
    go into ``target.http`` (kept from the file, made when the file has none; ``headers`` add to
    the file's). ``state_machine`` and ``execution_input`` make a ``stepfunctions`` target (an
    ``ecs`` target, with its network and overrides, comes from a file). ``retry`` members go into
    ``retry``. ``members`` (name, payload, misfire, priority...) replace the file's; a member
    whose value is None is not given."""
    body = copy.deepcopy(dict(base))
    chosen = schedule_from(body.get("schedule"), schedule or {})
    if chosen is not None:
        body["schedule"] = chosen
    call = {"url": url, "method": method}
    extra_headers = headers_from(headers)
    if any(value is not None for value in call.values()) or extra_headers:
        if "targets" in body:
            raise SpecError("--url, --method and --header set one target; the file has targets")
        target = body.get("target")
        http = dict(target.get("http") or {}) if isinstance(target, dict) else {}
        http.update({name: value for name, value in call.items() if value is not None})
        if extra_headers:
            http["headers"] = {**(http.get("headers") or {}), **extra_headers}
        body["target"] = {"http": http}
    if state_machine is not None or execution_input is not None:
        body["target"] = _state_machine_target(body, call, extra_headers, state_machine, execution_input)
    given_retry = {name: value for name, value in (retry or {}).items() if value is not None}
    if given_retry:
        current = body.get("retry")
        body["retry"] = {**(current if isinstance(current, dict) else {}), **given_retry}
    body.update({name: value for name, value in (members or {}).items() if value is not None})
    return body


def _state_machine_target(
    body: Mapping[str, Any],
    call: Mapping[str, Any],
    headers: Mapping[str, str],
    state_machine: str | None,
    execution_input: Any,
) -> dict[str, Any]:
    """A ``stepfunctions`` target from ``--state-machine`` (and ``--execution-input``), or the
    file's with its input replaced."""
    if any(value is not None for value in call.values()) or headers:
        raise SpecError("--state-machine and --execution-input set a stepfunctions target: not with --url")
    if "targets" in body:
        raise SpecError("--state-machine and --execution-input set one target; the file has targets")
    target = body.get("target")
    machine = dict(target.get("stepfunctions") or {}) if isinstance(target, dict) else {}
    if state_machine is not None:
        machine["state_machine_arn"] = state_machine
    if "state_machine_arn" not in machine:
        raise SpecError("--execution-input needs --state-machine (or a file's stepfunctions target)")
    if execution_input is not None:
        machine["input"] = execution_input
    return {"stepfunctions": machine}


def summary(schedule: Mapping[str, Any]) -> str:
    """A schedule in a few words, for a table."""
    if "at" in schedule:
        return f"at {schedule['at']}"
    if "after_seconds" in schedule:
        return f"after {schedule['after_seconds']:g} s"
    if "cron" in schedule:
        return f"cron {schedule['cron']} ({schedule.get('timezone', 'UTC')})"
    if "every_seconds" in schedule and schedule.get("after") == "end":
        return f"{schedule['every_seconds']:g} s after each run ends"
    if "every_seconds" in schedule:
        return f"every {schedule['every_seconds']:g} s"
    rule = schedule.get("repeat")
    if isinstance(rule, dict):
        interval = rule.get("interval", 1)
        level = str(rule.get("level", "?"))
        every = f"every {level}" if interval == 1 else f"every {interval} {level}s"
        time = f" at {rule['time']}" if rule.get("time") else ""
        calendar = f" [{rule['calendar']}]" if rule.get("calendar") else ""
        return f"{every}{time}{calendar} ({rule.get('timezone', 'UTC')})"
    return "?"
