"""moto's state kept across restarts of `make run` (docs/devserver.md): the moto process pickles
its own backends (every service's ``BackendDict`` in use: DynamoDB's tables and items, SQS's
queues and messages, KMS's keys, S3's objects, SSM's parameters, Step Functions' and Lambda's
registrations) into one file of the data folder, and loads them back before it serves.

moto has no persistence of its own (getmoto/moto#1069, #9755: pickle the backends is what its
maintainers point to), and its models are plain Python objects but for a few: the locks and
conditions of SQS's queues (made anew on load), the private keys of KMS's keys (kept as PEM) and
the ``defaultdict``s whose factory is a lambda (SSM's tags, Lambda's aliases) or whose class takes
other arguments (SSM's parameters), and Lambda's ``WeakValueDictionary`` of its functions by ARN
(each rebuilt here).

**When.** Every ``period_s`` while requests that change state came in since the last snapshot
(:data:`READS` do not count), and once more at a
clean stop (SIGTERM, which the runtime sends when it stops). A snapshot is taken by a forked
child: the fork is the instant it stands for (taken holding the DynamoDB lock of
local/moto_patches/atomic.py, so no DynamoDB request is half done in it), and the child pickles that
copy while the server goes on serving. It writes a temporary file and renames it over the last
snapshot, so a crash leaves the previous snapshot whole.

**Time.** moto keeps SQS's delays, visibility timeouts and retention as wall-clock instants
(``unix_time_millis``), KMS's deletion dates and DynamoDB's TTL attributes likewise: loaded after a
downtime they compare with the clock as they would have had the server run on, so a message
delayed or in flight past the downtime is receivable at once."""

from __future__ import annotations

import _thread
import ctypes
import gc
import importlib
import json
import os
import pickle
import signal
import sys
import threading
import time
import weakref
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from local.moto_host.journal import Journal, journaled
from local.private_files import private_file, private_folder

SNAPSHOT = "moto.pickle"
"""The snapshot's file in the data folder."""
FORMAT = 1
"""The layout of a snapshot (bumped when it changes: an older one is refused, not misread)."""

SNAPSHOT_TIMEOUT_S = 100.0
"""How long a snapshot's copy may take (0.5 s with 10,000 tasks) before it is ended (the stop's
own wait, local/runtime.py, is longer)."""

_PR_SET_PDEATHSIG = 1


class SnapshotMismatch(Exception):
    """The snapshot was written by another moto (or format): pickled models of another version
    could load half right, so it is refused."""


def _nested_tags() -> defaultdict[Any, Any]:
    return defaultdict(dict)


_LAMBDA_FACTORIES: dict[str, Callable[[], Any]] = {
    "SimpleSystemManagerBackend.__init__.<locals>.<lambda>": _nested_tags,  # defaultdict(lambda: defaultdict(dict))
    "LambdaStorage.__init__.<locals>.<lambda>": dict,  # defaultdict(lambda: {})
}
"""The factories of moto's ``defaultdict``s that are lambdas (which pickle cannot name), by the
lambda's qualified name: a function of the same result, which it can."""


def _defaultdict(kind: type[defaultdict[Any, Any]], factory: Callable[[], Any] | None) -> defaultdict[Any, Any]:
    """An empty ``defaultdict`` of ``kind`` (a subclass, as SSM's ``ParameterDict``, whose
    ``__init__`` takes other arguments, is made without calling it; its attributes follow)."""
    made = defaultdict.__new__(kind)
    defaultdict.__init__(made, factory)
    return made


def _weak_values(items: dict[Any, Any]) -> weakref.WeakValueDictionary[Any, Any]:
    """Lambda's index of its functions by ARN (the functions themselves are kept elsewhere in the
    same snapshot, so they outlive the load)."""
    return weakref.WeakValueDictionary(items)


def _private_key(pem: bytes) -> Any:
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    return load_pem_private_key(pem, password=None)


class _Pickler(pickle.Pickler):
    def reducer_override(self, obj: Any) -> Any:
        kind = type(obj)
        if kind is threading.Condition:
            return threading.Condition, ()
        if kind is _thread.RLock:
            return threading.RLock, ()
        if kind is _thread.LockType:
            return threading.Lock, ()
        if kind is weakref.WeakValueDictionary:
            return _weak_values, (dict(obj),)
        if isinstance(obj, defaultdict):
            factory = obj.default_factory
            if factory is not None and factory.__name__ == "<lambda>":
                lambda_name = factory.__qualname__
                factory = _LAMBDA_FACTORIES.get(lambda_name)
                if factory is None:
                    raise pickle.PicklingError(f"a defaultdict of {lambda_name}: no rebuild known")
            elif kind is defaultdict:
                return NotImplemented
            return _defaultdict, (kind, factory), getattr(obj, "__dict__", None) or None, None, iter(obj.items())
        if kind.__module__.startswith("cryptography.") and hasattr(obj, "private_bytes"):
            from cryptography.hazmat.primitives import serialization

            pem = obj.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )
            return _private_key, (pem,)
        return NotImplemented


_RENAMED = {"local.moto_persist": __name__}  # old-name
"""Modules a snapshot may name that have been renamed since: one written before this module moved
into local/moto_host/ names the rebuilds above by its old module name, and loads as it did."""


class _Unpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        return super().find_class(_RENAMED.get(module, module), name)


def _header() -> dict[str, Any]:
    from moto import __version__

    return {"format": FORMAT, "moto": __version__}


GENERATION = "generation"
"""The snapshot's first journal file it does not hold (local/moto_host/journal.py), kept beside its
header (a snapshot written before the journal has none: 0)."""


def _named(backends: Any) -> tuple[str, str]:
    """(module, name) of a ``BackendDict`` of moto's: where it is found again at a load (a
    service's name is not enough: Step Functions has two, its plain backend and its interpreter's)."""
    module = sys.modules[backends.backend.__module__]
    for name, value in vars(module).items():
        if value is backends:
            return module.__name__, name
    raise pickle.PicklingError(f"the backends of {backends.service_name} are not a module's attribute")


def _backends() -> dict[tuple[str, str], dict[str, dict[str, Any]]]:
    """(module, name) of a ``BackendDict`` -> account -> region -> backend, of every service
    moto has state for."""
    from moto.core.base_backend import BackendDict

    return {
        _named(backends): {account: dict(regions) for account, regions in backends.items()}
        for backends in list(BackendDict._instances)  # type: ignore[misc]
        if backends
    }


def dump(path: Path, generation: int = 0) -> None:
    """Write moto's state to ``path`` (through a temporary file renamed over it), its owner's only;
    ``generation``: the first journal file it does not hold."""
    temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        with private_file(temporary) as file:
            pickler = _Pickler(file, protocol=pickle.HIGHEST_PROTOCOL)
            pickler.dump(_header())
            pickler.dump({GENERATION: generation})
            pickler.dump(_backends())
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def load(path: Path) -> tuple[int, int]:
    """Put the state of ``path`` into moto's backends (before it serves); the services loaded, and
    the snapshot's generation (its first journal file it does not hold)."""
    from moto.dynamodb.models.dynamo_type import LimitedSizeDict

    collecting = gc.isenabled()
    gc.disable()  # a load makes millions of objects, none garbage: no collection walks them meanwhile
    # An item's attributes are a LimitedSizeDict, whose every __setitem__ sums the sizes of all the
    # item's attributes (DynamoDB's 400 KB limit): unpickled one by one, that is quadratic in an
    # item's attributes, and was 3/4 of a load. Every item in a snapshot passed the check when it
    # was written, so the load puts them as a dict does.
    checked = LimitedSizeDict.__setitem__
    LimitedSizeDict.__setitem__ = dict.__setitem__  # type: ignore[method-assign]
    try:
        with path.open("rb") as file:
            unpickler = _Unpickler(file)  # unpickled: the runtime's own file, in its own data folder
            header = unpickler.load()
            if header != _header():
                raise SnapshotMismatch(f"{path} was written by {header}, this is {_header()}")
            state = unpickler.load()
            generation = 0
            if GENERATION in state:  # (a snapshot written before the journal has its state here)
                generation = int(state[GENERATION])
                state = unpickler.load()
    finally:
        LimitedSizeDict.__setitem__ = checked  # type: ignore[method-assign]
        if collecting:
            gc.enable()
    for (module, name), accounts in state.items():
        backends = getattr(importlib.import_module(module), name)
        for account, regions in accounts.items():
            for region, backend in regions.items():
                dict.__setitem__(backends[account], region, backend)
    return len(state), generation


def _die_with_parent_at_once() -> bool:
    """Linux's parent-death signal (SIGKILL) for this process; whether it is set."""
    try:
        return bool(ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL) == 0)
    except (OSError, AttributeError):  # not Linux
        return False


def die_with_parent() -> None:
    """This process ends when the one that started it does (Linux's parent-death signal; elsewhere
    a thread watches for the parent's change): a runtime killed hard takes its moto with it, and
    no snapshot of it is written afterwards over what the next run reads."""
    parent = os.getppid()
    if _die_with_parent_at_once() and os.getppid() == parent:
        return

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.2)
        os._exit(1)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


class Snapshots:
    """Snapshots of this moto process's state into ``folder`` (see the module's docstring)."""

    def __init__(self, folder: Path, period_s: float) -> None:
        self.path = folder / SNAPSHOT
        self.period_s = period_s
        self.requests = 0
        """Requests counted as they arrive and as they end: a snapshot is due only when this moved."""
        self._saved_at_request = 0  # what was loaded is saved already
        self.fork_s = 0.0
        """How long the last snapshot's fork held the server (the DynamoDB lock held meanwhile)."""
        self._lock = threading.Lock()
        self.journal = Journal(folder)
        """The answered writes since the last snapshot (local/moto_host/journal.py)."""

    def restore(self, app: Callable[..., Any]) -> None:
        """The last snapshot loaded, and the journal's writes since replayed through ``app``
        (moto's WSGI application); a new journal file begun."""
        for stale in self.path.parent.glob(f"{SNAPSHOT}.*.tmp"):  # a snapshot cut short by a crash
            stale.unlink(missing_ok=True)
        generation = 0
        if self.path.exists():
            started = time.monotonic()
            try:
                services, generation = load(self.path)
            except Exception as exc:
                from local.settings import LocalSettings

                fresh = f"{LocalSettings.setting_name('fresh')}=1"
                print(f"moto: cannot load {self.path}: {exc!r} (start empty with {fresh})", flush=True)
                raise SystemExit(1) from exc
            took = time.monotonic() - started
            print(f"moto: {services} services' state restored from {self.path} in {took:.2f} s", flush=True)
        started = time.monotonic()
        replayed = self.journal.replay(generation, app)
        if replayed:
            self.requests += 1  # the state is ahead of the snapshot: the next one is due
            took = time.monotonic() - started
            print(f"moto: {replayed} answered writes since the snapshot replayed in {took:.2f} s", flush=True)
        files = self.journal.numbers()
        self.journal.held_by_snapshot(generation)
        self.journal.begin(max([generation, *(number + 1 for number in files)]))

    def take(self) -> bool:
        """One snapshot, now, if requests that change state came since the last; whether one was written."""
        from local.moto_patches.atomic import LOCK

        with self._lock:
            seen = self.requests
            if seen == self._saved_at_request:
                return False
            forking = time.monotonic()
            with LOCK:  # no DynamoDB request half done in the copy, no journaled one (local/moto_host/journal.py)
                generation = self.journal.number + 1
                child = os.fork()
                if child != 0:
                    self.journal.begin(generation)  # what the copy holds not, from this instant
            self.fork_s = time.monotonic() - forking
            if child == 0:  # the copy: pickle it, and end without running anything of the parent's
                status = 1
                try:
                    gc.disable()
                    _die_with_parent_at_once()
                    dump(self.path, generation)
                    status = 0
                except BaseException as exc:  # the copy reports it and ends
                    os.write(1, f"moto: a snapshot of its state failed: {exc!r}\n".encode())
                finally:
                    os._exit(status)
            status = self._wait(child)
            if status == 0:
                self._saved_at_request = seen
                self.journal.held_by_snapshot(generation)
            return status == 0

    def _wait(self, child: int) -> int:
        """The copy's exit status; one that has not finished within ``SNAPSHOT_TIMEOUT_S`` is
        killed (a fork copies every lock as it was: one held by another thread at the fork, in a
        library the pickling calls, would hold the copy for ever, and every snapshot after it)."""
        deadline = time.monotonic() + SNAPSHOT_TIMEOUT_S
        while True:
            done, status = os.waitpid(child, os.WNOHANG)
            if done:
                return status
            if time.monotonic() > deadline:
                os.kill(child, signal.SIGKILL)
                os.waitpid(child, 0)
                print(f"moto: a snapshot of its state did not finish in {SNAPSHOT_TIMEOUT_S:.0f} s: ended", flush=True)
                return -1
            time.sleep(0.005)

    def every_period(self) -> threading.Thread:
        def loop() -> None:
            while True:
                time.sleep(self.period_s)
                self.take()

        thread = threading.Thread(target=loop, name="snapshots", daemon=True)
        thread.start()
        return thread


READS = frozenset(
    {
        "DynamoDB_20120810.GetItem",
        "DynamoDB_20120810.BatchGetItem",
        "DynamoDB_20120810.Query",
        "DynamoDB_20120810.Scan",
        "DynamoDB_20120810.DescribeTable",
        "DynamoDB_20120810.DescribeTimeToLive",
        "AmazonSQS.GetQueueAttributes",
        "AmazonSQS.GetQueueUrl",
        "AmazonSQS.ListQueues",
        "AmazonSQS.ReceiveMessage",
    }
)
"""Requests that leave nothing to snapshot. A receive moves its messages' visibility, which a
snapshot need not keep: a message whose receive was lost with a crash is received again, as SQS
may deliver any message twice. The runtime's tick and pollers make these every second; counting
them made an idle `make run` snapshot every period (about a quarter of a core with 10,000
tasks) instead of after its writes."""


def reads_only(environ: dict[str, Any]) -> bool:
    """A request that changes no state (by its ``X-Amz-Target``; every other request counts)."""
    return environ.get("HTTP_X_AMZ_TARGET", "") in READS


def _sqs_now() -> float:
    """moto's SQS time (the wall's, or the virtual clock's: local/moto_patches/clock.py)."""
    import moto.sqs.models as sqs_models

    return float(sqs_models.unix_time_millis())


def persist(folder: Path, period_s: float) -> Snapshots:
    """In the moto process, before it serves: its state loaded from ``folder``, snapshots taken
    every ``period_s`` and at SIGTERM (then it exits at once), SIGINT ignored (a Ctrl-C reaches the whole
    process group: the runtime stops first, then stops moto with SIGTERM)."""
    import cryptography.hazmat.primitives.serialization  # noqa: F401 - imported now, not in a forked copy
    import moto.server
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app

    from local.moto_patches.atomic import LOCK
    from local.moto_server import SNAPSHOT_PATH

    die_with_parent()
    private_folder(folder)
    snapshots = Snapshots(folder, period_s)
    snapshots.restore(DomainDispatcherApplication(create_backend_app))
    plain = DomainDispatcherApplication.__call__
    serve = journaled(plain, snapshots.journal, LOCK, _sqs_now)

    def counted(self: Any, environ: dict[str, Any], start_response: Any) -> Any:
        if reads_only(environ):  # (a long poll among them: never under the journal's lock)
            return plain(self, environ, start_response)
        if environ.get("PATH_INFO") == SNAPSHOT_PATH and environ.get("REQUEST_METHOD") == "POST":
            saved = snapshots.take()
            start_response("200 OK", [("Content-Type", "application/json")])
            return [json.dumps({"saved": saved}).encode()]
        snapshots.requests += 1
        try:
            return serve(self, environ, start_response)
        finally:  # counted again once done: a request under way at a fork leaves a later snapshot due
            snapshots.requests += 1

    DomainDispatcherApplication.__call__ = counted  # type: ignore[method-assign]

    def on_signal(signum: int, frame: Any) -> None:
        if signum == signal.SIGTERM:
            started = time.monotonic()
            if snapshots.take():
                took = time.monotonic() - started
                fork = f"its fork {snapshots.fork_s * 1000:.0f} ms"
                print(f"moto: state saved to {snapshots.path} in {took:.2f} s ({fork})", flush=True)
            elif snapshots.path.exists():
                print(f"moto: state saved to {snapshots.path} already (nothing since)", flush=True)
            # ended here: an interpreter's shutdown waits for threads (a Lambda invocation forwarded
            # to a runtime gone, an executor's workers), and nothing is left to write
            sys.stderr.flush()
            os._exit(0)

    moto.server.signal_handler = on_signal  # moto's main installs it for SIGINT and SIGTERM
    snapshots.every_period()
    return snapshots
