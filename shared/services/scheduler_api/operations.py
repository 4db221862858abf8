"""The EventBridge Scheduler API's operations over Sundial's tasks (docs/eventbridge.md): a
schedule is a task of the tenant, registered, changed, paused and cancelled through the task
service, and its name (in its group) is an item that points at it (the ``Schedules`` port).

:meth:`SchedulerService.call` binds the wire's members to the operation's typed request
(requests.py) and runs its use case, from the table :data:`OPERATIONS`. Errors are the
service's, by the name of their shape (:class:`~shared.domain.errors.SchedulerApiError`); the
task service's are translated (translate.py)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Generic, TypeVar

from shared.domain.errors import InvalidTransition, SchedulerApiError, SundialError, TaskNotFound, scheduler_validation
from shared.domain.patches import TaskPatch
from shared.domain.schedule_names import GroupRecord, NameRecord, NameTaken
from shared.domain.states import TaskStatus
from shared.domain.times import from_ms, to_ms, truncate_ms
from shared.services.ports.scheduler_api import Schedules
from shared.services.scheduler_api.requests import (
    DEFAULT_GROUP,
    MAX_PAGE,
    CreateSchedule,
    CreateScheduleGroup,
    GroupRef,
    ListScheduleGroups,
    ListSchedules,
    Page,
    ResourceRef,
    ScheduleRef,
    TagResource,
    UntagResource,
    UpdateSchedule,
)
from shared.services.scheduler_api.translate import Place, answered, kept, spec_of, wire_error
from shared.services.tasks import TaskService

Answer = dict[str, Any]
"""An operation's output members, as shared/api/scheduler_protocol.py writes them."""
R = TypeVar("R")

ABANDONED_MS = 60_000
"""A name taken this long ago whose task was never recorded is a creation that crashed in between
(the API function's timeout is 10 s): a new creation of the name may take it."""


class SchedulerService:
    def __init__(self, tasks: TaskService, store: Schedules, place: Place, now: Callable[[], datetime]) -> None:
        self.tasks = tasks
        self.store = store
        self.place = place
        self.now = now

    def call(self, tenant: str, operation: str, params: Mapping[str, Any]) -> Answer:
        """Run ``operation`` (a name :data:`OPERATIONS` has: shared/api/scheduler_protocol.py routes
        only the model's) for ``tenant`` on the members the protocol bound."""
        entry = OPERATIONS[operation]
        request = entry.bind(params)
        try:
            return entry.run(self, tenant, request)
        except SundialError as exc:
            raise wire_error(exc) from exc

    # --- schedules -------------------------------------------------------------------------

    def create(self, tenant: str, request: CreateSchedule) -> Answer:
        """The group must exist; the request must make a task (refused before anything is
        written); the name is taken, then the task registered (paused when ``DISABLED``), then
        the task recorded on the name. A name left by a creation that crashed in between is
        taken again; one taken with the same ``ClientToken`` and request answers as the first."""
        group, name = request.group, request.name
        self._group(tenant, group)
        now = truncate_ms(self.now())  # the schedule's start (a rate without StartDate) and its registration's
        spec = spec_of(request, now, self.place.schedule_arn(group, name), self.tasks.own)
        stored, token = kept(request), request.client_token
        record = NameRecord(group, name, "", to_ms(now), to_ms(now), stored, token)
        try:
            self.store.take_name(tenant, record)
        except NameTaken as exc:
            existing = self.store.name(tenant, group, name)
            if existing is not None and not existing.task_id and to_ms(now) - existing.created_ms > ABANDONED_MS:
                # a creation that crashed between taking the name and registering its task
                self.store.drop_name(tenant, group, name)
                return self.create(tenant, request)
            return self._created_already(request, stored, existing, exc)
        try:
            task = self.tasks.register(tenant, spec, now=now)
            if not request.enabled:
                self.tasks.pause(tenant, task.id)
        except BaseException:
            self.store.drop_name(tenant, group, name)
            raise
        self.store.put_name(tenant, replace(record, task_id=task.id))
        return {"ScheduleArn": self.place.schedule_arn(group, name)}

    def _created_already(
        self, request: CreateSchedule, stored: dict[str, Any], existing: NameRecord | None, taken: NameTaken
    ) -> Answer:
        """The answer to a creation of a name taken: the first's again when it is a retry of it
        (same ``ClientToken``, same request), else a ``ConflictException``."""
        token = request.client_token
        if existing is not None and token is not None and existing.client_token == token:
            if existing.request != json.loads(json.dumps(stored)):
                raise SchedulerApiError(
                    "ConflictException", "The ClientToken was used with a different request."
                ) from taken
            return {"ScheduleArn": self.place.schedule_arn(request.group, request.name)}
        raise SchedulerApiError("ConflictException", f"Schedule {request.name} already exists.") from taken

    def get(self, tenant: str, request: ScheduleRef) -> Answer:
        record = self._named(tenant, request.group, request.name)
        if not record.task_id:
            raise SchedulerApiError("ResourceNotFoundException", f"Schedule {request.name} does not exist.")
        view = answered(record.request)
        view.update(
            Arn=self.place.schedule_arn(request.group, request.name),
            Name=request.name,
            GroupName=request.group,
            CreationDate=from_ms(record.created_ms),
            LastModificationDate=from_ms(record.modified_ms),
        )
        return view

    def update(self, tenant: str, request: UpdateSchedule) -> Answer:
        """The whole schedule replaced: the task changed to the new request's, paused or resumed
        as its ``State`` says."""
        group, name = request.group, request.name
        record = self._named(tenant, group, name)
        now = self.now()
        spec = spec_of(request, now, self.place.schedule_arn(group, name), self.tasks.own)
        stored = kept(request)
        patch = TaskPatch(
            schedule=spec.schedule,
            targets=spec.targets,
            payload=spec.payload,
            retry=spec.retry,
            eventbridge=spec.eventbridge,
        )
        task = self.tasks.update(tenant, record.task_id, patch)
        if not request.enabled and task.status is not TaskStatus.PAUSED:
            self.tasks.pause(tenant, task.id)
        elif request.enabled and task.status is TaskStatus.PAUSED:
            self.tasks.resume(tenant, task.id)
        changed = NameRecord(group, name, record.task_id, record.created_ms, to_ms(now), stored, record.client_token)
        self.store.put_name(tenant, changed)
        return {"ScheduleArn": self.place.schedule_arn(group, name)}

    def delete(self, tenant: str, request: ScheduleRef) -> Answer:
        self._drop(tenant, self._named(tenant, request.group, request.name))
        return {}

    def list(self, tenant: str, request: ListSchedules) -> Answer:
        group, page, state = request.group, request.page, request.state
        if group is not None:
            self._group(tenant, group)
        key = f"{group}/{page.prefix}" if group is not None else ""
        records, following = _paged(self.store.names, tenant, Page(key, page.count, page.token))
        chosen = [
            r
            for r in records
            if r.task_id
            and (group is not None or r.name.startswith(page.prefix))
            and (state is None or r.request.get("State") == state)
        ]
        answer: Answer = {"Schedules": [self._summary(r) for r in chosen]}
        if following:
            answer["NextToken"] = following
        return answer

    def _summary(self, record: NameRecord) -> Answer:
        return {
            "Arn": self.place.schedule_arn(record.group, record.name),
            "Name": record.name,
            "GroupName": record.group,
            "State": record.request.get("State", "ENABLED"),
            "CreationDate": from_ms(record.created_ms),
            "LastModificationDate": from_ms(record.modified_ms),
            "Target": {"Arn": record.request["Target"]["Arn"]},
        }

    def _named(self, tenant: str, group: str, name: str) -> NameRecord:
        record = self.store.name(tenant, group, name)
        if record is None:
            raise SchedulerApiError("ResourceNotFoundException", f"Schedule {name} does not exist.")
        return record

    def _drop(self, tenant: str, record: NameRecord) -> None:
        if record.task_id:
            # a task gone, or already ended (fired its last, cancelled): the name is what is left
            with contextlib.suppress(TaskNotFound, InvalidTransition):
                self.tasks.cancel(tenant, record.task_id)
        self.store.drop_name(tenant, record.group, record.name)

    # --- groups ----------------------------------------------------------------------------

    def _group(self, tenant: str, group: str) -> GroupRecord:
        """The group (``default`` exists without a record until it is tagged)."""
        record = self.store.group(tenant, group)
        if record is None:
            if group == DEFAULT_GROUP:
                return GroupRecord(DEFAULT_GROUP, 0, 0, [])
            raise SchedulerApiError("ResourceNotFoundException", f"Schedule group {group} does not exist.")
        return record

    def create_group(self, tenant: str, request: CreateScheduleGroup) -> Answer:
        group, token = request.name, request.client_token
        if group == DEFAULT_GROUP:
            raise SchedulerApiError("ConflictException", f"Schedule group {group} already exists.")
        tags = [t.to_wire() for t in request.tags]
        try:
            self.store.create_group(tenant, group, tags, to_ms(self.now()), token)
        except NameTaken as exc:
            existing = self.store.group(tenant, group)
            if existing is not None and token is not None and existing.client_token == token:
                if existing.tags != tags:
                    raise SchedulerApiError(
                        "ConflictException", "The ClientToken was used with a different request."
                    ) from exc
                return {"ScheduleGroupArn": self.place.group_arn(group)}
            raise SchedulerApiError("ConflictException", f"Schedule group {group} already exists.") from exc
        return {"ScheduleGroupArn": self.place.group_arn(group)}

    def _group_view(self, record: GroupRecord) -> Answer:
        view: Answer = {"Arn": self.place.group_arn(record.name), "Name": record.name, "State": "ACTIVE"}
        if record.created_ms:
            view["CreationDate"] = from_ms(record.created_ms)
            view["LastModificationDate"] = from_ms(record.modified_ms)
        return view

    def get_group(self, tenant: str, request: GroupRef) -> Answer:
        return self._group_view(self._group(tenant, request.name))

    def delete_group(self, tenant: str, request: GroupRef) -> Answer:
        """The group and every schedule in it."""
        group = request.name
        if group == DEFAULT_GROUP:
            raise scheduler_validation("The default schedule group cannot be deleted.")
        self._group(tenant, group)
        token: str | None = None
        while True:
            names, token = self.store.names(tenant, f"{group}/", MAX_PAGE, token)
            for record in names:
                self._drop(tenant, record)
            if token is None:
                break
        self.store.delete_group(tenant, group)
        return {}

    def list_groups(self, tenant: str, request: ListScheduleGroups) -> Answer:
        page = request.page
        records, following = _paged(self.store.groups, tenant, page)
        if (
            page.token is None
            and DEFAULT_GROUP.startswith(page.prefix)
            and all(r.name != DEFAULT_GROUP for r in records)
        ):
            records.insert(0, GroupRecord(DEFAULT_GROUP, 0, 0, []))
        answer: Answer = {"ScheduleGroups": [self._group_view(r) for r in records]}
        if following:
            answer["NextToken"] = following
        return answer

    def tag(self, tenant: str, request: TagResource) -> Answer:
        group = self.place.group_of_arn(request.arn)
        record = self._group(tenant, group)
        tags = {t["Key"]: t["Value"] for t in record.tags}
        tags.update({t.key: t.value for t in request.tags})
        now = to_ms(self.now())
        changed = GroupRecord(
            group, record.created_ms or now, now, [{"Key": k, "Value": v} for k, v in tags.items()], record.client_token
        )
        self.store.put_group(tenant, changed)
        return {}

    def untag(self, tenant: str, request: UntagResource) -> Answer:
        group = self.place.group_of_arn(request.arn)
        record = self._group(tenant, group)
        now = to_ms(self.now())
        left = [t for t in record.tags if t["Key"] not in request.keys]
        self.store.put_group(tenant, GroupRecord(group, record.created_ms or now, now, left, record.client_token))
        return {}

    def tags(self, tenant: str, request: ResourceRef) -> Answer:
        group = self.place.group_of_arn(request.arn)
        return {"Tags": self._group(tenant, group).tags}


def _paged(read: Callable[[str, str, int, str | None], tuple[list[R], str | None]], tenant: str, page: Page) -> Any:
    """A page of the store's, a ``NextToken`` it cannot read a ``ValidationException``."""
    try:
        return read(tenant, page.prefix, page.count, page.token)
    except ValueError as exc:  # the store's token decoding (binascii.Error and UnicodeDecodeError are ValueErrors)
        raise scheduler_validation("The NextToken is not valid.") from exc


@dataclass(frozen=True)
class Operation(Generic[R]):
    """An operation: its typed request, bound from the wire's members, and its use case."""

    bind: Callable[[Mapping[str, Any]], R]
    run: Callable[[SchedulerService, str, R], Answer]


OPERATIONS: dict[str, Operation[Any]] = {
    "CreateScheduleGroup": Operation(CreateScheduleGroup.from_wire, SchedulerService.create_group),
    "GetScheduleGroup": Operation(GroupRef.from_wire, SchedulerService.get_group),
    "DeleteScheduleGroup": Operation(GroupRef.from_wire, SchedulerService.delete_group),
    "ListScheduleGroups": Operation(ListScheduleGroups.from_wire, SchedulerService.list_groups),
    "TagResource": Operation(TagResource.from_wire, SchedulerService.tag),
    "UntagResource": Operation(UntagResource.from_wire, SchedulerService.untag),
    "ListTagsForResource": Operation(ResourceRef.from_wire, SchedulerService.tags),
    "CreateSchedule": Operation(CreateSchedule.from_wire, SchedulerService.create),
    "GetSchedule": Operation(ScheduleRef.from_wire, SchedulerService.get),
    "UpdateSchedule": Operation(UpdateSchedule.from_wire, SchedulerService.update),
    "DeleteSchedule": Operation(ScheduleRef.from_wire, SchedulerService.delete),
    "ListSchedules": Operation(ListSchedules.from_wire, SchedulerService.list),
}
"""Every operation of the service's model (2021-06-30), by its name."""
