"""One runtime per data folder, and a restart that is never refused (docs/devserver.md).

The runtime holds an exclusive ``flock`` on the folder's ``lock`` file while it runs, and writes in
it what it is doing: ``running <pid>``, then ``stopping <pid>`` from the moment it begins to stop
(its moto then writes the last snapshot, which can take seconds with many tasks). A runtime that
starts while the folder is locked reads the file:

* ``stopping``: the one before is saving its state; this one waits for the lock (at most
  ``wait_s``), then loads what it saved. A Ctrl-C followed at once by `make run` is never refused.
* ``running``: another runtime uses the folder. It may have been sent its Ctrl-C an instant ago
  and not have written ``stopping`` yet, so this one looks again for ``grace_s`` before it refuses,
  naming the other's process.

The lock is the operating system's: a runtime killed hard releases it as it dies."""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Callable
from pathlib import Path

from local.private_files import PRIVATE_FILE

LOCK = "lock"
RUNNING, STOPPING = "running", "stopping"


class FolderInUse(RuntimeError):
    """Another runtime uses the data folder (and is not stopping)."""


class DataLock:
    def __init__(self, folder: Path) -> None:
        self.path = folder / LOCK
        self._fd: int | None = None

    def claim(self, wait_s: float, grace_s: float = 2.0, said: Callable[[str], None] = print) -> None:
        """Take the folder: at once, or once a runtime stopping on it has saved its state (at
        most ``wait_s``); refused (:class:`FolderInUse`) while another runs on it."""
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, PRIVATE_FILE)  # never truncated: the holder's words
        os.fchmod(fd, PRIVATE_FILE)
        started = time.monotonic()
        told = False
        while not self._locked(fd):
            state, holder = self._read(fd)
            waited = time.monotonic() - started
            if state != STOPPING and waited >= grace_s:
                os.close(fd)
                raise FolderInUse(f"another runtime (process {holder or '?'}) uses the data folder {self.path.parent}")
            if waited >= wait_s:
                os.close(fd)
                raise FolderInUse(
                    f"the runtime stopping on {self.path.parent} (process {holder}) did not finish in {wait_s:.0f} s"
                )
            if state == STOPPING and not told:
                said(f"waiting for the runtime stopping on {self.path.parent} (process {holder}) to save its state")
                told = True
            time.sleep(0.05)
        self._fd = fd
        self._write(RUNNING)

    def stopping(self) -> None:
        """Say this runtime is stopping: one starting on the folder meanwhile waits for it."""
        if self._fd is not None:
            self._write(STOPPING)

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # (the flock goes with it)
            self._fd = None

    @staticmethod
    def _locked(fd: int) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    @staticmethod
    def _read(fd: int) -> tuple[str, str]:
        words = os.pread(fd, 100, 0).decode(errors="replace").split()
        return (words[0], words[1]) if len(words) >= 2 else ("", "")

    def _write(self, state: str) -> None:
        assert self._fd is not None
        text = f"{state} {os.getpid()}\n".encode()
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, text, 0)
