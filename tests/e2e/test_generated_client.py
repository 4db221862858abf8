"""A client generated from ``/v1/openapi.json`` by a standard generator (openapi-python-client)
works against the local runtime with typed objects: every 2xx answer a client reads has a schema,
so the generator makes a class of it, and the answers parse into those classes.

The operations are found by method and path in the generated code, not by operationId or class
name, so renaming either does not break the test; what it checks is the contract."""

from __future__ import annotations

import importlib
import json
import re
import subprocess
import sys
import time
import typing
from datetime import datetime
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.support.eventually import eventually, until

pytestmark = pytest.mark.e2e

PACKAGE = "sundial_generated_client"
GENERATOR = Path(sys.executable).with_name("openapi-python-client")
CONFIG = f"post_hooks: []\nproject_name_override: sundial-generated-client\npackage_name_override: {PACKAGE}\n"
"""No post hooks: the generator would run ruff on the code it writes, which the test does not need."""


@pytest.fixture
def generated(sundial, tmp_path) -> typing.Iterator[ModuleType]:
    status, spec = sundial.call("GET", "/v1/openapi.json")
    assert status == 200
    (tmp_path / "openapi.json").write_text(json.dumps(spec))
    (tmp_path / "config.yaml").write_text(CONFIG)
    assert GENERATOR.exists(), f"{GENERATOR} is missing: pip install -r requirements-dev.txt"
    command = [str(GENERATOR), "generate", "--path", "openapi.json", "--config", "config.yaml"]
    done = subprocess.run(
        [*command, "--output-path", PACKAGE, "--meta", "none"],
        check=False,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    # the generator leaves out an operation whose schemas it cannot read, and says so
    assert "will not be generated" not in output, output
    sys.path.insert(0, str(tmp_path))
    try:
        yield importlib.import_module(PACKAGE)
    finally:
        sys.path.remove(str(tmp_path))
        for name in [name for name in sys.modules if name == PACKAGE or name.startswith(PACKAGE + ".")]:
            del sys.modules[name]


def operation(package: ModuleType, method: str, path: str) -> ModuleType:
    """The generated module that calls ``method path``."""
    call = re.compile(rf'"method": "{method.lower()}",\s*"url": "{re.escape(path)}"')
    root = Path(typing.cast(str, package.__file__)).parent
    found = [file for file in (root / "api").rglob("*.py") if call.search(file.read_text())]
    assert len(found) == 1, f"{method} {path}: generated modules {found}"
    relative = found[0].relative_to(root).with_suffix("")
    return importlib.import_module(".".join((PACKAGE, *relative.parts)))


def success_classes(module: ModuleType, status: int) -> tuple[type, ...]:
    """The generated classes ``module`` parses a ``status`` answer into: none when the document
    gives that answer no schema (the client then hands back bare JSON)."""
    source = Path(typing.cast(str, module.__file__)).read_text()
    branch = re.search(rf"if response\.status_code == {status}:(.*?)(?=\n    if |\Z)", source, re.DOTALL)
    assert branch, f"{module.__name__} does not handle a {status} answer"
    names = dict.fromkeys(re.findall(r"(\w+)\.from_dict\(", branch.group(1)))
    return tuple(getattr(module, name) for name in names)


def typed(module: ModuleType, response: Any, status: int) -> Any:
    """The parsed answer, checked to be an instance of the generated class for ``status``."""
    assert response.status_code == status, (response.status_code, response.content[:500])
    classes = success_classes(module, status)
    assert classes, (
        f"{module.__name__}: the {status} answer has no schema in /v1/openapi.json, so the generated client "
        f"returns untyped JSON ({type(response.parsed).__name__}), not a model"
    )
    assert isinstance(response.parsed, classes), (type(response.parsed), classes)
    assert type(response.parsed).__module__.startswith(f"{PACKAGE}.models.")
    return response.parsed


def body_class(module: ModuleType, member: str) -> Any:
    """The generated class of the request body ``module`` sends that has ``member``: a body that
    is exactly one of two shapes (a task with ``target`` or with ``targets``) is two classes."""
    annotation = typing.get_type_hints(module.sync_detailed)["body"]
    options = [option for option in (typing.get_args(annotation) or (annotation,)) if hasattr(option, "from_dict")]
    chosen = [option for option in options if member in typing.get_type_hints(option)]
    assert len(chosen) == 1, (annotation, member)
    return chosen[0]


def test_a_generated_client_registers_a_task_and_reads_it_its_runs_and_a_page_of_tasks(
    sundial, generated, receiver
) -> None:
    client = generated.Client(base_url=sundial.base, raise_on_unexpected_status=True, httpx_args={"trust_env": False})
    name = f"generated-client-{time.time_ns()}"
    url = receiver.url + "/generated"

    create = operation(generated, "POST", "/v1/tasks")
    body = body_class(create, "target").from_dict(
        {"name": name, "schedule": {"after_seconds": 1}, "target": {"http": {"url": url}}, "payload": {"n": 1}}
    )
    task = typed(create, create.sync_detailed(client=client, body=body), 201)
    assert isinstance(task.id, str)
    assert task.name == name
    assert isinstance(task.next_fire_at, datetime)

    read = operation(generated, "GET", "/v1/tasks/{task_id}")
    again = typed(read, read.sync_detailed(task.id, client=client), 200)
    assert type(again) is type(task)
    assert again.id == task.id
    assert again.next_fire_at == task.next_fire_at

    assert len(receiver.wait_for("/generated", 1, timeout=20)) == 1

    runs = operation(generated, "GET", "/v1/tasks/{task_id}/runs")

    def listed() -> Any:
        page = typed(runs, runs.sync_detailed(task.id, client=client), 200)
        return page if page.items else None

    page = until(listed, 10, poll=0.2) or typed(runs, runs.sync_detailed(task.id, client=client), 200)
    assert len(page.items) == 1
    run = page.items[0]
    assert type(run).__module__.startswith(f"{PACKAGE}.models.")
    assert run.task_id == task.id
    assert isinstance(run.scheduled_for, datetime)

    listing = operation(generated, "GET", "/v1/tasks")

    def listed() -> None:
        tasks = typed(listing, listing.sync_detailed(client=client, name_prefix=name, limit=10), 200)
        assert [type(item) for item in tasks.items] == [type(task)]
        assert tasks.items[0].id == task.id

    eventually(listed)
