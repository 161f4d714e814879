"""What a hostile probe of the command line found (issue 30, round four), as regression tests: a ./config.yaml
that moves an endpoint says so, a prompt without a terminal and bad input are exit 2 naming the option, secrets
are masked but paths are not, and a home is never made inside a system folder."""

import os
import subprocess
import sys

import pytest
from conftest import REPO, last_error_line

from executor.core.errors import redact


def run_in(folder, *args: str, **env_extra) -> subprocess.CompletedProcess:
    """`executor ARGS` run inside `folder` (where a ./config.yaml is read from), EXECUTOR_CONFIG unset."""
    env = {k: v for k, v in os.environ.items() if k != "EXECUTOR_CONFIG"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH", "")]))
    return subprocess.run(
        [sys.executable, "-m", "executor.cli.main", *args],
        capture_output=True,
        text=True,
        env={**env, **env_extra},
        timeout=180,
        cwd=folder,
        stdin=subprocess.DEVNULL,  # no terminal, as under a script or CI
    )


# -- 1. an implicit ./config.yaml ----------------------------------------------------------------------
def test_an_implicit_config_yaml_that_moves_the_endpoint_and_home_says_so_without_values(tmp_path):
    (tmp_path / "config.yaml").write_text(
        "openai_base_url: http://attacker.example:9/v1\nhome: ./stolen-home\nmodel: m\n", encoding="utf-8"
    )
    r = run_in(tmp_path, "kb", "list")
    assert r.returncode == 0, r.stderr
    notices = [line for line in r.stderr.splitlines() if line.startswith("executor: ")]
    assert notices == ["executor: ./config.yaml sets home, openai_base_url (set EXECUTOR_CONFIG to choose a file)"]
    assert "attacker" not in r.stderr and "stolen" not in r.stderr


def test_a_config_named_by_executor_config_or_one_setting_no_endpoint_is_quiet(tmp_path):
    (tmp_path / "config.yaml").write_text("model: m\n", encoding="utf-8")
    quiet = run_in(tmp_path, "kb", "list", EXECUTOR_HOME=str(tmp_path / "h"))
    assert quiet.returncode == 0 and "config.yaml" not in quiet.stderr, quiet.stderr
    named = tmp_path / "mine.yaml"
    named.write_text("openai_base_url: http://127.0.0.1:9/v1\n", encoding="utf-8")
    chosen = run_in(tmp_path, "kb", "list", EXECUTOR_HOME=str(tmp_path / "h"), EXECUTOR_CONFIG=str(named))
    assert chosen.returncode == 0 and "sets" not in chosen.stderr, chosen.stderr


# -- 2. a prompt without a terminal, and paths that look like secrets ------------------------------------
def test_kb_drop_without_a_terminal_is_usage_naming_yes_and_keeps_the_kb(tmp_path):
    home = {"EXECUTOR_HOME": str(tmp_path / "h")}
    assert run_in(tmp_path, "kb", "create", "notes", **home).returncode == 0
    line = last_error_line(run_in(tmp_path, "kb", "drop", "notes", **home), 2)
    assert "stdin is not a terminal" in line and "--yes" in line and "'notes'" in line, line
    assert "notes" in run_in(tmp_path, "kb", "list", **home).stdout
    assert run_in(tmp_path, "kb", "drop", "notes", "--yes", **home).returncode == 0


def test_words_like_passwd_or_secret_in_a_path_are_not_masked(tmp_path):
    for name in ("passwd", "secret", "api_token"):
        missing = tmp_path / "etc" / name
        line = last_error_line(run_in(tmp_path, "ingest", str(missing), EXECUTOR_HOME=str(tmp_path / "h")), 2)
        assert f"{missing}: no such" in line and "***" not in line, line
    # what is a credential still is, a path before it or not
    assert redact("password: hunter2") == "password: ***"
    assert redact("/v1/chat?api_key=sk-9f8e7d") == "/v1/chat?api_key=***"
    assert redact("postgresql://app:hunter2@db:5432/x") == "postgresql://***@db:5432/x"
    assert redact("auth failed; token: abc123") == "auth failed; token: ***"


# -- 3. bad input is exit 2 naming it ------------------------------------------------------------------
@pytest.fixture
def empty_home(tmp_path):
    return {"EXECUTOR_HOME": str(tmp_path / "h")}


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("stats", "--source", ""), "--source names no source"),
        (("stats", "--source", ",,"), "--source names no source"),
        (("kb", "create", "a" * 312), "(312 characters): a name may have at most 48 characters"),
        (("kb", "show", "b" * 49), "(49 characters): a name may have at most 48 characters"),
        (("kb", "create", "x", "--entities", ",,,"), "--entities: no entity types given"),
        (("kb", "create", "x", "--entities", ""), "--entities: no entity types given"),
        (("graph", "show", "ComfyUI", "--html", ""), "--html is empty"),
    ],
)
def test_empty_or_overlong_input_is_usage_naming_the_option(tmp_path, empty_home, args, says):
    line = last_error_line(run_in(tmp_path, *args, **empty_home), 2)
    assert says in line, line
    assert "no knowledge bases" in run_in(tmp_path, "kb", "list", **empty_home).stdout  # nothing was created


def test_the_graph_commands_on_a_kb_without_a_graph_are_usage(tmp_path, empty_home):
    assert run_in(tmp_path, "kb", "create", "plain", **empty_home).returncode == 0
    for args in (("graph", "neighbors", "x"), ("graph", "path", "x", "y"), ("graph", "show", "x", "--html", "p.html")):
        line = last_error_line(run_in(tmp_path, *args, "--kb", "plain", **empty_home), 2)
        assert line == (
            "error: KB 'plain' has no graph; the graph commands need a KB created with --entities "
            "(`executor kb list` says which have one)"
        ), line


@pytest.mark.parametrize(
    ("value", "key"),
    [
        ('{"normalisation": {}}', "retrieval.normalisation"),
        ('{"normalization": {"embedders": {"use-multilingual-v3": {"referance-threshold": 0.3}}}}', "referance"),
        ('{"repeats": {"embedders": {"use-multilingual-v3": {"overlap": 0.5}}}}', "overlap'"),
    ],
)
def test_an_unknown_key_in_executor_retrieval_names_the_variable_and_the_key(tmp_path, empty_home, value, key):
    line = last_error_line(run_in(tmp_path, "kb", "list", EXECUTOR_RETRIEVAL=value, **empty_home), 2)
    assert line.startswith("error: invalid setting EXECUTOR_RETRIEVAL (retrieval.") and key in line, line
    assert "unknown key" in line, line


# -- 4. where a home may be, and what ingest reads ---------------------------------------------------------
@pytest.mark.parametrize(
    ("home", "system"),
    [
        ("/etc/executor-hostile4", "/etc"),
        ("/usr/executor-hostile4", "/usr"),
        ("/usr/local/share/executor-hostile4/home", "/usr"),
        ("/proc/executor-hostile4", "/proc"),
        ("/sys/executor-hostile4", "/sys"),
        ("/boot/executor-hostile4", "/boot"),
    ],
)
def test_a_new_home_inside_a_system_folder_is_refused_and_not_created(tmp_path, home, system):
    line = last_error_line(run_in(tmp_path, "kb", "create", "notes", EXECUTOR_HOME=home), 2)
    assert line.startswith("error: invalid setting EXECUTOR_HOME") and f"inside the system folder {system}" in line
    assert not os.path.lexists(home)
    assert not os.path.lexists(home.split("/executor-hostile4")[0] + "/executor-hostile4")


def test_a_new_home_reached_through_a_link_to_a_system_folder_is_refused(tmp_path):
    (tmp_path / "to-etc").symlink_to("/etc")
    home = tmp_path / "to-etc" / "executor-hostile4"
    line = last_error_line(run_in(tmp_path, "kb", "list", EXECUTOR_HOME=str(home)), 2)
    assert f"{home} (-> /etc/executor-hostile4) is inside the system folder /etc" in line, line
    assert not os.path.lexists("/etc/executor-hostile4")


def test_ingest_of_a_file_says_it_is_a_file_and_what_to_pass(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    page = docs / "page.md"
    page.write_text("# A page\n\nSome text.\n", encoding="utf-8")
    line = last_error_line(run_in(tmp_path, "ingest", str(page), "--kb", "notes", EXECUTOR_HOME=str(tmp_path / "h")), 2)
    assert line.startswith(f"error: {page}: is a file, not a folder") and f"({docs})" in line, line
