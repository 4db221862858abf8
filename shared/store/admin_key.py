"""The deployment's admin key, read from the Secrets Manager secret the stack creates (and kept
:data:`CACHE_SECONDS`: a key changed by hand works everywhere within that)."""

from __future__ import annotations

import threading
import time
from typing import Any

import boto3
from botocore.exceptions import BotoCoreError, ClientError

from shared.domain.errors import StorageUnavailable

CACHE_SECONDS = 300


class SecretsManagerAdminKey:
    def __init__(self, secret_arn: str, client: Any | None = None) -> None:
        self.secret_arn = secret_arn
        self._client = client
        self._cached: tuple[float, str] | None = None
        self._lock = threading.Lock()

    def __call__(self) -> str | None:
        with self._lock:
            if self._cached is not None and self._cached[0] > time.monotonic():
                return self._cached[1]
        if self._client is None:
            self._client = boto3.client("secretsmanager")
        try:
            value: str = self._client.get_secret_value(SecretId=self.secret_arn)["SecretString"]
        except (ClientError, BotoCoreError) as exc:
            raise StorageUnavailable(f"the admin key could not be read: {type(exc).__name__}") from exc
        with self._lock:
            self._cached = (time.monotonic() + CACHE_SECONDS, value)
        return value
