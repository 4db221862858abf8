"""What the console tests share: signing in through the form, calling the API as a tenant, and
waiting on the API for what the console is then expected to show."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.support.eventually import until
from tests.support.runtime import Client


def sign_in(page: Any, key: str, where: str = "#/tasks") -> None:
    """Open the console at ``where`` and sign in with ``key`` through its form, landing there
    (the tasks page unless told; without a hash the console lands on its home)."""
    page.goto("/console/" + where)
    page.get_by_label("API key").fill(key)
    page.get_by_role("button", name="Sign in").click()
    if where == "#/tasks":
        page.get_by_role("heading", name="Tasks").wait_for()


def nav(page: Any, label: str) -> None:
    page.get_by_role("navigation", name="Console").get_by_role("link", name=label).click()


def as_tenant(sundial: Client, key: str) -> Callable[..., tuple[int, Any]]:
    """``call("POST", "/v1/tasks", spec)`` with the tenant's key."""

    def call(method: str, path: str, body: Any = None) -> tuple[int, Any]:
        return sundial.call(method, path, body, {"Authorization": f"Bearer {key}"})

    return call


def eventually(check: Callable[[], Any], timeout: float = 20, what: str = "the condition") -> Any:
    """``check()``'s first truthy answer, polled for at most ``timeout`` seconds."""
    if answer := until(check, timeout, poll=0.2):
        return answer
    raise AssertionError(f"{what} did not happen within {timeout} s")


def http_target(url: str, **more: Any) -> dict[str, Any]:
    return {"http": {"url": url, **more}}
