"""Hostile input to the local servers (issue 30, fourth round): JSON-RPC that is not a request gets JSON-RPC's own
error over stdio and HTTP, a request is read within a deadline and its head within a bound, deeply nested JSON is
bad input, and a second server on a home whose store is held says so instead of serving failures."""

import json
import select
import socket
import time
from contextlib import contextmanager

import pytest
from conftest import copy_of, free_port, pristine_home, raw_mcp_stdio, raw_request, run_cli, stop_process
from test_hostile5_servers import mcp_post
from test_local_servers import INIT, endpoint, start_mcp  # noqa: F401 (endpoint: a fixture)
from test_studio import studio  # noqa: F401 (a fixture)

from executor.core.local_http import READ_TIMEOUT_S

pytestmark = pytest.mark.timeout(300)
DEEP = b"[" * 100_000 + b"]" * 100_000  # nests past the recursion limit of Python's json


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    return pristine_home(tmp_path_factory, "hostile6-home")


@pytest.fixture(scope="module")
def http_server(pristine, tmp_path_factory):
    log = open(tmp_path_factory.mktemp("hostile6-log") / "server.log", "w")
    proc, port = start_mcp(pristine, log)
    yield port
    stop_process(proc, log)


def http_session(port: int) -> str:
    status, _, headers = mcp_post(port, INIT)
    assert status == 200
    mcp_post(port, {"jsonrpc": "2.0", "method": "notifications/initialized"}, headers["mcp-session-id"])
    return headers["mcp-session-id"]


def post_raw(port: int, body: bytes, session: str) -> tuple[int, dict]:
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
        f"Accept: application/json, text/event-stream\r\nmcp-session-id: {session}\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
        sock.sendall(head.encode() + body)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    return int(data.split(b" ", 2)[1]), json.loads(data.partition(b"\r\n\r\n")[2])


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (b'{"jsonrpc": "2.0", "id": 3, "method": "tools/list\xff"}', -32700),  # not UTF-8
        (DEEP, -32700),
        (b'[{"jsonrpc": "2.0", "id": 4, "method": "tools/list"}]', -32600),  # a batch
        (b'{"id": 5, "method": "tools/list"}', -32600),  # no "jsonrpc": "2.0"
        (b'{"jsonrpc": "2.0", "id": 6, "method": 5}', -32600),
        (b'{"jsonrpc": "2.0", "id": 6, "method": "tools/list", "params": [1]}', -32600),
    ],
    ids=["invalid-utf8", "deep", "batch", "no-jsonrpc", "method-no-string", "params-array"],
)
def test_a_body_that_is_no_json_rpc_request_gets_json_rpcs_error_over_http(http_server, body, code):
    session = http_session(http_server)
    status, answer = post_raw(http_server, body, session)
    assert status == 400 and answer["error"]["code"] == code and answer["id"] is None, answer
    status, _, _ = mcp_post(http_server, {"jsonrpc": "2.0", "id": 7, "method": "tools/list"}, session)
    assert status == 200


def test_a_request_still_arriving_after_the_read_deadline_is_cut_off(http_server):
    with socket.create_connection(("127.0.0.1", http_server), timeout=READ_TIMEOUT_S + 20) as sock:
        sock.sendall(f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{http_server}\r\n".encode())  # and never the rest
        started = time.monotonic()
        assert sock.recv(65536) == b""  # closed by the server
        assert time.monotonic() - started < READ_TIMEOUT_S + 10


def test_the_local_model_endpoint_cuts_off_a_request_still_arriving(endpoint):  # noqa: F811
    with socket.create_connection(("127.0.0.1", endpoint.port), timeout=READ_TIMEOUT_S + 20) as sock:
        sock.sendall(f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:{endpoint.port}\r\n".encode())
        started = time.monotonic()
        assert sock.recv(65536) == b""
        assert time.monotonic() - started < READ_TIMEOUT_S + 10


def test_a_request_head_beyond_its_bound_is_refused(http_server):
    head = f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{http_server}\r\nX-Pad: {'a' * (1 << 20)}\r\n\r\n"
    with socket.create_connection(("127.0.0.1", http_server), timeout=60) as sock:
        try:
            sock.sendall(head.encode())
        except ConnectionResetError:  # refused before it was all sent
            pass
        answer = sock.recv(65536)
    assert answer.startswith(b"HTTP/1.1 400"), answer[:200]


@contextmanager
def stdio_mcp(home, timeout: float = 60):
    """`executor mcp` over stdio on `home`, initialized; yields `ask(line) -> answer` and, once it has exited, its
    stderr is checked for the SDK's validation warnings."""
    proc = raw_mcp_stdio(home)

    def ask(line: bytes) -> dict:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(line + b"\n")
        proc.stdin.flush()
        ready, _, _ = select.select([proc.stdout], [], [], timeout)
        assert ready, f"no answer to {line[:80]!r}"
        return json.loads(proc.stdout.readline())

    try:
        assert "result" in ask(json.dumps(INIT).encode())
        proc.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')  # type: ignore[union-attr]
        yield ask
    finally:
        proc.stdin.close()  # type: ignore[union-attr]
        proc.wait(timeout=60)
    stderr = proc.stderr.read().decode()  # type: ignore[union-attr]
    assert "validation error" not in stderr.lower() and "Traceback" not in stderr, stderr[-2000:]


def test_a_stdio_request_with_an_invalid_id_gets_invalid_request(pristine, tmp_path):
    with stdio_mcp(copy_of(pristine, tmp_path)) as ask:  # the module's HTTP server holds the pristine home
        for bad_id in ("{}", "null", "1.5", "true"):
            answer = ask(b'{"jsonrpc": "2.0", "id": %s, "method": "tools/list"}' % bad_id.encode())
            assert answer["error"]["code"] == -32600 and answer["id"] is None, (bad_id, answer)
        answer = ask(b'[{"jsonrpc": "2.0", "id": 4, "method": "tools/list"}]')  # JSON, but no request
        assert answer["error"]["code"] == -32600, answer
        answer = ask(b"{not json")
        assert answer["error"]["code"] == -32700, answer
        assert "lookup_knowledge" in json.dumps(ask(b'{"jsonrpc": "2.0", "id": 9, "method": "tools/list"}'))


def test_a_session_argument_that_is_no_string_is_named(sample_rt):
    import anyio
    from mcp.shared.memory import create_connected_server_and_client_session

    from executor.agent.mcp_server import ExecutorMCP

    server = ExecutorMCP(sample_rt, kb="sample")

    async def main():
        async with create_connected_server_and_client_session(server.server) as client:
            return await client.call_tool("lookup_knowledge", {"query": "ERR_TIMEOUT", "session": 5})

    result = anyio.run(main)
    assert result.isError and result.content[0].text == "session: must be a string"  # type: ignore[union-attr]


def test_a_second_http_server_on_a_held_home_is_one_error_naming_the_store(pristine, tmp_path):
    home = copy_of(pristine, tmp_path)  # the module's server holds the pristine one
    log = open(tmp_path / "first.log", "w")
    first, _ = start_mcp(home, log)
    try:
        r = run_cli(home, "mcp", "--http", "--port", str(free_port()), timeout=120)
    finally:
        stop_process(first, log)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 1 and "milvus.db" in lines[-1], r.stderr[-2000:]
    assert "executor MCP server on" not in r.stderr  # it never said it was serving


def test_deeply_nested_json_is_bad_input_to_the_local_model_endpoint():
    from executor.local_llm.protocol import RequestError, parse_request

    with pytest.raises(RequestError, match="not JSON"):
        parse_request(DEEP)


@pytest.mark.parametrize("stream", ['"yes"', '"true"', "1"])
def test_stream_that_is_not_a_json_boolean_is_bad_input_to_the_local_model_endpoint(stream):
    from executor.local_llm.protocol import RequestError, parse_request

    body = '{"messages": [{"role": "user", "content": "hi"}], "stream": ' + stream + "}"
    with pytest.raises(RequestError, match="stream"):
        parse_request(body.encode())
    assert parse_request(body.replace(stream, "true").encode()).stream is True


def test_langgraph_dev_answers_only_its_own_host_and_origins_and_studios(studio):  # noqa: F811
    url, _ = studio
    port = int(url.rsplit(":", 1)[1])

    def ask(host: str, origin: str | None, content_type: str = "application/json") -> int:
        extra = f"Origin: {origin}\r\n" if origin else ""
        head = (
            f"POST /assistants/search HTTP/1.1\r\nHost: {host}\r\nContent-Type: {content_type}\r\n{extra}"
            "Content-Length: 2\r\nConnection: close\r\n"
        )
        return raw_request(port, head, b"{}")[0]

    assert ask(f"127.0.0.1:{port}", None) == 200
    assert ask(f"evil.example:{port}", None) == 421  # DNS rebinding
    assert ask(f"127.0.0.1:{port}", "http://evil.example", "text/plain") == 403  # a cross-site simple POST
    assert ask(f"127.0.0.1:{port}", "https://smith.langchain.com") == 200  # LangGraph Studio, a page of its own
