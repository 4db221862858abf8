"""Lambda code without Docker: a dependency layer built by pip, and a code asset of our sources.

* **Dependencies** (``requirements.txt``) go into one LayerVersion shared by every function.
  pip installs the wheels for Lambda's platform, not the host's::

      pip install --target <dir>/python -r requirements.txt --only-binary=:all:
          --implementation cp --python-version <runtime's> --platform manylinux2014_<arch>
          --platform manylinux_2_28_<arch>

  (Python 3.12+ runtimes run on Amazon Linux 2023, glibc 2.34, so manylinux_2_28 wheels load
  too.) Only wheels are accepted, so nothing is compiled on the host and the result does not
  depend on the host's OS or CPU.
* **Code** is a copy of the ``*.py`` files of ``shared/`` and ``functions/`` (and the web
  console's static files, ``functions/api/console/``, which the API function serves): the handler
  ``functions.api.handler.handler`` finds ``shared`` next to it, and the layer's ``python/``
  directory lands on ``sys.path`` at ``/opt/python``.

* **Bytecode**, only when the setting ``sundial:bytecodePython`` names an interpreter: every
  ``.py`` of both is compiled by it, next to its source (``__pycache__/*.cpython-314.pyc``), with
  ``--invalidation-mode unchecked-hash`` (CDK zips the assets with fixed timestamps, which would
  make timestamp-checked bytecode stale), recording the paths Lambda unpacks them at
  (``/opt/python``, ``/var/task``) rather than the build directory's, so the bytes do not depend
  on where the synth ran. Bytecode is specific to a Python minor version,
  so that interpreter must be the runtime's version exactly (:func:`bytecode_compiler` refuses any
  other, and a synth that cannot run it stops): nothing depends on whichever Pythons the
  synthesizing machine happens to have. Unset (the default), the assets are source only and the
  same on every machine; docs/deploy.md ("Bytecode and cold starts") has what it costs.

**Where the sources are.** In a checkout, around this package: ``requirements.txt``, ``shared/``
and ``functions/`` beside ``infra/``. Installed from the wheel ``sundial-scheduler-cdk`` (this
package is then ``sundial_cdk``), in its package data, ``_lambda/``, which ``make dist`` fills with
exactly the files :func:`code_files` selects here and the requirement files: the same bytes, so the
same asset hashes (docs/construct.md, section 2).

Both are cached under ``.build/`` (gitignored; installed: the app's ``.build/sundial/``, or the
construct's ``build_dir``: :func:`default_build_dir`), keyed by a hash of what goes in: the layer by
requirements.txt (and the files it includes), the pip platforms, the Python version and the
recipe; the code by every copied file's path and bytes; both by the bytecode's Python version and
magic number, when there is bytecode. A repeated synth, or a test session,
finds the directory and does nothing; pip runs again only when requirements.txt, the
architecture or the runtime changes. A build happens in a staging directory renamed into place
when complete, under a file lock, so concurrent synths (pytest-xdist, a developer's shell) never
see half a layer and never build the same thing twice.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from aws_cdk import AssetHashType
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from shared.settings.context import context_key

from . import names
from .settings import DeploymentSettings

RUNTIME = lambda_.Runtime.PYTHON_3_14
"""The newest Python runtime aws-cdk-lib knows; cdk-nag's AwsSolutions-L1 demands the newest."""

PACKAGE_DIR = Path(__file__).resolve().parent
SHIPPED_SOURCES = names.SHIPPED_SOURCES


def source_root(package_dir: Path = PACKAGE_DIR) -> Path:
    """Where ``requirements.txt``, ``shared/`` and ``functions/`` are: the wheel's package data when
    this package was installed with it, else the checkout around it."""
    shipped = package_dir / SHIPPED_SOURCES
    return shipped if shipped.is_dir() else package_dir.parent


def default_build_dir(package_dir: Path = PACKAGE_DIR) -> Path:
    """Where the layer and the code are built and cached: a checkout's ``.build/``; installed, the
    ``.build/sundial/`` of the directory the app runs in (``cdk synth`` runs it in the project)."""
    if (package_dir / SHIPPED_SOURCES).is_dir():
        return Path.cwd() / ".build" / "sundial"
    return package_dir.parent / ".build"


SOURCE_ROOT = source_root()
REQUIREMENTS = SOURCE_ROOT / "requirements.txt"
CODE_PACKAGES = ("shared", "functions")
CODE_SUFFIXES = (".py",)
ASSET_DIRS = (Path("functions/api/console"),)
"""Folders shipped whole: the web console's static files, which the API function serves."""

_RECIPE = "2"
"""Bump when the way a layer or a code directory is built changes, to invalidate the cache."""
_KEEP = 3
"""Cached builds of each kind kept (most recently used first); older ones are deleted."""
_MACHINES = {"arm64": "aarch64", "x86_64": "x86_64"}
_HOST_MACHINES = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "arm64", "arm64": "arm64"}


class BundlingError(RuntimeError):
    """pip could not build the dependency layer (its output is in the message)."""


@dataclass(frozen=True)
class Compiler:
    """A CPython that compiles the shipped files to bytecode for the functions' runtime."""

    command: str
    version: str
    """``3.14``: the runtime's, exactly."""
    magic: str
    """Hex of its ``importlib.util.MAGIC_NUMBER``: the bytecode format it writes."""

    def digest_part(self) -> str:
        return f"bytecode cpython-{self.version} {self.magic}"


TASK_ROOT = "/var/task"
"""Where Lambda unpacks a function's code (its modules' paths in tracebacks)."""
LAYER_ROOT = "/opt/python"
"""Where a layer's ``python/`` directory lands."""
_PROBE = (
    "import importlib.util, sys; "
    "print(sys.implementation.name, '%d.%d' % sys.version_info[:2], importlib.util.MAGIC_NUMBER.hex())"
)


def bytecode_compiler(command: str, python: str, setting: str | None = None) -> Compiler:
    """The interpreter ``command`` runs, checked to be CPython ``python`` (``3.14``) exactly: a
    :class:`BundlingError` naming the ``setting`` (as the settings were given: the context key, or
    the construct's keyword argument) when it cannot be run or is another version (Lambda's Python
    would ignore its bytecode and compile every module anyway). The context key by default."""
    setting = setting or context_key("bytecode_python")
    advice = f'(or set {setting} to "" to ship source only)'
    try:
        answer = subprocess.run([command, "-I", "-c", _PROBE], capture_output=True, text=True, check=False, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BundlingError(f"{setting}: cannot run {command!r}: {exc} {advice}") from exc
    if answer.returncode != 0:
        raise BundlingError(f"{setting}: {command!r} failed (exit {answer.returncode}): {answer.stderr} {advice}")
    implementation, version, magic = answer.stdout.split()
    if (implementation, version) != ("cpython", python):
        raise BundlingError(
            f"{setting} must name a CPython {python}, the functions' runtime version: {command!r} is "
            f"{implementation} {version}, whose bytecode Lambda's Python {python} would not use {advice}"
        )
    return Compiler(command, version, magic)


def _compile(compiler: Compiler, directory: Path, shipped_at: str) -> None:
    """Every ``.py`` under ``directory`` compiled next to it, recording its path as shipped."""
    command = [
        compiler.command,
        "-I",
        "-m",
        "compileall",
        "-q",
        "-j",
        "0",
        "--invalidation-mode",
        "unchecked-hash",
        "-s",
        str(directory),
        "-p",
        shipped_at,
        str(directory),
    ]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise BundlingError(f"{' '.join(command)} failed (exit {result.returncode}):\n{result.stdout}{result.stderr}")


@dataclass(frozen=True)
class BuiltAsset:
    path: Path
    digest: str
    """Hex sha256 of everything that went in; used as the CDK asset hash."""


def python_version(runtime: lambda_.Runtime) -> str:
    """``python3.14`` -> ``3.14``."""
    name = runtime.name
    prefix = "python"
    if not name.startswith(prefix):
        raise ValueError(f"not a Python runtime: {name}")
    return name.removeprefix(prefix)


def host_architecture() -> str:
    """This machine's CPU as ``sundial:architecture`` names Lambda's (``x86_64`` or ``arm64``): a
    layer for it runs here (the package test and ``bench.cold_start``; never the stack's)."""
    import platform  # noqa: PLC0415  (only the tests and the benchmark ask)

    return _HOST_MACHINES[platform.machine().lower()]


def host_python() -> str:
    """This interpreter's ``major.minor``, as :func:`python_version` gives a runtime's."""
    return f"{sys.version_info.major}.{sys.version_info.minor}"


def pip_platforms(architecture: str) -> tuple[str, ...]:
    machine = _MACHINES[architecture]
    return (f"manylinux2014_{machine}", f"manylinux_2_28_{machine}")


def build_dependencies(
    *,
    architecture: str,
    python: str,
    requirements: Path = REQUIREMENTS,
    build_dir: Path | None = None,
    compiler: Compiler | None = None,
) -> BuiltAsset:
    """The layer directory (with ``python/`` inside) for these requirements, built if missing (in
    ``build_dir``, else :func:`default_build_dir`); with ``compiler``'s bytecode next to the sources
    (None: source only)."""
    platforms = pip_platforms(architecture)
    digest = hashlib.sha256()
    bytecode = (compiler.digest_part(),) if compiler is not None else ()
    for part in (_RECIPE, "cp", python, *platforms, *bytecode):
        digest.update(part.encode() + b"\0")
    for path in requirement_files(requirements):
        digest.update(path.read_bytes() + b"\0")
    key = digest.hexdigest()

    def fill(staging: Path) -> None:
        target = staging / "python"
        command = [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--no-input",
            "--no-compile",
            "--target",
            str(target),
            "--requirement",
            str(requirements),
            "--only-binary=:all:",
            "--implementation",
            "cp",
            "--python-version",
            python,
        ]
        for platform in platforms:
            command += ["--platform", platform]
        started = time.monotonic()
        _say(f"building the Lambda dependency layer ({python}, {architecture}) from {requirements.name}")
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise BundlingError(
                f"pip could not build the dependency layer (exit {result.returncode}):\n"
                f"{' '.join(command)}\n{result.stdout}{result.stderr}"
            )
        # Console scripts carry the host interpreter's path: useless in Lambda.
        shutil.rmtree(target / "bin", ignore_errors=True)
        if compiler is not None:
            _compile(compiler, target, LAYER_ROOT)
        _say(f"dependency layer built in {time.monotonic() - started:.1f} s")

    return BuiltAsset(_cached(build_dir or default_build_dir(), "layer", key, fill), key)


def code_files(root: Path = SOURCE_ROOT, packages: Iterable[str] = CODE_PACKAGES) -> list[Path]:
    """What the code asset holds, relative to ``root``: the packages' source files and the asset
    folders, nothing else (``make dist`` ships exactly these in the wheel)."""
    candidates = (path.relative_to(root) for package in packages for path in (root / package).rglob("*"))
    return sorted(
        path
        for path in candidates
        if (path.suffix in CODE_SUFFIXES or any(path.is_relative_to(folder) for folder in ASSET_DIRS))
        and "__pycache__" not in path.parts
        and (root / path).is_file()
    )


def build_code(
    *,
    root: Path = SOURCE_ROOT,
    packages: Iterable[str] = CODE_PACKAGES,
    build_dir: Path | None = None,
    compiler: Compiler | None = None,
) -> BuiltAsset:
    """The function code directory: :func:`code_files` (and ``compiler``'s bytecode of the sources,
    when given), built if missing in ``build_dir``, else :func:`default_build_dir`."""
    files = code_files(root, packages)
    digest = hashlib.sha256(_RECIPE.encode() + b"\0")
    if compiler is not None:
        digest.update(compiler.digest_part().encode() + b"\0")
    for relative in files:
        digest.update(relative.as_posix().encode() + b"\0")
        digest.update((root / relative).read_bytes() + b"\0")
    key = digest.hexdigest()

    def fill(staging: Path) -> None:
        for relative in files:
            destination = staging / relative
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(root / relative, destination)
        if compiler is not None:
            _compile(compiler, staging, TASK_ROOT)

    return BuiltAsset(_cached(build_dir or default_build_dir(), "code", key, fill), key)


class LambdaBundle(Construct):
    """What every function ships: the runtime, the dependency layer and the code asset."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        settings: DeploymentSettings,
        build_dir: Path | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        self.runtime = RUNTIME
        self.architecture = settings.lambda_architecture
        architecture = settings.architecture
        python = python_version(RUNTIME)
        compiler = (
            bytecode_compiler(settings.bytecode_python, python, settings.setting_name("bytecode_python"))
            if settings.bytecode_python
            else None
        )
        shipped = f", bytecode for CPython {compiler.version}" if compiler is not None else ""

        dependencies = build_dependencies(
            architecture=architecture, python=python, build_dir=build_dir, compiler=compiler
        )
        self.layer = lambda_.LayerVersion(
            self,
            names.DEPENDENCIES_LAYER_ID,
            code=lambda_.Code.from_asset(
                str(dependencies.path),
                asset_hash=dependencies.digest,
                asset_hash_type=AssetHashType.CUSTOM,
            ),
            compatible_runtimes=[RUNTIME],
            compatible_architectures=[self.architecture],
            description=f"Sundial runtime dependencies (requirements.txt, {architecture}, {RUNTIME.name}{shipped})",
        )

        code = build_code(build_dir=build_dir, compiler=compiler)
        self.code = lambda_.Code.from_asset(
            str(code.path), asset_hash=code.digest, asset_hash_type=AssetHashType.CUSTOM
        )


def requirement_files(requirements: Path) -> list[Path]:
    """requirements.txt and every file it pulls in with -r/-c (their contents shape the layer)."""
    seen: list[Path] = []
    pending = [requirements.resolve()]
    while pending:
        path = pending.pop()
        if path in seen:
            continue
        seen.append(path)
        for line in path.read_text().splitlines():
            parts = line.split("#", 1)[0].split()
            if len(parts) == 2 and parts[0] in {"-r", "--requirement", "-c", "--constraint"}:
                pending.append((path.parent / parts[1]).resolve())
    return seen


def _cached(build_dir: Path, kind: str, key: str, fill: Callable[[Path], None]) -> Path:
    target = build_dir / f"{kind}-{key[:20]}"
    if target.is_dir():
        os.utime(target)
        return target
    build_dir.mkdir(parents=True, exist_ok=True)
    with _locked(build_dir / f".{kind}.lock"):
        if target.is_dir():  # another process built it while we waited for the lock
            os.utime(target)
            return target
        for stale in build_dir.glob(f".{kind}-staging-*"):  # left by a build that was killed
            shutil.rmtree(stale, ignore_errors=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{kind}-staging-", dir=build_dir))
        staging.chmod(0o755)  # mkdtemp makes it private; Lambda must read what we ship
        try:
            fill(staging)
            staging.rename(target)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        _prune(build_dir, kind)
    return target


def _prune(build_dir: Path, kind: str) -> None:
    builds = sorted(build_dir.glob(f"{kind}-*"), key=lambda path: path.stat().st_mtime, reverse=True)
    for old in builds[_KEEP:]:
        shutil.rmtree(old, ignore_errors=True)


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    if sys.platform == "win32":  # no flock: the atomic rename alone keeps the cache consistent
        yield
        return
    import fcntl  # noqa: PLC0415  (POSIX only)

    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _say(message: str) -> None:
    print(f"[sundial bundling] {message}", file=sys.stderr, flush=True)
