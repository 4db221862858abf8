"""Settings every suite shares: fake AWS credentials, so nothing can ever reach a real account."""

import os

from shared.settings.environment import env_name

for key, value in {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_REGION": "us-east-1",
    "AWS_ACCOUNT_ID_ENDPOINT_MODE": "disabled",
    "POWERTOOLS_TRACE_DISABLED": "1",
    "POWERTOOLS_METRICS_NAMESPACE": "Sundial",
    "POWERTOOLS_LOG_LEVEL": "WARNING",
    env_name("table_name"): "sundial-test",
}.items():
    os.environ[key] = value
os.environ.pop("AWS_ENDPOINT_URL", None)
os.environ.pop("AWS_PROFILE", None)

# Where moto differs from AWS in ways Sundial relies on (atomic conditional writes, prompt long
# polling), make it behave like AWS for every suite; and where it is needlessly slow (a Query
# sorting the whole table, a transaction copying it, a send counting the queue, its generic
# serializer, expressions parsed anew), as fast as the local runtime's moto process.
from local.moto_patches.atomic import make_dynamodb_writes_atomic  # noqa: E402
from local.moto_patches.dispatch import make_actions_remembered  # noqa: E402
from local.moto_patches.expressions import make_expressions_remembered, make_update_validation_cheap  # noqa: E402
from local.moto_patches.index_lag import make_index_queries_lag  # noqa: E402
from local.moto_patches.kms import make_symmetric_keys_cheap  # noqa: E402
from local.moto_patches.numbers import make_numbers_checked  # noqa: E402
from local.moto_patches.query import make_query_partitioned  # noqa: E402
from local.moto_patches.read_lag import make_reads_lag  # noqa: E402
from local.moto_patches.serialize import make_json_serialization_direct  # noqa: E402
from local.moto_patches.sqs import (  # noqa: E402
    make_batch_keep_trace_headers,
    make_clock_cheap,
    make_long_polling_prompt,
    make_named_attributes_cheap,
    make_pending_groups_safe,
    make_queue_attributes_named_once,
    make_queue_changes_serial,
    make_receipt_handles_cheap,
    make_receive_linear,
    make_send_linear,
)
from local.moto_patches.transact import make_transactions_copy_items  # noqa: E402

make_dynamodb_writes_atomic()
make_long_polling_prompt()
make_query_partitioned()
make_index_queries_lag()
make_reads_lag()
make_numbers_checked()
make_transactions_copy_items()
make_receive_linear()
make_send_linear()
make_batch_keep_trace_headers()
make_pending_groups_safe()
make_queue_changes_serial()
make_named_attributes_cheap()
make_queue_attributes_named_once()
make_receipt_handles_cheap()
make_clock_cheap()
make_symmetric_keys_cheap()

# What Lambda does that moto does not: recursive loop detection (the SQS sends of an invocation
# carry its lineage; local/recursion.py).
from local.recursion import carry_lineage  # noqa: E402

carry_lineage()
make_json_serialization_direct()
make_expressions_remembered()
make_update_validation_cheap()
make_actions_remembered()  # after the patches above: they replace methods, and add none

# Hypothesis's property tests check properties, not speed: no example has a deadline (its default
# 200 ms failed a calendar round trip on a machine busy with the other suites).
from hypothesis import settings as hypothesis_settings  # noqa: E402

hypothesis_settings.register_profile("sundial", deadline=None)
hypothesis_settings.load_profile("sundial")

# Every botocore session of a test process parses botocore's data files once, not once per
# session (the integration tests' fresh connections for every test made it a third of their time).
from local.botocore_loader import share_data_loader  # noqa: E402

share_data_loader()


def pytest_terminal_summary(terminalreporter) -> None:  # type: ignore[no-untyped-def]
    from tests.support.lateness import LATENESS_MS

    if LATENESS_MS:
        ordered = sorted(LATENESS_MS)
        p50, p99 = ordered[len(ordered) // 2][0], ordered[min(len(ordered) - 1, round(len(ordered) * 0.99))][0]
        worst, test = ordered[-1]
        terminalreporter.write_line(
            f"pipeline lateness over {len(ordered)} on-time fires: p50 {p50} ms, p99 {p99} ms, max {worst} ms ({test})"
        )


# --- the suites: every test carries its directory's marker; parallel runs (pytest-xdist) -------

from typing import Any  # noqa: E402

import pytest  # noqa: E402

from tests.support.suites import marker_problem  # noqa: E402

SUITE_PROBLEM = pytest.StashKey[str]()


@pytest.hookimpl(optionalhook=True)  # an xdist hook: the controller's scheduler
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadgroup``, its groups taken from the tests' paths (tests/support/suites.py): a
    suite sharing one costly session fixture goes to one worker as a whole, every other test to
    whichever worker is free. (xdist 3.8 groups by ``xdist_group`` markers by renaming node ids,
    which pytest 9 no longer allows: every test would go its own way.)"""
    if config.getvalue("dist") != "loadgroup":
        return None
    from tests.support.suites import SuiteScheduling

    return SuiteScheduling(config, log)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Fail the run when a test lacks exactly its directory's suite marker (so ``-m unit`` is the
    whole unit suite)."""
    problems = {}
    for item in items:
        problem = marker_problem(item.path, (mark.name for mark in item.iter_markers()))
        if problem:
            problems[item.nodeid] = item.stash[SUITE_PROBLEM] = problem
    # An xdist worker cannot stop the run with a message: there each such test fails at setup.
    if problems and not hasattr(config, "workerinput"):
        listed = "\n  ".join(f"{nodeid} {problem}" for nodeid, problem in problems.items())
        raise pytest.UsageError(f"every test carries its suite's marker:\n  {listed}")


def pytest_runtest_setup(item: pytest.Item) -> None:
    if SUITE_PROBLEM in item.stash:
        pytest.fail(f"every test carries its suite's marker: this one {item.stash[SUITE_PROBLEM]}", pytrace=False)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """An xdist worker hands the lateness it recorded to the controller, which prints the summary."""
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        from tests.support.lateness import LATENESS_MS

        workeroutput["lateness_ms"] = [[ms, test] for ms, test in LATENESS_MS]


@pytest.hookimpl(optionalhook=True)  # an xdist hook: called on the controller as each worker ends
def pytest_testnodedown(node, error) -> None:  # type: ignore[no-untyped-def]
    from tests.support.lateness import LATENESS_MS

    LATENESS_MS.extend((int(ms), str(test)) for ms, test in getattr(node, "workeroutput", {}).get("lateness_ms", []))
