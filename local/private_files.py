"""A data folder and its files, readable by their owner only (docs/devserver.md: the snapshot and
the journal hold secrets in clear: targets' secret headers, the signing root key, the admin key)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

PRIVATE_FOLDER, PRIVATE_FILE = 0o700, 0o600
"""A data folder and its files are its owner's alone: the snapshot holds secrets in clear (targets'
secret headers, the signing root key, the admin key)."""


def private_folder(folder: Path) -> Path:
    """``folder``, made if need be, readable by its owner only (one made before is tightened)."""
    folder.mkdir(parents=True, exist_ok=True, mode=PRIVATE_FOLDER)
    folder.chmod(PRIVATE_FOLDER)
    return folder


def private_file(path: Path, mode: str = "wb") -> Any:
    """``path`` opened for writing, created readable and writable by its owner only."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | (os.O_APPEND if "a" in mode else os.O_TRUNC), PRIVATE_FILE)
    os.fchmod(descriptor, PRIVATE_FILE)  # a file made before is tightened too
    return os.fdopen(descriptor, mode)
