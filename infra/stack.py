"""The repository's stack (app.py): a Stack holding one :class:`~.sundial.Sundial` under the id
``Default``. CDK leaves a construct whose id is ``Default`` out of the logical IDs of what it holds,
so every resource keeps the logical ID it had when this stack composed the constructs itself: a
deployment made before the construct existed upgrades in place (docs/construct.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aws_cdk import Stack
from constructs import Construct

from . import names
from .settings import DeploymentSettings
from .sundial import Sundial


class SundialStack(Stack):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        settings: DeploymentSettings,
        build_dir: str | Path | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, construct_id, description=names.STACK_DESCRIPTION, **kwargs)
        self.sundial = Sundial(self, names.CONSTRUCT_ID, settings=settings, build_dir=build_dir)
        # Its parts, as the stack named them before it held the construct (the tests, bench/).
        self.settings = self.sundial.settings
        self.bundle = self.sundial.bundle
        self.storage = self.sundial.storage
        self.signing = self.sundial.signing
        self.jobs = self.sundial.jobs
        self.pipeline = self.sundial.pipeline
        self.keys = self.sundial.keys
        self.api = self.sundial.api
        self.scheduler_url = self.sundial.scheduler
        self.canary = self.sundial.canary
        self.monitoring = self.sundial.monitoring
