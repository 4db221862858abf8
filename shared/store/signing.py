"""A tenant's callback signing secrets in the task table (docs/tenancy.md, sections 1 and 4).
Implements shared.services.ports.tenants.SigningSecrets.

Items: ``T#<tenant>`` / ``S#<created ms>#<id>`` (:class:`SigningSecretItem`: the secret's id,
dates, and how its value is made) and ``T#<tenant>`` / ``S`` (:class:`SigningGuardItem`: the
current secret's id). Creating the first secret and every rotation is one transaction conditioned
on the guard: two triggers making a tenant's first secret at once make one (the loser reads the
winner's).

The values themselves are made and read back by a :class:`SecretValues`, one per mode of
``sundial:signingKey``: shared/store/signing_kms.py (the stack's KMS key encrypts them, the item
keeps the ciphertext) and shared/store/signing_parameter.py (derived from a root key in Parameter
Store, the item keeps nothing of the value). Each item records its mode (``scheme``); a deployment
reads the values of its own mode's items only. After a deployment switches modes, a tenant whose
secrets are all of the other mode gets no signed call (:meth:`DynamoSigningSecrets.active` says
why) until its secret is rotated; a rotation works whatever mode the old items are of (it reads
none of their values), and from then on the new secret signs alone: the old ones' grace cannot
be honoured, their values cannot be made in this mode. Values never reach a log: errors name the
tenant and the secret id only.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Protocol

from pynamodb.exceptions import PynamoDBException, TransactWriteError
from pynamodb.transactions import TransactWrite

from shared.domain.errors import ConcurrentUpdate, StorageUnavailable
from shared.domain.signing import NewSecret, SecretInfo, secret_text
from shared.domain.times import from_ms
from shared.store.models import SigningGuardItem, SigningSecretItem, is_conflict

EXPIRED_KEPT = timedelta(days=7)
"""A rotated-out secret's item is dropped (DynamoDB TTL) this long after it stops signing."""
GUARD_SK = "S"
SECRET_SK_PREFIX = "S#"  # noqa: S105 (a sort key prefix)
LEGACY_SCHEME = "kms"
"""The mode of an item that records none: made before the parameter mode existed, by KMS."""


class SecretValues(Protocol):
    """How a deployment's signing secrets' values are made and read back: the one thing the two
    modes of ``sundial:signingKey`` differ in. Raises :class:`StorageUnavailable` (naming the
    tenant and the secret id, never a value) when the service it needs does not answer."""

    @property
    def scheme(self) -> str:
        """The mode, recorded on every item made with it ("kms", "parameter")."""
        ...

    def made(self, tenant: str, secret_id: str) -> str | None:
        """A new secret whose value its maker does not see (a tenant's first, made by a signer at
        its first callback): what its item stores (None: nothing)."""
        ...

    def shown(self, tenant: str, secret_id: str) -> tuple[bytes, str | None]:
        """A new secret whose value is answered once (a rotation): its key bytes, and what its item
        stores (None: nothing)."""
        ...

    def key(self, tenant: str, secret_id: str, stored: str | None) -> bytes:
        """The key bytes of a secret of this mode whose item stores ``stored``."""
        ...


def tenant_pk(tenant: str) -> str:
    return f"T#{tenant}"


def secret_sk(created_ms: int, secret_id: str) -> str:
    return f"{SECRET_SK_PREFIX}{created_ms:013d}#{secret_id}"


def scheme_of(item: SigningSecretItem) -> str:
    """How the item's value is made."""
    return item.scheme or LEGACY_SCHEME


def _info(item: SigningSecretItem) -> SecretInfo:
    expires = item.expires_ms
    return SecretInfo(item.secret_id, int(item.created_ms), int(expires) if expires is not None else None)


def _secret_item(tenant: str, secret_id: str, scheme: str, stored: str | None, now_ms: int) -> SigningSecretItem:
    return SigningSecretItem(
        tenant_pk(tenant),
        secret_sk(now_ms, secret_id),
        secret_id=secret_id,
        scheme=scheme,
        ciphertext=stored,
        created_ms=now_ms,
    )


class DynamoSigningSecrets:
    def __init__(self, values: SecretValues, *, new_id: Callable[[], str] = lambda: uuid.uuid4().hex) -> None:
        self.values = values
        self._new_id = new_id

    def _items(self, tenant: str) -> list[SigningSecretItem]:
        """The tenant's secrets, newest first (strongly consistent: a rotation is seen at once)."""
        try:
            return list(
                SigningSecretItem.query(
                    tenant_pk(tenant),
                    SigningSecretItem.sk.startswith(SECRET_SK_PREFIX),
                    scan_index_forward=False,
                    consistent_read=True,
                )
            )
        except PynamoDBException as exc:
            raise StorageUnavailable(f"the task store did not answer: {exc.msg}") from exc

    def infos(self, tenant: str) -> Sequence[SecretInfo]:
        return [_info(item) for item in self._items(tenant)]

    def active(self, tenant: str, now_ms: int) -> Sequence[str]:
        """The values of the tenant's active secrets, newest first; its first one is made now
        when it has none."""
        items = [item for item in self._items(tenant) if _info(item).active(now_ms)]
        if not items:
            items = [self._first(tenant, now_ms)]
        own = [item for item in items if scheme_of(item) == self.values.scheme]
        if not own:
            # Never a secret the tenant was not given, never an unsigned call: the caller retries.
            raise StorageUnavailable(
                f"tenant {tenant}'s signing secrets were made in the {scheme_of(items[0])!r} signing key mode, "
                f"this deployment's is {self.values.scheme!r}: the tenant must rotate its signing secret "
                "(docs/tenancy.md, section 4)"
            )
        return [secret_text(self.values.key(tenant, item.secret_id, item.ciphertext)) for item in own]

    def rotate(self, tenant: str, previous_expires_in_ms: int, now_ms: int) -> NewSecret:
        """A new current secret; every other active one stops signing at ``now + previous_expires_in_ms``
        at the latest."""
        items = self._items(tenant)
        current = next((item for item in items if item.expires_ms is None), None)
        secret_id = self._new_id()
        key, stored = self.values.shown(tenant, secret_id)
        item = _secret_item(tenant, secret_id, self.values.scheme, stored, now_ms)
        until = now_ms + previous_expires_in_ms
        guard = SigningGuardItem(tenant_pk(tenant), GUARD_SK, current=secret_id)
        try:
            with TransactWrite(connection=SigningSecretItem._get_connection().connection) as transaction:
                if current is None:
                    transaction.save(guard, condition=SigningGuardItem.pk.does_not_exist())
                else:
                    transaction.save(guard, condition=SigningGuardItem.current == current.secret_id)
                transaction.save(item, condition=SigningSecretItem.pk.does_not_exist())
                for old in items:
                    expires = old.expires_ms
                    if expires is None or expires > until:
                        transaction.update(
                            old,
                            actions=[
                                SigningSecretItem.expires_ms.set(until),
                                SigningSecretItem.expires_at.set(from_ms(until) + EXPIRED_KEPT),
                            ],
                        )
        except TransactWriteError as exc:
            if is_conflict(exc):
                raise ConcurrentUpdate("the signing secrets were rotated meanwhile: try again") from exc
            raise StorageUnavailable(f"the task store did not answer: {exc.msg}") from exc
        except PynamoDBException as exc:
            raise StorageUnavailable(f"the task store did not answer: {exc.msg}") from exc
        return NewSecret(_info(item), secret_text(key))

    def _first(self, tenant: str, now_ms: int) -> SigningSecretItem:
        """Make the tenant's first secret, or read the one another writer just made."""
        secret_id = self._new_id()
        item = _secret_item(tenant, secret_id, self.values.scheme, self.values.made(tenant, secret_id), now_ms)
        try:
            with TransactWrite(connection=SigningSecretItem._get_connection().connection) as transaction:
                transaction.save(
                    SigningGuardItem(tenant_pk(tenant), GUARD_SK, current=secret_id),
                    condition=SigningGuardItem.pk.does_not_exist(),
                )
                transaction.save(item, condition=SigningSecretItem.pk.does_not_exist())
        except TransactWriteError as exc:
            if not is_conflict(exc):
                raise StorageUnavailable(f"the task store did not answer: {exc.msg}") from exc
            current = next((old for old in self._items(tenant) if old.expires_ms is None), None)
            if current is None:
                raise StorageUnavailable("the tenant's signing secret could not be read") from exc
            return current
        except PynamoDBException as exc:
            raise StorageUnavailable(f"the task store did not answer: {exc.msg}") from exc
        return item
