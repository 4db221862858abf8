"""docs/deploy.md lists every deployment setting with its default: the guide cannot fall behind
the settings model."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from shared.settings.context import DeploymentSettings, context_key

pytestmark = pytest.mark.unit

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "deploy.md"
ROW = re.compile(r"^\| `(sundial:\w+)` \| `([^`]*)` \|", re.MULTILINE)


def test_every_setting_is_in_the_deploy_guide_with_its_default():
    listed = {key: json.loads(default) for key, default in ROW.findall(GUIDE.read_text())}
    expected = {context_key(name): field.default for name, field in DeploymentSettings.model_fields.items()}
    assert listed == expected


def test_the_defaults_in_the_guide_are_those_of_cdk_json():
    context = json.loads((GUIDE.parents[1] / "cdk.json").read_text())["context"]
    listed = {key: json.loads(default) for key, default in ROW.findall(GUIDE.read_text())}
    assert {key: context[key] for key in listed} == listed
