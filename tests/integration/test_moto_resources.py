"""moto's resource files kept parsed (local/moto_patches/resources.py): every resource a start of moto's
services reads is answered as moto's own loader parses it, each call a fresh object, and a kept
file written by one process is read by the next. Run in processes of their own: the patch
replaces moto's loader for the whole process, and the services' modules read their resources
as they are imported."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

PROGRAM = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    from moto.utilities import utils
    original = utils.load_resource
    from local.moto_patches.resources import keep_resources, make_resources_kept, _kept
    kept = Path(sys.argv[1])
    make_resources_kept(kept)
    found_kept = len(_kept)
    import moto.ssm.models  # imports EC2's models, which read 90-odd resource files
    import moto.ec2.models.instance_types as types
    keep_resources(kept)
    names = sorted(_kept)
    same = all(utils.load_resource(name) == original(name) for name in names)
    first = utils.load_resource(names[0])
    fresh = first is not utils.load_resource(names[0])
    offerings = all(
        offer["LocationType"] == location
        for location, regions in types.INSTANCE_TYPE_OFFERINGS.items()
        for offers in regions.values()
        for offer in offers
    )
    print(json.dumps({
        "kept_before": found_kept, "resources": len(names), "same": same, "fresh": fresh, "offerings": offerings
    }))
    """
)


def run(kept: Path) -> dict[str, object]:
    answer = subprocess.run(
        [sys.executable, "-c", PROGRAM, str(kept)], capture_output=True, text=True, timeout=120, check=True
    )
    import json

    result: dict[str, object] = json.loads(answer.stdout.strip().splitlines()[-1])
    return result


def test_a_start_reads_what_the_one_before_parsed_and_answers_as_moto_parses(tmp_path: Path) -> None:
    kept = tmp_path / "resources.marshal"
    first = run(kept)
    assert first["kept_before"] == 0
    assert kept.is_file()
    second = run(kept)
    assert second["kept_before"] == first["resources"]
    assert int(str(second["resources"])) > 50  # EC2's instance types and their offerings among them
    for started in (first, second):
        assert started["same"] is True  # every resource equal to moto's own parse
        assert started["fresh"] is True  # a new object each call
        assert started["offerings"] is True  # the offerings moto changed in place, each as moto made it


def test_an_unreadable_kept_file_is_parsed_again(tmp_path: Path) -> None:
    kept = tmp_path / "resources.marshal"
    kept.write_bytes(b"not marshal data")
    started = run(kept)
    assert started["kept_before"] == 0
    assert started["same"] is True
