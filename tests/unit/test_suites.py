"""Every test carries exactly its directory's suite marker (checked at collection by tests/conftest.py)."""

from __future__ import annotations

from collections import OrderedDict
from pathlib import Path

import pytest

from tests.support.suites import (
    ALONE_FIRST,
    LONG_FIRST,
    SUITES,
    TESTS_ROOT,
    SuiteScheduling,
    marker_problem,
    scope_of,
    suite_of,
)

pytestmark = pytest.mark.unit

ROOT = Path("/repo/tests")


@pytest.mark.parametrize("suite", SUITES)
def test_a_test_marked_with_its_directory_suite_passes(suite: str) -> None:
    assert suite_of(ROOT / suite / "test_x.py", ROOT) == suite
    assert marker_problem(ROOT / suite / "test_x.py", ["parametrize", suite], ROOT) is None


def test_a_test_without_a_suite_marker_is_told_which_to_add() -> None:
    problem = marker_problem(ROOT / "integration" / "test_x.py", ["parametrize"], ROOT)
    assert problem is not None
    assert "pytestmark = pytest.mark.integration" in problem


def test_another_suite_marker_or_a_second_one_is_refused() -> None:
    assert marker_problem(ROOT / "unit" / "test_x.py", ["integration"], ROOT) is not None
    assert marker_problem(ROOT / "unit" / "test_x.py", ["unit", "e2e"], ROOT) is not None


def test_a_test_outside_the_suite_directories_is_refused() -> None:
    assert marker_problem(ROOT / "test_x.py", ["unit"], ROOT) is not None
    assert marker_problem(ROOT / "support" / "test_x.py", ["unit"], ROOT) is not None
    assert marker_problem(Path("/elsewhere/unit/test_x.py"), ["unit"], ROOT) is not None


def test_every_suite_is_a_marker_declared_in_pyproject_and_a_directory(pytestconfig: pytest.Config) -> None:
    declared = {line.split(":")[0].strip() for line in pytestconfig.getini("markers")}
    assert set(SUITES) <= declared
    assert all((TESTS_ROOT / suite).is_dir() for suite in SUITES)


def test_this_module_is_collected_as_a_unit_test(request: pytest.FixtureRequest) -> None:
    assert [mark.name for mark in request.node.iter_markers() if mark.name in SUITES] == ["unit"]


def test_a_shared_process_suite_is_one_unit_of_work_and_every_other_test_its_own() -> None:
    assert scope_of("tests/infrastructure/test_api.py::test_a") == scope_of("tests/infrastructure/test_iam.py::test_b")
    assert scope_of("tests/e2e/test_jobs.py::test_a") == scope_of("tests/e2e/test_management.py::test_b[x]")
    assert scope_of("tests/e2e/test_jobs.py::test_a") != scope_of("tests/infrastructure/test_api.py::test_a")
    # the fuzzer: a unit of its own, not the e2e suite's
    fuzz = "tests/e2e/test_openapi_fuzz.py::test_schemathesis_finds_nothing_against_the_local_runtime"
    assert scope_of(fuzz) != scope_of("tests/e2e/test_jobs.py::test_a")
    # the e2e suite in two halves, each one unit (a runtime each)
    second = scope_of("tests/e2e/test_smoke.py::test_a")
    assert second == scope_of("tests/e2e/test_tenants.py::test_b") != scope_of("tests/e2e/test_jobs.py::test_a")
    # a file that synthesizes a stack in a module fixture: one unit, so one synthesis
    jobs = [f"tests/integration/test_job_state_machine.py::test_{name}" for name in ("a", "b[1]")]
    assert scope_of(jobs[0]) == scope_of(jobs[1]) != scope_of("tests/integration/test_job_cancel.py::test_a")
    single = ["tests/unit/test_ids.py::test_a", "tests/unit/test_ids.py::test_b", "tests/integration/test_x.py::test_a"]
    assert [scope_of(nodeid) for nodeid in single] == single


def test_the_queue_is_the_lone_units_then_the_many_tests_ones_then_the_long_single_tests_then_the_rest() -> None:
    explored = [f"{LONG_FIRST[0]}{case}]" for case in ("workflow-join", "one-shot")]
    fuzz = next(iter(ALONE_FIRST.values()))
    ids = ["tests/unit/test_ids.py::test_a", "tests/unit/test_ids.py::test_b"]
    as_xdist_left_it = ["e2e-1", ids[0], explored[0], fuzz, ids[1], explored[1]]  # the largest first
    scheduling = object.__new__(SuiteScheduling)  # its queue only: xdist's own part needs a run
    scheduling.workqueue = OrderedDict(
        (scope, dict.fromkeys([scope] if scope.startswith("tests/") else ["a", "b"], False))
        for scope in as_xdist_left_it
    )
    scheduling._order()
    assert list(scheduling.workqueue) == [fuzz, "e2e-1", *explored, *ids]
