"""The Sundial construct: a whole deployment (the tables, the firing pipeline, the API, the jobs,
and the canary and the monitoring when asked for) in any stack. The repository's stack holds one
(infra/stack.py); a team's CDK app puts one into a stack of its own (docs/construct.md)::

    from sundial_cdk import Sundial

    sundial = Sundial(stack, "Scheduler", bucket_shards=32, alarms=True)

Every ``sundial:*`` setting of cdk.json is a keyword argument of the same name in snake case
(:class:`~.keywords.SundialSettings`: its type, default and documentation), validated by the same
model as the context (``shared.settings.context.DeploymentSettings``): a bad value raises
:class:`~.settings.SettingsError` naming the argument.
"""

from __future__ import annotations

import inspect
import typing
from pathlib import Path
from typing import Any, ClassVar, Unpack

from aws_cdk import CfnOutput, Stack, Tags
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sns as sns
from constructs import Construct, IConstruct

from shared.domain.iam_callers import IAM_REGISTER_PATHS

from . import names
from .api import Api, SchedulerFunctionUrl
from .auth import ApiKeys
from .bundling import LambdaBundle
from .canary import Canary
from .job_runner import JobRunner
from .keywords import SundialSettings
from .monitoring import Monitoring
from .pipeline import Pipeline
from .settings import DeploymentSettings, KeywordSettings, SettingsError
from .signing import signing
from .storage import Storage

REGISTER_ROUTES = tuple(("POST", path) for path in IAM_REGISTER_PATHS)
"""The IAM twins of the API's routes that register tasks (``POST /iam/v1/tasks`` and ``POST
/iam/v1/tasks:batch``; functions/api/routes/tasks.py, and a test holds them to it): what
:meth:`Sundial.grant_register` names."""


class Sundial(Construct):
    """A Sundial deployment: ``Sundial(scope, id, **settings)``, one per stack.

    Settings: every ``sundial:*`` key of cdk.json as a keyword argument (:class:`SundialSettings`),
    or ``settings=``, settings already validated (``sundial_cdk.settings.from_context(app.node)``
    reads an app's context), not both. Beside them:

    * ``alarm_topic``: an SNS topic of the app the alarms notify (and tell when they recover); it
      turns the alarms on, like ``alarm_topic_arn``, which it replaces (a topic's ARN in the same
      app is a token, which ``alarm_topic_arn``'s check cannot read).
    * ``build_dir``: where the dependency layer and the functions' code are built and cached
      (default: the app's ``.build/sundial/``; a checkout's ``.build/``).

    What it exposes: :attr:`api_url`, :attr:`scheduler_url`, :attr:`table`, :attr:`alarm_topic`,
    :attr:`alarms`, :meth:`grant_register`, the validated :attr:`settings`, and its parts (the
    constructs of infra/: :attr:`storage`, :attr:`pipeline`, :attr:`api`, ...). It also makes the
    stack's outputs (``ApiUrl``, ``TableName``, ...), under its own id.
    """

    __signature__: ClassVar[inspect.Signature]

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        settings: DeploymentSettings | None = None,
        alarm_topic: sns.ITopic | None = None,
        build_dir: str | Path | None = None,
        **keywords: Unpack[SundialSettings],
    ) -> None:
        settings = _settings(settings, dict(keywords), alarm_topic)
        _refuse_a_second(scope)
        super().__init__(scope, construct_id)
        self.settings = settings
        """The validated settings (``shared.settings.context.DeploymentSettings``, with CDK forms)."""
        self.bundle = LambdaBundle(
            self, names.BUNDLE_ID, settings=settings, build_dir=Path(build_dir) if build_dir is not None else None
        )
        self.storage = Storage(self, names.STORAGE_ID, settings=settings)
        self.signing = signing(self, names.SIGNING_ID, settings=settings)
        self.jobs = JobRunner(
            self, names.JOBS_ID, settings=settings, bundle=self.bundle, storage=self.storage, signing=self.signing
        )
        self.pipeline = Pipeline(
            self,
            names.PIPELINE_ID,
            settings=settings,
            bundle=self.bundle,
            storage=self.storage,
            jobs=self.jobs,
            signing=self.signing,
        )
        self.keys = ApiKeys(self, names.API_KEYS_ID, settings=settings, bundle=self.bundle, storage=self.storage)
        self.api = Api(
            self,
            names.API_ID,
            settings=settings,
            bundle=self.bundle,
            storage=self.storage,
            queues=self.pipeline.queues,
            jobs=self.jobs,
            signing=self.signing,
            keys=self.keys,
        )
        self.scheduler = self._scheduler(settings) if settings.scheduler_function_url else None
        """The EventBridge Scheduler API's function URL and its function (``scheduler_function_url``)."""
        self.canary = self._canary(settings) if settings.canary else None
        self.monitoring = self._monitoring(settings, alarm_topic)
        self._resource_outputs()
        self._role_outputs()
        self._optional_outputs()
        Tags.of(self).add(*names.PROJECT_TAG)

    @property
    def api_url(self) -> str:
        """The REST API's base URL, ``https://<id>.execute-api.<region>.amazonaws.com/prod/v1``
        (a token until deployed). Callers send a tenant's API key: ``Authorization: Bearer <key>``."""
        return self.api.url

    @property
    def scheduler_url(self) -> str | None:
        """The EventBridge Scheduler API's function URL, a ``scheduler`` client's endpoint; None
        without ``scheduler_function_url``."""
        return self.scheduler.url if self.scheduler is not None else None

    @property
    def table(self) -> dynamodb.Table:
        """The task table: tasks, runs, tenants, keys and the admin key's hash."""
        return self.storage.table

    @property
    def alarm_topic(self) -> sns.ITopic | None:
        """The SNS topic the alarms notify: ``alarm_topic``, or the one ``alarm_topic_arn`` names;
        None when there is none (the alarms, if asked for, only show in CloudWatch)."""
        return self.monitoring.topic

    @property
    def alarms(self) -> list[cloudwatch.Alarm]:
        """Every alarm (``alarms``, or a topic); empty without them."""
        return self.monitoring.alarms

    def grant_register(self, grantable: iam.IGrantable, *, tenant: str | None = None) -> iam.Grant:
        """Let an AWS role register tasks as ``tenant`` (default: the deployment's
        ``default_tenant``) with its own IAM credentials, no API key: ``execute-api:Invoke`` on the
        IAM-authorized routes ``POST /iam/v1/tasks`` and ``POST /iam/v1/tasks:batch`` (and on no
        other), to ``grantable``'s policy, and the role's tenant recorded for the API function.
        The role signs its requests with SigV4 (service ``execute-api``); API Gateway verifies the
        signature and the policy, the function maps the role's session to the tenant by account
        and role name (docs/construct.md, section 1a).

        ``grantable``: a role, or anything whose principal is a role (a Lambda function, an ECS
        task definition's task role...), of the stack's account. A user or a service principal is
        refused (``TypeError``): the function maps roles' sessions only. A role granted twice
        with two tenants is refused (``ValueError``)."""
        principal = grantable.grant_principal
        role_arn = getattr(principal, "role_arn", None)
        if not isinstance(role_arn, str):
            raise TypeError(
                f"grant_register takes a role (or a grantable whose principal is one), not {principal}: the IAM "
                "routes map a role's sessions to a tenant; an IAM user or a service uses a tenant's API key"
            )
        self.api.add_iam_caller(tenant if tenant is not None else self.settings.default_tenant, role_arn)
        stage = names.API_STAGE_NAME
        return iam.Grant.add_to_principal(
            grantee=grantable,
            actions=["execute-api:Invoke"],
            resource_arns=[
                self.api.rest_api.arn_for_execute_api(method, path, stage) for method, path in REGISTER_ROUTES
            ],
        )

    def _scheduler(self, settings: DeploymentSettings) -> SchedulerFunctionUrl:
        """The EventBridge Scheduler API's function URL (``sundial:schedulerFunctionUrl``)."""
        return SchedulerFunctionUrl(
            self,
            names.SCHEDULER_URL_ID,
            settings=settings,
            bundle=self.bundle,
            storage=self.storage,
            queues=self.pipeline.queues,
            signing=self.signing,
        )

    def _monitoring(self, settings: DeploymentSettings, alarm_topic: sns.ITopic | None) -> Monitoring:
        """The dashboard and the alarms (``dashboard``, ``alarms``), to the app's topic when given."""
        return Monitoring(
            self,
            names.MONITORING_ID,
            settings=settings,
            pipeline=self.pipeline,
            api=self.api,
            jobs=self.jobs,
            canary=self.canary,
            topic=alarm_topic,
        )

    def _canary(self, settings: DeploymentSettings) -> Canary:
        """The canary (``sundial:canary``)."""
        return Canary(
            self,
            names.CANARY_ID,
            settings=settings,
            bundle=self.bundle,
            storage=self.storage,
            queues=self.pipeline.queues,
        )

    def _resource_outputs(self) -> None:
        """The API's URL, the tables' names and the dead-letter queue's URL."""
        CfnOutput(
            self,
            names.OUTPUT_API_URL,
            value=self.api.url,
            description="Base URL of the REST API (requests carry Authorization: Bearer <API key>)",
        )
        CfnOutput(
            self,
            names.OUTPUT_TABLE_NAME,
            value=self.storage.table.table_name,
            description=(
                "The DynamoDB table holding tasks, tenants, keys and the admin key's hash "
                "(sundial admin-key create/rotate writes it)"
            ),
        )
        CfnOutput(
            self,
            names.OUTPUT_IDEMPOTENCY_TABLE_NAME,
            value=self.storage.idempotency_table.table_name,
            description="The DynamoDB table of the API's idempotency records (the Idempotency-Key header)",
        )
        CfnOutput(
            self,
            names.OUTPUT_DEAD_LETTER_QUEUE_URL,
            value=self.pipeline.queues.dead_letters.queue_url,
            description="The dead-letter queue: occurrences that will not fire without help",
        )

    def _role_outputs(self) -> None:
        """The roles that call task targets, for the key policies of encrypted targets."""
        CfnOutput(
            self,
            names.OUTPUT_TRIGGER_ROLE_ARN,
            value=self.pipeline.trigger.role.role_arn,
            description=(
                "The role that calls task targets: name it in the key policy of a target "
                "encrypted with a customer managed KMS key"
            ),
        )
        CfnOutput(
            self,
            names.OUTPUT_HIGH_PRIORITY_TRIGGER_ROLE_ARN,
            value=self.pipeline.high_priority_trigger.role.role_arn,
            description=(
                'The role that calls the targets of "priority": "high" tasks: name it next to '
                "TriggerRoleArn in such a key policy"
            ),
        )
        CfnOutput(
            self,
            names.OUTPUT_RECOVER_ROLE_ARN,
            value=self.pipeline.recover.role.role_arn,
            description=(
                "The role that fires occurrences whose messages ran out of receives (the recovering "
                "trigger): name it next to TriggerRoleArn in such a key policy"
            ),
        )

    def _optional_outputs(self) -> None:
        """The outputs of the optional parts the deployment has: the function URL, the dashboard."""
        if self.scheduler is not None:  # sundial:schedulerFunctionUrl
            CfnOutput(
                self,
                names.OUTPUT_SCHEDULER_FUNCTION_URL,
                value=self.scheduler.url,
                description=(
                    "The EventBridge Scheduler API's function URL: a scheduler client's endpoint where signed "
                    "requests through ApiUrl's /scheduler are refused (docs/eventbridge.md, section 5)"
                ),
            )
        if self.monitoring.dashboard is not None:  # sundial:dashboard
            CfnOutput(
                self,
                names.OUTPUT_DASHBOARD_NAME,
                value=self.monitoring.dashboard.dashboard_name,
                description="The CloudWatch dashboard of the firing pipeline",
            )


def _settings(
    settings: DeploymentSettings | None, keywords: dict[str, Any], alarm_topic: sns.ITopic | None
) -> DeploymentSettings:
    """The deployment's settings: ``settings``, or the keyword arguments validated (a
    :class:`SettingsError` naming each argument that is wrong); with the alarms on when the app
    gives its own topic."""
    unknown = sorted(set(keywords) - set(KeywordSettings.model_fields))
    if unknown:
        raise TypeError(
            f"Sundial() got unexpected keyword argument(s) {', '.join(unknown)} "
            f"(the settings are {', '.join(KeywordSettings.model_fields)})"
        )
    if settings is not None and keywords:
        raise TypeError("Sundial() takes the settings as keyword arguments or as settings=, not both")
    chosen: DeploymentSettings = settings if settings is not None else KeywordSettings.validated(keywords)
    if alarm_topic is not None:
        if chosen.alarm_topic_arn:
            raise SettingsError(
                f"alarm_topic and {chosen.setting_name('alarm_topic_arn')} name two topics for the alarms: give one"
            )
        chosen = chosen.model_copy(update={"alarms": True})
    return chosen


def _refuse_a_second(scope: IConstruct) -> None:
    """One Sundial per stack: the stack's name prefixes its queues', its API's, its alarms' and its
    signing parameter's names, so a second one would take the first one's."""
    stack = Stack.of(scope)
    others = [construct.node.path for construct in stack.node.find_all() if isinstance(construct, Sundial)]
    if others:
        raise ValueError(
            f"the stack {stack.node.path} has a Sundial already ({', '.join(others)}): the stack's name "
            "prefixes its resources' names, so put a second one in a stack of its own"
        )


def _signature() -> inspect.Signature:
    """``Sundial(scope, construct_id, *, settings, alarm_topic, build_dir, bucket_shards=16, ...)``,
    every setting with its default and type, for ``help()`` and ``inspect``."""
    keyword = inspect.Parameter.KEYWORD_ONLY
    annotations = typing.get_type_hints(SundialSettings)
    return inspect.Signature(
        [
            inspect.Parameter("scope", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation="Construct"),
            inspect.Parameter("construct_id", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation="str"),
            inspect.Parameter("settings", keyword, default=None, annotation="DeploymentSettings | None"),
            inspect.Parameter("alarm_topic", keyword, default=None, annotation="sns.ITopic | None"),
            inspect.Parameter("build_dir", keyword, default=None, annotation="str | Path | None"),
            *(
                inspect.Parameter(name, keyword, default=field.default, annotation=annotations[name])
                for name, field in KeywordSettings.model_fields.items()
            ),
        ]
    )


Sundial.__signature__ = _signature()
