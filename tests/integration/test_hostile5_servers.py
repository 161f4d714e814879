"""Hostile input to the servers and damaged data (issue 30, third round): an invalid --host is bad input, a
JSON-RPC id of the wrong type gets an answer, and a damaged graph is told to the person at the command line."""

import json
import socket

import pytest
from conftest import free_port, pristine_home, run_cli, stop_process
from test_local_servers import INIT, TOKEN, start_mcp


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    return pristine_home(tmp_path_factory, "hostile5-home")


@pytest.mark.parametrize("host", ["256.1.1.1", "no-such-host.invalid"])
def test_an_invalid_host_is_bad_input_naming_host(pristine, host):
    r = run_cli(pristine, "mcp", "--http", "--host", host, "--token", TOKEN, "--port", str(free_port()), timeout=90)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1 and "--host" in lines[0] and host in lines[0], r.stderr


def mcp_post(port: int, message: dict, session: str | None = None) -> tuple[int, bytes, dict]:
    """POST one JSON-RPC message to /mcp: (status, body, headers lower-cased)."""
    body = json.dumps(message).encode()
    extra = f"mcp-session-id: {session}\r\n" if session else ""
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
        f"Accept: application/json, text/event-stream\r\nContent-Length: {len(body)}\r\n{extra}"
        "Connection: close\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
        sock.sendall(head.encode() + body)
        data = b""
        while chunk := sock.recv(65536):  # the server closes the connection after its answer
            data += chunk
    status = int(data.split(b" ", 2)[1])
    head, _, rest = data.partition(b"\r\n\r\n")
    headers = {}
    for line in head.split(b"\r\n")[1:]:
        key, _, value = line.decode("latin-1").partition(":")
        headers[key.strip().lower()] = value.strip()
    return status, rest, headers


@pytest.mark.parametrize("bad_id", [{}, [1], None, 1.5, True])
def test_a_request_id_that_is_no_string_or_integer_gets_invalid_request(pristine, tmp_path, bad_id):
    log = open(tmp_path / "server.log", "w")
    proc, port = start_mcp(pristine, log)
    try:
        status, _, headers = mcp_post(port, INIT)
        session = headers["mcp-session-id"]
        assert status == 200
        mcp_post(port, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
        status, body, _ = mcp_post(port, {"jsonrpc": "2.0", "id": bad_id, "method": "tools/list"}, session)
        assert status == 400, (status, body)
        answer = json.loads(body)
        assert answer["error"]["code"] == -32600 and answer["id"] is None, answer
        # the server goes on answering a well-formed request
        status, body, _ = mcp_post(port, {"jsonrpc": "2.0", "id": 7, "method": "tools/list"}, session)
        assert status == 200 and b"lookup_knowledge" in body
    finally:
        stop_process(proc, log)
