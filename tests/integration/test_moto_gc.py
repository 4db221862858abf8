"""The moto process's garbage collection in steps (local/moto_host/gc.py): what survives a step is out
of the automatic collections' sight, and the periodic full collection still reclaims the cyclic
garbage frozen meanwhile. Run in a process of its own: freezing is process-wide."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.integration

PROGRAM = textwrap.dedent(
    """
    import gc, time, weakref
    from local.moto_host.gc import collect_in_steps

    class Node:
        pass

    def cycle():
        a, b = Node(), Node()
        a.other, b.other = b, a
        return a

    def until(condition):  # checked every 10 ms, for at most 5 s
        deadline = time.monotonic() + 5
        while not condition() and time.monotonic() < deadline:
            time.sleep(0.01)

    collect_in_steps(step_s=0.05, full_every_s=1.0)
    before = gc.get_freeze_count()
    kept = cycle()
    alive = weakref.ref(kept)
    until(lambda: gc.get_freeze_count() > before)  # a step has frozen it
    frozen = gc.get_freeze_count()
    del kept  # cyclic garbage now, but frozen
    gc.collect()
    survived_a_collection = alive() is not None
    until(lambda: alive() is None)  # the full collection, a second after the start
    print(frozen > 0, survived_a_collection, alive() is None)
    """
)


def test_survivors_are_frozen_at_each_step_and_the_full_collection_reclaims_frozen_garbage() -> None:
    answer = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True, timeout=30, check=True)
    assert answer.stdout.split() == ["True", "True", "True"]
