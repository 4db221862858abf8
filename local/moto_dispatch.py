"""moto's server finds the backend of every request anew: under one lock for the whole server, it
lists moto's package directory (a ``stat`` per service) and tries every service's URL patterns
against the request's host. That is a pure function of the host, and it cost the local runtime
more than DynamoDB itself (`make bench ARGS="--ceiling"` under cProfile: about a third of the
moto process's busy time, every request waiting its turn for the lock). Wherever moto runs as a
server for Sundial (local/moto_process.py) the answer is remembered per host; the first request
for a host still asks moto. An upstream fix (caching in ``get_backend_for_host`` or
``backends.list_of_moto_modules``) would be the better place."""

from __future__ import annotations

import functools
from typing import Any


def make_dispatch_cached() -> None:
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication

    original = DomainDispatcherApplication.get_backend_for_host
    if getattr(original, "_sundial_cached", False):
        return
    found: dict[str | None, Any] = {}

    def get_backend_for_host(self: Any, host: str | None) -> Any:
        try:
            return found[host]
        except KeyError:
            backend = original(self, host)
            if backend:  # an unknown host is asked again (and printed again) as moto would
                found[host] = backend
            return backend

    functools.update_wrapper(get_backend_for_host, original)
    get_backend_for_host._sundial_cached = True  # type: ignore[attr-defined]
    DomainDispatcherApplication.get_backend_for_host = get_backend_for_host  # type: ignore[method-assign]
