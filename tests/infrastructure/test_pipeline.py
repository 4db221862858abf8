"""The firing pipeline: the minute rule, the queues and event sources of shared/topology.py, the
functions' settings, their environment.

The "no drift" tests compare the template with ``topology.queues(n)`` / ``topology.consumers(n)``
both ways, for the default deployment and for one with several delay queues: every queue and
every event source in the template has its definition, and every definition is in the template.
"""

from __future__ import annotations

from typing import Any

import pytest

from infra import names
from infra.settings import DeploymentSettings
from shared import topology
from shared.settings import env_name, from_env
from tests.infrastructure.conftest import (
    ALTERNATE_DELAY_QUEUES,
    Built,
    Synthesized,
    logical_id,
    settings_environment,
)

pytestmark = pytest.mark.infrastructure

Deployment = Synthesized | Built


@pytest.fixture(params=["default", "several delay queues"])
def deployment(request: pytest.FixtureRequest) -> tuple[Deployment, int]:
    """(the built stack, its number of delay queues)."""
    if request.param == "default":
        return request.getfixturevalue("synthesized"), DeploymentSettings().delay_queues
    return request.getfixturevalue("alternate"), ALTERNATE_DELAY_QUEUES


def _queue_names(built: Deployment) -> dict[str, str]:
    """Queue logical id -> its name in the topology (the queue's name without the stack prefix)."""
    prefix = f"{names.STACK_NAME}-"
    found = {}
    for key, queue in built.resources("AWS::SQS::Queue").items():
        name = queue["Properties"]["QueueName"]
        assert name.startswith(prefix), f"{key}: {name} is not named after the stack"
        found[key] = name.removeprefix(prefix)
    return found


def _function_names(built: Deployment) -> dict[str, str]:
    """Function logical id -> its name in the topology (the module under functions/ it runs)."""
    found = {}
    for key, function in built.resources("AWS::Lambda::Function").items():
        module, _, attribute = function["Properties"]["Handler"].rpartition(".")
        package, name, handler_module = module.split(".")
        assert (package, handler_module, attribute) == ("functions", "handler", "handler")
        found[key] = name
    return found


def _function(built: Deployment, name: str) -> tuple[str, dict[str, Any]]:
    [key] = [key for key, function in _function_names(built).items() if function == name]
    return key, built.resources("AWS::Lambda::Function")[key]["Properties"]


def _queue_id(built: Deployment, name: str) -> str:
    [key] = [key for key, queue in _queue_names(built).items() if queue == name]
    return key


# --- no drift ------------------------------------------------------------------------------


def test_every_queue_is_a_topology_queue_and_the_other_way_round(deployment: tuple[Deployment, int]) -> None:
    built, delay_queues = deployment
    specs = {spec.name: spec for spec in topology.queues(delay_queues)}
    queue_names = _queue_names(built)
    assert sorted(queue_names.values()) == sorted(specs)
    ids = {name: key for key, name in queue_names.items()}
    for key, queue in built.resources("AWS::SQS::Queue").items():
        spec = specs[queue_names[key]]
        properties = queue["Properties"]
        assert properties["VisibilityTimeout"] == spec.visibility_timeout_s, spec.name
        assert properties["MessageRetentionPeriod"] == spec.retention_s, spec.name
        if spec.dead_letter is None:
            assert "RedrivePolicy" not in properties, spec.name
        else:
            assert properties["RedrivePolicy"] == {
                "deadLetterTargetArn": {"Fn::GetAtt": [ids[spec.dead_letter], "Arn"]},
                "maxReceiveCount": spec.max_receive_count,
            }, spec.name


def test_every_event_source_is_a_topology_consumer_and_the_other_way_round(
    deployment: tuple[Deployment, int],
) -> None:
    built, delay_queues = deployment
    settings = DeploymentSettings(delay_queues=delay_queues)
    queue_names = _queue_names(built)
    function_names = _function_names(built)
    found = []
    for mapping in built.resources("AWS::Lambda::EventSourceMapping").values():
        properties = mapping["Properties"]
        queue_id = properties["EventSourceArn"]["Fn::GetAtt"][0]
        concurrency = properties.get("ScalingConfig", {}).get("MaximumConcurrency")
        found.append(
            (
                function_names[properties["FunctionName"]["Ref"]],
                queue_names[queue_id],
                properties["BatchSize"],
                properties.get("MaximumBatchingWindowInSeconds", 0),
                concurrency,
            )
        )
    expected = []
    for consumer in topology.consumers(delay_queues):
        concurrency = consumer.max_concurrency
        if concurrency is None and consumer.function == names.SCANNER:
            concurrency = settings.scanner_max_concurrency
        expected.append(
            (consumer.function, consumer.queue, consumer.batch_size, consumer.batching_window_s, concurrency)
        )
    assert sorted(found, key=str) == sorted(expected, key=str)


# --- the queues ------------------------------------------------------------------------------


def test_every_delay_queue_redrives_to_the_dead_letter_queue(deployment: tuple[Deployment, int]) -> None:
    built, delay_queues = deployment
    dead_letters = _queue_id(built, topology.DEAD_LETTERS.name)
    queues = built.resources("AWS::SQS::Queue")
    for index in range(delay_queues):
        spec = topology.delay_queue(index)
        properties = queues[_queue_id(built, spec.name)]["Properties"]
        assert properties["RedrivePolicy"] == {
            "deadLetterTargetArn": {"Fn::GetAtt": [dead_letters, "Arn"]},
            "maxReceiveCount": spec.max_receive_count,
        }
        assert properties["VisibilityTimeout"] == topology.DELAY_VISIBILITY_TIMEOUT_S


def test_the_dead_letter_queue_keeps_messages_14_days(synthesized: Synthesized) -> None:
    queue = synthesized.resources("AWS::SQS::Queue")[_queue_id(synthesized, topology.DEAD_LETTERS.name)]
    assert queue["Properties"]["MessageRetentionPeriod"] == 14 * 86_400 == topology.DEAD_LETTERS.retention_s


def test_every_queue_is_encrypted_and_refuses_plain_http(synthesized: Synthesized) -> None:
    queues = synthesized.resources("AWS::SQS::Queue")
    tls_only = {}
    for policy in synthesized.resources("AWS::SQS::QueuePolicy").values():
        [queue] = policy["Properties"]["Queues"]
        tls_only[queue["Ref"]] = policy["Properties"]["PolicyDocument"]["Statement"]
    for key, queue in queues.items():
        assert queue["Properties"]["SqsManagedSseEnabled"] is True, key
        assert tls_only[key] == [
            {
                "Action": "sqs:*",
                "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                "Effect": "Deny",
                "Principal": {"AWS": "*"},
                "Resource": {"Fn::GetAtt": [key, "Arn"]},
            }
        ]


# --- the event sources -----------------------------------------------------------------------


def test_every_event_source_reports_partial_batch_failures_and_no_window_outlasts_the_lead(
    deployment: tuple[Deployment, int],
) -> None:
    built, _ = deployment
    mappings = built.resources("AWS::Lambda::EventSourceMapping")
    assert mappings
    for mapping in mappings.values():
        properties = mapping["Properties"]
        assert properties["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
        # A batching window holds messages back: it must end well before the staging lead does.
        assert properties["MaximumBatchingWindowInSeconds"] * 1000 <= DeploymentSettings().lead_ms - 500
        assert properties.get("Enabled", True) is True


def test_the_scanners_consume_the_scan_requests_one_at_a_time(synthesized: Synthesized) -> None:
    scanner_id, _ = _function(synthesized, names.SCANNER)
    synthesized.template.has_resource_properties(
        "AWS::Lambda::EventSourceMapping",
        {
            "FunctionName": {"Ref": scanner_id},
            "EventSourceArn": {"Fn::GetAtt": [_queue_id(synthesized, topology.SCAN_REQUESTS.name), "Arn"]},
            "BatchSize": 1,
            "ScalingConfig": {"MaximumConcurrency": DeploymentSettings().scanner_max_concurrency},
            "FunctionResponseTypes": ["ReportBatchItemFailures"],
        },
    )


def test_the_trigger_consumes_every_delay_queue_ten_at_a_time(deployment: tuple[Deployment, int]) -> None:
    built, delay_queues = deployment
    trigger_id, _ = _function(built, names.TRIGGER)
    consumed = {}
    for mapping in built.resources("AWS::Lambda::EventSourceMapping").values():
        properties = mapping["Properties"]
        if properties["FunctionName"] == {"Ref": trigger_id}:
            consumed[properties["EventSourceArn"]["Fn::GetAtt"][0]] = properties["BatchSize"]
    expected = {_queue_id(built, topology.delay_queue(i).name): 10 for i in range(delay_queues)}
    assert consumed == expected


def test_every_consumer_finishes_before_its_queue_hands_the_message_out_again(
    deployment: tuple[Deployment, int],
) -> None:
    built, _ = deployment
    functions = built.resources("AWS::Lambda::Function")
    queues = built.resources("AWS::SQS::Queue")
    for mapping in built.resources("AWS::Lambda::EventSourceMapping").values():
        properties = mapping["Properties"]
        timeout = functions[properties["FunctionName"]["Ref"]]["Properties"]["Timeout"]
        visibility = queues[properties["EventSourceArn"]["Fn::GetAtt"][0]]["Properties"]["VisibilityTimeout"]
        assert timeout < visibility


def test_the_trigger_times_out_before_a_delay_message_becomes_visible_again(synthesized: Synthesized) -> None:
    _, trigger = _function(synthesized, names.TRIGGER)
    assert trigger["Timeout"] == 120 < topology.DELAY_VISIBILITY_TIMEOUT_S == 180


@pytest.mark.parametrize(("which", "reserved"), [("synthesized", 10), ("alternate", 25)])
def test_the_high_priority_trigger_has_its_own_queue_and_reserved_concurrency(
    request: pytest.FixtureRequest, which: str, reserved: int
) -> None:
    """The trigger's code again, with the trigger's profile, on the high-priority queue alone, with
    ``sundial:highPriorityConcurrency`` reserved for it (not a mapping's maximum concurrency: that
    caps without setting anything apart)."""
    built = request.getfixturevalue(which)
    high_id, high = _function(built, names.HIGH_PRIORITY_TRIGGER)
    trigger_id, trigger = _function(built, names.TRIGGER)
    assert high["ReservedConcurrentExecutions"] == reserved
    assert "ReservedConcurrentExecutions" not in trigger
    assert (high["Timeout"], high["MemorySize"]) == (trigger["Timeout"], trigger["MemorySize"])
    mappings = [m["Properties"] for m in built.resources("AWS::Lambda::EventSourceMapping").values()]
    [consumed] = [m for m in mappings if m["FunctionName"] == {"Ref": high_id}]
    assert consumed["EventSourceArn"]["Fn::GetAtt"][0] == _queue_id(built, topology.HIGH_PRIORITY_QUEUE)
    assert "ScalingConfig" not in consumed
    assert all(
        m["EventSourceArn"]["Fn::GetAtt"][0] != _queue_id(built, topology.HIGH_PRIORITY_QUEUE)
        for m in mappings
        if m["FunctionName"] == {"Ref": trigger_id}
    )
    queue = built.resources("AWS::SQS::Queue")[_queue_id(built, topology.HIGH_PRIORITY_QUEUE)]["Properties"]
    assert queue["RedrivePolicy"]["deadLetterTargetArn"] == {
        "Fn::GetAtt": [_queue_id(built, topology.DEAD_LETTERS.name), "Arn"]
    }


def test_a_claims_lease_runs_out_before_its_message_comes_back() -> None:
    """A message redelivered after a crashed trigger must find the lease expired, or it is
    refused as in flight until it is dead-lettered."""
    assert DeploymentSettings().lease_ms < topology.DELAY_VISIBILITY_TIMEOUT_S * 1000


# --- the tick --------------------------------------------------------------------------------


def test_the_minute_rule_invokes_the_tick(synthesized: Synthesized) -> None:
    tick_id, _ = _function(synthesized, names.TICK)
    rules = synthesized.resources("AWS::Events::Rule")
    assert len(rules) == 1
    [(rule_id, rule)] = rules.items()
    assert rule["Properties"]["ScheduleExpression"] == "rate(1 minute)"
    assert rule["Properties"]["State"] == "ENABLED"
    assert [target["Arn"] for target in rule["Properties"]["Targets"]] == [{"Fn::GetAtt": [tick_id, "Arn"]}]
    synthesized.template.has_resource_properties(
        "AWS::Lambda::Permission",
        {
            "Action": "lambda:InvokeFunction",
            "FunctionName": {"Fn::GetAtt": [tick_id, "Arn"]},
            "Principal": "events.amazonaws.com",
            "SourceArn": {"Fn::GetAtt": [rule_id, "Arn"]},
        },
    )


def test_a_failed_or_stale_tick_is_left_to_the_next_one(synthesized: Synthesized) -> None:
    tick_id, _ = _function(synthesized, names.TICK)
    synthesized.template.has_resource_properties(
        "AWS::Lambda::EventInvokeConfig",
        {"FunctionName": {"Ref": tick_id}, "MaximumRetryAttempts": 0, "MaximumEventAgeInSeconds": 60},
    )


# --- the functions -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "timeout", "memory"),
    [(names.TICK, 30, 256), (names.SCANNER, 60, 256), (names.TRIGGER, 120, 128)],
)
def test_pipeline_functions_run_their_handlers(synthesized: Synthesized, name: str, timeout: int, memory: int) -> None:
    _, function = _function(synthesized, name)
    assert function["Handler"] == f"functions.{name}.handler.handler"
    assert function["Timeout"] == timeout
    assert function["MemorySize"] == memory
    assert function["TracingConfig"] == {"Mode": "Active"}
    assert function["Architectures"] == [DeploymentSettings().architecture]


def _base(settings: DeploymentSettings) -> dict[str, str]:
    return {
        **settings_environment(settings),
        "POWERTOOLS_SERVICE_NAME": names.POWERTOOLS_SERVICE_NAME,
        "POWERTOOLS_METRICS_NAMESPACE": names.POWERTOOLS_METRICS_NAMESPACE,
    }


def test_environments_carry_the_queue_urls_and_the_timing(synthesized: Synthesized) -> None:
    settings = DeploymentSettings()
    stack = synthesized.stack
    table = {env_name("table_name"): {"Ref": logical_id(stack, stack.storage.table.node.default_child)}}
    delay = {
        env_name("delay_queue_urls"): {"Ref": _queue_id(synthesized, "delay-0")},
        env_name("high_priority_queue_url"): {"Ref": _queue_id(synthesized, topology.HIGH_PRIORITY_QUEUE)},
    }
    scan = {"Ref": _queue_id(synthesized, topology.SCAN_REQUESTS.name)}
    dead_letters = {"Ref": _queue_id(synthesized, topology.DEAD_LETTERS.name)}

    def environment(name: str) -> dict[str, Any]:
        return _function(synthesized, name)[1]["Environment"]["Variables"]

    assert environment(names.TICK) == {**_base(settings), env_name("scan_queue_url"): scan}
    assert environment(names.SCANNER) == {**_base(settings), **table, **delay}
    # the high-priority trigger is the trigger again: the same settings and resources
    assert (
        environment(names.HIGH_PRIORITY_TRIGGER)
        == environment(names.TRIGGER)
        == {
            **_base(settings),
            **table,
            **delay,
            env_name("dead_letter_queue_url"): dead_letters,
            env_name("jobs_bucket"): {"Ref": logical_id(stack, stack.jobs.bucket.node.default_child)},
            env_name("job_state_machine_arn"): {
                "Ref": logical_id(stack, stack.jobs.jobs.state_machine.node.default_child)
            },
            env_name("signing_key_arn"): {
                "Fn::GetAtt": [logical_id(stack, stack.signing.key.node.default_child), "Arn"]
            },
            "POWERTOOLS_LOG_LEVEL": "WARNING",
        }
    )
    # A deployed trigger never calls loopback (there it is the Lambda runtime API) or private
    # addresses (it runs outside any VPC).
    assert environment(names.TRIGGER)[env_name("allow_loopback_targets")] == "false"
    assert environment(names.TRIGGER)[env_name("allow_private_targets")] == "false"


def test_every_stager_lists_the_delay_queues_in_index_order(alternate: Built) -> None:
    """The stagers pick a queue by its position in the list: every function must agree on it."""
    refs = [{"Ref": _queue_id(alternate, topology.delay_queue(i).name)} for i in range(ALTERNATE_DELAY_QUEUES)]
    # the URLs joined by commas (as Settings.to_env joins them), resolved at deployment
    urls = {"Fn::Join": ["", [part for i, ref in enumerate(refs) for part in ([",", ref] if i else [ref])]]}
    staging = {
        name: function["Properties"]["Environment"]["Variables"].get(env_name("delay_queue_urls"))
        for name, function in (
            (_function_names(alternate)[key], function)
            for key, function in alternate.resources("AWS::Lambda::Function").items()
        )
    }
    assert staging == {
        "api": urls,
        names.SCANNER: urls,
        names.TRIGGER: urls,
        names.HIGH_PRIORITY_TRIGGER: urls,
        names.TICK: None,
        "jobs": None,
        "authorizer": None,
    }


def test_the_environment_is_what_the_functions_read(alternate: Built) -> None:
    """Each function's variables, read back as ``shared.settings.from_env`` reads them at cold
    start: the deployment's settings (not the defaults), whatever resources the function was given."""
    settings = alternate.stack.settings
    assert settings.tuning() != DeploymentSettings().tuning()
    for key, function in alternate.resources("AWS::Lambda::Function").items():
        variables = function["Properties"]["Environment"]["Variables"]
        # The resources are CloudFormation references, resolved at deployment: stand-ins here.
        environ = {name: value if isinstance(value, str) else f"resource-of-{key}" for name, value in variables.items()}
        read = from_env(environ)
        assert read.tuning() == settings.tuning(), key
        assert read.timing == settings.timing, key
