"""``sundial:signingKey`` in the template (docs/tenancy.md, section 4): the default "parameter" has
no KMS key, and exactly the API and the signers may read and create the root's parameter, never
overwrite it; "kms" (the alternate stack) has the key and its grants
(tests/infrastructure/test_iam.py) and no Parameter Store permission."""

from __future__ import annotations

import json
from typing import Any

import pytest

from infra.signing import SigningKey, SigningRoot
from shared.settings.environment import env_name
from tests.infrastructure.conftest import Built, Synthesized, logical_id
from tests.infrastructure.test_iam import _grants, _Ids, _root, _statements_of_role

pytestmark = pytest.mark.infrastructure

ROOT_NAME = "/Sundial/signing-root"


def _ssm(built: Synthesized | Built, role_id: str, effect: str = "Allow") -> set[tuple[str, str]]:
    return {grant for grant in _grants(built, role_id, effect) if grant[0].startswith("ssm:")}


def _signers_and_api(built: Synthesized | Built) -> list[Any]:
    """The functions that read the root: the signers, the API and the scheduler's function URL (an
    access key's secret is derived from it)."""
    stack = built.stack
    url = [stack.scheduler_url.handler] if stack.scheduler_url is not None else []
    return [*stack.pipeline.triggers, stack.jobs.function, stack.api.handler, *url]


def test_the_default_template_has_no_kms_key(synthesized: Synthesized) -> None:
    assert isinstance(synthesized.stack.signing, SigningRoot)
    assert synthesized.resources("AWS::KMS::Key") == {}
    assert synthesized.resources("AWS::SSM::Parameter") == {}  # the functions make it: a SecureString
    for role_id in _Ids(synthesized).roles.values():
        assert not any(action.startswith("kms:") for action, _ in _grants(synthesized, role_id))


def test_the_api_and_the_signers_may_read_and_create_exactly_the_root(synthesized: Synthesized) -> None:
    ids = _Ids(synthesized)
    root = _root(synthesized)
    assert json.loads(root) == {
        "Fn::Join": [
            "",
            [
                "arn:",
                {"Ref": "AWS::Partition"},
                ":ssm:",
                {"Ref": "AWS::Region"},
                ":",
                {"Ref": "AWS::AccountId"},
                ":parameter/Sundial/signing-root",
            ],
        ]
    }
    users = {ids.role(function) for function in _signers_and_api(synthesized)}
    assert len(users) == 6  # the trigger, the high-priority one, the recovering one, the jobs', the API's, the URL's
    for role_id in ids.roles.values():
        expected = {("ssm:GetParameter", root), ("ssm:PutParameter", root)} if role_id in users else set()
        assert _ssm(synthesized, role_id) == expected, role_id
        assert _ssm(synthesized, role_id, "Deny") == ({("ssm:PutParameter", root)} if role_id in users else set())


def test_the_root_is_never_overwritten(synthesized: Synthesized) -> None:
    """The Deny of "Preventing changes to existing parameters using ssm:Overwrite" (AWS's
    Parameter Store policy conditions), on the root alone: PutParameter creates it, nothing
    replaces it."""
    ids = _Ids(synthesized)
    for function in _signers_and_api(synthesized):
        (denial,) = [s for s in _statements_of_role(synthesized, ids.role(function)) if s["Effect"] == "Deny"]
        assert denial == {
            "Action": "ssm:PutParameter",
            "Condition": {"StringEquals": {"ssm:Overwrite": ["true"]}},
            "Effect": "Deny",
            "Resource": json.loads(_root(synthesized)),
        }


def test_the_functions_are_told_the_roots_name_not_a_key(synthesized: Synthesized) -> None:
    stack = synthesized.stack
    for function in _signers_and_api(synthesized):
        resource = synthesized.resources("AWS::Lambda::Function")[
            logical_id(stack, function.function.node.default_child)
        ]
        variables = resource["Properties"]["Environment"]["Variables"]
        assert variables[env_name("signing_root_parameter")] == ROOT_NAME
        assert env_name("signing_key_arn") not in variables


def test_the_kms_mode_tells_the_functions_its_key_and_grants_no_parameter(alternate: Built) -> None:
    stack = alternate.stack
    signing = stack.signing
    assert isinstance(signing, SigningKey)
    key = {"Fn::GetAtt": [logical_id(stack, signing.key.node.default_child), "Arn"]}
    for function in _signers_and_api(alternate):
        resource = alternate.resources("AWS::Lambda::Function")[logical_id(stack, function.function.node.default_child)]
        variables = resource["Properties"]["Environment"]["Variables"]
        assert variables[env_name("signing_key_arn")] == key
        assert env_name("signing_root_parameter") not in variables
    for role_id in _Ids(alternate).roles.values():
        assert _ssm(alternate, role_id) == set()
        assert _ssm(alternate, role_id, "Deny") == set()
