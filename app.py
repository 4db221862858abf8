#!/usr/bin/env python3
"""CDK entry point: `python app.py` (or `cdk synth`) writes the cloud assembly to cdk.out/.

Run directly, it takes context values as the CDK CLI does: `python app.py -c sundial:bucketShards=32`.
Settings out of bounds stop it with one message naming each key and what it accepts.
"""

from __future__ import annotations

import argparse
import os

from infra.app import build_app
from infra.settings import SettingsError


def _context_value(text: str) -> tuple[str, str]:
    key, separator, value = text.partition("=")
    if not separator or not key:
        raise argparse.ArgumentTypeError(f"expected key=value, got {text!r}")
    return key, value


parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
parser.add_argument(
    "-c", "--context", type=_context_value, action="append", default=[], metavar="KEY=VALUE", help="a context value"
)
arguments = parser.parse_args()
try:
    # The CDK CLI says where the assembly goes; run directly, it goes to cdk.out/ like the CLI's.
    app = build_app(outdir=os.environ.get("CDK_OUTDIR", "cdk.out"), overrides=dict(arguments.context))
except SettingsError as exc:
    raise SystemExit(f"Sundial's deployment settings (cdk.json context, -c key=value): {exc}") from None
app.synth()
