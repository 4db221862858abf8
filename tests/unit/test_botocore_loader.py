"""botocore's data files kept parsed (local/botocore_loader.py, ``_KeptFileLoader``): each file
answers what botocore's own JSON loader parses, ``OrderedDict`` where it makes one, from the
parse the first time and from the kept copy after; a file outside botocore's data is never kept."""

from __future__ import annotations

import os
from collections import OrderedDict
from pathlib import Path
from typing import Any

import botocore
import botocore.loaders
import pytest

from local.botocore_loader import _KeptFileLoader

pytestmark = pytest.mark.unit

DATA = Path(os.path.dirname(botocore.__file__)) / "data"


def same(a: Any, b: Any) -> bool:
    """Equal, and of the same types all the way down (an ``OrderedDict`` is not a dict here)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[key], b[key]) for key in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def files() -> list[str]:
    """Paths (without their extension) of the files a client of these services reads, and the
    endpoints' and partitions' files."""
    found = [str(DATA / "endpoints"), str(DATA / "partitions"), str(DATA / "sdk-default-configuration")]
    for service in ("dynamodb", "sqs", "ssm"):
        version = sorted((DATA / service).iterdir())[-1]
        for path in version.iterdir():
            found.append(str(path).split(".json")[0])
    return found


def test_each_file_is_answered_as_botocore_parses_it_from_the_parse_then_from_the_kept_copy(tmp_path: Path) -> None:
    parser, kept = botocore.loaders.JSONFileLoader(), _KeptFileLoader(tmp_path)
    paths = files()
    assert len(paths) > 10
    for path in paths:
        expected = parser.load_file(path)
        assert isinstance(expected, OrderedDict), path
        first = kept.load_file(path)
        assert same(first, expected), path
        assert any(tmp_path.rglob("*.pickle")), path  # kept
        second = kept.load_file(path)
        assert same(second, expected), path
        assert second is not first  # a fresh object each time, as a parse
    assert kept.load_file(str(DATA / "no-such-file")) is None


def test_a_file_outside_botocores_data_is_parsed_each_time_and_never_kept(tmp_path: Path) -> None:
    own = tmp_path / "models"
    own.mkdir()
    (own / "mine.json").write_text('{"b": 1, "a": [2]}')
    kept_folder = tmp_path / "kept"
    kept = _KeptFileLoader(kept_folder)
    assert same(kept.load_file(str(own / "mine")), OrderedDict([("b", 1), ("a", [2])]))
    (own / "mine.json").write_text('{"c": 3}')
    assert kept.load_file(str(own / "mine")) == {"c": 3}  # read again: nothing kept
    assert not kept_folder.exists()


def test_an_unreadable_kept_copy_is_parsed_again(tmp_path: Path) -> None:
    kept = _KeptFileLoader(tmp_path)
    path = str(DATA / "partitions")
    kept.load_file(path)
    (copy,) = tmp_path.rglob("*.pickle")
    copy.write_bytes(b"not a pickle")
    assert same(kept.load_file(path), botocore.loaders.JSONFileLoader().load_file(path))
