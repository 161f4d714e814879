"""Round twenty-two's leftovers (issue 30; evals/review/hostile22-findings.md rows 8 and 11): the Host values a
wildcard MCP server answers to, said where it starts; `llm serve`'s sampling options passed to llama.cpp; Studio's
request checks on the graph's own catalog; a search of the threads' values is no state edit. Real servers and
clients: `executor mcp --http`, the local model endpoint with the bundled SmolLM2-135M, `langgraph dev` through
`langgraph_sdk`."""

import json
import os
import re
import subprocess
import sys

import pytest
from conftest import REPO, ingested_home, run_cli, stop_process

pytestmark = pytest.mark.timeout(300)


# -- 1. the start line of `executor mcp --http` on every interface -------------------------------------------------
def _answered_names(line: str, port: int) -> list[str]:
    found = re.search(rf"it answers at http://NAME:{port}/mcp for NAME in (.+?) \(with the token\)", line)
    assert found, line
    return found[1].split(", ")


def _own_ipv4() -> str:
    found = [a for a in subprocess.run(["hostname", "-I"], capture_output=True, text=True).stdout.split() if "." in a]
    if not found:
        pytest.skip("this machine has no IPv4 address besides loopback")
    return found[0]


@pytest.mark.parametrize("bind", ["0.0.0.0", "::"])
def test_a_server_on_every_interface_says_which_hosts_it_answers_to(tmp_path_factory, tmp_path, bind):
    """`executor mcp --http --host 0.0.0.0 --token T` said "on http://0.0.0.0:PORT/mcp", a URL it refuses (421),
    and nothing of the names it takes: its start line lists them, one line, without the token, and each name listed
    is answered (an address not listed is still refused)."""
    import socket

    from test_local_servers import INIT, TOKEN, post, start_mcp

    address = _own_ipv4()
    home = ingested_home(tmp_path_factory, "answers-to")
    log = open(tmp_path / "server.log", "w")
    proc, port = start_mcp(home, log, "--host", bind, "--token", TOKEN)
    auth = f"Authorization: Bearer {TOKEN}\r\n"
    body = json.dumps(INIT).encode()
    try:
        said = (tmp_path / "server.log").read_text().strip().splitlines()
        assert len(said) == 1 and said[0].startswith("executor MCP server on "), said
        assert TOKEN not in said[0]
        names = _answered_names(said[0], port)
        assert names[:3] == ["127.0.0.1", "localhost", "[::1]"]
        assert address in names and socket.gethostname().lower() in names
        for name in names:
            assert post(port, f"{name}:{port}", body, extra=auth) == 200, name
        assert post(port, f"192.0.2.254:{port}", body, extra=auth) == 421
    finally:
        stop_process(proc, log)
        run_cli(home, "graph", "stop")


def test_the_json_start_line_names_the_same_hosts(tmp_path_factory, tmp_path):
    """`--json`'s object, for a script that passes the URL on, carries the Host values too; the person's line names
    nothing more on loopback, where its URL is the one."""
    from conftest import free_port

    home = ingested_home(tmp_path_factory, "answers-to-json")
    port = free_port()
    env = {"EXECUTOR_HOME": str(home), "EXECUTOR_MCP_TOKEN": "t0ken-for-the-tests-0123456789"}
    args = [sys.executable, "-m", "executor.cli.main", "mcp", "--http", "--port", str(port)]
    for extra, check in (
        (["--host", "0.0.0.0", "--json"], "json"),
        ([], "loopback"),
    ):
        proc = subprocess.Popen(
            [*args, *extra],
            cwd=REPO,
            env={**os.environ, **env},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            if check == "json":
                started = json.loads(proc.stdout.readline())
                assert started["url"] == f"http://0.0.0.0:{port}/mcp"
                assert started["hosts"][:3] == [f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"]
                assert f"{_own_ipv4()}:{port}" in started["hosts"]
            else:
                line = proc.stderr.readline()
                assert line.startswith(f"executor MCP server on http://127.0.0.1:{port}/mcp (home ")
                assert "answers at" not in line and line.rstrip().endswith("; Ctrl-C stops it"), line
        finally:
            stop_process(proc)
        run_cli(home, "graph", "stop")
