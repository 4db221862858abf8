"""One botocore data loader for every botocore session of the process.

Each botocore ``Session`` makes its own data loader, and a loader reads and parses the JSON
files it is asked for once per loader: the endpoints and partitions (about 1 MB of JSON) when the
session makes its first client, then the service's model. PynamoDB makes a session for each
model's connection (``pynamodb.connection.base.Connection.session``) and boto3 one per default
session, so a process that makes connections afresh parses those files again every time: the
integration tests did for every test (a fresh moto account each, its connections made anew),
about 0.4 s of CPU per test, and the local runtime does for each of its functions' threads.

The files are data that never change while a process runs, and a loader already hands the same
parsed objects to everything in its session; sharing the loader hands them to every session.
This changes nothing a client does, only how often the same file is parsed: the local runtime
and the test suites install it; the deployed functions do not need it (a Lambda environment
makes its connections once).
"""

from __future__ import annotations

import functools
from typing import Any

import botocore.loaders
import botocore.session

_INSTALLED = "_sundial_shared_loader"


class _SearchPaths(list[str]):
    """A loader's search paths that take each path once: every ``boto3.Session`` appends boto3's
    data directory to its botocore session's loader (``boto3.session.Session._setup_loader``),
    which, shared, would grow by one entry per boto3 session."""

    def append(self, path: str) -> None:
        if path not in self:
            super().append(path)


@functools.cache
def _loader(data_path: str | None) -> botocore.loaders.Loader:
    loader = botocore.loaders.create_loader(data_path)
    loader._search_paths = _SearchPaths(loader.search_paths)
    return loader


def _register_data_loader(self: botocore.session.Session) -> None:
    self._components.lazy_register_component("data_loader", lambda: _loader(self.get_config_variable("data_path")))


def share_data_loader() -> None:
    """Every botocore session made from now on reads its data files through one loader per data
    path (idempotent)."""
    session_class: Any = botocore.session.Session
    if getattr(session_class, _INSTALLED, False):
        return
    session_class._register_data_loader = _register_data_loader
    setattr(session_class, _INSTALLED, True)
