"""Alarms and a dashboard for the firing pipeline, each when the deployment asks for it: the alarms
with ``sundial:alarms`` or ``sundial:alarmTopicArn`` ($0.10 a month each), the dashboard with
``sundial:dashboard`` ($3 a month); neither by default (docs/deploy.md, section 11).

The trigger publishes its metrics as CloudWatch embedded metric format through Powertools
(``shared/observability.py``): namespace ``Sundial``, dimension ``service=sundial``, one
``Runs_<result>`` count per occurrence and ``LatenessMs`` per fire (functions/trigger/handler.py).

Alarms (each notifies the SNS topic of ``sundial:alarmTopicArn`` when set, and again when it
recovers):

* **dead letters**: any message in the dead-letter queue -- an occurrence whose retries ran out,
  a target that refused it for good, or a message the pipeline itself could not process;
* **job ends undelivered**: any message in the dead-letter queue of the rule that records a job
  failed when its execution ended without it (infra/job_runner.py): that job stays ``running``
  until the event is handled;
* **stranded**: delay-queue messages that ran out of receives reached the stranded queue (the
  trigger's lanes were throttled; the recovering trigger's drain, which the tick invokes, took
  them);
* **lateness**: the trigger's p99 lateness over 5 minutes above ``sundial:latenessAlarmMs``;
* **errors** of the tick, the scanners and the trigger: an invocation that failed as a whole
  (a partial batch failure is not an error; its messages come back and end in the dead letters);
* **the canary** (infra/canary.py, when ``sundial:canary``): a minute's canary over a second late,
  or three minutes without one;
* **API 5xx**: the API stage answered a 5xx -- the API function failed, or the authorizer could
  not check keys (API Gateway's ``AUTHORIZER_*`` 500s). The authorizer's own Errors metric is no
  alarm: it refuses an unknown key by failing its invocation, so it counts bad keys.
"""

from __future__ import annotations

from aws_cdk import Duration, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cloudwatch_actions
from aws_cdk import aws_sns as sns
from constructs import Construct

from shared import topology
from shared.domain.claims import Result
from shared.observability import LATENESS_METRIC, runs_metric

from . import names
from .api import Api
from .canary import Canary
from .job_runner import JobRunner
from .pipeline import Pipeline
from .settings import DeploymentSettings

METRIC_DIMENSIONS = {"service": names.POWERTOOLS_SERVICE_NAME}
"""Powertools adds the service as the one default dimension of every metric."""
FIRED_RESULTS = (Result.SUCCEEDED, Result.RETRYING, Result.DEAD_LETTERED, Result.FAILED, Result.THROTTLED)
"""The outcomes the dashboard counts per minute (``Runs_<result>``)."""
LATENESS_WINDOW = Duration.minutes(5)
ERRORS_WINDOW = Duration.minutes(5)
MINUTE = Duration.minutes(1)


def sundial_metric(name: str, *, statistic: str, period: Duration, label: str) -> cloudwatch.Metric:
    return cloudwatch.Metric(
        namespace=names.POWERTOOLS_METRICS_NAMESPACE,
        metric_name=name,
        dimensions_map=METRIC_DIMENSIONS,
        statistic=statistic,
        period=period,
        label=label,
    )


class Monitoring(Construct):
    """The alarms when the deployment has them (``sundial:alarms``, or an alarm topic), the
    dashboard when it asks for one (``sundial:dashboard``); neither by default, when the construct
    holds nothing. ``topic``, an app's own SNS topic, is notified instead of
    ``sundial:alarmTopicArn``'s (the settings must ask for the alarms then: infra/sundial.py does)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        settings: DeploymentSettings,
        pipeline: Pipeline,
        api: Api,
        jobs: JobRunner,
        canary: Canary | None = None,
        topic: sns.ITopic | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        self._prefix = Stack.of(self).stack_name
        self.alarms: list[cloudwatch.Alarm] = []
        """Every alarm of the stack, the canary's too; empty when the deployment has none."""
        if settings.alarmed:
            self.alarms = [
                *self._pipeline_alarms(settings, pipeline),
                self._job_ends_alarm(jobs),
                self._api_errors_alarm(api),
                *(canary.alarms if canary is not None else ()),
            ]
        if topic is None and settings.alarm_topic_arn:
            topic = sns.Topic.from_topic_arn(self, names.ALARM_TOPIC_ID, settings.alarm_topic_arn)
        self.topic = topic
        """The SNS topic the alarms notify: ``topic`` (an app's own), else the one
        ``sundial:alarmTopicArn`` names; None: the alarms, if any, only show in CloudWatch."""
        if topic is not None:
            action = cloudwatch_actions.SnsAction(topic)
            for alarm in self.alarms:
                alarm.add_alarm_action(action)
                alarm.add_ok_action(action)
        self.dashboard = self._dashboard(settings, pipeline) if settings.dashboard else None
        """The CloudWatch dashboard; None unless ``sundial:dashboard``."""

    def _pipeline_alarms(self, settings: DeploymentSettings, pipeline: Pipeline) -> list[cloudwatch.Alarm]:
        """Dead letters, stranded messages, lateness, and each pipeline function's errors."""
        return [
            self._dead_letters_alarm(pipeline),
            self._stranded_alarm(pipeline),
            self._lateness_alarm(settings),
            *self._function_errors_alarms(pipeline),
        ]

    def _dead_letters_alarm(self, pipeline: Pipeline) -> cloudwatch.Alarm:
        """Any message in the dead-letter queue."""
        return cloudwatch.Alarm(
            self,
            names.DLQ_DEPTH_ALARM_ID,
            alarm_name=f"{self._prefix}-dead-letters",
            alarm_description=(
                "Messages are waiting in the dead-letter queue: occurrences that will not fire "
                "without help. Each task's run history says why (GET /v1/tasks/{id}/runs)."
            ),
            metric=_dead_letter_depth(pipeline),
            threshold=0,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
            evaluation_periods=1,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )

    def _stranded_alarm(self, pipeline: Pipeline) -> cloudwatch.Alarm:
        """Any message received from the stranded queue (by the recovering trigger)."""
        stranded = pipeline.queues.by_name[topology.STRANDED.name].metric_number_of_messages_received(
            statistic=cloudwatch.Stats.SUM, period=ERRORS_WINDOW
        )
        return cloudwatch.Alarm(
            self,
            names.STRANDED_ALARM_ID,
            alarm_name=f"{self._prefix}-stranded",
            alarm_description=(
                "Delay-queue messages ran out of receives without the trigger firing them (throttled "
                "invocations, usually the account's concurrency): the recovering trigger, which the tick "
                "invokes when they wait, received them and fired them late or listed them as dead letters "
                "(docs/deploy.md, Limits AWS sets)."
            ),
            # messages SQS moves there are not counted as sent ("Amazon SQS dead-letter queues"):
            # the recovering trigger's drain receives each one within a tick or two (the tick's
            # look, GetQueueAttributes, is no receive), and those receives count them
            metric=stranded,
            threshold=0,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
            evaluation_periods=1,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )

    def _lateness_alarm(self, settings: DeploymentSettings) -> cloudwatch.Alarm:
        """The trigger's p99 lateness above ``sundial:latenessAlarmMs``."""
        lateness_p99 = sundial_metric(
            LATENESS_METRIC, statistic=cloudwatch.Stats.p(99), period=LATENESS_WINDOW, label="lateness p99"
        )
        return cloudwatch.Alarm(
            self,
            names.LATENESS_ALARM_ID,
            alarm_name=f"{self._prefix}-lateness-p99",
            alarm_description=(
                f"The trigger's p99 lateness over {LATENESS_WINDOW.to_minutes()} minutes is above "
                f"{settings.lateness_alarm_ms} ms: occurrences fire late (a backlog in the delay "
                "queues, throttled trigger concurrency, or slow targets)."
            ),
            metric=lateness_p99,
            threshold=settings.lateness_alarm_ms,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
            evaluation_periods=1,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )

    def _function_errors_alarms(self, pipeline: Pipeline) -> list[cloudwatch.Alarm]:
        """Each pipeline function's failed invocations."""
        return [
            cloudwatch.Alarm(
                self,
                f"{names.function_id(name)}Errors",
                alarm_name=f"{self._prefix}-{name}-errors",
                alarm_description=(
                    f"The {name} function failed whole invocations in the last "
                    f"{ERRORS_WINDOW.to_minutes()} minutes (see its log group)."
                ),
                metric=function.function.metric_errors(statistic=cloudwatch.Stats.SUM, period=ERRORS_WINDOW),
                threshold=0,
                comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
                evaluation_periods=1,
                treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            )
            for name, function in pipeline.functions.items()
        ]

    def _job_ends_alarm(self, jobs: JobRunner) -> cloudwatch.Alarm:
        """The execution-status rule's dead letters, as the pipeline's are alarmed."""
        return cloudwatch.Alarm(
            self,
            names.JOB_ENDS_DLQ_ALARM_ID,
            alarm_name=f"{self._prefix}-job-ends-dead-letters",
            alarm_description=(
                "EventBridge could not deliver a job execution's end (FAILED, TIMED_OUT or ABORTED) to the "
                "job function: that job stays running until the event, each message of the queue, is sent to "
                "the job function again (docs/deploy.md, section 10)."
            ),
            metric=jobs.execution_ends_dead_letters.metric_approximate_number_of_messages_visible(
                statistic=cloudwatch.Stats.MAXIMUM, period=MINUTE, label="job ends undelivered"
            ),
            threshold=0,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
            evaluation_periods=1,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )

    def _api_errors_alarm(self, api: Api) -> cloudwatch.Alarm:
        return cloudwatch.Alarm(
            self,
            names.API_5XX_ALARM_ID,
            alarm_name=f"{self._prefix}-api-5xx",
            alarm_description=(
                f"The API answered 5xx in the last {ERRORS_WINDOW.to_minutes()} minutes: the API "
                "function failed (see its log group), or the authorizer could not check keys (the "
                "access log's authorizerError; the authorizer's log group)."
            ),
            metric=api.rest_api.deployment_stage.metric_server_error(
                statistic=cloudwatch.Stats.SUM, period=ERRORS_WINDOW
            ),
            threshold=0,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
            evaluation_periods=1,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )

    def _dashboard(self, settings: DeploymentSettings, pipeline: Pipeline) -> cloudwatch.Dashboard:
        """Fires and lateness per minute, the dead letters, and the alarms' states when there are
        alarms (an alarm status widget needs at least one)."""
        lateness_annotations = (
            [cloudwatch.HorizontalAnnotation(value=settings.lateness_alarm_ms, label="alarm (p99, 5 min)")]
            if self.alarms
            else None
        )
        dead_letters = cloudwatch.GraphWidget(
            title="Dead letters", left=[_dead_letter_depth(pipeline)], width=12 if self.alarms else 24
        )
        return cloudwatch.Dashboard(
            self,
            names.DASHBOARD_ID,
            dashboard_name=self._prefix,
            default_interval=Duration.hours(3),
            widgets=[
                [
                    cloudwatch.GraphWidget(
                        title="Occurrences per minute",
                        left=[
                            sundial_metric(
                                runs_metric(result), statistic=cloudwatch.Stats.SUM, period=MINUTE, label=result.value
                            )
                            for result in FIRED_RESULTS
                        ],
                        width=12,
                    ),
                    cloudwatch.GraphWidget(
                        title="Lateness (ms)",
                        left=[
                            sundial_metric(
                                LATENESS_METRIC, statistic=cloudwatch.Stats.p(50), period=MINUTE, label="p50"
                            ),
                            sundial_metric(
                                LATENESS_METRIC, statistic=cloudwatch.Stats.p(99), period=MINUTE, label="p99"
                            ),
                        ],
                        left_annotations=lateness_annotations,
                        width=12,
                    ),
                ],
                [
                    dead_letters,
                    *(
                        [cloudwatch.AlarmStatusWidget(title="Alarms", alarms=self.alarms, width=12)]
                        if self.alarms
                        else []
                    ),
                ],
            ],
        )


def _dead_letter_depth(pipeline: Pipeline) -> cloudwatch.Metric:
    """The dead-letter queue's depth, a minute's maximum."""
    return pipeline.queues.dead_letters.metric_approximate_number_of_messages_visible(
        statistic=cloudwatch.Stats.MAXIMUM, period=MINUTE, label="dead letters"
    )
