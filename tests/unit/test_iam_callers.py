"""A granted role and its sessions are matched by account and role name; the ``iam_roles``
setting holds ``<tenant>=<role ARN>`` entries (shared/domain/iam_callers.py)."""

from __future__ import annotations

import pytest

from shared.domain.iam_callers import RoleKey, caller_role, grant_entry, parse_grants, role_key
from shared.settings.environment import Settings
from shared.settings.model import SettingsError

pytestmark = pytest.mark.unit


def test_a_role_arn_with_a_path_and_its_session_name_the_same_role() -> None:
    granted = role_key("arn:aws:iam::123456789012:role/team/etl/Reporter")
    assert granted == RoleKey("123456789012", "Reporter")
    assert caller_role("arn:aws:sts::123456789012:assumed-role/Reporter/nightly-job") == granted
    assert caller_role("arn:aws-us-gov:sts::123456789012:assumed-role/Reporter/s") == granted
    assert caller_role("arn:aws:sts::210987654321:assumed-role/Reporter/nightly-job") != granted


@pytest.mark.parametrize(
    "user_arn",
    [
        "arn:aws:iam::123456789012:user/alice",
        "arn:aws:iam::123456789012:root",
        "arn:aws:sts::123456789012:federated-user/bob",
        "arn:aws:iam::123456789012:role/Reporter",  # a role is never a caller: its sessions are
        "",
    ],
)
def test_only_a_role_s_session_is_a_caller_role(user_arn: str) -> None:
    assert caller_role(user_arn) is None


def test_the_setting_maps_each_role_to_its_tenant_and_refuses_what_it_cannot_read() -> None:
    text = " ".join(
        [grant_entry("default", "arn:aws:iam::123456789012:role/a,b"), "acme=arn:aws:iam::123456789012:role/x/B"]
    )
    assert parse_grants(text) == {RoleKey("123456789012", "a,b"): "default", RoleKey("123456789012", "B"): "acme"}
    assert Settings.validated({"iam_roles": text}).iam_role_tenants() == parse_grants(text)
    assert parse_grants("") == {}
    for bad in (
        "acme",
        "Acme=arn:aws:iam::123456789012:role/B",
        "acme=arn:aws:iam::123456789012:user/B",
        "acme=arn:aws:iam::123456789012:role/B other=arn:aws:iam::123456789012:role/p/B",
    ):
        with pytest.raises((ValueError, SettingsError)):
            Settings.validated({"iam_roles": bad})
