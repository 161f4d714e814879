"""Command-line conventions: --version, -h, completion, help on every argument, one error boundary with exit
codes 1 (failed) and 2 (asked wrongly), --json errors, eval --report-json, stats without eval rows, kb/session show."""

import json
import os
import subprocess
import sys

import pytest
import typer
from conftest import REPO, ingested_home, run_cli
from typer.main import get_command

from executor.cli.main import ExecutorGroup, app


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    return ingested_home(tmp_path_factory, "conventions-home")


def one_error_line(r, code: int) -> str:
    assert r.returncode == code, (r.returncode, r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), r.stderr
    return lines[0]


def test_version_and_short_help(tmp_path):
    r = run_cli(tmp_path, "--version")
    assert r.returncode == 0 and r.stdout.startswith("executor 0.")
    for args in (["-h"], ["graph", "show", "-h"], ["kb", "-h"], ["stats", "-h"]):
        r = run_cli(tmp_path, *args)
        assert r.returncode == 0 and r.stdout.startswith("Usage: executor"), (args, r.stderr)
    assert "Exit codes: 0 done; 1 the command ran and failed" in " ".join(run_cli(tmp_path, "-h").stdout.split())


def test_shell_completion_is_on(tmp_path):
    # the shell named, not detected from the process tree (which under CI may hold no shell)
    r = run_cli(tmp_path, "--show-completion", "bash", _TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION="1")
    assert r.returncode == 0 and "_EXECUTOR_COMPLETE" in r.stdout
    # what bash would get for `executor gr<TAB>` and `executor graph sh<TAB>`
    env = {**os.environ, "_EXECUTOR_COMPLETE": "complete_bash", "EXECUTOR_HOME": str(tmp_path)}
    for words, cword, expected in (("executor gr", "1", "graph"), ("executor graph sh", "2", "show")):
        r = subprocess.run(
            [sys.executable, "-m", "executor.cli.main"],
            capture_output=True,
            text=True,
            cwd=REPO,
            env={**env, "COMP_WORDS": words, "COMP_CWORD": cword},
            timeout=60,
        )
        assert expected in r.stdout.split(), (words, r.stdout, r.stderr)


def commands(group, path=("executor",)):
    for name, cmd in group.commands.items():
        if hasattr(cmd, "commands"):
            yield from commands(cmd, (*path, name))
        else:
            yield " ".join((*path, name)), cmd


def test_every_argument_and_option_has_help():
    missing = [
        f"{where}: {p.name}"
        for where, cmd in commands(get_command(app))
        for p in cmd.params
        if not getattr(p, "help", None)
    ]
    assert missing == []
    assert {where for where, _ in commands(get_command(app))} >= {
        "executor ask",
        "executor graph show",
        "executor session show",
        "executor kb drop",
    }


def test_help_text_is_printed_as_written(tmp_path):
    r = run_cli(tmp_path, "calibrate", "-h")
    assert "{query, relevant: [doc_key, ...]}" in r.stdout


def test_usage_errors_exit_2_with_one_line(tmp_path):
    line = one_error_line(run_cli(tmp_path, "lookup"), 2)
    assert "Missing argument 'QUERY'" in line or "Missing argument 'query'" in line
    assert "executor lookup -h" in line
    line = one_error_line(run_cli(tmp_path, "stats", "--bogus"), 2)
    assert "No such option: --bogus" in line
    r = run_cli(tmp_path, "stats", "--bogus", "--json")
    one_error_line(r, 2)
    assert json.loads(r.stdout) == {"error": "No such option: --bogus (see 'executor stats -h')", "code": 2}


def test_runtime_failures_exit_1_and_json_errors_carry_the_same_code(tmp_path):
    env = {"EXECUTOR_DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none"}  # nothing listens on port 1
    line = one_error_line(run_cli(tmp_path, "stats", **env), 1)
    assert "cannot open the database" in line and "Traceback" not in line
    r = run_cli(tmp_path, "stats", "--json", **env)
    one_error_line(r, 1)
    data = json.loads(r.stdout)
    assert data["code"] == 1 and data["error"].startswith("cannot open the database")
    r = run_cli(tmp_path, "lookup", "x", "--kb", "nope", "--json")  # rejected input under --json: code 2
    assert json.loads(r.stdout)["code"] == 2 and r.returncode == 2


def test_a_bad_setting_is_named(tmp_path):
    line = one_error_line(run_cli(tmp_path, "stats", EXECUTOR_LOOKUP_BUDGET="lots", OPENAI_API_KEY="sk-secret"), 2)
    assert line.startswith("error: invalid setting EXECUTOR_LOOKUP_BUDGET (lookup_budget): Input should be a valid")
    assert "lots" not in line and "sk-secret" not in line


def boundary_app() -> typer.Typer:
    """A command of the kind a later branch adds: it inherits the boundary by being on an ExecutorGroup."""
    t = typer.Typer(cls=ExecutorGroup)

    @t.command()
    def boom(as_json: bool = typer.Option(False, "--json")):
        raise RuntimeError("the library failed\nwith a second line\x1b]0;title\x07")

    @t.command()
    def other():
        pass

    return t


def test_an_unexpected_exception_is_one_line_and_a_traceback_only_with_debug(capsys, monkeypatch):
    monkeypatch.delenv("EXECUTOR_DEBUG", raising=False)
    code = get_command(boundary_app()).main(["boom"], prog_name="executor", standalone_mode=False)
    out, err = capsys.readouterr()
    assert code == 1 and out == ""
    assert err.splitlines() == [
        "error: RuntimeError: the library failed (run 'executor --debug ...' for the traceback)"
    ]
    code = get_command(boundary_app()).main(["boom", "--json"], prog_name="executor", standalone_mode=False)
    out, err = capsys.readouterr()
    assert json.loads(out)["code"] == 1 and len(err.splitlines()) == 1
    monkeypatch.setenv("EXECUTOR_DEBUG", "1")
    get_command(boundary_app()).main(["boom"], prog_name="executor", standalone_mode=False)
    _, err = capsys.readouterr()
    assert "Traceback (most recent call last)" in err and err.splitlines()[-1].startswith("error: RuntimeError")


def test_debug_flag_shows_the_traceback(tmp_path):
    r = run_cli(tmp_path, "--debug", "lookup", "x", "--kb", "Bad-Name")
    assert r.returncode == 2 and "Traceback (most recent call last)" in r.stderr
    assert r.stderr.strip().splitlines()[-1].startswith("error: invalid knowledge base name")


def test_eval_report_json_and_stats_without_eval_rows(home, tmp_path):
    assert run_cli(home, "lookup", "ERR_TIMEOUT 是什么？").returncode == 0  # real use: one lookup
    assert run_cli(home, "ask", "数据库连接池怎么配置？").returncode == 0  # and one turn
    before = json.loads(run_cli(home, "stats", "--json").stdout)
    assert before["by_source"] == {"ask": 1, "lookup": 1}
    report = tmp_path / "report.json"
    r = run_cli(home, "eval", "evals/scenarios/01-seed-usage.yaml", "--report-json", str(report), "--json")
    assert r.returncode == 0, r.stderr
    printed = json.loads(r.stdout)
    assert printed == json.loads(report.read_text()) and printed["aggregate"]["scenarios_failed"] == 0
    after = json.loads(run_cli(home, "stats", "--json").stdout)
    assert after["by_source"] == before["by_source"] and after["lookups"] == before["lookups"] == 2
    assert all(not s.startswith("eval-") for s in after["lookups_per_session"])
    evals = json.loads(run_cli(home, "stats", "--source", "eval", "--json").stdout)
    assert evals["lookups"] > 0 and set(evals["by_source"]) == {"eval"}
    every = json.loads(run_cli(home, "stats", "--source", "all", "--json").stdout)
    assert every["lookups"] == evals["lookups"] + after["lookups"]
    text = run_cli(home, "stats").stdout
    assert "2 lookups in 2 sessions (0 errors; real use" in text
    assert list(after["relevance_levels"]) == sorted(
        after["relevance_levels"], key=["PRECISE", "HIGHLY_RELEVANT", "REFERENCE", "DEDUPED", "NONE"].index
    )


def test_kb_show_is_a_table_and_session_show_lists_what_kg_sent(home):
    r = run_cli(home, "kb", "show", "sample")
    assert r.returncode == 0 and "entity types" in r.stdout and "relation types" in r.stdout
    assert "{" not in r.stdout and "'entity_types'" not in r.stdout  # no Python reprs
    assert run_cli(home, "kg", "Does ComfyUI depend on Docker?", "--session", "kg-show").returncode == 0
    data = json.loads(run_cli(home, "session", "show", "kg-show", "--json").stdout)
    sent = [d for docs in data["documents_by_domain"].values() for d in docs]
    assert sent and data["domain_levels"] == {}  # kg records documents, no graded lookup
    text = run_cli(home, "session", "show", "kg-show").stdout
    assert "nothing retrieved yet" not in text and all(d in text for d in sent)
    assert "nothing retrieved yet" in run_cli(home, "session", "show", "never-used").stdout
