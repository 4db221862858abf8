"""One runtime per data folder, and a restart never refused (local/data_lock.py): a runtime that
starts while the one before is stopping waits for it; one that starts beside a running one is
refused, after a grace in which a Ctrl-C just sent would have shown. flock locks belong to an
open file, so two locks of one process on one folder contend as two processes' would."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from local.data_lock import DataLock, FolderInUse

pytestmark = pytest.mark.unit


def test_a_folder_in_use_is_refused_after_the_grace_naming_its_holder(tmp_path: Path) -> None:
    first = DataLock(tmp_path)
    first.claim(wait_s=10)
    with pytest.raises(FolderInUse, match=r"another runtime \(process \d+\) uses the data folder"):
        DataLock(tmp_path).claim(wait_s=10, grace_s=0.2)
    first.release()
    DataLock(tmp_path).claim(wait_s=10, grace_s=0)  # free again


def test_a_runtime_started_while_the_one_before_stops_waits_for_it(tmp_path: Path) -> None:
    first = DataLock(tmp_path)
    first.claim(wait_s=10)
    first.stopping()
    said: list[str] = []
    second = DataLock(tmp_path)
    claimed = threading.Event()

    def start() -> None:
        second.claim(wait_s=30, grace_s=0, said=said.append)
        claimed.set()

    thread = threading.Thread(target=start)
    thread.start()
    assert not claimed.wait(0.5)  # still saving
    first.release()
    assert claimed.wait(10)
    thread.join()
    assert len(said) == 1
    assert "waiting for the runtime stopping on" in said[0]
    assert (tmp_path / "lock").read_text().split()[0] == "running"


def test_a_ctrl_c_sent_an_instant_before_is_waited_for_not_refused(tmp_path: Path) -> None:
    first = DataLock(tmp_path)
    first.claim(wait_s=10)
    later = threading.Timer(0.3, first.stopping)  # the holder reads its signal a moment later
    done = threading.Timer(0.6, first.release)
    later.start()
    done.start()
    DataLock(tmp_path).claim(wait_s=10, grace_s=2.0, said=lambda line: None)  # refused, it would raise
    assert (tmp_path / "lock").read_text().split()[0] == "running"
