"""`make dist`: Sundial's three wheels, at the one version in ``VERSION``, into ``dist/``.

    .venv/bin/python -m release.dist [--out dist]

* ``sundial-scheduler`` (the command line ``sundial``, and ``shared``): the root pyproject.toml.
* ``sundial-scheduler-cdk`` (``sundial_cdk``): infra/'s modules but the repository's app
  (:data:`APP_ONLY`), with the functions' sources (exactly :func:`infra.bundling.code_files`) and
  the layer's requirements as package data in ``sundial_cdk/_lambda/``; it depends on
  ``sundial-scheduler`` of its own version (for ``shared``, which the constructs read at synth),
  on aws-cdk-lib and constructs from the versions the repository pins (requirements-dev.txt) up to
  their next major, and on pip (the layer is built with it).
* ``sundial-receiver`` (``sundial_receiver``): receiver-kit/, its own standard-library backend.

Each is staged in a directory of its own (so nothing is written into the checkout and two builds
never meet) and built there by ``uv build`` (pip's ``wheel`` where uv is not installed). Prints
each wheel's path.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from infra import names

ROOT = Path(__file__).resolve().parent.parent
VERSION_FILE = ROOT / "VERSION"
CLI = "sundial-scheduler"
CDK = "sundial-scheduler-cdk"
RECEIVER = "sundial-receiver"
CDK_PACKAGE = "sundial_cdk"
APP_ONLY = ("app.py", "synth_check.py")
"""infra/'s modules that are the repository's app, not the library: not shipped."""
CLI_FILES = ("pyproject.toml", "VERSION", "requirements.txt", "requirements-cli.txt")
CLI_PACKAGES = ("sundial_cli", "shared")
CDK_PINNED = ("aws-cdk-lib", "constructs")
"""The cdk wheel's dependencies from the repository's pins: at least the pinned version, below the next major."""

CDK_README = """# sundial-scheduler-cdk

Sundial, the serverless task scheduler for AWS, as a CDK construct library:

```python
from sundial_cdk import Sundial

sundial = Sundial(stack, "Scheduler", bucket_shards=32)
```

Every `sundial:*` setting of Sundial's cdk.json is a typed keyword argument; the construct exposes
`api_url`, `scheduler_url`, `table`, `alarm_topic` and `grant_register(role, tenant=...)`. The wheel carries
the functions' code and the dependency layer's recipe (requirements.txt): a synth builds the layer with
pip, without Docker, cached in the app's `.build/sundial/`. Documentation: Sundial's docs/deploy.md and
docs/construct.md.
"""


class DistError(RuntimeError):
    """A wheel could not be built (the builder's output is in the message)."""


def version() -> str:
    """Sundial's one version (``VERSION``)."""
    return VERSION_FILE.read_text().strip()


def pinned(name: str, requirements: Path = ROOT / "requirements-dev.txt") -> str:
    """The version the repository pins ``name`` at (``name==X`` in ``requirements``)."""
    for line in requirements.read_text().splitlines():
        match = re.fullmatch(rf"{re.escape(name)}==([^\s#;]+)\s*(#.*)?", line.strip())
        if match:
            return match.group(1)
    raise DistError(f"{requirements.name} pins no {name}")


def cdk_dependencies() -> list[str]:
    """What ``sundial-scheduler-cdk`` requires."""
    bounded = []
    for name in CDK_PINNED:
        at_least = pinned(name)
        bounded.append(f"{name}>={at_least},<{int(at_least.split('.')[0]) + 1}")
    return [f"{CLI}=={version()}", *bounded, "pip"]


def cdk_pyproject() -> str:
    dependencies = "".join(f'\n  "{requirement}",' for requirement in cdk_dependencies())
    return f"""[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "{CDK}"
version = "{version()}"
description = "Sundial, the serverless task scheduler for AWS, as a CDK construct: from sundial_cdk import Sundial."
readme = "README.md"
requires-python = ">=3.11"
dependencies = [{dependencies}
]

[tool.setuptools]
packages = ["{CDK_PACKAGE}"]
include-package-data = false

[tool.setuptools.package-data]
{CDK_PACKAGE} = ["py.typed", "{names.SHIPPED_SOURCES}/**/*"]
"""


def _copy_package(source: Path, destination: Path) -> None:
    shutil.copytree(source, destination, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))


def stage_cli(staging: Path) -> Path:
    for name in CLI_FILES:
        shutil.copyfile(ROOT / name, staging / name)
    for package in CLI_PACKAGES:
        _copy_package(ROOT / package, staging / package)
    return staging


def stage_cdk(staging: Path) -> Path:
    from infra import bundling  # noqa: PLC0415  (imports aws-cdk-lib: the version's readers need none of it)

    package = staging / CDK_PACKAGE
    package.mkdir()
    for module in sorted((ROOT / "infra").glob("*.py")):
        if module.name not in APP_ONLY:
            shutil.copyfile(module, package / module.name)
    (package / "py.typed").write_text("")
    sources = package / names.SHIPPED_SOURCES
    for relative in bundling.code_files(ROOT):
        (sources / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ROOT / relative, sources / relative)
    for requirement in bundling.requirement_files(ROOT / "requirements.txt"):
        shutil.copyfile(requirement, sources / requirement.relative_to(ROOT))
    (staging / "pyproject.toml").write_text(cdk_pyproject())
    (staging / "README.md").write_text(CDK_README)
    return staging


def stage_receiver(staging: Path) -> Path:
    _copy_package(ROOT / "receiver-kit", staging / "receiver-kit")
    shutil.copyfile(VERSION_FILE, staging / "receiver-kit" / "VERSION")
    return staging / "receiver-kit"


def build_wheel(project: Path, out: Path) -> Path:
    """The wheel of the project staged at ``project``, written into ``out``."""
    uv = Path(sys.executable).with_name("uv")
    if uv.is_file() or shutil.which("uv"):
        command = [str(uv) if uv.is_file() else "uv", "build", "--wheel", "--quiet", "--out-dir", str(project / "dist")]
        command.append(str(project))
    else:
        command = [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "-w",
            str(project / "dist"),
            str(project),
        ]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise DistError(f"{' '.join(command)} failed (exit {result.returncode}):\n{result.stdout}{result.stderr}")
    (wheel,) = (project / "dist").glob("*.whl")
    out.mkdir(parents=True, exist_ok=True)
    return Path(shutil.copy2(wheel, out / wheel.name))


def build(out: Path) -> list[Path]:
    """The three wheels, built into ``out``."""
    wheels = []
    with tempfile.TemporaryDirectory(prefix="sundial-dist-") as scratch:
        for name, stage in ((CLI, stage_cli), (CDK, stage_cdk), (RECEIVER, stage_receiver)):
            staging = Path(scratch) / name
            staging.mkdir()
            wheels.append(build_wheel(stage(staging), out))
    return wheels


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m release.dist", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "dist", help="where the wheels go (default: dist/)")
    arguments = parser.parse_args(argv)
    try:
        wheels = build(arguments.out)
    except DistError as exc:
        print(exc, file=sys.stderr)
        return 1
    for wheel in wheels:
        print(wheel)
    return 0


if __name__ == "__main__":
    sys.exit(main())
