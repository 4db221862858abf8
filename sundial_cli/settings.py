"""Where the command line talks to, and with which key: flags, then the environment, then a
named profile in a config file, then the local runtime (on ``$SUNDIAL_PORT`` when set, as
`make run` listens there; else 8080).

The config file is TOML (``$SUNDIAL_CONFIG``, else ``~/.config/sundial/config.toml``)::

    [profiles.default]
    url = "http://127.0.0.1:8080"

    [profiles.prod]
    url = "https://abc123.execute-api.eu-west-1.amazonaws.com/prod"
    api_key = "sk_..."
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

LOCAL_HOST = "127.0.0.1"
DEFAULT_PORT = 8080
"""The local runtime's port when ``$SUNDIAL_PORT`` is unset (local/settings.py's default)."""
DEFAULT_URL = f"http://{LOCAL_HOST}:{DEFAULT_PORT}"
DEFAULT_PROFILE = "default"
URL_ENV = "SUNDIAL_URL"
KEY_ENV = "SUNDIAL_API_KEY"
PROFILE_ENV = "SUNDIAL_PROFILE"
CONFIG_ENV = "SUNDIAL_CONFIG"
OUTPUT_ENV = "SUNDIAL_OUTPUT"
PORT_ENV = "SUNDIAL_PORT"
"""The local runtime's port, read by `make run` too (local/settings.py spells it for the runtime;
the command line reads it without importing the runtime)."""
SHOWN_KEY_CHARS = 8


class ConfigError(Exception):
    """The config file cannot be read, or names no such profile."""


@dataclass(frozen=True)
class Settings:
    url: str
    api_key: str | None
    profile: str
    source: str
    """Where the URL came from: ``flag``, ``env``, ``profile`` or ``default``."""


def config_path(env: Mapping[str, str]) -> Path:
    given = env.get(CONFIG_ENV)
    if given:
        return Path(given).expanduser()
    home = Path(env.get("HOME") or Path.home())
    return home / ".config" / "sundial" / "config.toml"


def local_url(env: Mapping[str, str]) -> str:
    """The local runtime's URL: on ``$SUNDIAL_PORT`` when set (a port number), else on 8080."""
    given = env.get(PORT_ENV, "").strip()
    if not given:
        return DEFAULT_URL
    if not given.isdecimal() or not 1 <= int(given) <= 65_535:
        raise ConfigError(f"${PORT_ENV} must be a port number (1 to 65535), not {given!r}")
    return f"http://{LOCAL_HOST}:{int(given)}"


def read_profiles(path: Path) -> dict[str, dict[str, str]]:
    """The file's ``[profiles.NAME]`` tables (nothing when the file does not exist)."""
    try:
        with path.open("rb") as file:
            data = tomllib.load(file)
    except FileNotFoundError:
        return {}
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from exc
    profiles = data.get("profiles", {})
    if not isinstance(profiles, dict):
        raise ConfigError(f"{path}: profiles must be a table of [profiles.NAME] tables")
    return {
        str(name): {k: str(v) for k, v in values.items() if k in ("url", "api_key")}
        for name, values in profiles.items()
        if isinstance(values, dict)
    }


def resolve(
    url: str | None, api_key: str | None, profile: str | None, env: Mapping[str, str] | None = None
) -> Settings:
    """Each of the URL and the key from its flag, else its environment variable, else the profile
    (``--profile``, else ``$SUNDIAL_PROFILE``, else ``default``), else the local runtime's URL
    (:func:`local_url`: its port from ``$SUNDIAL_PORT``) and no key. A profile named explicitly
    must exist; the default one may be absent."""
    env = os.environ if env is None else env
    named = profile or env.get(PROFILE_ENV) or None
    profiles = read_profiles(config_path(env))
    chosen = named or DEFAULT_PROFILE
    if named and chosen not in profiles:
        raise ConfigError(f"no profile {chosen!r} in {config_path(env)}")
    stored = profiles.get(chosen, {})
    if url:
        resolved_url, source = url, "flag"
    elif env.get(URL_ENV):
        resolved_url, source = env[URL_ENV], "env"
    elif stored.get("url"):
        resolved_url, source = stored["url"], "profile"
    else:
        resolved_url, source = local_url(env), "default"
    key = api_key or env.get(KEY_ENV) or stored.get("api_key") or None
    return Settings(url=resolved_url, api_key=key, profile=chosen, source=source)


def save_profile(path: Path, name: str, url: str | None, api_key: str | None) -> dict[str, str]:
    """Set ``url`` and/or ``api_key`` of a profile (others kept), the file written 0600."""
    profiles = read_profiles(path)
    profile = dict(profiles.get(name, {}))
    if url is not None:
        profile["url"] = url
    if api_key is not None:
        profile["api_key"] = api_key
    profiles[name] = profile
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as file:
        file.write(_toml(profiles))
    os.chmod(temporary, 0o600)
    temporary.replace(path)
    return profile


def _toml(profiles: Mapping[str, Mapping[str, Any]]) -> str:
    lines = ["# sundial's profiles: `sundial profile set NAME --url ... --api-key ...`"]
    for name in sorted(profiles):
        lines += ["", f"[profiles.{_quoted(name)}]"]
        lines += [f"{key} = {_quoted(str(value))}" for key, value in profiles[name].items()]
    return "\n".join(lines) + "\n"


def _quoted(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    escaped = "".join(ch if ch.isprintable() else f"\\u{ord(ch):04x}" for ch in escaped)
    return f'"{escaped}"'


def masked(key: str | None) -> str:
    """A key shown by its first characters only."""
    if not key:
        return "-"
    return key[:SHOWN_KEY_CHARS] + "…"
