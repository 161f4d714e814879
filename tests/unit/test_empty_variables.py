"""An environment variable set to "" (`MILVUS_URI= executor ...`, docker compose's `${VAR:-}`) means unset, for every
setting alike: before, an empty URL was unset, an empty number an error and an empty EXECUTOR_HOME refused."""

import pytest
from pydantic import AliasChoices

from executor.core.settings import Settings


def _names(field: str) -> list[str]:
    alias = Settings.model_fields[field].validation_alias
    return [str(a) for a in alias.choices] if isinstance(alias, AliasChoices) else [f"EXECUTOR_{field.upper()}"]


@pytest.fixture
def clean_env(monkeypatch, tmp_path):
    for field in Settings.model_fields:
        for name in _names(field):
            monkeypatch.delenv(name, raising=False)
    config = tmp_path / "empty-config.yaml"
    config.write_text("")
    monkeypatch.setenv("EXECUTOR_CONFIG", str(config))
    monkeypatch.chdir(tmp_path)
    return monkeypatch


@pytest.mark.parametrize("field", sorted(Settings.model_fields))
def test_a_setting_whose_variables_are_all_empty_is_its_default(clean_env, field):
    unset = Settings().model_dump()
    for name in _names(field):
        clean_env.setenv(name, "")
    assert Settings().model_dump() == unset


def test_an_empty_home_variable_is_the_default_folder_not_the_current_one(clean_env, tmp_path):
    clean_env.setenv("EXECUTOR_HOME", "")
    assert Settings().home.resolve() == (tmp_path / ".executor").resolve()
