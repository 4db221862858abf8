"""The Sundial stack: composes the constructs, owns nothing itself but the outputs."""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, Stack
from constructs import Construct

from . import names
from .api import Api, SchedulerFunctionUrl
from .auth import ApiKeys
from .bundling import LambdaBundle
from .canary import Canary
from .job_runner import JobRunner
from .monitoring import Monitoring
from .pipeline import Pipeline
from .settings import DeploymentSettings
from .signing import signing
from .storage import Storage


class SundialStack(Stack):
    def __init__(self, scope: Construct, construct_id: str, *, settings: DeploymentSettings, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, description=names.STACK_DESCRIPTION, **kwargs)
        self.settings = settings
        self.bundle = LambdaBundle(self, names.BUNDLE_ID, settings=settings)
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
        self.scheduler_url = self._scheduler_url(settings) if settings.scheduler_function_url else None
        self.canary = self._canary(settings) if settings.canary else None
        self.monitoring = Monitoring(
            self,
            names.MONITORING_ID,
            settings=settings,
            pipeline=self.pipeline,
            api=self.api,
            jobs=self.jobs,
            canary=self.canary,
        )
        self._resource_outputs()
        self._role_outputs()
        self._optional_outputs()

    def _scheduler_url(self, settings: DeploymentSettings) -> SchedulerFunctionUrl:
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
        if self.scheduler_url is not None:  # sundial:schedulerFunctionUrl
            CfnOutput(
                self,
                names.OUTPUT_SCHEDULER_FUNCTION_URL,
                value=self.scheduler_url.url,
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
