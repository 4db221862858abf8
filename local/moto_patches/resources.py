"""moto's resource files, parsed once per moto version and kept parsed (``marshal``) beside the
virtual environment.

Importing Parameter Store's models imports EC2's (``moto.ssm.models`` reads EC2's AMIs), and
EC2's read and parse 93 JSON resource files as they import: the instance types and their
offerings in every region and zone, 0.12-0.16 s of every moto start, which a restart waits
for (``-X importtime``: ``moto.ec2.models.instance_types`` the largest module of all). The files
are moto's package data and never change for a moto version: :func:`make_resources_kept`
answers ``moto.utilities.utils.load_resource`` from what an earlier start parsed, and keeps what
it had to parse for the next one (:func:`keep_resources`).

What a caller gets is what moto's own loader returns, a fresh object each call: a resource is
kept as its serialized bytes, taken the moment it is parsed (a caller that changes what it got,
as EC2's instance type offerings are given their location type, changes its own copy), and
deserialized anew for each call. A resource that does not serialize (not plain JSON data) is
parsed by moto every time. tests/integration/test_moto_resources.py compares every resource
with moto's own parse."""

from __future__ import annotations

import contextlib
import marshal
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

_INSTALLED = "_sundial_kept"
_kept: dict[str, bytes] = {}
_parsed: dict[str, bytes] = {}
"""Resources parsed by moto in this process (not found kept): written by :func:`keep_resources`."""


def kept_path() -> Path:
    """Where this moto version's parsed resources are kept: in the virtual environment, whose moto
    they are."""
    from moto import __version__

    return Path(sys.prefix) / "sundial-cache" / f"moto-{__version__}-resources.marshal"


def make_resources_kept(path: Path | None = None) -> None:
    """``load_resource`` answered from ``path`` (:func:`kept_path`) where it holds the resource.
    Install it before moto's service modules are imported: they import the function by name."""
    from moto.utilities import utils

    original = utils.load_resource
    if getattr(original, _INSTALLED, False):
        return
    try:
        loaded = marshal.loads((path or kept_path()).read_bytes())  # noqa: S302 - written by this module, in the venv
        _kept.update(loaded if isinstance(loaded, dict) else {})
    except (OSError, ValueError, EOFError, TypeError):
        pass  # none kept yet (or unreadable): parsed by moto, and kept at the end of the start

    def load_resource(resource: str) -> Any:
        if (kept := _kept.get(resource)) is not None:
            return marshal.loads(kept)  # noqa: S302 - bytes this process made or read from its own file
        data = original(resource)
        with contextlib.suppress(ValueError):  # not plain data: moto parses it each time
            _parsed[resource] = _kept[resource] = marshal.dumps(data)
        return data

    setattr(load_resource, _INSTALLED, True)
    utils.load_resource = load_resource


def keep_resources(path: Path | None = None) -> None:
    """Write what this process parsed to ``path`` with what was kept there (atomically: a start
    reading it meanwhile reads the old file or the new one). Nothing to write: nothing done."""
    if not _parsed:
        return
    target = path or kept_path()
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=target.parent, prefix=target.name, delete=False) as file:
            file.write(marshal.dumps(dict(_kept)))
        os.replace(file.name, target)
        _parsed.clear()
    except OSError:
        pass  # a read-only environment: moto parses them again next time
