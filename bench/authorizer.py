"""`make bench ARGS="--authorizer"`: what the authorizer adds to a request on the local runtime.

Starts the local runtime (moto as its own process), creates a tenant with the admin key over
HTTP, then measures in this process, N calls each after a warm-up:

* ``functions.authorizer.handler.authorize`` for the tenant's valid key (a hash and one GetItem
  of the key) and for no key at all (the local default tenant: its limits only);
* the API function on ``GET /v1/tasks?limit=1`` called directly with the authorizer's answer
  already in its event, and the same request through the local gateway's wrapper
  (``local.apigw.with_authorizer``: the authorizer, then the API), as the runtime serves it;
* the same request over HTTP, with the key and with no key (both through the authorizer).

All of it against moto on loopback: the figures compare the parts, they are not AWS latencies
(API Gateway caches an authorizer's answer per key for 60 s; locally nothing is cached).
"""

from __future__ import annotations

import json
import statistics
import time
import urllib.request
from collections.abc import Callable
from typing import Any

from local.moto_server import free_port


def quantiles(samples: list[float]) -> str:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * len(ordered)) - 1)]
    return f"p50 {statistics.median(ordered):6.2f} ms, p99 {p99:6.2f} ms, mean {statistics.fmean(ordered):6.2f} ms"


def timed(calls: int, call: Callable[[], Any], warm_up: int = 20) -> list[float]:
    for _ in range(warm_up):
        call()
    samples = []
    for _ in range(calls):
        started = time.perf_counter()
        call()
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def http(port: int, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None) -> Any:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data, method=method)
    request.add_header("Content-Type", "application/json")
    for name, value in (headers or {}).items():
        request.add_header(name, value)
    with urllib.request.urlopen(request, timeout=30) as answer:  # noqa: S310 - loopback
        return json.loads(answer.read() or b"null")


def authorizer_bench(calls: int) -> None:
    import secrets

    from local.runtime import Runtime
    from local.settings import LocalSettings

    admin_key = f"sk_admin_{secrets.token_urlsafe(24)}"
    from shared.domain.tenants import MAX_BURST, MAX_REQUESTS_PER_SECOND

    # The highest limits (the new tenant's and the default tenant's): no request of the loop is a 429.
    functions = LocalSettings.from_env().functions.with_resources(
        admin_key=admin_key, tenant_requests_per_second=MAX_REQUESTS_PER_SECOND, tenant_burst=MAX_BURST
    )
    settings = LocalSettings.from_env(port=free_port(), delay_queues=1, functions=functions)
    runtime = Runtime(settings)
    runtime.start()
    try:
        from functions.api.access import is_public
        from functions.api.handler import handler as api
        from functions.authorizer.handler import authorize
        from local.apigw import LocalContext, authorizer_event, proxy_event, with_authorizer

        port = runtime.port
        created = http(port, "POST", "/v1/tenants", {"id": f"bench-{secrets.token_hex(3)}"}, admin(admin_key))
        key = created["key"]["secret"]
        anonymous = runtime.function_settings.default_tenant
        with_key = proxy_event("GET", "/v1/tasks", {"limit": ["1"]}, {"Authorization": f"Bearer {key}"})
        no_key = proxy_event("GET", "/v1/tasks", {"limit": ["1"]})
        policy = authorize(authorizer_event(with_key), anonymous)
        assert policy["context"]["tenant"] == created["id"], policy
        authorized = {
            **with_key,
            "requestContext": {
                **with_key["requestContext"],
                "authorizer": {**policy["context"], "principalId": policy["principalId"]},
            },
        }
        gateway = with_authorizer(api, authorize, is_public, anonymous=anonymous)

        def served(event: dict[str, Any], through: Callable[[dict[str, Any], Any], dict[str, Any]]) -> None:
            answer = through(event, LocalContext())
            assert answer["statusCode"] == 200, answer

        print(f"\nthe authorizer on the local runtime (moto on loopback), {calls} sequential calls each:")
        figures = {
            "authorize(), a tenant's key": timed(calls, lambda: authorize(authorizer_event(with_key), anonymous)),
            "authorize(), no key (local default)": timed(calls, lambda: authorize(authorizer_event(no_key), anonymous)),
            "API GET /v1/tasks?limit=1, no authorizer": timed(calls, lambda: served(authorized, api)),
            "API GET /v1/tasks?limit=1, authorizer + API": timed(calls, lambda: served(with_key, gateway)),
            "HTTP GET /v1/tasks?limit=1, a tenant's key": timed(
                calls, lambda: http(port, "GET", "/v1/tasks?limit=1", headers={"Authorization": f"Bearer {key}"})
            ),
            "HTTP GET /v1/tasks?limit=1, no key": timed(calls, lambda: http(port, "GET", "/v1/tasks?limit=1")),
        }
        width = max(map(len, figures))
        for name, samples in figures.items():
            print(f"  {name:<{width}}  {quantiles(samples)}")
        added = statistics.median(figures["API GET /v1/tasks?limit=1, authorizer + API"]) - statistics.median(
            figures["API GET /v1/tasks?limit=1, no authorizer"]
        )
        print(f"  the authorizer adds {added:.2f} ms to the API's median request here")
    finally:
        runtime.stop()


def admin(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}
