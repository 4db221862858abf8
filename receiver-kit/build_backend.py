"""The kit's build backend (PEP 517 and PEP 660), the standard library only: ``pip install
./receiver-kit`` needs nothing but pip, not even setuptools or network access. It reads
pyproject.toml's [project] table and zips ``sundial_receiver/`` into a wheel. The version is
Sundial's one, in the checkout's ``VERSION`` (an sdist carries a copy beside pyproject.toml)."""

from __future__ import annotations

import base64
import hashlib
import io
import tarfile
import tomllib
import zipfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
PACKAGE = "sundial_receiver"


def _version() -> str:
    for path in (ROOT / "VERSION", ROOT.parent / "VERSION"):
        if path.is_file():
            return path.read_text("utf-8").strip()
    raise FileNotFoundError(f"no VERSION in {ROOT} or {ROOT.parent}: the kit's version is Sundial's")


def _project() -> dict[str, Any]:
    project = dict(tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"])
    project.setdefault("version", _version())
    return project


def _dist_name(project: dict[str, Any]) -> str:
    return f"{project['name'].replace('-', '_')}-{project['version']}"


def _metadata(project: dict[str, Any]) -> str:
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {project['name']}",
        f"Version: {project['version']}",
        f"Summary: {project.get('description', '')}",
        f"Requires-Python: {project.get('requires-python', '>=3.11')}",
    ]
    lines += [f"Requires-Dist: {requirement}" for requirement in project.get("dependencies", [])]
    for extra, requirements in project.get("optional-dependencies", {}).items():
        lines.append(f"Provides-Extra: {extra}")
        lines += [f'Requires-Dist: {requirement}; extra == "{extra}"' for requirement in requirements]
    readme = ROOT / project.get("readme", "README.md")
    lines.append("Description-Content-Type: text/markdown")
    return "\n".join(lines) + "\n\n" + (readme.read_text("utf-8") if readme.exists() else "")


def _wheel(directory: str, files: dict[str, bytes]) -> str:
    project = _project()
    name = _dist_name(project)
    info = f"{name}.dist-info"
    files = {
        **files,
        f"{info}/METADATA": _metadata(project).encode("utf-8"),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: sundial-receiver build_backend\n"
        b"Root-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode("ascii")
        record.append(f"{path},sha256={digest},{len(data)}")
    record.append(f"{info}/RECORD,,")
    files[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode("utf-8")
    filename = f"{name}-py3-none-any.whl"
    with zipfile.ZipFile(Path(directory) / filename, "w", zipfile.ZIP_DEFLATED) as archive:
        for path, data in files.items():
            archive.writestr(path, data)
    return filename


def _sources() -> dict[str, bytes]:
    return {
        path.relative_to(ROOT).as_posix(): path.read_bytes()
        for path in sorted((ROOT / PACKAGE).rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts
    }


def get_requires_for_build_wheel(config_settings: Any = None) -> list[str]:
    return []


def get_requires_for_build_sdist(config_settings: Any = None) -> list[str]:
    return []


def get_requires_for_build_editable(config_settings: Any = None) -> list[str]:
    return []


def build_wheel(wheel_directory: str, config_settings: Any = None, metadata_directory: Any = None) -> str:
    return _wheel(wheel_directory, _sources())


def build_editable(wheel_directory: str, config_settings: Any = None, metadata_directory: Any = None) -> str:
    """An editable install: a ``.pth`` line puts this folder on ``sys.path``."""
    return _wheel(wheel_directory, {f"__editable__.{PACKAGE}.pth": f"{ROOT}\n".encode()})


def build_sdist(sdist_directory: str, config_settings: Any = None) -> str:
    name = _dist_name(_project())
    filename = f"{name}.tar.gz"
    names = ["pyproject.toml", "README.md", "build_backend.py", *_sources()]
    with tarfile.open(Path(sdist_directory) / filename, "w:gz") as archive:
        for relative in names:
            if (ROOT / relative).exists():
                archive.add(ROOT / relative, arcname=f"{name}/{relative}")
        for member, data in (
            ("PKG-INFO", _metadata(_project()).encode("utf-8")),
            ("VERSION", f"{_version()}\n".encode()),
        ):
            entry = tarfile.TarInfo(f"{name}/{member}")
            entry.size = len(data)
            archive.addfile(entry, io.BytesIO(data))
    return filename
