"""The benchmark's receiver runs in a process of its own, as a user's service would: its work
(accepting connections, parsing requests) is not the scheduler's and does not compete with the
runtime's threads for one interpreter lock."""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterator
from contextlib import contextmanager
from multiprocessing.connection import Connection
from typing import Any

from local.receiver import Call, running_receiver


def _serve(conn: Connection) -> None:
    with running_receiver() as receiver:
        conn.send(receiver.url)
        while True:
            command = conn.recv()
            if isinstance(command, tuple):  # ("script", path, answers, seconds each call takes)
                _, path, answers, slow = command
                receiver.script(path, *answers)
                if slow:
                    receiver.slow[path] = slow
                conn.send(receiver.url + path)
                continue
            with receiver.lock:
                calls = list(receiver.calls)
            if command == "count":
                conn.send(len({_task_id(c) for c in calls}))
            else:  # "calls": the last command
                conn.send([Call(c.path, c.method, {}, c.body, c.at, answered=c.answered) for c in calls])
                return


def _task_id(call: Call) -> Any:
    return call.body.get("task_id") if isinstance(call.body, dict) else None


class RemoteReceiver:
    def __init__(self, url: str, conn: Connection, pid: int) -> None:
        self.url = url
        self.pid = pid
        self._conn = conn

    def script(self, path: str, *answers: int | tuple[int, dict[str, str]], slow: float = 0.0) -> str:
        """Answer calls to ``path`` with ``answers`` in turn (the last repeats), each after
        ``slow`` seconds; returns its URL."""
        self._conn.send(("script", path, answers, slow))
        url: str = self._conn.recv()
        return url

    def tasks_called(self) -> int:
        """How many distinct tasks have been called so far."""
        self._conn.send("count")
        count: int = self._conn.recv()
        return count

    def calls(self) -> list[Call]:
        """Every call received (once: the receiver stops)."""
        self._conn.send("calls")
        calls: list[Call] = self._conn.recv()
        return calls


@contextmanager
def receiver_process() -> Iterator[RemoteReceiver]:
    context = multiprocessing.get_context("spawn")
    parent, child = context.Pipe()
    process = context.Process(target=_serve, args=(child,), name="bench-receiver", daemon=True)
    process.start()
    try:
        assert process.pid is not None
        yield RemoteReceiver(parent.recv(), parent, process.pid)
    finally:
        process.join(timeout=5)
        if process.is_alive():
            process.kill()
