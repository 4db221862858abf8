"""moto's KMS makes every key an RSA-2048 private key, a symmetric key too (moto.kms.utils:
``generate_private_key`` falls through to RSA for any spec it does not sign with), and a fresh
RSA key costs tens of milliseconds of CPU: a third of the integration tests' per-test setup,
which makes the deployment's signing key (a symmetric ENCRYPT_DECRYPT key) in a fresh account
for every test.

A symmetric key never signs or verifies (KMS refuses Sign and Verify for a key whose usage is
ENCRYPT_DECRYPT), so its private key is never read: this makes the symmetric ones share one,
made the first time it is asked for. Asymmetric keys (RSA and ECC specs) still get their own.
"""

from __future__ import annotations

import functools
from typing import Any

SYMMETRIC_SPECS = frozenset({"SYMMETRIC_DEFAULT"})

_INSTALLED = "_sundial_symmetric_keys_cheap"


def make_symmetric_keys_cheap() -> None:
    """Symmetric keys made from now on share one unused private key (idempotent)."""
    from moto.kms import models

    if getattr(models, _INSTALLED, False):
        return
    original = models.generate_private_key

    @functools.cache
    def shared(key_spec: str) -> Any:
        return original(key_spec)

    def generate_private_key(key_spec: str) -> Any:
        return shared(key_spec) if key_spec in SYMMETRIC_SPECS else original(key_spec)

    models.generate_private_key = generate_private_key
    setattr(models, _INSTALLED, True)
