"""Builds the CDK app: the context from cdk.json, the stack, and cdk-nag on every synth.

``python app.py``, ``cdk synth`` and the tests all go through :func:`build_app`, so they
synthesize the same template: the context in cdk.json (deployment settings and feature flags)
is loaded here too, not only when the CDK CLI runs the app. Values the CLI passes
(``cdk synth -c key=value``) override it, and ``overrides`` override both.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from aws_cdk import App, Tags, Validations
from cdk_nag import AwsSolutionsChecks

from . import names
from .settings import from_context
from .stack import SundialStack

CDK_JSON = Path(__file__).resolve().parent.parent / "cdk.json"


def cdk_json_context(path: Path = CDK_JSON) -> dict[str, Any]:
    if not path.is_file():
        return {}
    context = json.loads(path.read_text()).get("context", {})
    if not isinstance(context, dict):
        raise ValueError(f'{path}: "context" must be an object')
    return context


def build_app(
    *,
    outdir: str | None = None,
    overrides: Mapping[str, Any] | None = None,
    nag: bool = True,
    cfn_validate: bool = False,
) -> App:
    """The app, ready to ``synth()``.

    ``cfn_validate`` turns on aws-cdk-lib's built-in CloudFormation schema validation. It is off
    because it checks what cfn-lint checks (``make synth`` runs cfn-lint on every template) and
    costs about 4 s of every synth, which would be most of a warm ``python app.py``.
    """
    app = App(
        outdir=outdir,
        context=cdk_json_context(),
        post_cli_context=dict(overrides or {}),
        builtin_cloud_formation_validation=cfn_validate,
    )
    settings = from_context(app.node)
    SundialStack(app, names.STACK_NAME, settings=settings)
    Tags.of(app).add(*names.PROJECT_TAG)
    if nag:
        # cdk-nag 3 is a validation plugin: findings land in <outdir>/validation-report.json,
        # errors fail the synth; acknowledgments are Validations.of(construct).acknowledge(...).
        Validations.of(app).add_plugins(AwsSolutionsChecks(app, verbose=True))
    return app
