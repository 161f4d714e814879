import pytest

from executor.core.errors import ExecutorError
from executor.core.settings import Settings


def _empty_config(tmp_path):
    """An empty config file: none of ./config.yaml, and no error (a config file named but missing is one)."""
    path = tmp_path / "empty-config.yaml"
    path.write_text("")
    return path


def test_thresholds_come_from_config_yaml_per_embedder_with_env_on_top(tmp_path, monkeypatch):
    cfg = tmp_path / "config.yaml"
    cfg.write_text(
        "retrieval:\n"
        "  normalization:\n"
        "    max-l2-distance: 1.8\n"
        "    embedders:\n"
        "      use-multilingual-v3: {highly-relevant-threshold: 0.6, reference-threshold: 0.3}\n",
        encoding="utf-8",
    )
    monkeypatch.setenv("EXECUTOR_CONFIG", str(cfg))
    t = Settings().thresholds("use-multilingual-v3")
    assert (t.max_l2_distance, t.highly_relevant_threshold, t.reference_threshold) == (1.8, 0.6, 0.3)
    bge = Settings().thresholds("bge-m3")  # other embedders keep their defaults, global keys apply
    assert (bge.max_l2_distance, bge.highly_relevant_threshold, bge.reference_threshold) == (1.8, 0.75, 0.5)
    monkeypatch.setenv("EXECUTOR_HIGHLY_RELEVANT_THRESHOLD", "0.65")
    assert Settings().thresholds("use-multilingual-v3").highly_relevant_threshold == 0.65


def test_bge_m3_keeps_the_source_design_numbers(monkeypatch, tmp_path):
    monkeypatch.setenv("EXECUTOR_CONFIG", str(_empty_config(tmp_path)))
    t = Settings().thresholds("bge-m3")
    assert (t.max_l2_distance, t.highly_relevant_threshold, t.reference_threshold) == (2.0, 0.75, 0.5)


def test_inconsistent_thresholds_are_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("EXECUTOR_CONFIG", str(_empty_config(tmp_path)))
    monkeypatch.setenv("EXECUTOR_REFERENCE_THRESHOLD", "0.9")
    with pytest.raises(ExecutorError, match="reference-threshold must not exceed"):
        Settings().thresholds("use-multilingual-v3")


def test_broken_config_file_is_a_clear_error(monkeypatch, tmp_path):
    cfg = tmp_path / "config.yaml"
    cfg.write_text("retrieval: [unclosed", encoding="utf-8")
    monkeypatch.setenv("EXECUTOR_CONFIG", str(cfg))
    with pytest.raises(ExecutorError, match="not valid YAML"):
        Settings()


def test_thresholds_that_do_not_fit_together_name_the_variable_that_set_them():
    from executor.core.errors import ConfigError

    with pytest.raises(ConfigError, match="EXECUTOR_REFERENCE_THRESHOLD"):
        Settings(reference_threshold=0.99).thresholds("use-multilingual-v3", "similarity")
