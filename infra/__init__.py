"""Sundial's CDK constructs, one per concern, composed by the construct Sundial (docs/construct.md).

sundial     the Sundial construct: every part of a deployment, its settings as keyword arguments
keywords    its keyword arguments (SundialSettings), written from the settings model (release/keywords.py)
names       every id, handler path and context key
settings    deployment settings from the CDK context (cdk.json) or the construct's keyword arguments
app         builds the app: the context, the stack, cdk-nag on every synth
bundling    Lambda code and the dependency layer, built without Docker, cached in .build/
storage     the DynamoDB tables: the task table, shaped by the PynamoDB models, and the
            idempotency table
signing     where the tenants' callback signing secrets come from (sundial:signingKey: a root key
            in Parameter Store, or a KMS key) and its grants
function    the baseline of every function: own role, own log group, tracing
auth        API keys: the authorizer function, the REQUEST authorizer
api         API Gateway (API keys through the authorizer; the OpenAPI document public),
            its own errors in the API's error format, the API function, and the EventBridge
            Scheduler API's function URL (sundial:schedulerFunctionUrl)
pipeline    the firing pipeline: minute rule, tick, scanners, triggers (and the recovering one),
            and the queues of shared/topology.py
canary      a task due every minute, fired through the pipeline and timed, and its alarms
jobs        the state machine of sharded batch jobs (docs/jobs.md)
job_runner  what jobs run on: the jobs bucket, the job function and the state machine of jobs
monitoring  alarms (dead letters, lateness, errors, API 5xx) and the dashboard, each when asked for
targets     where user-registered targets may be (the trigger's and the job processors' grants)
nag         cdk-nag acknowledgments, one resource and one reason each
stack       the repository's stack: one Sundial, under the id Default (the logical IDs of before)
synth_check `make synth`: synthesizes, then fails on any cdk-nag finding or cfn-lint problem

tests/unit/test_infra_module_map.py checks that this map names every module of infra/.

The wheel sundial-scheduler-cdk ships these modules (but the repository's app, ``app`` and
``synth_check``) as the package ``sundial_cdk``: ``from sundial_cdk import Sundial``. Its names
(:data:`__all__`) are imported when first used, so ``import infra.names`` (the local runtime's)
loads no CDK.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .keywords import SundialSettings
    from .settings import DeploymentSettings, SettingsError, from_context
    from .sundial import Sundial

__all__ = ["DeploymentSettings", "SettingsError", "Sundial", "SundialSettings", "from_context"]

_HOMES = {
    "Sundial": ".sundial",
    "SundialSettings": ".keywords",
    "DeploymentSettings": ".settings",
    "SettingsError": ".settings",
    "from_context": ".settings",
}


def __getattr__(name: str) -> Any:
    """One of :data:`__all__`, imported from its module on first use (PEP 562)."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home, __name__), name)
    globals()[name] = value
    return value
