"""Progress inside a shard (docs/jobs.md, section 7): the token a shard call carries, made and
checked with the job's own progress key. Pure: no I/O."""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass

TOKEN_PREFIX = "sdp_"  # noqa: S105 (a prefix, not a secret)
"""A progress token's mark: the authorizer tells it from an API key by it."""
MAC_HEX = 32
"""128 bits of HMAC-SHA256: a forged token's chance is 2**-128 a try."""
_TOKEN = re.compile(rf"^{TOKEN_PREFIX}([0-9A-Za-z]{{1,64}})\.(\d{{1,3}})\.(\d{{1,5}})\.([0-9a-f]{{{MAC_HEX}}})$")
MAX_DONE_ITEMS = 10**9
PROGRESS_ROLE = "progress"
"""What the authorizer calls the holder of a progress token: good for its job's reports only."""
_PROGRESS_PATH = re.compile(r"^/v1/jobs/[^/]+/progress$")


def is_progress_path(path: str) -> bool:
    """``/v1/jobs/<id>/progress``: the one route a progress token opens."""
    return _PROGRESS_PATH.fullmatch(path) is not None


def new_progress_key() -> str:
    """A job's own key: 32 random bytes, hex."""
    return secrets.token_hex(32)


@dataclass(frozen=True)
class ShardRef:
    job_id: str
    level: int
    shard: int

    def key(self) -> str:
        """The shard's name on the job item (as ``done`` names it)."""
        return f"{self.level}/{self.shard}"


def _mac(key: str, shard: ShardRef) -> str:
    message = f"{shard.job_id}.{shard.level}.{shard.shard}".encode()
    return hmac.new(bytes.fromhex(key), message, hashlib.sha256).hexdigest()[:MAC_HEX]


def progress_token(key: str, shard: ShardRef) -> str:
    return f"{TOKEN_PREFIX}{shard.job_id}.{shard.level}.{shard.shard}.{_mac(key, shard)}"


def token_shard(token: str) -> tuple[ShardRef, str] | None:
    """The shard a token names and its MAC, or None for what is not a progress token."""
    match = _TOKEN.fullmatch(token)  # not `$`, which a final newline would pass
    if match is None:
        return None
    job_id, level, shard, mac = match.groups()
    return ShardRef(job_id, int(level), int(shard)), mac


def is_genuine(key: str, shard: ShardRef, mac: str) -> bool:
    """The MAC was made with the job's key for that shard (compared in constant time)."""
    return hmac.compare_digest(_mac(key, shard), mac)
