"""Local servers and faults, round two of issue 30 (probe `servers4`): what a web page or a hostile client can
still send to `executor mcp --http` and `executor llm serve`, and what an interrupted command prints."""

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import REPO, free_port, ingested_home, launched, raw_request, run_cli, stop_process

WS_KEY = "dGhlIHNhbXBsZSBub25jZQ=="
TOKEN = "t0ken-for-the-tests-0123456789"
INIT_PARAMS = {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}


def handshake(port: int, host_header: str, extra: str = "") -> bytes:
    """A raw WebSocket upgrade request: the status line of the answer."""
    head = (
        f"GET /ws HTTP/1.1\r\nHost: {host_header}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        f"Sec-WebSocket-Key: {WS_KEY}\r\nSec-WebSocket-Version: 13\r\n{extra}"
    )
    return raw_request(port, head)[1].split(b"\r\n", 1)[0]


@pytest.fixture
def guarded_websocket_app():
    """A server with a WebSocket route behind the guard every local server of ours uses: a route added to
    either server tomorrow is exactly this."""
    import uvicorn
    from starlette.applications import Starlette
    from starlette.routing import WebSocketRoute

    from executor.core.local_http import LocalGuard, own_hosts

    async def echo(ws):
        await ws.accept()
        await ws.close()

    def serve(token=None):
        port = free_port()
        app = LocalGuard(Starlette(routes=[WebSocketRoute("/ws", echo)]), own_hosts("127.0.0.1", port), token=token)
        server = uvicorn.Server(uvicorn.Config(app, port=port, log_level="error", lifespan="off"))
        threading.Thread(target=server.run, daemon=True).start()
        servers.append(server)
        deadline = time.monotonic() + 20
        while not server.started:
            assert time.monotonic() < deadline, "the test server did not start"
            time.sleep(0.05)
        return port

    servers: list = []
    yield serve
    for server in servers:
        server.should_exit = True


def test_a_websocket_handshake_passes_the_host_origin_and_token_checks(guarded_websocket_app):
    port = guarded_websocket_app()
    assert b" 101 " in handshake(port, f"127.0.0.1:{port}")  # the route works for its own page
    assert b" 403 " in handshake(port, "evil.example")  # DNS rebinding
    assert b" 403 " in handshake(port, f"127.0.0.1:{port}@evil.example")
    assert b" 403 " in handshake(port, f"127.0.0.1:{port}", "Origin: http://evil.example\r\n")  # no CORS for ws
    port = guarded_websocket_app(token=TOKEN)
    assert b" 403 " in handshake(port, f"127.0.0.1:{port}")
    assert b" 101 " in handshake(port, f"127.0.0.1:{port}", f"Authorization: Bearer {TOKEN}\r\n")


# -- Ctrl-C while a command starts ----------------------------------------------------------------------
@pytest.mark.parametrize("inherited", ["SIG_DFL", "SIG_IGN"], ids=["terminal", "script-background-job"])
def test_ctrl_c_while_a_command_loads_is_one_line_and_exit_130(tmp_path, inherited):
    env = {**os.environ, "EXECUTOR_HOME": str(tmp_path / "home")}
    proc = subprocess.Popen(
        [
            *launched(f"signal.signal(signal.SIGINT, signal.{inherited})"),
            sys.executable,
            "-m",
            "executor.cli.main",
            "ingest",
            "--rebuild",
        ],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # the command's modules take about 2 s to load; pydantic's extension is among the first of them
    deadline = time.monotonic() + 60
    while "pydantic_core" not in Path(f"/proc/{proc.pid}/maps").read_text():
        assert proc.poll() is None and time.monotonic() < deadline, "the command never started loading"
        time.sleep(0.01)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    ours = err.strip()
    assert proc.returncode == 130 and ours == "error: interrupted", (proc.returncode, err[-2000:])


# -- the MCP server over HTTP ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def mcp_url(tmp_path_factory):
    home = ingested_home(tmp_path_factory, "servers4-home")
    port = free_port()
    log = open(home / "server.log", "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "executor.cli.main", "mcp", "--http", "--port", str(port)],
        env={**os.environ, "EXECUTOR_HOME": str(home)},
        cwd=REPO,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 120
    while True:
        assert proc.poll() is None and time.monotonic() < deadline, (home / "server.log").read_text()[-2000:]
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.3)
    yield f"http://127.0.0.1:{port}/mcp"
    stop_process(proc, log)
    run_cli(home, "graph", "stop")


def rpc(client, url: str, body: dict, session: str | None = None) -> dict | None:
    """One JSON-RPC message over streamable HTTP: the answer (from JSON or the event stream), None for a 202."""
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    if session is not None:
        headers["mcp-session-id"] = session
    r = client.post(url, content=json.dumps(body), headers=headers)
    if r.status_code == 202:
        return None
    data = [line[5:] for line in r.text.splitlines() if line.startswith("data:")]
    answer = json.loads(data[0] if data else r.text)
    answer["session"] = r.headers.get("mcp-session-id")
    return answer


def test_an_unknown_method_is_method_not_found(mcp_url):
    import httpx

    with httpx.Client(timeout=60) as client:
        init = rpc(client, mcp_url, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT_PARAMS})
        assert init is not None
        session = init["session"]
        rpc(client, mcp_url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
        unknown = rpc(client, mcp_url, {"jsonrpc": "2.0", "id": 5, "method": "tools/delete"}, session)
        known = rpc(client, mcp_url, {"jsonrpc": "2.0", "id": 6, "method": "tools/list"}, session)
    assert unknown is not None and unknown["id"] == 5, unknown
    assert unknown["error"]["code"] == -32601 and "tools/delete" in unknown["error"]["message"], unknown
    assert known is not None and "lookup_knowledge" in {t["name"] for t in known["result"]["tools"]}


# -- the local model endpoint ---------------------------------------------------------------------------
def test_ctrl_c_while_the_local_model_loads_stops_the_endpoint(tmp_path):
    from test_local_llm import HAS_ENGINE, HAS_MODEL

    if not (HAS_ENGINE and HAS_MODEL):
        pytest.skip("needs the local-llm extra and the bundled model (make setup installs both)")
    env = {**os.environ, "EXECUTOR_HOME": str(tmp_path / "home"), "EXECUTOR_LOCAL_MODEL_THREADS": "1"}
    for _ in range(3):  # it hung 3 times in 4
        proc = subprocess.Popen(
            [
                *launched("signal.signal(signal.SIGINT, signal.SIG_DFL)"),
                sys.executable,
                "-m",
                "executor.cli.main",
                "llm",
                "serve",
                "--port",
                str(free_port()),
            ],
            cwd=REPO,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 120
        while ".gguf" not in Path(f"/proc/{proc.pid}/maps").read_text():  # llama.cpp is loading the model
            assert proc.poll() is None and time.monotonic() < deadline, "the model never started loading"
            time.sleep(0.005)
        proc.send_signal(signal.SIGINT)
        try:
            _, err = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            pytest.fail("Ctrl-C while the model loaded: the endpoint hung")
        ours = err.strip()
    assert proc.returncode == 130 and ours == "error: interrupted", (proc.returncode, err[-2000:])


@pytest.mark.parametrize(("where", "name"), [("env", "EXECUTOR_MCP_TOKEN"), ("option", "--token")])
def test_a_short_token_is_named_as_it_was_given(tmp_path, where, name):
    args = ["mcp", "--http", "--host", "0.0.0.0", "--port", str(free_port())]
    extra = {"EXECUTOR_MCP_TOKEN": "short"} if where == "env" else {}
    r = run_cli(tmp_path / "home", *args, *(["--token", "short"] if where == "option" else []), timeout=60, **extra)
    assert r.returncode == 2 and r.stderr.strip() == f"error: {name} must have at least 16 characters", r.stderr


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_a_port_in_use_is_one_error_and_no_serving_line(tmp_path, as_json):
    from test_local_llm import HAS_ENGINE, HAS_MODEL

    if not (HAS_ENGINE and HAS_MODEL):
        pytest.skip("needs the local-llm extra and the bundled model (make setup installs both)")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        r = run_cli(tmp_path / "home", "llm", "serve", "--port", str(port), *(["--json"] if as_json else []))
    assert r.returncode == 1 and "Address already in use" in r.stderr, r.stderr
    assert "serving" not in r.stdout and "base_url" not in r.stdout, r.stdout
