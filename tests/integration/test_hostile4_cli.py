"""What a hostile probe of the command line found (issue 30, round four), as regression tests: a ./config.yaml
that moves an endpoint says so, a prompt without a terminal and bad input are exit 2 naming the option, secrets
are masked but paths are not, and a home is never made inside a system folder."""

import os
import subprocess
import sys

from conftest import REPO


def one_error_line(r, code: int) -> str:
    assert r.returncode == code, (r.returncode, r.stdout[-2000:], r.stderr[-2000:])
    lines = r.stderr.strip().splitlines()
    assert lines and lines[-1].startswith("error: "), r.stderr
    assert "Traceback" not in r.stderr, r.stderr
    return lines[-1]


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
