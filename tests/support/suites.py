"""Which suite a test belongs to: the directory under tests/ it lives in, named by its marker.

tests/conftest.py fails the run when a collected test does not carry exactly its directory's
suite marker (``pytestmark = pytest.mark.unit`` in tests/unit, and so on), so ``pytest -m unit``
always selects the whole unit suite and nothing else.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from xdist.scheduler import LoadScopeScheduling

SUITES = ("unit", "integration", "infrastructure", "e2e", "browser")
"""The suites, one directory under tests/ and one marker (declared in pyproject.toml) each."""

TESTS_ROOT = Path(__file__).resolve().parent.parent


def suite_of(path: Path, root: Path = TESTS_ROOT) -> str | None:
    """The suite a test file belongs to, or None when it lies in no suite's directory."""
    try:
        parts = path.resolve().relative_to(root).parts
    except ValueError:
        return None
    return parts[0] if len(parts) > 1 and parts[0] in SUITES else None


def marker_problem(path: Path, markers: Iterable[str], root: Path = TESTS_ROOT) -> str | None:
    """What is wrong with a test's suite markers (None when it carries exactly its suite's)."""
    suite = suite_of(path, root)
    carried = sorted(set(markers) & set(SUITES))
    if suite is None:
        return f"lies in no suite's directory (tests/{{{','.join(SUITES)}}}/)"
    if carried == [suite]:
        return None
    if not carried:
        return f"has no suite marker: add `pytestmark = pytest.mark.{suite}` to its module"
    return f"is marked {', '.join(carried)}, not just {suite} (its directory's suite)"


SHARED_PROCESS = {
    "infrastructure": "infrastructure",
    "e2e": "e2e",
    "browser": "browser",
}
"""Suites whose tests share a costly session fixture, each run by one xdist worker as a whole:
infrastructure's synthesis of the app (tens of seconds; `make test` runs that suite as a pytest
of its own, `make coverage` in the xdist run), e2e's local runtime (``make run`` in a
subprocess, with its own moto), the browser suite's (a runtime of its own and one Chromium). Every
other test goes to whichever worker is free."""


E2E_SECOND_RUNTIME = frozenset(
    f"tests/e2e/{name}.py"
    for name in (
        "test_smoke",
        "test_receiver_kit",
        "test_tenants",
        "test_limits",
        "test_cli_admin",
        "test_chains",
        "test_cli_workflows",
        "test_eventbridge_terraform",
        "test_eventbridge_cli",
    )
)
"""e2e files run against a second local runtime, as a unit of their own (``e2e-2``): the e2e
suite mostly waits on its runtime (due times, backoffs, a receiver's pace), so two halves on two
workers overlap their waits instead of queueing them; these files took about half its time."""


OWN_RUNTIMES = {
    "tests/e2e/test_devserver.py": "e2e-restarts",
    "tests/e2e/test_admin_key.py": "e2e-admin-key",
    "tests/e2e/test_busy_port.py": "e2e-busy-port",
    "tests/e2e/test_virtual_clock.py": "e2e-virtual-clock",
    "tests/e2e/test_kit_virtual_clock.py": "e2e-virtual-clock",
}
"""e2e files that start (and stop, and kill) runtimes of their own rather than use a half's: each
a unit of its own, so that their runtimes do not queue behind a half's tests (nor each other's)."""


ALONE_FIRST = {"tests/e2e/test_openapi_fuzz.py": "e2e-fuzz"}
"""Files that share no session fixture but take minutes of mostly waiting: each is a unit of its
own, handed out first, to a worker that runs it alone and then ends (when there is more than one
worker). The fuzzer starts its own runtime in its own network namespace and spends two to three
minutes on it, about half of it waiting: a worker of its own (``make test`` starts two more than
the cores) keeps it from holding a core's worth of other tests back."""


ONE_WORKER_FILES = frozenset(f"tests/integration/{name}.py" for name in ("test_job_state_machine",))
"""Files whose module-scoped fixture synthesizes a CDK stack (the job state machine's construct
around a function of its own, seconds of CPU): each runs as one unit on one worker, which
synthesizes it once. Spread test by test, every worker that took one of their tests synthesized
it again. (The files that run the stack's own definition read the one the local runtime keeps
in .build/: tests/support/stepfunctions.py.)"""


LONG_FIRST = ("tests/unit/test_explorer.py::test_every_schedule_of_the_case_within_its_bounds_keeps_every_invariant[",)
"""Single tests of tens of CPU-seconds each (the explorer's bounded run, a case a test: about 130
CPU-seconds of a run's thousand), handed out after the units of many tests and before every
other single test, in their order of collection (tests/unit/test_explorer.py puts its slowest
cases first). Collected last (tests/unit comes last) they were handed out last: a run's last 100
seconds were the bounded run and little else, its slowest case alone at the very end, the cores
partly idle."""


def scope_of(nodeid: str) -> str:
    """The unit of work an xdist worker takes a test in: its own, for a file of
    :data:`ALONE_FIRST`; its half of the e2e suite (:data:`E2E_SECOND_RUNTIME`); its file, for a
    file of :data:`ONE_WORKER_FILES`; its suite, for
    a suite in ``SHARED_PROCESS``; else the test alone. A worker starts a suite's session fixtures
    once for the units it takes (each e2e half gets a runtime of its own)."""
    path = nodeid.split("::", 1)[0]
    if path in ALONE_FIRST:
        return ALONE_FIRST[path]
    if path in E2E_SECOND_RUNTIME:
        return "e2e-2"
    if path in OWN_RUNTIMES:
        return OWN_RUNTIMES[path]
    if path in ONE_WORKER_FILES:
        return path
    parts = path.split("/")
    if len(parts) > 2 and parts[0] == TESTS_ROOT.name and parts[1] in SHARED_PROCESS:
        return SHARED_PROCESS[parts[1]]
    return nodeid


class SuiteScheduling(LoadScopeScheduling):
    """xdist's scope scheduling over :func:`scope_of`: the units of :data:`ALONE_FIRST` are
    handed out first, each to a worker of its own that ends with it; then the largest (the
    shared-process suites), then :data:`LONG_FIRST`'s single tests, then the other single tests as
    workers free up."""

    def __init__(self, config: Any, log: Any = None) -> None:
        super().__init__(config, log)
        self.alone: set[Any] = set()
        self.ordered = False

    def _split_scope(self, nodeid: str) -> str:
        return scope_of(nodeid)

    def _order(self) -> None:
        """Once, before the first unit is handed out: :data:`ALONE_FIRST`'s units, then the units
        of many tests (xdist put them first, the largest first), then :data:`LONG_FIRST`'s, then
        the other single tests, each group in the order it had."""
        self.ordered = True
        queue = self.workqueue
        alone = [scope for scope in queue if scope in ALONE_FIRST.values()]
        many = [scope for scope in queue if scope not in alone and len(queue[scope]) > 1]
        long = [scope for scope in queue if len(queue[scope]) == 1 and scope.startswith(LONG_FIRST)]
        for scope in reversed([*alone, *many, *long]):
            queue.move_to_end(scope, last=False)

    def _assign_work_unit(self, node: Any) -> None:
        if not self.ordered:
            self._order()
        scope = next(iter(self.workqueue))
        super()._assign_work_unit(node)
        if scope in ALONE_FIRST.values() and len(self.nodes) > 1:
            # nothing more for it: told now, it runs its last test at once and then ends
            self.alone.add(node)
            node.shutdown()

    def _reschedule(self, node: Any) -> None:
        if node not in self.alone:
            super()._reschedule(node)
