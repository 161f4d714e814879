"""Reliability and security (issue 13): failures that say so, a lock that holds, no secrets, private files."""

import json
import os
import stat

import pytest

from agent.errors import BackendError, ConfigError, display_url, redact
from conftest import run_cli
from stores.vectors import MilvusVectorStore


def one_error_line(r) -> str:
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), r.stderr
    return lines[0]


# -- the Milvus Lite file: errors say what actually failed ------------------------------------------
def test_a_damaged_milvus_file_is_called_damaged_not_locked(tmp_path, capfd):
    path = tmp_path / "milvus.db"
    path.write_bytes(b"this is not a Milvus Lite file" * 100)
    store = MilvusVectorStore(str(path))
    with pytest.raises(BackendError) as err:
        store.client
    assert "damaged" in str(err.value) and "another process" not in str(err.value)
    assert capfd.readouterr().err == ""  # the Lite server's own log lines went to its log file
    store.close()
    assert store.lock_path.exists()  # our lock file stays; it is released, not deleted
    again = MilvusVectorStore(str(path))  # released: the next open gets the same diagnosis, not "locked"
    with pytest.raises(BackendError, match="damaged"):
        again.client
    again.close()


def test_a_zero_milvus_timeout_is_a_settings_error_naming_the_variable(tmp_path):
    r = run_cli(tmp_path / "home", "lookup", "anything", EXECUTOR_MILVUS_TIMEOUT_S="0")
    assert r.returncode == 2
    assert "EXECUTOR_MILVUS_TIMEOUT_S" in one_error_line(r) and "greater than 0" in r.stderr


@pytest.mark.parametrize("var, value", [("EXECUTOR_LOOKUP_BUDGET", "many"), ("EXECUTOR_GRAPH_HOPS", "9"),
                                        ("EXECUTOR_FALKORDB_BOLT_PORT", "70000")])
def test_settings_errors_name_the_field(tmp_path, var, value):
    r = run_cli(tmp_path / "home", "kb", "list", **{var: value})
    assert r.returncode == 2
    line = one_error_line(r)
    assert var in line and value not in line.split(":", 2)[-1].replace(var, "")
