"""Round seven of the hostile pass on `executor mcp` over stdio: a line past the body bound HTTP has (4 MB) gets
JSON-RPC's -32600 naming the bound, is never held whole, and the server answers the next line."""

import json

import pytest
from conftest import pristine_home
from test_hostile6_servers import stdio_mcp

from executor.core.local_http import MAX_BODY_BYTES

pytestmark = pytest.mark.timeout(300)


def test_a_stdio_line_past_the_bound_is_invalid_request_and_the_server_answers_on(tmp_path_factory):
    home = pristine_home(tmp_path_factory, "hostile7-stdio-home")
    with stdio_mcp(home, timeout=120) as ask:
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
        assert "lookup_knowledge" in json.dumps(ask(b'{"jsonrpc": "2.0", "id": 8, "method": "tools/list"}'))
