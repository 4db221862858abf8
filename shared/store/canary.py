"""Which task is the canary of a stack's custom resource (shared/services/canary.py): one item per
resource, ``CANARY#<resource key>`` / ``CANARY`` (:class:`shared.store.models.CanaryResourceItem`),
read strongly consistent so a retried request sees what the first one wrote."""

from __future__ import annotations

from pynamodb.exceptions import DoesNotExist, PynamoDBException

from shared.domain.errors import StorageUnavailable
from shared.store.models import CanaryResourceItem

SK = "CANARY"


def canary_pk(key: str) -> str:
    return f"CANARY#{key}"


class DynamoCanaryResources:
    """The canary tasks of the stacks' custom resources, on the task table."""

    def task_of(self, key: str) -> str | None:
        try:
            return CanaryResourceItem.get(canary_pk(key), SK, consistent_read=True).task_id
        except DoesNotExist:
            return None
        except PynamoDBException as exc:
            raise StorageUnavailable(f"the canary's resource: {exc.msg}") from exc

    def point(self, key: str, task_id: str, now_ms: int) -> None:
        try:
            CanaryResourceItem(canary_pk(key), SK, task_id=task_id, updated_ms=now_ms).save()
        except PynamoDBException as exc:
            raise StorageUnavailable(f"the canary's resource: {exc.msg}") from exc

    def forget(self, key: str) -> None:
        try:
            CanaryResourceItem(canary_pk(key), SK).delete()
        except PynamoDBException as exc:
            raise StorageUnavailable(f"the canary's resource: {exc.msg}") from exc
