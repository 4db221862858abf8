"""Standard Webhooks v1 verification of Sundial's signed HTTP calls, with the standard library only.

Sundial signs every HTTP call with ``webhook-id`` (the run id), ``webhook-timestamp`` (Unix
seconds of this attempt) and ``webhook-signature``: ``v1,<base64 HMAC-SHA256(key,
"{id}.{timestamp}.{body}")>`` for each of the tenant's active secrets, space-separated (several
during a rotation). A secret is ``whsec_<base64 of the key>``.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import hmac
import time
from collections.abc import Callable, Iterable
from typing import Any, Protocol

ID_HEADER = "webhook-id"
TIMESTAMP_HEADER = "webhook-timestamp"
SIGNATURE_HEADER = "webhook-signature"
SECRET_PREFIX = "whsec_"  # noqa: S105 (the format's prefix, not a secret)
SECRET_VARIABLE = "SUNDIAL_SIGNING_SECRET"  # noqa: S105 (a variable's name, not a secret)
"""The environment variable the kit's examples read the signing secret from (several: spaces)."""
DEFAULT_TOLERANCE_SECONDS = 300


class Headers(Protocol):
    """A request's headers: a dict, or any framework's headers (Flask's, Starlette's...)."""

    def get(self, key: str, /) -> Any: ...

    def items(self) -> Iterable[tuple[str, Any]]: ...


class VerificationError(Exception):
    """A call that is not Sundial's, or not as it was sent: answer it 401. ``reason`` says why:
    ``missing_header``, ``bad_timestamp``, ``timestamp_too_old``, ``timestamp_too_new`` or
    ``bad_signature``."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class MissingHeader(VerificationError):
    def __init__(self, name: str) -> None:
        super().__init__("missing_header", f"no {name} header")
        self.header = name


class TimestampTooOld(VerificationError):
    def __init__(self, age: int, tolerance: int) -> None:
        super().__init__("timestamp_too_old", f"signed {age} s ago, more than the {tolerance} s tolerated")


class TimestampTooNew(VerificationError):
    def __init__(self, ahead: int, tolerance: int) -> None:
        super().__init__("timestamp_too_new", f"signed {ahead} s in the future, more than the {tolerance} s tolerated")


class BadSignature(VerificationError):
    def __init__(self, message: str = "no signature matches any secret") -> None:
        super().__init__("bad_signature", message)


def secret_key(secret: str | bytes) -> bytes:
    """The HMAC key of a ``whsec_<base64>`` secret (raw bytes are taken as the key itself)."""
    if isinstance(secret, bytes):
        return secret
    text = secret.removeprefix(SECRET_PREFIX)
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ValueError("a signing secret is whsec_ and base64") from exc


def sign(secret: str | bytes, message_id: str, timestamp: int, body: bytes) -> str:
    """One ``v1,<base64>`` signature (what Sundial sends; useful in tests)."""
    signed = b"%s.%d.%s" % (message_id.encode("utf-8"), timestamp, body)
    return "v1," + base64.b64encode(hmac.new(secret_key(secret), signed, hashlib.sha256).digest()).decode("ascii")


def _header(headers: Headers, name: str) -> str:
    value = headers.get(name)
    if value is None:
        lowered = name.lower()
        value = next((v for k, v in headers.items() if k.lower() == lowered), None)
    if not value:
        raise MissingHeader(name)
    return str(value)


class Verifier:
    """Verifies calls against one or several ``whsec_`` secrets (keep the previous one during a
    rotation: a call verifies when any of its signatures matches any secret)."""

    def __init__(
        self,
        secrets: str | bytes | Iterable[str | bytes],
        tolerance_seconds: int = DEFAULT_TOLERANCE_SECONDS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        listed = [secrets] if isinstance(secrets, str | bytes) else list(secrets)
        if not listed:
            raise ValueError("a verifier needs at least one secret")
        self._keys = tuple(secret_key(secret) for secret in listed)
        self.tolerance_seconds = tolerance_seconds
        self._clock = clock

    def secret_texts(self) -> tuple[str, ...]:
        """Each of its secrets as text may write it, longest first: ``whsec_<base64>``, the base64
        alone (padded or not, standard or URL-safe), the key in hex (lower and upper case), and the
        key itself when it is text. What an answer must never echo (a job processor's failure
        redacts them: :mod:`sundial_receiver.jobs`)."""
        texts: set[str] = set()
        for key in self._keys:
            for encoded in (base64.b64encode(key).decode("ascii"), base64.urlsafe_b64encode(key).decode("ascii")):
                texts |= {SECRET_PREFIX + encoded, encoded, encoded.rstrip("=")}
            texts |= {key.hex(), key.hex().upper()}
            with contextlib.suppress(UnicodeDecodeError):
                texts.add(key.decode("utf-8"))
        return tuple(sorted((text for text in texts if text), key=lambda text: (-len(text), text)))

    def verify(self, body: bytes | str, headers: Headers) -> str:
        """Raise :class:`VerificationError` unless ``body`` (the exact bytes received) was signed
        with one of the secrets within the tolerance; answer the ``webhook-id`` (the run id)."""
        raw = body.encode("utf-8") if isinstance(body, str) else bytes(body)
        message_id = _header(headers, ID_HEADER)
        stamp = _header(headers, TIMESTAMP_HEADER)
        signatures = _header(headers, SIGNATURE_HEADER)
        try:
            timestamp = int(stamp)
        except ValueError:
            raise VerificationError("bad_timestamp", f"{TIMESTAMP_HEADER} is not Unix seconds") from None
        now = int(self._clock())
        if now - timestamp > self.tolerance_seconds:
            raise TimestampTooOld(now - timestamp, self.tolerance_seconds)
        if timestamp - now > self.tolerance_seconds:
            raise TimestampTooNew(timestamp - now, self.tolerance_seconds)
        expected = [sign(key, message_id, timestamp, raw).encode("ascii") for key in self._keys]
        matched = False
        for candidate in signatures.split(" "):
            version, _, _ = candidate.partition(",")
            if version != "v1":
                continue
            for wanted in expected:  # every comparison runs: constant time, no early exit
                matched |= hmac.compare_digest(candidate.encode("utf-8", "replace"), wanted)
        if not matched:
            raise BadSignature()
        return message_id
