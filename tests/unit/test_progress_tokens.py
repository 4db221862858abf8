"""A shard's progress token (shared/domain/progress.py): made with the job's own key, naming one
job and shard, refused for any other."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shared.domain.progress import (
    ShardRef,
    is_genuine,
    is_progress_path,
    new_progress_key,
    progress_token,
    token_shard,
)

pytestmark = pytest.mark.unit

JOB = "01KA0000000000000000000000"


@given(st.integers(0, 99), st.integers(0, 999))
def test_a_token_names_its_shard_and_only_its_jobs_key_makes_it(level: int, shard: int) -> None:
    key, other = new_progress_key(), new_progress_key()
    ref = ShardRef(JOB, level, shard)
    named = token_shard(progress_token(key, ref))
    assert named is not None
    read, mac = named
    assert read == ref
    assert is_genuine(key, ref, mac)
    assert not is_genuine(other, ref, mac)
    assert not is_genuine(key, ShardRef(JOB, level, shard + 1), mac)
    assert not is_genuine(key, ShardRef("01KA0000000000000000000001", level, shard), mac)


@pytest.mark.parametrize(
    "token",
    [
        "",
        "sk_live_abc",
        f"sdp_{JOB}.0.0",
        f"sdp_{JOB}.0.0.{'0' * 31}",
        f"sdp_{JOB}.x.0.{'0' * 32}",
        f"sdp_{JOB}.0.0.{'G' * 32}",
        f"sdp_{JOB}/x.0.0.{'0' * 32}",
        f"sdp_{JOB}.0.0.{'0' * 32}\n",
    ],
)
def test_what_is_not_a_progress_token_names_no_shard(token: str) -> None:
    assert token_shard(token) is None


def test_only_a_jobs_progress_route_is_the_progress_route() -> None:
    assert is_progress_path(f"/v1/jobs/{JOB}/progress")
    assert not is_progress_path(f"/v1/jobs/{JOB}")
    assert not is_progress_path(f"/v1/jobs/{JOB}/progress/x")
    assert not is_progress_path(f"/v1/tasks/{JOB}/progress")
