"""Round twelve of the hostile pass (issue 30): a fresh probe (`docs/reliability.md`, "Round twelve"). A database a
newer executor wrote is one line saying so, not Alembic's `CommandError`; a lone surrogate sent to `executor llm
serve` is a 400 naming the field, not a 500 and a traceback; a label file names the entry it fails on and warns of
documents the knowledge base does not hold (they made `eval-retrieval` report 0.00 without a word); `mcp --http
--host ::1` prints a URL a client can open; an endpoint that sends no text for the answer fails the turn (it was
an empty answer, exit 0)."""

import json
import os
import socket
import sqlite3
import subprocess
import sys
import time

import httpx
import pytest
from conftest import REPO, copy_of, free_port, last_error_line, pristine_home, run_cli, stop_process
from fake_openai import FakeOpenAI
from test_hostile6_servers import http_session, post_raw, stdio_mcp
from test_local_llm import needs_model
from test_local_servers import start_mcp


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    home = pristine_home(tmp_path_factory, "hostile12-home")
    yield home
    run_cli(home, "graph", "stop")


# -- a database of a newer schema ---------------------------------------------------------------------
@pytest.mark.parametrize("args", [("kb", "list"), ("lookup", "ERR_TIMEOUT")], ids=["kb-list", "lookup"])
def test_a_database_a_newer_executor_wrote_is_one_line_saying_so(pristine, tmp_path, args):
    home = copy_of(pristine, tmp_path)
    db = home / "executor.db"
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE alembic_version SET version_num = '0099'")
    r = run_cli(home, *args)
    line = last_error_line(r, 1)
    assert "CommandError" not in line, line
    assert str(db) in line and "'0099'" in line and "newer executor" in line, line
    with sqlite3.connect(db) as conn:  # left as it was: not stamped or migrated by this executor
        assert conn.execute("SELECT version_num FROM alembic_version").fetchall() == [("0099",)]


# -- label files -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("- query: ERR_TIMEOUT\n  relevant: [troubleshooting/err-timeout.md]\n- 5\n", "entry 2: Input should be"),
        (
            "- query: ERR_TIMEOUT\n  relevant: [troubleshooting/err-timeout.md]\n- query: q\n  relevant: 5\n",
            "entry 2 (relevant): Input should be a valid list",
        ),
    ],
    ids=["entry-not-a-mapping", "field-of-the-second-entry"],
)
def test_a_label_file_error_names_the_entry(pristine, tmp_path, text, expected):
    labels = tmp_path / "labels.yaml"
    labels.write_text(text, encoding="utf-8")
    line = last_error_line(run_cli(pristine, "eval-retrieval", "--labels", str(labels)), 2)
    assert expected in line and str(labels) in line, line
    assert ": :" not in line, line


def test_labels_naming_documents_the_kb_does_not_hold_are_a_warning(pristine, tmp_path):
    labels = tmp_path / "labels.yaml"
    typo = "troubleshootng/err-timeout.md"
    labels.write_text(f"- query: ERR_TIMEOUT 是什么\n  relevant: [{typo}]\n", encoding="utf-8")
    r = run_cli(pristine, "eval-retrieval", "--labels", str(labels), "--json")
    assert r.returncode == 0, r.stderr[-1000:]
    warnings = [line for line in r.stderr.splitlines() if line.startswith("warning: ")]
    assert len(warnings) == 1, r.stderr
    assert str(labels) in warnings[0] and repr(typo) in warnings[0] and "'sample'" in warnings[0], warnings
    # a label naming a real page gets no warning
    labels.write_text("- query: ERR_TIMEOUT 是什么\n  relevant: [troubleshooting/err-timeout.md]\n", encoding="utf-8")
    r = run_cli(pristine, "eval-retrieval", "--labels", str(labels), "--json")
    assert r.returncode == 0 and "warning:" not in r.stderr, r.stderr[-1000:]


# -- an endpoint that sends no answer ------------------------------------------------------------------
@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_an_endpoint_that_sends_no_text_for_the_answer_fails_the_turn(pristine, tmp_path, as_json):
    home = copy_of(pristine, tmp_path)
    script = [{"tool_calls": [("lookup_knowledge", {"query": "ERR_TIMEOUT 是什么"})]}, {"content": ""}]
    with FakeOpenAI(script) as server:
        r = run_cli(
            home,
            "ask",
            "ERR_TIMEOUT 是什么？",
            *(["--json"] if as_json else []),
            OPENAI_BASE_URL=server.base_url,
            OPENAI_API_KEY="sk-test-key",
        )
    run_cli(home, "graph", "stop")
    line = last_error_line(r, 1)
    assert "empty answer" in line and "OPENAI_BASE_URL" in line, line
    if as_json:
        assert json.loads(r.stdout.strip().splitlines()[-1])["code"] == 1, r.stdout


# -- the MCP server's URL on IPv6 ----------------------------------------------------------------------
@pytest.mark.parametrize("host", ["::1", "[::1]"], ids=["bare", "bracketed"])
def test_mcp_http_on_ipv6_loopback_prints_a_url_a_client_can_open(pristine, tmp_path, host):
    home = copy_of(pristine, tmp_path)
    port = free_port()
    env = {**os.environ, "EXECUTOR_HOME": str(home)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "executor.cli.main", "mcp", "--http", "--host", host, "--port", str(port), "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=REPO,
    )
    try:
        url = json.loads(proc.stdout.readline())["url"]
        assert url == f"http://[::1]:{port}/mcp", url
        deadline = time.monotonic() + 60  # the line comes once the port is bound; uvicorn listens just after
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("::1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.2)
        client = {"name": "t", "version": "1"}
        params = {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": client}
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}
        response = httpx.post(
            url, json=init, headers={"Accept": "application/json, text/event-stream"}, timeout=30
        )  # the URL as printed is one a client opens
        assert response.status_code == 200, response.text
    finally:
        stop_process(proc)
        run_cli(home, "graph", "stop")


# -- executor llm serve --------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def endpoint():
    from executor.core.settings import Settings
    from executor.local_llm.serve import LocalEndpoint, engine_options

    settings = Settings(local_model_threads=1, local_model_ctx=2048, local_model_max_tokens=16)
    with LocalEndpoint(engine_options(settings, "bundled")) as ep:
        yield ep


@needs_model
@pytest.mark.parametrize(
    ("body", "where"),
    [
        ('{"messages": [{"role": "user", "content": "hi \\ud800"}], "max_tokens": 2}', "messages.0.content"),
        ('{"messages": [{"role": "user", "content": "hi"}], "\\udfff": 1, "max_tokens": 2}', "body"),
    ],
    ids=["in-a-message", "in-a-key"],
)
def test_a_lone_surrogate_sent_to_llm_serve_is_a_400_naming_the_field(endpoint, body, where):
    url = f"{endpoint.base_url}/chat/completions"
    response = httpx.post(url, content=body.encode(), headers={"Content-Type": "application/json"}, timeout=120)
    assert response.status_code == 400, response.text
    message = response.json()["error"]["message"]
    assert message.startswith(f"{where}: ") and "surrogate" in message, message
    # the server goes on, and a pair (an emoji) is text
    ok = '{"messages": [{"role": "user", "content": "hi \\ud83d\\ude00"}], "max_tokens": 2}'
    response = httpx.post(url, content=ok.encode(), headers={"Content-Type": "application/json"}, timeout=120)
    assert response.status_code == 200, response.text


# -- MCP: a number that is not finite ------------------------------------------------------------------
NON_FINITE = [b"1e309", b"-1e309", b"NaN"]  # the SDK's JSON-mode re-read made each null: the default hops ran


def navigate(request_id: int, hops: bytes) -> bytes:
    arguments = b'{"entity": "JWT", "hops": %s}' % hops
    return (
        b'{"jsonrpc": "2.0", "id": %d, "method": "tools/call", "params": {"name": "navigate_graph", "arguments": %s}}'
        % (
            request_id,
            arguments,
        )
    )


def test_a_number_that_is_not_finite_is_invalid_params_over_stdio(pristine, tmp_path):
    home = copy_of(pristine, tmp_path)
    try:
        with stdio_mcp(home) as ask:
            for i, hops in enumerate(NON_FINITE, 10):
                answer = ask(navigate(i, hops))
                assert answer.get("id") == i and answer.get("error", {}).get("code") == -32602, (hops, answer)
                assert "params.arguments.hops" in answer["error"]["message"], answer
            answer = ask(navigate(20, b"2"))  # the server goes on
            assert answer.get("id") == 20 and "JWT" in json.dumps(answer["result"]), answer
    finally:
        run_cli(home, "graph", "stop")


def test_a_number_that_is_not_finite_is_invalid_params_over_http(pristine, tmp_path):
    home = copy_of(pristine, tmp_path)
    log = open(tmp_path / "server.log", "w")
    proc, port = start_mcp(home, log)
    try:
        session = http_session(port)
        for hops in NON_FINITE:
            status, answer = post_raw(port, navigate(5, hops), session)
            assert status == 400 and answer["error"]["code"] == -32602, (hops, status, answer)
            assert "params.arguments.hops" in answer["error"]["message"], answer
    finally:
        stop_process(proc, log)
        run_cli(home, "graph", "stop")
