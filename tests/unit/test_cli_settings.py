"""The command line's settings: flags, then the environment, then a profile, then the local
runtime; the profile file written 0600 and read back; keys never shown in full."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from local.settings import LocalSettings
from sundial_cli.main import cli
from sundial_cli.settings import (
    CONFIG_ENV,
    DEFAULT_PORT,
    DEFAULT_URL,
    KEY_ENV,
    PORT_ENV,
    PROFILE_ENV,
    URL_ENV,
    ConfigError,
    read_profiles,
    resolve,
    save_profile,
)

pytestmark = pytest.mark.unit


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(
        '[profiles.default]\nurl = "http://profile-default:1"\napi_key = "sk_default_key"\n\n'
        '[profiles.prod]\nurl = "https://api.example.test/prod"\napi_key = "sk_prod_key"\n'
    )
    return path


def env_with(config: Path, **values: str) -> dict[str, str]:
    return {CONFIG_ENV: str(config), **values}


def test_flags_win_over_env_and_profile(config: Path) -> None:
    env = env_with(config, **{URL_ENV: "http://env:2", KEY_ENV: "sk_env"})
    settings = resolve("http://flag:3", "sk_flag", "prod", env)
    assert (settings.url, settings.api_key, settings.source) == ("http://flag:3", "sk_flag", "flag")


def test_env_wins_over_the_profile(config: Path) -> None:
    env = env_with(config, **{URL_ENV: "http://env:2", KEY_ENV: "sk_env", PROFILE_ENV: "prod"})
    settings = resolve(None, None, None, env)
    assert (settings.url, settings.api_key, settings.source, settings.profile) == (
        "http://env:2",
        "sk_env",
        "env",
        "prod",
    )


def test_each_setting_falls_back_on_its_own(config: Path) -> None:
    settings = resolve(None, None, "prod", env_with(config, **{URL_ENV: "http://env:2"}))
    assert (settings.url, settings.api_key) == ("http://env:2", "sk_prod_key")


def test_the_profile_flag_wins_over_the_profile_env(config: Path) -> None:
    settings = resolve(None, None, "default", env_with(config, **{PROFILE_ENV: "prod"}))
    assert (settings.url, settings.api_key, settings.source) == (
        "http://profile-default:1",
        "sk_default_key",
        "profile",
    )


def test_without_anything_the_local_runtime_and_no_key(tmp_path: Path) -> None:
    settings = resolve(None, None, None, {CONFIG_ENV: str(tmp_path / "absent.toml")})
    assert (settings.url, settings.api_key, settings.source, settings.profile) == (
        DEFAULT_URL,
        None,
        "default",
        "default",
    )


def test_without_a_url_the_local_runtime_on_its_port(tmp_path: Path) -> None:
    settings = resolve(None, None, None, {CONFIG_ENV: str(tmp_path / "absent.toml"), PORT_ENV: "9090"})
    assert (settings.url, settings.source) == ("http://127.0.0.1:9090", "default")


def test_the_port_yields_to_a_flag_the_env_url_and_a_profile(config: Path) -> None:
    port = {PORT_ENV: "9090"}
    assert resolve("http://flag:3", None, None, env_with(config, **port)).url == "http://flag:3"
    assert resolve(None, None, None, env_with(config, **port, **{URL_ENV: "http://env:2"})).url == "http://env:2"
    assert resolve(None, None, None, env_with(config, **port)).url == "http://profile-default:1"


@pytest.mark.parametrize("given", ["", "  "])
def test_an_empty_port_is_the_default_one(tmp_path: Path, given: str) -> None:
    assert resolve(None, None, None, {CONFIG_ENV: str(tmp_path / "absent.toml"), PORT_ENV: given}).url == DEFAULT_URL


@pytest.mark.parametrize("given", ["abc", "0", "65536", "-1", "80.5"])
def test_a_port_that_is_not_one_is_a_usage_error(tmp_path: Path, given: str) -> None:
    with pytest.raises(ConfigError, match=PORT_ENV):
        resolve(None, None, None, {CONFIG_ENV: str(tmp_path / "absent.toml"), PORT_ENV: given})
    result = CliRunner().invoke(
        cli, ["tasks", "list"], env={CONFIG_ENV: str(tmp_path / "absent.toml"), PORT_ENV: given, URL_ENV: ""}
    )
    assert result.exit_code == 2
    assert PORT_ENV in result.stderr


def test_the_port_is_the_one_the_local_runtime_listens_on() -> None:
    """The command line spells the variable itself (it imports no runtime): the same name, the
    same default as local/settings.py's."""
    assert LocalSettings.setting_name("port") == PORT_ENV
    assert LocalSettings.model_fields["port"].default == DEFAULT_PORT
    assert LocalSettings.from_env({PORT_ENV: "9090"}).port == 9090


def test_a_named_profile_must_exist(config: Path) -> None:
    with pytest.raises(ConfigError, match="staging"):
        resolve(None, None, "staging", env_with(config))


def test_the_default_config_path_is_under_home(tmp_path: Path) -> None:
    path = tmp_path / ".config" / "sundial" / "config.toml"
    save_profile(path, "default", "http://home:4", None)
    assert resolve(None, None, None, {"HOME": str(tmp_path)}).url == "http://home:4"


def test_saved_profiles_are_0600_and_keep_other_members(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "config.toml"
    save_profile(path, "prod", "https://api.example.test/prod", 'sk_"quoted"\\key')
    save_profile(path, "prod", None, None)
    save_profile(path, "dev", "http://127.0.0.1:8080", None)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert read_profiles(path) == {
        "prod": {"url": "https://api.example.test/prod", "api_key": 'sk_"quoted"\\key'},
        "dev": {"url": "http://127.0.0.1:8080"},
    }


def test_a_broken_config_file_is_a_usage_error(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text("[profiles.default\nurl = ")
    result = CliRunner().invoke(cli, ["tasks", "list"], env={CONFIG_ENV: str(path)})
    assert result.exit_code == 2
    assert "cannot read" in result.stderr


def test_profile_commands_write_list_and_show_without_the_full_key(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    env = {CONFIG_ENV: str(path), URL_ENV: "", KEY_ENV: "", PROFILE_ENV: ""}
    runner = CliRunner()
    key = "sk_abcdef0123456789_secretpart"
    made = runner.invoke(cli, ["profile", "set", "prod", "--url", "https://x.test/prod", "--api-key", key], env=env)
    assert made.exit_code == 0, made.output
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    listed = runner.invoke(cli, ["-o", "json", "profile", "list"], env=env)
    assert json.loads(listed.stdout) == [{"name": "prod", "url": "https://x.test/prod", "api_key": "sk_abcde…"}]
    shown = runner.invoke(cli, ["--profile", "prod", "profile", "show"], env=env)
    assert shown.exit_code == 0
    assert "https://x.test/prod" in shown.stdout
    assert "profile" in shown.stdout
    assert "secretpart" not in shown.stdout + made.stdout + listed.stdout
    missing = runner.invoke(cli, ["profile", "show", "staging"], env=env)
    assert missing.exit_code == 2
