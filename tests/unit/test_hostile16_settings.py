"""Round sixteen of the hostile pass (issue 30; `evals/review/hostile16-findings.md`), its pure-logic cases: a setting
error names the variable or file that set it, and never prints the lines of a file that is no config.yaml; text
holding bytes that are not UTF-8 is refused saying so; a label entry giving a key twice is refused naming it."""

import pytest

from executor.core.errors import ConfigError, InputError
from executor.core.settings import get_settings
from executor.core.validation import clean_query, no_control_characters
from executor.retrieval.calibration import load_labels


@pytest.fixture(autouse=True)
def fresh_settings():
    """`get_settings` keeps the first settings a process loaded: each test here reads its own environment (under
    pytest-xdist a test before them in the same worker had loaded them, and nothing was raised)."""
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


def test_an_unknown_embedder_is_a_setting_error_naming_its_variable(monkeypatch, tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text("")
    monkeypatch.setenv("EXECUTOR_CONFIG", str(config))
    monkeypatch.setenv("EXECUTOR_EMBEDDER", "nope")
    # it loaded, and the first command that embedded said "unknown embedder 'nope'", naming no variable
    with pytest.raises(ConfigError) as raised:
        get_settings()
    assert str(raised.value).startswith("invalid setting EXECUTOR_EMBEDDER (embedder): "), raised.value
    monkeypatch.delenv("EXECUTOR_EMBEDDER")
    config.write_text("embedder: nope\n")
    with pytest.raises(ConfigError) as raised:
        get_settings()
    assert str(raised.value).startswith(f"invalid setting {config} (embedder): "), raised.value


def test_a_config_file_that_is_another_file_is_refused_without_printing_its_lines(monkeypatch, tmp_path):
    # what EXECUTOR_CONFIG=/etc/shadow read as keys (the error printed five of them, password hashes included)
    shadow = tmp_path / "shadow"
    lines = [f"user{i}:$6$salt{i}$hashhashhash{i}:20228:0:99999:7::" for i in range(8)]
    shadow.write_text("".join(f"{line}:\n" for line in lines))
    monkeypatch.setenv("EXECUTOR_CONFIG", str(shadow))
    with pytest.raises(ConfigError) as raised:
        get_settings()
    message = str(raised.value)
    assert message == f"{shadow}: 8 unknown keys, none of them a setting's name: is it a config.yaml?"
    assert "$6$" not in message and "hash" not in message


def test_a_misspelt_setting_is_still_named(monkeypatch, tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text("top_kk: 3\nline:with:colons:$6$x: 1\n")
    monkeypatch.setenv("EXECUTOR_CONFIG", str(config))
    with pytest.raises(ConfigError) as raised:
        get_settings()
    assert str(raised.value) == f"{config}: unknown settings 'top_kk' (and 1 more)"


@pytest.mark.parametrize("check", [clean_query, no_control_characters])
def test_text_holding_bytes_that_are_not_utf8_is_refused_saying_so(check):
    # what `sys.stdin` gives for b"\xff\xfe broken" (surrogateescape): it went on into a turn, and failed there
    text = b"\xff\xfe broken".decode("utf-8", "surrogateescape")
    args = (text, 2000) if check is clean_query else (text, "the query")
    with pytest.raises(InputError, match="^the query is not valid text: it holds bytes that are not UTF-8$"):
        check(*args)


def test_a_label_entry_giving_a_key_twice_is_refused_naming_it(tmp_path):
    labels = tmp_path / "labels.yaml"
    labels.write_text(
        '- query: "ERR_TIMEOUT"\n  relevant: [troubleshooting/err-timeout.md]\n'
        '- query: "PgBouncer pooling"\n  relevant: [infrastructure/postgres-connection-limits.md]\n  relevant: []\n'
    )
    # the second entry was taken as `relevant: []`, an off-topic question, and measured and fitted as one
    with pytest.raises(InputError, match=r"labels\.yaml: entry 2 gives 'relevant' twice; keep one$"):
        load_labels(labels)
