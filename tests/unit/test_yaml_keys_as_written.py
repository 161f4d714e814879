"""Hostile pass sixteen, finding 15 (`evals/review/hostile16-findings.md`): `on: 1` in config.yaml said "unknown
setting 'True'", since YAML 1.1 reads a plain `on` (`yes`, `no`, `off`) as a boolean and `~` as null, keys too."""

import pytest

from executor.core import bounded_yaml
from executor.core.errors import ConfigError
from executor.core.settings import get_settings


@pytest.fixture(autouse=True)
def fresh_settings():
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


@pytest.mark.parametrize("key", ["on", "On", "yes", "off", "no", "true", "null"])
def test_an_unknown_setting_is_named_as_it_was_written(monkeypatch, tmp_path, key):
    config = tmp_path / "config.yaml"
    config.write_text(f"{key}: 1\n")
    monkeypatch.setenv("EXECUTOR_CONFIG", str(config))
    with pytest.raises(ConfigError) as raised:
        get_settings()
    assert str(raised.value) == f"{config}: unknown setting {key!r}"


def test_only_keys_keep_their_text():
    text = "on: yes\nnested: {off: ~, 1: no}\nbase: &b {y: 1}\nmerged: {<<: *b, 'true': false}\n"
    assert bounded_yaml.load(text, bounded_yaml.CONFIG) == {
        "on": True,
        "nested": {"off": None, 1: False},
        "base": {"y": 1},
        "merged": {"y": 1, "true": False},
    }
