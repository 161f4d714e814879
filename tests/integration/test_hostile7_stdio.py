"""Round seven of the hostile pass on `executor mcp` over stdio: a line past the body bound HTTP has (4 MB) gets
JSON-RPC's -32600 naming the bound, is never held whole, and the server answers the next line."""

import json
import os
import select
import subprocess
import sys

import pytest
from conftest import REPO, pristine_home
from test_local_servers import INIT

from executor.core.local_http import MAX_BODY_BYTES

pytestmark = pytest.mark.timeout(300)


def test_a_stdio_line_past_the_bound_is_invalid_request_and_the_server_answers_on(tmp_path_factory):
    home = pristine_home(tmp_path_factory, "hostile7-stdio-home")
    proc = subprocess.Popen(
        [sys.executable, "-m", "executor.cli.main", "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "EXECUTOR_HOME": str(home)},
        cwd=REPO,
    )

    def ask(line: bytes) -> dict:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(line + b"\n")
        proc.stdin.flush()
        ready, _, _ = select.select([proc.stdout], [], [], 120)
        assert ready, f"no answer to {line[:80]!r}"
        return json.loads(proc.stdout.readline())

    try:
        assert "result" in ask(json.dumps(INIT).encode())
        proc.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')  # type: ignore[union-attr]
        # a well-formed request, only too long: a query of 5 MB
        call = {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {"name": "lookup_knowledge", "arguments": {"query": "pool " * (MAX_BODY_BYTES // 4)}},
        }
        answer = ask(json.dumps(call).encode())
        assert answer["error"]["code"] == -32600 and answer["id"] is None, str(answer)[:300]
        assert str(MAX_BODY_BYTES) in answer["error"]["message"]
        # the next line is read and answered
        answer = ask(b'{"jsonrpc": "2.0", "id": 8, "method": "tools/list", "pad": "' + b"x" * 100 + b'"}')
        assert "lookup_knowledge" in json.dumps(answer)
    finally:
        proc.stdin.close()  # type: ignore[union-attr]
        proc.wait(timeout=60)
    stderr = proc.stderr.read().decode()  # type: ignore[union-attr]
    assert "Traceback" not in stderr, stderr[-2000:]
