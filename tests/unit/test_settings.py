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


def test_a_socket_url_needs_no_host_but_a_tcp_url_does(tmp_path):
    """FalkorDB's `unix:///path.sock` has no host name and is a valid URL; `redis://:6379` is not."""
    from executor.core.errors import ConfigError

    sock = f"unix://{tmp_path}/falkordb.sock"
    assert Settings(home=tmp_path / "home", falkordb_url=sock).falkordb_url == sock
    with pytest.raises((ConfigError, ValueError), match="no host name"):
        Settings(home=tmp_path / "home2", falkordb_url="redis://:6379")


def test_a_password_in_a_url_without_a_scheme_is_never_printed(tmp_path):
    """A malformed FALKORDB_URL (`redis:pw@host port`) is refused by the settings, which never quote it (the
    driver's own error quoted it whole); a Milvus URI of that shape is still taken, and redacted."""
    from executor.core.errors import redact

    with pytest.raises(ValueError) as caught:
        Settings(home=tmp_path / "home", falkordb_url="redis:FKSECRET4@127.0.0.1 6379")
    assert "redis://" in str(caught.value) and "FKSECRET4" not in str(caught.value)
    Settings(home=tmp_path / "home", database_url="sqlite:///" + str(tmp_path / "x.db"), milvus_uri="m:MVS4@h.db")
    said = redact("ValueError: cannot open m:MVS4@h.db")
    assert "MVS4" not in said


@pytest.mark.parametrize("uri", ["not a url", "root:MVSECRET9@127.0.0.1 19530"])
def test_a_milvus_uri_that_is_neither_a_url_nor_a_lite_file_is_refused_without_its_value(tmp_path, uri):
    with pytest.raises((ExecutorError, ValueError)) as caught:
        Settings(home=tmp_path / "home", milvus_uri=uri)
    assert "Milvus Lite file" in str(caught.value) and "MVSECRET9" not in str(caught.value)


def test_a_milvus_lite_file_and_a_milvus_url_are_taken(tmp_path):
    assert Settings(home=tmp_path / "h1", milvus_uri=str(tmp_path / "m.db")).milvus_uri.endswith("m.db")
    assert Settings(home=tmp_path / "h2", milvus_uri="http://127.0.0.1:19530").milvus_uri.startswith("http")
