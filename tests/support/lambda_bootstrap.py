"""Lambda's Python runtime in miniature, for an interpreter that has nothing but the standard
library: ``python -I -S -B lambda_bootstrap.py <task root> <layer> <handler> [<timeout ms>]``.

It puts the function's code (Lambda's ``/var/task``) and the layer's ``python/`` directory
(``/opt/python``) first on ``sys.path``, imports the handler named as the function's ``Handler``
property names it (``functions.api.handler.handler``), and then, like a warm Lambda execution
environment, answers invocations until its stdin ends: one JSON event per line in, one JSON line
out with ``result`` (what the handler returned) or ``error`` (its type, message and traceback),
and ``foreign``: every loaded module whose file lies outside the task root, the layer and the
standard library (there should be none: anything there came from somewhere Lambda does not have).

The handler's own output (Powertools' logs and metrics print to stdout) goes to stderr: the
answers have the original stdout to themselves. Standard library only, by design: this file runs
where nothing else is importable.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import sysconfig
import time
import traceback
import uuid
from typing import Any

SELF = os.path.realpath(__file__)


class Context:
    """What Lambda hands a handler as its second argument (the parts Powertools reads)."""

    def __init__(self, function_name: str, timeout_ms: int = 30_000) -> None:
        self.function_name = function_name
        self._deadline = time.monotonic() + timeout_ms / 1000
        self.function_version = "$LATEST"
        self.memory_limit_in_mb = 256
        self.invoked_function_arn = f"arn:aws:lambda:us-east-1:123456789012:function:{function_name}"
        self.aws_request_id = str(uuid.uuid4())
        self.log_group_name = f"/aws/lambda/{function_name}"
        self.log_stream_name = "sandbox"

    def get_remaining_time_in_millis(self) -> int:
        """Counted down from the function's timeout, as Lambda's."""
        return max(0, round((self._deadline - time.monotonic()) * 1000))


def foreign_modules(shipped: list[str], stdlib: list[str]) -> list[str]:
    """Loaded modules whose file lies neither under ``shipped`` (the task root, the layer) nor in
    the standard library (its directories, but not the site-packages inside them)."""
    found = []
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        if not path:
            continue
        real = os.path.realpath(path)
        if real == SELF or any(real.startswith(root) for root in shipped):
            continue
        installed = f"{os.sep}site-packages{os.sep}" in real or f"{os.sep}dist-packages{os.sep}" in real
        if not installed and any(real.startswith(root) for root in stdlib):
            continue
        found.append(f"{name} ({path})")
    return sorted(found)


def main(argv: list[str]) -> int:
    task_root, layer, handler_name = argv[1:4]
    timeout_ms = int(argv[4]) if len(argv) > 4 else 30_000
    site = os.path.join(layer, "python")
    sys.path[:0] = [task_root, site]
    shipped = [os.path.realpath(path) + os.sep for path in (task_root, site)]
    stdlib = [os.path.realpath(sysconfig.get_paths()[kind]) + os.sep for kind in ("stdlib", "platstdlib")]
    answers = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # the handler's prints go to stderr
    module_name, _, attribute = handler_name.rpartition(".")
    try:
        handler = getattr(importlib.import_module(module_name), attribute)
        init_error: dict[str, str] | None = None
    except Exception as exc:  # an import error is the answer to every invocation (as Lambda's init error)
        init_error = {"type": type(exc).__name__, "message": str(exc), "trace": traceback.format_exc()}
    function_name = os.environ.get("AWS_LAMBDA_FUNCTION_NAME", "sandbox")
    for line in sys.stdin:
        outcome: dict[str, Any] = {}
        if init_error is not None:
            outcome["error"] = init_error
        else:
            try:
                outcome["result"] = handler(json.loads(line), Context(function_name, timeout_ms))
            except Exception as exc:
                outcome["error"] = {"type": type(exc).__name__, "message": str(exc), "trace": traceback.format_exc()}
        outcome["foreign"] = foreign_modules(shipped, stdlib)
        answers.write(json.dumps(outcome, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
