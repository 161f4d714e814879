"""Round eighteen's findings of severity 7-9 that a command shows (evals/review/hostile18-findings.md,
hostile18b-findings.md): `executor mcp --kb` naming no KB, and stdout on a full device."""

import os
import subprocess
import sys

import pytest
from conftest import REPO, free_port, run_cli

INITIALIZE = (
    '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},'
    '"clientInfo":{"name":"probe","version":"1"}}}\n'
)


def one_error_line(r, code: int) -> str:
    assert r.returncode == code, (r.returncode, r.stderr[-2000:])
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), r.stderr
    return lines[0]


# -- hostile18b #7: a --kb the home does not hold, or no KB name at all, is refused at start ---------------------------
@pytest.mark.parametrize(
    ("kb", "said"), [("nope", "unknown knowledge base 'nope'"), ("../x", "invalid knowledge base")]
)
@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_mcp_with_a_kb_it_cannot_serve_is_refused_at_start(tmp_path, kb, said, transport):
    extra = ["--http", "--port", str(free_port())] if transport == "http" else []
    r = run_cli(tmp_path / "home", "mcp", "--kb", kb, *extra, timeout=120)
    assert said in one_error_line(r, 2)


# -- hostile18 #12: stdout on a full device is said to be stdout's, exit 1 ---------------------------------------------
def with_stdout_full(tmp_path, args, stdin: str | None = None) -> subprocess.CompletedProcess:
    with open("/dev/full", "w") as full:
        return subprocess.run(
            [sys.executable, "-m", "executor.cli.main", *args],
            input=stdin,
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "EXECUTOR_HOME": str(tmp_path / "home")},
            cwd=REPO,
            timeout=120,
        )


@pytest.mark.parametrize("args", [["kb", "list"], ["kb", "list", "--json"], ["--version"]])
def test_a_command_whose_stdout_is_full_says_so(tmp_path, args):
    r = with_stdout_full(tmp_path, args)
    assert one_error_line(r, 1) == "error: cannot write to stdout: No space left on device"


def test_the_stdio_mcp_server_whose_stdout_is_full_says_so(tmp_path):
    r = with_stdout_full(tmp_path, ["mcp"], INITIALIZE)
    assert r.returncode == 1, r.stderr
    assert r.stderr.splitlines()[-1] == "error: cannot write to stdout: No space left on device", r.stderr
