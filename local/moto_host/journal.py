"""Every answered write kept, between two snapshots (docs/devserver.md, "What an unclean stop
loses: nothing it answered").

A snapshot (local/moto_host/persist.py) is taken every few seconds, so a ``kill -9`` of `make run`
lost the writes answered since the last one: five registrations answered ``201`` and gone.
The journal closes that gap: the moto process appends each request that changed the state it
keeps to a file of the data folder *before* it answers it, and a start replays what the last
snapshot does not hold. What a crash can still lose is only a request never answered.

**What is journaled.** The requests to the services whose state Sundial keeps in moto — DynamoDB,
SQS, Parameter Store and S3 (the service a request was signed for, read from its
``Authorization`` header) — that are not reads (:data:`local.moto_host.persist.READS`) and that moto
answered below 400 (a refused write changed nothing). Not journaled:

* KMS: a replayed CreateKey would make other key material, under which nothing kept decrypts.
  The runtime makes its keys only at a data folder's first start, and then has moto take a
  snapshot at once (``POST /sundial/snapshot``: :func:`local.moto_host.persist.persist`).
* Lambda invocations and Step Functions executions: replayed, they would run a function again
  (a job started just before a crash is lost with it, as with a snapshot alone).
* The targets' SNS and EventBridge sends: what a target received is not Sundial's state.

**Order.** A journaled request is served and appended holding moto's DynamoDB lock
(local/moto_patches/atomic.py): the journal's order is the order the writes were made in, which a replay
of conditional writes needs to come out the same. A snapshot forks holding the same lock and
starts a new journal file at that instant: the files are numbered, a snapshot records the number
of the first file it does not hold (its *generation*), and a start replays, in order, every file
from that number on. Files before it are deleted once the snapshot that holds them is written; a
snapshot that failed leaves them, and the older snapshot with them, to be replayed.

**Time.** SQS times a message's delay from the moment it is sent: a replayed send is sent at the
moment it was journaled (moto's SQS clock set to it for the replay), so a delayed message becomes
receivable when it would have. A receive is not journaled (:data:`READS`): a message received
before the crash is received again after it, as SQS may deliver any message twice, and the
claim in DynamoDB keeps its occurrence to one fire.

**Durability.** Each record is one ``write`` to the file (no ``fsync``): a process killed keeps
what it wrote, which the operating system holds; a power cut may lose the last writes, as it may
lose the snapshot's. A record cut short at the end of a file (the process killed in its write)
is ignored at the replay.
"""

from __future__ import annotations

import io
import pickle
import re
import struct
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

JOURNAL = "moto.journal"
"""The journal's files in the data folder: ``moto.journal.<number>``."""

KEPT_SERVICES = frozenset({"dynamodb", "sqs", "ssm", "s3"})
"""The services (by the name a request is signed for) whose writes are journaled."""

_SIGNED_FOR = re.compile(r"Credential=[^/]+/\d{8}/[^/]+/([a-z0-9-]+)/aws4_request")
_LENGTH = struct.Struct(">I")


def signed_for(environ: dict[str, Any]) -> str | None:
    """The service a request was signed for (SigV4's credential scope), or None."""
    found = _SIGNED_FOR.search(environ.get("HTTP_AUTHORIZATION", ""))
    return found.group(1) if found else None


def _body(environ: dict[str, Any]) -> bytes:
    """The request's body, read whole and put back for the application to read."""
    stream = environ.get("wsgi.input")
    if stream is None:
        return b""
    if isinstance(stream, io.BytesIO):
        return stream.getvalue()
    length = int(environ.get("CONTENT_LENGTH") or 0)
    body = stream.read(length) if length > 0 else b""
    environ["wsgi.input"] = io.BytesIO(body)
    return body


def _kept(environ: dict[str, Any]) -> dict[str, Any]:
    """What of the environ a replay needs: its strings (method, path, query, headers) and moto's
    map of the header names it preserves."""
    from moto.core.request import PRESERVED_HEADER_NAMES_ENVIRON_KEY

    kept: dict[str, Any] = {key: value for key, value in environ.items() if isinstance(value, str)}
    preserved = environ.get(PRESERVED_HEADER_NAMES_ENVIRON_KEY)
    if preserved is not None:
        kept[PRESERVED_HEADER_NAMES_ENVIRON_KEY] = dict(preserved)
    return kept


def _environ(kept: dict[str, Any], body: bytes) -> dict[str, Any]:
    from local.moto_host.front import wsgi_keys

    return {**kept, **wsgi_keys(), "wsgi.input": io.BytesIO(body)}


class Journal:
    """The journal files of a data folder (one process appends to them at a time: the runtime's
    lock on the folder)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.number = 0
        """The file appended to now."""
        self._file: Any = None

    def path(self, number: int) -> Path:
        return self.folder / f"{JOURNAL}.{number}"

    def numbers(self) -> list[int]:
        """The files present, in order."""
        found = []
        for path in self.folder.glob(f"{JOURNAL}.*"):
            suffix = path.name.rpartition(".")[2]
            if suffix.isdigit():
                found.append(int(suffix))
        return sorted(found)

    def begin(self, number: int) -> None:
        """Append from now on to file ``number`` (a new one)."""
        from local.private_files import private_file

        if self._file is not None:
            self._file.close()
        self.number = number
        self._file = private_file(self.path(number), "ab")

    def append(self, at_ms: float, environ: dict[str, Any], body: bytes) -> None:
        """One answered write: when (moto's SQS time), the request and its body, in one write."""
        record = pickle.dumps((at_ms, _kept(environ), body), protocol=pickle.HIGHEST_PROTOCOL)
        self._file.write(_LENGTH.pack(len(record)) + record)
        self._file.flush()

    def held_by_snapshot(self, generation: int) -> None:
        """Delete the files a written snapshot of ``generation`` holds (those numbered below it)."""
        for number in self.numbers():
            if number < generation:
                self.path(number).unlink(missing_ok=True)

    def records(self, generation: int) -> Iterator[tuple[float, dict[str, Any], bytes]]:
        """The records a snapshot of ``generation`` does not hold, in the order they were made."""
        for number in self.numbers():
            if number >= generation:
                yield from _read(self.path(number))

    def replay(self, generation: int, app: Callable[..., Any]) -> int:
        """Serve ``app`` every record a snapshot of ``generation`` does not hold, each on moto's
        SQS clock at its moment; how many."""
        import moto.sqs.models as sqs_models

        clock = sqs_models.unix_time_millis
        replayed = 0
        try:
            for at_ms, kept, body in self.records(generation):
                sqs_models.unix_time_millis = lambda dt=None, at=at_ms: at  # type: ignore[misc]
                try:
                    result = app(_environ(kept, body), lambda status, headers, exc_info=None: None)
                    for _ in result:  # answered and dropped, as the first time it was answered
                        pass
                    close = getattr(result, "close", None)
                    if close is not None:
                        close()
                except Exception as exc:  # said, and the start goes on: a dev server that cannot start keeps nothing
                    what = kept.get("HTTP_X_AMZ_TARGET", "request") if isinstance(kept, dict) else "request"
                    print(f"moto: a journaled {what} failed at its replay: {exc!r}", flush=True)
                    continue
                replayed += 1
        finally:
            sqs_models.unix_time_millis = clock
        return replayed


def _read(path: Path) -> Iterator[tuple[float, dict[str, Any], bytes]]:
    with path.open("rb") as file:
        while True:
            head = file.read(_LENGTH.size)
            if len(head) < _LENGTH.size:
                return  # the end, or a length cut short by a kill
            (length,) = _LENGTH.unpack(head)
            record = file.read(length)
            if len(record) < length:
                return  # a record cut short by a kill: never answered
            yield pickle.loads(record)  # noqa: S301 - the runtime's own file, in its own data folder


def journaled(serve: Callable[..., Any], journal: Journal, lock: Any, clock: Callable[[], float]) -> Callable[..., Any]:
    """``serve`` (moto's WSGI ``__call__``) with each write to a kept service appended to
    ``journal`` before it is answered, served and appended holding ``lock``."""

    def call(self: Any, environ: dict[str, Any], start_response: Any) -> Any:
        if signed_for(environ) not in KEPT_SERVICES:
            return serve(self, environ, start_response)
        body = _body(environ)
        statuses: list[str] = []

        def started(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            statuses.append(status)
            return start_response(status, headers, exc_info)

        with lock:
            result = serve(self, environ, started)
            if statuses and int(statuses[0].split(" ", 1)[0]) < 400:
                journal.append(clock(), environ, body)
        return result

    return call


def remove(folder: Path) -> None:
    """Delete a data folder's journal files (a fresh start)."""
    journal = Journal(folder)
    for number in journal.numbers():
        journal.path(number).unlink(missing_ok=True)
