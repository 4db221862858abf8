#!/usr/bin/env python3
"""CDK entry point: `python app.py` (or `cdk synth`) writes the cloud assembly to cdk.out/."""

from __future__ import annotations

import os

from infra.app import build_app

# The CDK CLI says where the assembly goes; run directly, it goes to cdk.out/ like the CLI's.
build_app(outdir=os.environ.get("CDK_OUTDIR", "cdk.out")).synth()
