"""moto keeps every item, message and attribute value as Python objects (over a million with the
6,000 tasks of `make bench` at 100 fires a second), and its requests leave cyclic garbage behind
(each UpdateItem's validated expression tree, werkzeug's request classes, sockets). CPython's
full collections walk every object: the moto process stopped all its threads for 100-530 ms
about every 10 s, longer as the table grew, and a claim or a staging send caught behind one made
its fire late (the largest lateness `make bench` saw once the calls themselves were fast).

Wherever moto runs as the local runtime's server (local/moto_host/process.py) collections are done in
steps instead: every ``STEP_S`` the objects made since the last step are collected (a small
pause) and what survives is frozen (``gc.freeze``: out of every later collection's sight), so no
automatic collection walks the whole heap. What was alive at a step and becomes cyclic garbage
later stays frozen until the next full collection, every ``FULL_EVERY_S``: everything is then
unfrozen and collected once, so memory stays bounded at the price of one long pause that often."""

from __future__ import annotations

import gc
import threading
import time

STEP_S = 1.0
FULL_EVERY_S = 600.0


def collect_in_steps(step_s: float = STEP_S, full_every_s: float = FULL_EVERY_S) -> threading.Thread:
    """Start the collecting thread (a daemon: it ends with the process)."""

    def steps() -> None:
        last_full = time.monotonic()
        while True:
            time.sleep(step_s)
            if time.monotonic() - last_full >= full_every_s:
                gc.unfreeze()
                last_full = time.monotonic()
            gc.collect()
            gc.freeze()

    gc.freeze()  # no collection first: what moto imported and loaded is alive (0.25 s of a restart
    # with 10,000 tasks walked it for nothing); the first step collects what is made after it, and
    # the first full collection whatever cyclic garbage the start left
    thread = threading.Thread(target=steps, name="gc-steps", daemon=True)
    thread.start()
    return thread
