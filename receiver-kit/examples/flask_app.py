"""A Flask receiver of Sundial's callbacks (``pip install flask ./receiver-kit``).

    SUNDIAL_SIGNING_SECRET=whsec_... python examples/flask_app.py

and register a task whose target is ``{"http": {"url": "http://<this host>:8000/sundial"}}``.
"""

from __future__ import annotations

import os
from typing import Any

from flask import Flask, request
from sundial_receiver import Callback, MemoryStore, Receiver


def create_app(receiver: Receiver, process: Any) -> Flask:
    """The app: one route that verifies, de-duplicates and hands each run to ``process`` once."""
    app = Flask(__name__)

    @app.post("/sundial")
    def sundial() -> Any:
        answer = receiver.handle(request.get_data(), request.headers, process)
        return answer.body, answer.status

    return app


def close_order(callback: Callback) -> None:
    print(f"run {callback.run_id} of task {callback.task_id}, attempt {callback.attempt}: {callback.payload}")


def main() -> Flask:
    """The app of ``SUNDIAL_SIGNING_SECRET`` (several during a rotation: space-separated)."""
    return create_app(Receiver(os.environ["SUNDIAL_SIGNING_SECRET"].split(), MemoryStore()), close_order)


if __name__ == "__main__":
    main().run(port=8000)
