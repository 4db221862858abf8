"""Lambda code without Docker: the right runtime, Lambda-platform wheels, and a cache that holds."""

from __future__ import annotations

import marshal
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import aws_lambda as lambda_

from infra import bundling
from infra.settings import DeploymentSettings
from tests.infrastructure.conftest import Synthesized, scratch_outdir

pytestmark = pytest.mark.infrastructure


def _python_runtimes() -> list[tuple[int, int]]:
    versions = []
    for name in dir(lambda_.Runtime):
        if name.startswith("PYTHON_3_"):
            versions.append((3, int(name.removeprefix("PYTHON_3_"))))
    return versions


def test_runtime_is_the_newest_python_aws_cdk_lib_offers() -> None:
    newest = max(_python_runtimes())
    assert bundling.RUNTIME.name == f"python{newest[0]}.{newest[1]}"
    assert bundling.python_version(bundling.RUNTIME) == f"{newest[0]}.{newest[1]}"


def test_the_layer_holds_wheels_for_the_lambda_platform(synthesized: Synthesized) -> None:
    settings = DeploymentSettings()
    layer = bundling.build_dependencies(  # a cache hit: the session's synth built it
        architecture=settings.architecture, python=bundling.python_version(bundling.RUNTIME)
    )
    site = layer.path / "python"
    assert (site / "pynamodb").is_dir()
    assert (site / "aws_lambda_powertools").is_dir()
    assert not (site / "bin").exists()
    extensions = list(site.rglob("*.so"))
    assert extensions, "pydantic-core ships a compiled extension"
    # ELF e_machine (little-endian u16 at offset 18): what the CPU of the Lambda function runs.
    machine = {"arm64": 183, "x86_64": 62}[settings.architecture]
    tag = bundling.python_version(bundling.RUNTIME).replace(".", "")
    for extension in extensions:
        header = extension.read_bytes()[:20]
        assert header[:4] == b"\x7fELF", extension.name
        assert int.from_bytes(header[18:20], "little") == machine, extension.name
        if ".cpython-" in extension.name:
            assert f".cpython-{tag}-" in extension.name, extension.name


def test_the_code_asset_holds_only_our_sources(synthesized: Synthesized) -> None:
    code = bundling.build_code()
    files = [path.relative_to(code.path) for path in code.path.rglob("*") if path.is_file()]
    assert files
    assert {path.parts[0] for path in files} <= set(bundling.CODE_PACKAGES)
    console = Path("functions/api/console")
    assert all(path.suffix == ".py" or path.is_relative_to(console) for path in files)
    assert not any("__pycache__" in path.parts for path in files)
    assert Path("shared/store/models.py") in files
    # the web console's files travel with the API function that serves them
    assert {console / "index.html", console / "vendor/LICENSE-uplot.txt"} <= set(files)


def _write(root: Path, relative: str, text: str) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_code_build_is_cached_by_content(tmp_path: Path) -> None:
    source, cache = tmp_path / "src", tmp_path / "build"
    _write(source, "pkg/__init__.py", "")
    _write(source, "pkg/mod.py", "X = 1\n")
    _write(source, "pkg/__pycache__/mod.cpython-311.pyc", "junk")
    _write(source, "pkg/notes.txt", "not shipped")

    first = bundling.build_code(root=source, packages=["pkg"], build_dir=cache)
    again = bundling.build_code(root=source, packages=["pkg"], build_dir=cache)
    assert again == first
    shipped = sorted(p.relative_to(first.path).as_posix() for p in first.path.rglob("*") if p.is_file())
    assert shipped == ["pkg/__init__.py", "pkg/mod.py"]
    assert first.path.stat().st_mode & 0o755 == 0o755, "Lambda must be able to read the asset"

    _write(source, "pkg/mod.py", "X = 2\n")
    changed = bundling.build_code(root=source, packages=["pkg"], build_dir=cache)
    assert changed.digest != first.digest
    assert (changed.path / "pkg/mod.py").read_text() == "X = 2\n"


def test_pip_runs_once_per_requirements_platform_and_python(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[list[str]] = []

    def fake_pip(command: list[str], **_: Any) -> subprocess.CompletedProcess[str]:
        calls.append(command)
        target = Path(command[command.index("--target") + 1])
        (target / "fakepkg").mkdir(parents=True)
        (target / "bin").mkdir()
        return subprocess.CompletedProcess(command, 0, "", "")

    monkeypatch.setattr(bundling.subprocess, "run", fake_pip)
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("-r base.txt\nfakepkg==1.0\n")
    (tmp_path / "base.txt").write_text("other==2.0\n")
    cache = tmp_path / "build"

    def build(architecture: str = "arm64", python: str = "3.14") -> bundling.BuiltAsset:
        return bundling.build_dependencies(
            architecture=architecture, python=python, requirements=requirements, build_dir=cache
        )

    first = build()
    assert build() == first
    assert len(calls) == 1
    command = calls[0]
    assert command[command.index("--python-version") + 1] == "3.14"
    assert command[command.index("--implementation") + 1] == "cp"
    assert "--only-binary=:all:" in command
    assert [command[i + 1] for i, arg in enumerate(command) if arg == "--platform"] == [
        "manylinux2014_aarch64",
        "manylinux_2_28_aarch64",
    ]
    assert (first.path / "python" / "fakepkg").is_dir()
    assert not (first.path / "python" / "bin").exists()

    assert build(architecture="x86_64").digest != first.digest
    assert build(python="3.13").digest != first.digest
    assert len(calls) == 3
    (tmp_path / "base.txt").write_text("other==3.0\n")  # an included file changes the layer too
    assert build().digest != first.digest
    assert len(calls) == 4


def test_a_failed_pip_run_leaves_no_cache_entry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def failing_pip(command: list[str], **_: Any) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess(command, 1, "", "No matching distribution found for nothing==0")

    monkeypatch.setattr(bundling.subprocess, "run", failing_pip)
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("nothing==0\n")
    cache = tmp_path / "build"
    with pytest.raises(bundling.BundlingError, match="No matching distribution"):
        bundling.build_dependencies(architecture="arm64", python="3.14", requirements=requirements, build_dir=cache)
    assert [path.name for path in cache.iterdir() if not path.name.endswith(".lock")] == []


# --- bytecode (sundial:bytecodePython) ------------------------------------------------------------

HOST_PYTHON = f"{sys.version_info.major}.{sys.version_info.minor}"
HOST_TAG = sys.implementation.cache_tag  # cpython-311


def test_the_default_stack_ships_source_only(synthesized: Synthesized) -> None:
    assert DeploymentSettings().bytecode_python == ""
    layer = bundling.build_dependencies(
        architecture=DeploymentSettings().architecture, python=bundling.python_version(bundling.RUNTIME)
    )
    assert not list(layer.path.rglob("*.pyc"))
    assert not list(bundling.build_code().path.rglob("*.pyc"))
    (resource,) = synthesized.resources("AWS::Lambda::LayerVersion").values()
    assert "bytecode" not in resource["Properties"]["Description"]


def test_bytecode_wants_a_python_of_the_runtimes_version_exactly(tmp_path: Path) -> None:
    with pytest.raises(bundling.BundlingError, match=r"sundial:bytecodePython must name a CPython 3\.14") as refused:
        bundling.bytecode_compiler(sys.executable, "3.14")
    assert f"is cpython {HOST_PYTHON}" in str(refused.value)
    with pytest.raises(bundling.BundlingError, match="sundial:bytecodePython: cannot run"):
        bundling.bytecode_compiler(str(tmp_path / "no-python"), "3.14")
    assert bundling.bytecode_compiler(sys.executable, HOST_PYTHON).version == HOST_PYTHON


def test_a_synth_with_bytecode_of_another_python_stops() -> None:
    from infra.app import build_app
    from shared.settings.context import context_key

    with pytest.raises(bundling.BundlingError, match=r"must name a CPython 3\.14"):
        build_app(outdir=scratch_outdir(), nag=False, overrides={context_key("bytecode_python"): sys.executable})


def test_shipped_bytecode_is_used_where_lambda_unpacks_it(tmp_path: Path) -> None:
    """Built with this Python standing in for the runtime's: the .pyc sits next to its source and
    is read (not recompiled) from a copy whose files all carry CDK's fixed zip timestamp (1980),
    by a Python that may not write bytecode."""
    source, cache = tmp_path / "src", tmp_path / "build"
    _write(source, "pkg/__init__.py", "")
    _write(source, "pkg/mod.py", "def where():\n    return where.__code__.co_filename\n")
    compiler = bundling.bytecode_compiler(sys.executable, HOST_PYTHON)
    plain = bundling.build_code(root=source, packages=["pkg"], build_dir=cache)
    built = bundling.build_code(root=source, packages=["pkg"], build_dir=cache, compiler=compiler)
    assert built.digest != plain.digest
    assert (built.path / f"pkg/__pycache__/mod.{HOST_TAG}.pyc").is_file()
    assert not list(plain.path.rglob("*.pyc"))

    unpacked = tmp_path / "task"
    shutil.copytree(built.path, unpacked)
    for path in unpacked.rglob("*"):
        os.utime(path, (315_532_800, 315_532_800))  # 1980-01-01, as in CDK's zip
    script = f"import sys; sys.path.insert(0, {str(unpacked)!r}); import pkg.mod; print(pkg.mod.where())"
    command = [sys.executable, "-I", "-S", "-B", "-v", "-c", script]
    ran = subprocess.run(command, check=False, capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == f"{unpacked}/pkg/mod.py"  # tracebacks name where it runs
    assert f"code object from '{unpacked}/pkg/__pycache__/mod.{HOST_TAG}.pyc'" in ran.stderr


def test_the_layers_bytecode_names_opt_python(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = subprocess.run

    def fake_pip(command: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        if command[1:3] != ["-m", "pip"]:
            return run(command, **kwargs)  # the compiler
        target = Path(command[command.index("--target") + 1])
        (target / "fakepkg").mkdir(parents=True)
        (target / "fakepkg" / "__init__.py").write_text("X = 1\n")
        return subprocess.CompletedProcess(command, 0, "", "")

    monkeypatch.setattr(bundling.subprocess, "run", fake_pip)
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("fakepkg==1.0\n")
    compiler = bundling.bytecode_compiler(sys.executable, HOST_PYTHON)
    layer = bundling.build_dependencies(
        architecture="x86_64", python=HOST_PYTHON, requirements=requirements, build_dir=tmp_path, compiler=compiler
    )
    compiled = layer.path / "python" / "fakepkg" / "__pycache__" / f"__init__.{HOST_TAG}.pyc"
    data = compiled.read_bytes()
    assert int.from_bytes(data[4:8], "little") == 0b01, "hash-based, not checked against the source's"
    code = marshal.loads(data[16:])
    # the path it is unpacked at, not the build directory's: the bytes do not depend on the machine
    assert code.co_filename == f"{bundling.LAYER_ROOT}/fakepkg/__init__.py"
