"""`make synth`'s gate: any finding left in the validation report fails, templates come from the manifest."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cdk_nag import AwsSolutionsChecks

from infra import synth_check
from shared.settings.context import context_key
from tests.infrastructure.conftest import EVERYTHING, Built, Synthesized

pytestmark = pytest.mark.infrastructure


def test_the_session_assembly_passes_the_gate(synthesized: Synthesized) -> None:
    assert synth_check.unacknowledged_findings(synthesized.outdir) == []
    templates = synth_check.stack_templates(synthesized.outdir)
    assert [path.name for path in templates] == ["Sundial.template.json"]
    assert all(path.is_file() for path in templates)


def test_every_optional_part_on_and_off_passes_the_gate(
    synthesized: Synthesized, everything: Synthesized, unalarmed: Built, tmp_path: Path
) -> None:
    """``make synth``'s checks on the assemblies the suite synthesizes anyway: cdk.json's (the
    canary, the alarms and the dashboard off, the scheduler's function URL on, its default) and
    the one with each of them on; and the stack without the function URL (the dashboard and the
    canary without alarms: cdk-nag run on it, its template written out). No finding left, and
    cfn-lint clean on the three templates (one cfn-lint run)."""
    url = context_key("scheduler_function_url")
    assert not any(everything.stack.settings.context()[key] is False for key in EVERYTHING)
    flags = [key for key, value in EVERYTHING.items() if isinstance(value, bool)]  # ecsTaskRoles names roles
    assert all(synthesized.stack.settings.context()[key] is (key == url) for key in flags)
    assert unalarmed.stack.settings.context()[url] is False
    templates = []
    for built in (synthesized, everything):
        assert synth_check.unacknowledged_findings(built.outdir) == []
        templates += synth_check.stack_templates(built.outdir)
    assert AwsSolutionsChecks().validate_scope(unalarmed.stack).violations == []
    without_url = tmp_path / "Sundial-without-url.template.json"
    without_url.write_text(json.dumps(unalarmed.template.to_json()))
    assert len(templates) == 2
    assert synth_check.cfn_lint([*templates, without_url])


def test_warnings_count_as_findings(tmp_path: Path) -> None:
    report = {
        "pluginReports": [
            {
                "pluginName": "AwsSolutions",
                "violations": [
                    {
                        "ruleName": "AwsSolutions-DDB3",
                        "severity": "warning",
                        "description": "no PITR",
                        "violatingConstructs": [{"constructPath": "Sundial/Other/Resource"}],
                    }
                ],
            }
        ]
    }
    (tmp_path / synth_check.VALIDATION_REPORT).write_text(json.dumps(report))
    [finding] = synth_check.unacknowledged_findings(tmp_path)
    assert "warning AwsSolutions-DDB3" in finding
    assert "Sundial/Other/Resource" in finding


def test_templates_of_nested_assemblies_are_linted_too(tmp_path: Path) -> None:
    nested = tmp_path / "assembly-Stage"
    nested.mkdir()
    (tmp_path / "manifest.json").write_text(
        json.dumps(
            {
                "artifacts": {
                    "Top": {"type": "aws:cloudformation:stack", "properties": {"templateFile": "Top.template.json"}},
                    "Stage": {"type": "cdk:cloud-assembly", "properties": {"directoryName": "assembly-Stage"}},
                    "Tree": {"type": "cdk:tree", "properties": {"file": "tree.json"}},
                }
            }
        )
    )
    (nested / "manifest.json").write_text(
        json.dumps(
            {
                "artifacts": {
                    "Inner": {
                        "type": "aws:cloudformation:stack",
                        "properties": {"templateFile": "Inner.template.json"},
                    }
                }
            }
        )
    )
    assert synth_check.stack_templates(tmp_path) == [
        tmp_path / "Top.template.json",
        nested / "Inner.template.json",
    ]
