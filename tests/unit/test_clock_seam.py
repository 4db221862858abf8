"""One clock seam (shared/domain/times.py): Sundial's code reads the time through ``now_ms``,
``utc_now`` and ``sleep``, which the local runtime's virtual clock can move, and never from the
wall, except where the wall is what is meant; each such read says so with ``# wall: <why>`` (a
request rate in real seconds, DynamoDB's backoff, a receiver's HTTP date). This test finds every
other read."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
SEAM = ROOT / "shared" / "domain" / "times.py"
WALL = re.compile(
    r"\btime\.(time|time_ns|sleep|monotonic|monotonic_ns|perf_counter)\b|\bdatetime\.(now|utcnow|today)\("
    r"|\bdate\.today\(|\bfrom time import\b|(?<![\w.])(time|monotonic|perf_counter)\(\)"
)


def wall_reads() -> list[str]:
    found = []
    for package in ("shared", "functions"):
        for path in sorted((ROOT / package).rglob("*.py")):
            if path == SEAM:
                continue
            lines = path.read_text().splitlines()
            for number, line in enumerate(lines, start=1):
                code = line.split("#", 1)[0]
                if not WALL.search(code):
                    continue
                around = " ".join(lines[max(0, number - 2) : number + 1])
                if "# wall:" not in around:
                    found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    return found


def test_nothing_reads_the_wall_but_the_seam_and_the_reads_that_say_why() -> None:
    assert wall_reads() == []


@pytest.mark.parametrize(
    "line", ["now = time.time()", "datetime.now(UTC)", "from time import sleep", "t = monotonic()"]
)
def test_the_search_finds_a_wall_read(line: str) -> None:
    assert WALL.search(line)


def test_the_process_clock_is_the_one_the_services_read() -> None:
    from shared.domain import times

    class Stopped:
        def now_ms(self) -> int:
            return 1_000

        def sleep(self, seconds: float) -> None:
            raise AssertionError("nothing waits here")

    before = times.use_clock(Stopped())
    try:
        assert times.now_ms() == 1_000
        assert times.utc_now() == times.from_ms(1_000)
    finally:
        times.use_clock(before)
    assert times.now_ms() > 1_000
