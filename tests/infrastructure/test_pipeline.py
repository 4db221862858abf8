"""The firing pipeline: the minute rule, the queues and event sources of shared/topology.py, the
functions' settings, their environment.

The "no drift" tests compare the template with ``topology.queues(n)`` / ``topology.consumers(n)``
both ways, for the default deployment and for one with several delay queues: every queue and
every event source in the template has its definition, and every definition is in the template.
"""

from __future__ import annotations

from typing import Any

import pytest
from aws_cdk.assertions import Template

from infra import names
from infra.settings import DeploymentSettings, SettingsError
from shared import topology
from shared.settings.context import context_key
from shared.settings.environment import env_name, from_env
from tests.infrastructure.conftest import (
    ALTERNATE_DELAY_QUEUES,
    Built,
    Synthesized,
    logical_id,
    scratch_outdir,
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


def _pipeline_queues(built: Deployment) -> dict[str, Any]:
    """The pipeline's queues (the stack has one other: the dead letters of the jobs' execution-status
    rule, tests/infrastructure/test_job_runner.py)."""
    ids = {logical_id(built.stack, queue.node.default_child) for queue in built.stack.pipeline.queues.by_name.values()}
    return {key: queue for key, queue in built.resources("AWS::SQS::Queue").items() if key in ids}


def _queue_names(built: Deployment) -> dict[str, str]:
    """Queue logical id -> its name in the topology (the queue's name without the stack prefix)."""
    prefix = f"{names.STACK_NAME}-"
    found = {}
    for key, queue in _pipeline_queues(built).items():
        name = queue["Properties"]["QueueName"]
        assert name.startswith(prefix), f"{key}: {name} is not named after the stack"
        found[key] = name.removeprefix(prefix)
    return found


def _sundial_functions(built: Deployment) -> dict[str, Any]:
    """Sundial's own functions (a throw-away stack also has CDK's provider of the jobs bucket's
    auto-delete custom resource)."""
    return {
        key: function
        for key, function in built.resources("AWS::Lambda::Function").items()
        if function["Properties"].get("Handler", "").startswith("functions.")
    }


def _function_names(built: Deployment) -> dict[str, str]:
    """Function logical id -> its name in the topology (the module under functions/ it runs)."""
    found = {}
    for key, function in _sundial_functions(built).items():
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
    for key, queue in _pipeline_queues(built).items():
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
    settings = built.stack.settings
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
    lanes = {
        names.SCANNER: settings.scanner_max_concurrency,
        names.TRIGGER: settings.trigger_lane_concurrency,
        names.HIGH_PRIORITY_TRIGGER: settings.high_priority_concurrency,
    }
    expected = []
    for consumer in topology.consumers(delay_queues):
        concurrency = lanes[consumer.function]
        expected.append(
            (consumer.function, consumer.queue, consumer.batch_size, consumer.batching_window_s, concurrency)
        )
    assert sorted(found, key=str) == sorted(expected, key=str)


# --- the queues ------------------------------------------------------------------------------


def test_every_delay_queue_redrives_to_the_stranded_queue_and_that_to_the_dead_letter_queue(
    deployment: tuple[Deployment, int],
) -> None:
    """A delay-queue message that ran out of receives goes where a function takes it (the recovering
    trigger), not straight to the dead-letter queue, where no API would list it."""
    built, delay_queues = deployment
    stranded = _queue_id(built, topology.STRANDED.name)
    queues = built.resources("AWS::SQS::Queue")
    for spec in [*(topology.delay_queue(i) for i in range(delay_queues)), topology.high_priority_queue()]:
        properties = queues[_queue_id(built, spec.name)]["Properties"]
        assert properties["RedrivePolicy"] == {
            "deadLetterTargetArn": {"Fn::GetAtt": [stranded, "Arn"]},
            "maxReceiveCount": spec.max_receive_count,
        }
        assert properties["VisibilityTimeout"] == topology.DELAY_VISIBILITY_TIMEOUT_S
    assert queues[stranded]["Properties"]["RedrivePolicy"]["deadLetterTargetArn"] == {
        "Fn::GetAtt": [_queue_id(built, topology.DEAD_LETTERS.name), "Arn"]
    }
    # no event source polls it: the tick looks at its depth and invokes the recovering trigger,
    # which drains it (shared/adapters/stranded.py)
    assert all(
        m["Properties"]["EventSourceArn"] != {"Fn::GetAtt": [stranded, "Arn"]}
        for m in built.resources("AWS::Lambda::EventSourceMapping").values()
    )
    recover_id, recover = _function(built, names.RECOVER)
    assert recover["Environment"]["Variables"][env_name("stranded_queue_url")] == {"Ref": stranded}
    tick_variables = _function(built, names.TICK)[1]["Environment"]["Variables"]
    assert tick_variables[env_name("stranded_queue_url")] == {"Ref": stranded}
    assert tick_variables[env_name("recover_function")] == {"Ref": recover_id}
    [config] = [
        c["Properties"]
        for c in built.resources("AWS::Lambda::EventInvokeConfig").values()
        if c["Properties"]["FunctionName"] == {"Ref": recover_id}
    ]
    # no retry and a minute's age: the next tick asks again while messages wait
    assert config["MaximumRetryAttempts"] == 0
    assert config["MaximumEventAgeInSeconds"] == topology.DRAIN_EVENT_MAX_AGE_S == 60
    assert "ReservedConcurrentExecutions" not in recover


def test_the_dead_letter_queue_keeps_messages_14_days(synthesized: Synthesized) -> None:
    queue = synthesized.resources("AWS::SQS::Queue")[_queue_id(synthesized, topology.DEAD_LETTERS.name)]
    assert queue["Properties"]["MessageRetentionPeriod"] == 14 * 86_400 == topology.DEAD_LETTERS.retention_s


def test_every_queue_is_encrypted_and_refuses_plain_http(synthesized: Synthesized) -> None:
    """Every queue of the stack; the pipeline's policies say nothing else (the jobs' rule may also
    send to its own dead-letter queue: tests/infrastructure/test_job_runner.py)."""
    queues = synthesized.resources("AWS::SQS::Queue")
    pipeline = _pipeline_queues(synthesized)
    assert len(queues) == len(pipeline) + 1
    tls_only = {}
    for policy in synthesized.resources("AWS::SQS::QueuePolicy").values():
        [queue] = policy["Properties"]["Queues"]
        tls_only[queue["Ref"]] = policy["Properties"]["PolicyDocument"]["Statement"]
    for key, queue in queues.items():
        assert queue["Properties"]["SqsManagedSseEnabled"] is True, key
        deny = {
            "Action": "sqs:*",
            "Condition": {"Bool": {"aws:SecureTransport": "false"}},
            "Effect": "Deny",
            "Principal": {"AWS": "*"},
            "Resource": {"Fn::GetAtt": [key, "Arn"]},
        }
        assert deny in tls_only[key], key
        if key in pipeline:
            assert tls_only[key] == [deny], key


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


def test_the_tick_invokes_the_scanner_asynchronously_which_no_queue_feeds(synthesized: Synthesized) -> None:
    """No event source mapping reads for the scanner (an idle one long-polls all month): Lambda's
    own queue holds the tick's invocations, retries a failed one twice, gives up on one older than
    SCAN_EVENT_MAX_AGE_S and sends what it gave up to the dead-letter queue."""
    scanner_id, _ = _function(synthesized, names.SCANNER)
    mappings = synthesized.template.find_resources("AWS::Lambda::EventSourceMapping")
    assert [m for m in mappings.values() if m["Properties"]["FunctionName"] == {"Ref": scanner_id}] == []
    synthesized.template.has_resource_properties(
        "AWS::Lambda::EventInvokeConfig",
        {
            "FunctionName": {"Ref": scanner_id},
            "Qualifier": "$LATEST",
            "MaximumRetryAttempts": topology.SCAN_RETRY_ATTEMPTS,
            "MaximumEventAgeInSeconds": topology.SCAN_EVENT_MAX_AGE_S,
            "DestinationConfig": {
                "OnFailure": {
                    "Destination": {"Fn::GetAtt": [_queue_id(synthesized, topology.DEAD_LETTERS.name), "Arn"]}
                }
            },
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


def test_every_queue_a_function_consumes_hides_a_message_six_times_the_functions_timeout(
    deployment: tuple[Deployment, int],
) -> None:
    """Lambda's guide: a queue's visibility timeout at least six times its function's timeout, so
    Lambda can retry a throttled batch while its messages stay in flight ("Using Lambda with Amazon
    SQS"). A shorter one burns their receives towards the dead-letter queue."""
    built, _ = deployment
    functions = built.resources("AWS::Lambda::Function")
    queues = built.resources("AWS::SQS::Queue")
    mappings = built.resources("AWS::Lambda::EventSourceMapping").values()
    assert mappings
    for mapping in mappings:
        properties = mapping["Properties"]
        timeout = functions[properties["FunctionName"]["Ref"]]["Properties"]["Timeout"]
        visibility = queues[properties["EventSourceArn"]["Fn::GetAtt"][0]]["Properties"]["VisibilityTimeout"]
        assert visibility >= 6 * timeout, properties["EventSourceArn"]


def test_the_trigger_times_out_before_a_delay_message_becomes_visible_again(synthesized: Synthesized) -> None:
    _, trigger = _function(synthesized, names.TRIGGER)
    assert trigger["Timeout"] == 120
    assert topology.DELAY_VISIBILITY_TIMEOUT_S == 720


@pytest.mark.parametrize(("which", "cap"), [("synthesized", 10), ("alternate", 25)])
def test_the_high_priority_trigger_has_its_own_queue_and_a_capped_event_source_but_no_reservation(
    request: pytest.FixtureRequest, which: str, cap: int
) -> None:
    """The trigger's code again, with the trigger's profile, on the high-priority queue alone, its
    event source capped at ``sundial:highPriorityConcurrency``. No reserved concurrency by default:
    a reservation fails to create where the account's quota would leave less than 100 unreserved
    (a new account's), and a first deploy must succeed."""
    built = request.getfixturevalue(which)
    high_id, high = _function(built, names.HIGH_PRIORITY_TRIGGER)
    trigger_id, trigger = _function(built, names.TRIGGER)
    for function in built.resources("AWS::Lambda::Function").values():
        assert "ReservedConcurrentExecutions" not in function["Properties"]
    assert (high["Timeout"], high["MemorySize"]) == (trigger["Timeout"], trigger["MemorySize"])
    mappings = [m["Properties"] for m in built.resources("AWS::Lambda::EventSourceMapping").values()]
    [consumed] = [m for m in mappings if m["FunctionName"] == {"Ref": high_id}]
    assert consumed["EventSourceArn"]["Fn::GetAtt"][0] == _queue_id(built, topology.HIGH_PRIORITY_QUEUE)
    assert consumed["ScalingConfig"] == {"MaximumConcurrency": cap}
    assert all(
        m["EventSourceArn"]["Fn::GetAtt"][0] != _queue_id(built, topology.HIGH_PRIORITY_QUEUE)
        for m in mappings
        if m["FunctionName"] == {"Ref": trigger_id}
    )


def test_a_reserved_high_lane_is_never_invoked_beyond_its_reservation() -> None:
    """Where an account has room, ``sundial:highPriorityReservedConcurrency`` reserves the lane's
    capacity; its event source's cap stays at or under it (beyond, Lambda throttles the batches and
    each throttle burns their messages' receives), and the settings refuse less."""
    from infra.app import build_app

    app = build_app(
        outdir=scratch_outdir(),
        nag=False,
        overrides={context_key("high_priority_concurrency"): 20, context_key("high_priority_reserved_concurrency"): 30},
    )
    stack = app.node.find_child(names.STACK_NAME)
    built = Built(stack=stack, template=Template.from_stack(stack))  # type: ignore[arg-type]
    high_id, high = _function(built, names.HIGH_PRIORITY_TRIGGER)
    assert high["ReservedConcurrentExecutions"] == 30
    [consumed] = [
        m["Properties"]
        for m in built.resources("AWS::Lambda::EventSourceMapping").values()
        if m["Properties"]["FunctionName"] == {"Ref": high_id}
    ]
    assert consumed["ScalingConfig"]["MaximumConcurrency"] <= high["ReservedConcurrentExecutions"]
    with pytest.raises(SettingsError, match="highPriorityReservedConcurrency must be 0"):
        DeploymentSettings.from_context(
            {context_key("high_priority_concurrency"): 20, context_key("high_priority_reserved_concurrency"): 10}
        )


def test_no_lane_can_take_the_accounts_whole_pool(deployment: tuple[Deployment, int]) -> None:
    """Every event source has a maximum concurrency, and together they leave the other functions
    (API, authorizer, tick, jobs) at least 100 of the account's default 1,000."""
    built, delay_queues = deployment
    caps = [
        m["Properties"]["ScalingConfig"]["MaximumConcurrency"]
        for m in built.resources("AWS::Lambda::EventSourceMapping").values()
    ]
    assert len(caps) == len(topology.consumers(delay_queues))
    assert sum(caps) <= built.stack.settings.account_concurrency - 100


# --- recursive loop detection ------------------------------------------------------------------


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _functions_in_loops(built: Deployment) -> set[str]:
    """Functions a message can invoke again, read off the template alone: a function's role may
    send to a queue (an ``sqs:SendMessage`` statement naming the queue), a queue invokes a function
    (an event source mapping); a function that reaches itself through such edges is in a loop.
    Target policies (``sqs:SendMessage`` on every queue of the account, for users' targets) are
    not edges: a target naming one of Sundial's own queues is refused (shared/domain/own.py)."""
    roles = {}
    for key, function in built.resources("AWS::Lambda::Function").items():
        role = function["Properties"].get("Role")
        if isinstance(role, dict) and "Fn::GetAtt" in role:
            roles[role["Fn::GetAtt"][0]] = key
    sends: dict[str, set[str]] = {key: set() for key in roles.values()}
    for policy in built.resources("AWS::IAM::Policy").values():
        for role in policy["Properties"]["Roles"]:
            function = roles.get(role["Ref"])
            if function is None:
                continue
            for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
                if "sqs:SendMessage" not in _listed(statement["Action"]):
                    continue
                for resource in _listed(statement["Resource"]):
                    if isinstance(resource, dict) and "Fn::GetAtt" in resource:
                        sends[function].add(resource["Fn::GetAtt"][0])
    invokes: dict[str, set[str]] = {}
    for mapping in built.resources("AWS::Lambda::EventSourceMapping").values():
        properties = mapping["Properties"]
        invokes.setdefault(properties["EventSourceArn"]["Fn::GetAtt"][0], set()).add(properties["FunctionName"]["Ref"])

    def reaches_itself(start: str) -> bool:
        seen, pending = set(), [f for q in sends[start] for f in invokes.get(q, ())]
        while pending:
            function = pending.pop()
            if function == start:
                return True
            if function not in seen:
                seen.add(function)
                pending.extend(f for q in sends[function] for f in invokes.get(q, ()))
        return False

    return {key for key in sends if reaches_itself(key)}


def test_every_function_in_a_loop_through_its_queues_allows_recursion_and_no_other(
    deployment: tuple[Deployment, int],
) -> None:
    """Lambda stops a chain of invocations through SQS after about 16 unless the function allows
    recursion ("Use Lambda recursive loop detection to prevent infinite loops"): the trigger stages
    a recurring task's next occurrence into the queue that invokes it, so every task due more often
    than the writers' window would stop firing for good. The set is derived from the template (who
    may send to which queue, which queue invokes whom), not from a list."""
    built, _ = deployment
    looping = _functions_in_loops(built)
    assert {_function_names(built)[key] for key in looping} >= {names.TRIGGER, names.HIGH_PRIORITY_TRIGGER}
    for key, function in _sundial_functions(built).items():
        expected = "Allow" if key in looping else "Terminate"
        assert function["Properties"].get("RecursiveLoop", "Terminate") == expected, _function_names(built)[key]


def test_the_loops_the_template_has_are_the_topologys(deployment: tuple[Deployment, int]) -> None:
    """The local runtime models loop detection from ``topology.looping``: it names the functions
    the template allows recursion, so the runtime cannot drift from the stack."""
    built, delay_queues = deployment
    names_of = _function_names(built)
    assert {names_of[key] for key in _functions_in_loops(built)} == topology.looping(delay_queues)


def test_a_claims_lease_runs_out_before_its_message_comes_back() -> None:
    """A message redelivered after a crashed trigger must find the lease expired, or it is
    refused as in flight until it is dead-lettered."""
    assert DeploymentSettings().lease_ms < topology.DELAY_VISIBILITY_TIMEOUT_S * 1000


# --- the tick --------------------------------------------------------------------------------


def test_the_minute_rule_invokes_the_tick(synthesized: Synthesized) -> None:
    tick_id, _ = _function(synthesized, names.TICK)
    rules = {
        key: rule
        for key, rule in synthesized.resources("AWS::Events::Rule").items()
        if "ScheduleExpression" in rule["Properties"]
    }
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
    assert function["TracingConfig"] == {"Mode": "PassThrough"}  # sundial:tracing's default
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
    scanner = {"Ref": _function(synthesized, names.SCANNER)[0]}
    dead_letters = {"Ref": _queue_id(synthesized, topology.DEAD_LETTERS.name)}

    def environment(name: str) -> dict[str, Any]:
        return _function(synthesized, name)[1]["Environment"]["Variables"]

    stranded = {env_name("stranded_queue_url"): {"Ref": _queue_id(synthesized, topology.STRANDED.name)}}
    assert environment(names.TICK) == {
        **_base(settings),
        **table,
        env_name("scanner_function"): scanner,
        **stranded,
        env_name("recover_function"): {"Ref": _function(synthesized, names.RECOVER)[0]},
    }
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
            env_name("signing_root_parameter"): "/Sundial/signing-root",
            "POWERTOOLS_LOG_LEVEL": "WARNING",
        }
    )
    # the recovering trigger: the trigger's, and the stranded queue it drains
    assert environment(names.RECOVER) == {**environment(names.TRIGGER), **stranded}
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
            (_function_names(alternate)[key], function) for key, function in _sundial_functions(alternate).items()
        )
    }
    assert staging == {
        "api": urls,
        names.SCANNER: urls,
        names.TRIGGER: urls,
        names.HIGH_PRIORITY_TRIGGER: urls,
        names.RECOVER: urls,
        names.CANARY: urls,
        "scheduler": urls,  # a schedule due within the writers' window is staged at once
        names.TICK: None,
        "jobs": None,
        "authorizer": None,
    }


def test_the_environment_is_what_the_functions_read(alternate: Built) -> None:
    """Each function's variables, read back as ``shared.settings.environment.from_env`` reads them at cold
    start: the deployment's settings (not the defaults), whatever resources the function was given."""
    settings = alternate.stack.settings
    assert settings.tuning() != DeploymentSettings().tuning()
    for key, function in _sundial_functions(alternate).items():
        variables = function["Properties"]["Environment"]["Variables"]
        # The resources are CloudFormation references, resolved at deployment: stand-ins here.
        environ = {name: value if isinstance(value, str) else f"resource-of-{key}" for name, value in variables.items()}
        read = from_env(environ)
        assert read.tuning() == settings.tuning(), key
        assert read.timing == settings.timing, key
