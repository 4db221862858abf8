"""``Sundial.grant_register`` (docs/construct.md, section 1): the registration routes' IAM twins
are ``AWS_IAM`` methods on the API function, the grant names exactly those methods, and the roles'
tenants reach the API function's environment, written when the template is."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_iam as iam
from aws_cdk.assertions import Template

from infra import names
from infra.sundial import REGISTER_ROUTES, Sundial
from shared.domain.iam_callers import IAM_REGISTER_PATHS
from shared.settings.environment import env_name
from tests.infrastructure.conftest import Synthesized, scratch_outdir

pytestmark = pytest.mark.infrastructure


@dataclass(frozen=True)
class Granted:
    stack: Stack
    sundial: Sundial
    worker: iam.Role
    reporter: iam.Role
    template: Template

    def api_function(self) -> dict[str, Any]:
        (function,) = [
            f
            for logical, f in self.template.find_resources("AWS::Lambda::Function").items()
            if names.API_FUNCTION_ID in logical and names.API_ID in logical
        ]
        return function

    def logical_id(self, role: iam.Role) -> str:
        return self.stack.get_logical_id(role.node.default_child)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def granted() -> Granted:
    """A team's stack with two roles granted: one as the default tenant, one as ``acme`` (with a
    path, which its sessions' ARNs leave out), both granted before the template is written."""
    stack = Stack(App(outdir=scratch_outdir()), "Shop")
    sundial = Sundial(stack, "Scheduler", bucket_shards=8)
    worker = iam.Role(stack, "Worker", assumed_by=iam.ServicePrincipal("ecs-tasks.amazonaws.com"))
    reporter = iam.Role(stack, "Reporter", assumed_by=iam.AccountRootPrincipal(), path="/team/")
    sundial.grant_register(worker)
    sundial.grant_register(reporter, tenant="acme")
    sundial.grant_register(reporter, tenant="acme")  # again: nothing new
    return Granted(stack, sundial, worker, reporter, Template.from_stack(stack))


def _iam_methods(template: dict[str, Any]) -> dict[str, str]:
    """Each AWS_IAM method's path (``/iam/v1/tasks``) and HTTP method."""
    resources = template["Resources"]

    def path_of(ref: Any) -> str:
        if not isinstance(ref, dict) or "Ref" not in ref:
            return ""  # the root (a GetAtt of the API)
        resource = resources[ref["Ref"]]["Properties"]
        return f"{path_of(resource['ParentId'])}/{resource['PathPart']}"

    return {
        path_of(m["Properties"]["ResourceId"]): m["Properties"]["HttpMethod"]
        for m in resources.values()
        if m["Type"] == "AWS::ApiGateway::Method" and m["Properties"]["AuthorizationType"] == "AWS_IAM"
    }


def test_the_iam_routes_are_aws_iam_methods_of_the_api_function(synthesized: Synthesized) -> None:
    template = synthesized.template.to_json()
    assert _iam_methods(template) == dict.fromkeys(IAM_REGISTER_PATHS, "POST")
    assert [path for _, path in REGISTER_ROUTES] == list(IAM_REGISTER_PATHS)
    stack = synthesized.stack
    handler = stack.get_logical_id(stack.sundial.api.handler.function.node.default_child)  # type: ignore[arg-type]
    iam_methods = [
        m["Properties"]
        for m in synthesized.resources("AWS::ApiGateway::Method").values()
        if m["Properties"]["AuthorizationType"] == "AWS_IAM"
    ]
    assert len(iam_methods) == len(IAM_REGISTER_PATHS)
    for method in iam_methods:
        assert method["Integration"]["Type"] == "AWS_PROXY"
        assert handler in str(method["Integration"]["Uri"])


def test_without_a_grant_the_api_function_maps_no_role(synthesized: Synthesized) -> None:
    functions = synthesized.resources("AWS::Lambda::Function").values()
    assert all(env_name("iam_roles") not in f["Properties"]["Environment"]["Variables"] for f in functions)


def test_the_grant_names_exactly_the_iam_methods(granted: Granted) -> None:
    for role in (granted.worker, granted.reporter):
        (policy,) = [
            p
            for p in granted.template.find_resources("AWS::IAM::Policy").values()
            if {"Ref": granted.logical_id(role)} in p["Properties"]["Roles"]
        ]
        (statement,) = policy["Properties"]["PolicyDocument"]["Statement"]
        assert statement["Action"] == "execute-api:Invoke"
        assert [arn["Fn::Join"][1][-1] for arn in statement["Resource"]] == [
            f"/{names.API_STAGE_NAME}/POST{path}" for path in IAM_REGISTER_PATHS
        ]


def test_each_role_s_tenant_reaches_the_api_function_s_environment(granted: Granted) -> None:
    value = granted.api_function()["Properties"]["Environment"]["Variables"][env_name("iam_roles")]
    assert value == {
        "Fn::Join": [
            "",
            [
                "default=",
                {"Fn::GetAtt": [granted.logical_id(granted.worker), "Arn"]},
                " acme=",
                {"Fn::GetAtt": [granted.logical_id(granted.reporter), "Arn"]},
            ],
        ]
    }


def test_a_user_a_service_a_bad_tenant_and_a_second_tenant_are_refused(granted: Granted) -> None:
    user = iam.User(granted.stack, "Someone")
    with pytest.raises(TypeError, match="grant_register takes a role"):
        granted.sundial.grant_register(user)
    with pytest.raises(TypeError, match="grant_register takes a role"):
        granted.sundial.grant_register(iam.ServicePrincipal("lambda.amazonaws.com"))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="must be 1 to 64 of a-z"):
        granted.sundial.grant_register(granted.worker, tenant="Not A Tenant")
    with pytest.raises(ValueError, match="a role registers as one tenant"):
        granted.sundial.grant_register(granted.worker, tenant="acme")
    imported = iam.Role.from_role_arn(granted.stack, "Bad", "arn:aws:iam::123456789012:user/alice")
    with pytest.raises(ValueError, match="is no IAM role ARN"):
        granted.sundial.grant_register(imported)
