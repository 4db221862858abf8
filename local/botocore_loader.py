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
import os
import pickle
import sys
import tempfile
from pathlib import Path
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


class _KeptFileLoader(botocore.loaders.JSONFileLoader):
    """botocore's JSON files parsed once per botocore version and kept parsed (``pickle``, which
    keeps the ``OrderedDict`` botocore parses them into) beside the virtual environment: making a
    client of each of the seven services the runtime calls read 44 files: 0.15 s to make the
    clients, 0.105 s with the files kept (an idle machine; 1.0 s against 0.5 under `make test`'s
    load), in every process that makes them (the runtime, moto's process, each test worker).
    Only botocore's own data files are kept (a user's models under ``AWS_DATA_PATH`` are parsed
    each time); what a caller gets is a fresh object, as a parse gives. The files never change
    for a botocore version: the kept copy is named after it."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def load_file(self, file_path: str) -> Any:
        relative = os.path.relpath(file_path, _BOTOCORE_DATA)
        if relative.startswith(os.pardir):
            return super().load_file(file_path)
        kept = self.folder / f"{relative}.pickle"
        try:
            return pickle.loads(kept.read_bytes())  # noqa: S301 - written by this loader, in the venv
        except (OSError, pickle.UnpicklingError, EOFError, ValueError):
            pass
        data = super().load_file(file_path)
        if data is not None:
            _keep(kept, pickle.dumps(data, protocol=pickle.HIGHEST_PROTOCOL))
        return data


_BOTOCORE_DATA = os.path.join(os.path.dirname(botocore.__file__), "data")


def _keep(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (a process reading it meanwhile reads all or none);
    a read-only environment keeps nothing."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, prefix=path.name, delete=False) as file:
            file.write(data)
        os.replace(file.name, path)
    except OSError:
        pass


def kept_folder() -> Path:
    """Where this botocore version's parsed files are kept: in the virtual environment, whose
    botocore they are."""
    return Path(sys.prefix) / "sundial-cache" / f"botocore-{botocore.__version__}"


@functools.cache
def _loader(data_path: str | None) -> botocore.loaders.Loader:
    loader = botocore.loaders.create_loader(data_path)
    loader._search_paths = _SearchPaths(loader.search_paths)
    loader.file_loader = _KeptFileLoader(kept_folder())
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
