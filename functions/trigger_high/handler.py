"""The high-priority trigger: the trigger's code (functions/trigger/handler.py) deployed a second
time, on the high-priority delay queue alone, with a capacity of its own
(``sundial:highPriorityConcurrency``; docs/receivers.md, section 3). A module of its own only so
that the function's handler names it; everything it runs is the trigger's."""

from __future__ import annotations

from functions.trigger.handler import handler

__all__ = ["handler"]
