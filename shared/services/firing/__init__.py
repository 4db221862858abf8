"""The firing pipeline's use cases: the scan (scan.py) stages occurrences, the trigger
(trigger.py) fires them: claim (claim.py) -> call (call.py) -> settle (settle.py) -> record
(record.py), alerts last (alerts.py). docs/design.md, section 2."""

from shared.services.firing.scan import Scanner, Ticker
from shared.services.firing.trigger import Batch, Trigger

__all__ = ["Batch", "Scanner", "Ticker", "Trigger"]
