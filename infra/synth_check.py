"""`make synth`: synthesize the app, then fail on any cdk-nag finding or cfn-lint problem.

    python -m infra.synth_check [--outdir cdk.out]

1. Synthesizes the app (the same :func:`infra.app.build_app` that ``app.py`` and ``cdk synth``
   run) into ``--outdir``. cdk-nag errors already stop the synth there.
2. Reads the cloud assembly's ``validation-report.json`` and fails on *any* violation left in
   it, warnings included: a finding is either fixed or acknowledged with a reason on the one
   construct it is about.
3. Runs cfn-lint on every CloudFormation template of the assembly (read from its manifest,
   so stale templates from an earlier synth in the same directory are not linted). W3005
   ("dependency already enforced") is ignored: CDK adds an explicit DependsOn on a function's
   role next to the GetAtt, by design.

Exit status 0 when all is clean, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

CFN_LINT_IGNORED = ("W3005",)
VALIDATION_REPORT = "validation-report.json"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m infra.synth_check",
        description="Synthesize, fail on any cdk-nag finding, run cfn-lint on every template.",
    )
    parser.add_argument("--outdir", default="cdk.out", help="cloud assembly directory (default: cdk.out)")
    args = parser.parse_args(argv)
    outdir = Path(args.outdir)

    if not synthesize(outdir):
        return 1
    findings = unacknowledged_findings(outdir)
    for finding in findings:
        print(f"cdk-nag: {finding}", file=sys.stderr)
    if findings:
        print(f"{len(findings)} unacknowledged finding(s), see {outdir / VALIDATION_REPORT}", file=sys.stderr)
        return 1
    templates = stack_templates(outdir)
    if not templates:
        print(f"no CloudFormation templates in {outdir}", file=sys.stderr)
        return 1
    if not cfn_lint(templates):
        return 1
    print(f"synth ok: {len(templates)} template(s) in {outdir}, no cdk-nag findings, cfn-lint clean")
    return 0


def synthesize(outdir: Path) -> bool:
    from .app import build_app  # noqa: PLC0415  (imports aws-cdk-lib: keep --help instant)

    try:
        build_app(outdir=str(outdir)).synth()
    except RuntimeError as exc:  # jsii raises the synth's error (cdk-nag errors included)
        print(f"synth failed: {exc}", file=sys.stderr)
        return False
    return True


def unacknowledged_findings(outdir: Path) -> list[str]:
    """Every violation still in the validation report, one line each."""
    path = outdir / VALIDATION_REPORT
    if not path.is_file():
        return []
    report: dict[str, Any] = json.loads(path.read_text())
    findings = []
    for plugin in report.get("pluginReports", []):
        for violation in plugin.get("violations", []):
            constructs = violation.get("violatingConstructs") or violation.get("violatingResources") or []
            paths = [item.get("constructPath") or item.get("resourceLogicalId") or "?" for item in constructs]
            findings.append(
                f"{violation.get('severity', '?')} {violation.get('ruleName', '?')} "
                f"({plugin.get('pluginName', '?')}) at {', '.join(paths) or '?'}: "
                f"{violation.get('description', '')}"
            )
    return findings


def stack_templates(outdir: Path) -> list[Path]:
    """The template of every stack in the assembly, nested assemblies (stages) included."""
    manifest = json.loads((outdir / "manifest.json").read_text())
    templates = []
    for artifact in manifest.get("artifacts", {}).values():
        properties = artifact.get("properties", {})
        if artifact.get("type") == "aws:cloudformation:stack":
            templates.append(outdir / properties["templateFile"])
        elif artifact.get("type") == "cdk:cloud-assembly":
            templates.extend(stack_templates(outdir / properties["directoryName"]))
    return templates


def cfn_lint(templates: Sequence[Path]) -> bool:
    executable = Path(sys.executable).parent / "cfn-lint"
    command = str(executable) if executable.is_file() else shutil.which("cfn-lint")
    if command is None:
        print("cfn-lint is not installed (pip install -r requirements-dev.txt)", file=sys.stderr)
        return False
    result = subprocess.run([command, "--ignore-checks", *CFN_LINT_IGNORED, "--", *map(str, templates)], check=False)
    return result.returncode == 0


if __name__ == "__main__":
    sys.exit(main())
