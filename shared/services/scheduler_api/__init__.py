"""The EventBridge Scheduler API's use cases (docs/eventbridge.md), over Sundial's tasks:

* requests.py: each operation's input, typed, bound from the members the protocol checked
  (shared/api/scheduler_protocol.py);
* translate.py: a schedule's request as the task it is, as kept and as answered; Sundial's errors
  as the service's;
* operations.py: the operations (:class:`SchedulerService`), dispatched from a table of operation
  name -> (request type, use case);
* completion.py: what an occurrence's end asks of a schedule (its dead-letter queue, its name
  removed after completion), the firing pipeline's part.

The schedules' groups and names are reached through the ``Schedules`` port
(shared/services/ports/); shared/services/factory.py wires the store."""

from shared.services.scheduler_api.completion import ScheduleEnds
from shared.services.scheduler_api.operations import OPERATIONS, SchedulerService
from shared.services.scheduler_api.requests import CreateSchedule, ScheduleRequest, UpdateSchedule
from shared.services.scheduler_api.translate import Place, spec_of

__all__ = [
    "OPERATIONS",
    "CreateSchedule",
    "Place",
    "ScheduleEnds",
    "ScheduleRequest",
    "SchedulerService",
    "UpdateSchedule",
    "spec_of",
]
