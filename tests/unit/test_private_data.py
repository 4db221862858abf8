"""A data folder and its snapshot are their owner's alone (local/moto_host/persist.py): made so, and a
folder or a file made before, wider, is tightened."""

from __future__ import annotations

import stat

import pytest

from local.private_files import private_file, private_folder

pytestmark = pytest.mark.unit


def test_a_data_folder_and_its_files_are_made_for_their_owner_only_and_older_ones_tightened(tmp_path) -> None:
    made = private_folder(tmp_path / "new" / "data")
    assert stat.S_IMODE(made.stat().st_mode) == 0o700
    older = tmp_path / "older"
    older.mkdir(mode=0o755)
    older.chmod(0o755)
    assert stat.S_IMODE(private_folder(older).stat().st_mode) == 0o700
    with private_file(made / "moto.pickle") as file:
        file.write(b"secret")
    assert stat.S_IMODE((made / "moto.pickle").stat().st_mode) == 0o600
    wide = made / "lock"
    wide.write_text("")
    wide.chmod(0o644)
    with private_file(wide, "w") as file:
        file.write("x")
    assert stat.S_IMODE(wide.stat().st_mode) == 0o600
    with private_file(wide, "a") as file:
        file.write("y")
    assert wide.read_text() == "xy"
