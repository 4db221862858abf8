"""moto's server finds the backend of every request anew: under one lock for the whole server, it
lists moto's package directory (a ``stat`` per service) and tries every service's URL patterns
against the request's host. That is a pure function of the host, and it cost the local runtime
more than DynamoDB itself (`make bench ARGS="--ceiling"` under cProfile: about a third of the
moto process's busy time, every request waiting its turn for the lock). Wherever moto runs as a
server for Sundial (local/moto_host/process.py) the answer is remembered per host; the first request
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


def make_actions_remembered() -> None:
    """moto answers each request after listing its handler class's methods again
    (``method_names_from_class``: ``inspect.getmembers`` over some 80 attributes) to see whether the
    action is one: a pure function of the class, about a twentieth of the moto process's busy
    time while an API client registers tasks one by one (py-spy). The list is remembered per
    class; the first request for a class still lists it. Install it after every patch that adds
    methods to a response class (local/moto_host/process.py installs it first, but Sundial's patches
    only replace existing methods, whose names do not change). An upstream fix would cache it in
    ``moto.core.utils.method_names_from_class``."""
    from moto.core import responses

    original = responses.method_names_from_class
    if getattr(original, "_sundial_cached", False):
        return
    found: dict[type, list[str]] = {}

    def method_names_from_class(clazz: Any) -> list[str]:
        try:
            return found[clazz]
        except KeyError:
            names = found[clazz] = original(clazz)
            return names

    functools.update_wrapper(method_names_from_class, original)
    method_names_from_class._sundial_cached = True  # type: ignore[attr-defined]
    responses.method_names_from_class = method_names_from_class
