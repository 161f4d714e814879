"""Round nineteen of the hostile pass, part B (issue 30): the real clients and the servers. What it found of
severity 6 or worse, each case as it failed (evals/review/hostile19b-findings.md, by number).

A test of a finding still open is `xfail(strict=True)` with its number: it fails on today's code, and whoever mends
the finding flips the marker. Real components throughout: `langgraph dev` on this checkout's langgraph.json with
`langgraph_sdk`, `executor mcp --http` with the `mcp` SDK's client and raw HTTP, `llm serve`'s own request parsing
and the sample KB in Milvus Lite with the USE embedder.
"""

import json

import pytest
from conftest import FIRST_Q, NEXT_Q, langgraph_dev, sdk_thread

pytestmark = pytest.mark.timeout(300)


def question(text) -> dict:
    return {"messages": [{"role": "user", "content": text}]}


# -- langgraph dev ------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with langgraph_dev(tmp_path_factory, "hostile19b") as (url, _, _):
        yield url


@pytest.fixture
def answered_thread(server):
    """A thread of one answered turn: (client, thread id)."""
    return sdk_thread(server, FIRST_Q)


UNREADABLE = [
    {"role": "user", "content": 42},
    {"role": "bogus", "content": "ERR_TIMEOUT"},
    {"role": "user", "content": [[{"type": "text", "text": "ERR_TIMEOUT"}]]},
]
UNREADABLE_IDS = ["int-content", "unknown-role", "nested-list"]


def _refused_in_one_line(call) -> str:
    """The request refused, 422 with one line naming the messages (the SDK raises httpx's error for some calls, its
    own typed one for others: both carry the response)."""
    import httpx

    with pytest.raises(httpx.HTTPStatusError) as refused:
        call()
    assert refused.value.response.status_code == 422, refused.value.response.text
    message = refused.value.response.json()["detail"]
    assert "\n" not in message and "messages" in message, message
    return message


def asked(values: dict) -> list:
    """The questions of a thread's values as the server sends them (message dicts), in order."""
    return [m["content"] for m in values["messages"] if m["type"] == "human"]


def _thread_goes_on(client, thread_id) -> None:
    """The thread's state reads, and its next run answers with the conversation as it was plus the new turn."""
    assert asked(client.threads.get_state(thread_id)["values"]) == [FIRST_Q]
    out = client.runs.wait(thread_id, "executor", input=question(NEXT_Q))
    assert out["answer"], out
    assert asked(client.threads.get_state(thread_id)["values"]) == [FIRST_Q, NEXT_Q]


@pytest.mark.parametrize("message", UNREADABLE, ids=UNREADABLE_IDS)
def test_a_command_updating_the_thread_with_an_unreadable_message_is_refused(answered_thread, message):
    """Finding 1: `command={"update": {"messages": [{"content": 42}]}}` failed with pydantic's dump, and from then on
    every run of the thread (a plain question too) and every `get_state` failed with the same dump."""
    client, thread_id = answered_thread
    _refused_in_one_line(lambda: client.runs.wait(thread_id, "executor", command={"update": {"messages": [message]}}))
    _thread_goes_on(client, thread_id)


@pytest.mark.parametrize("message", UNREADABLE, ids=UNREADABLE_IDS)
def test_a_run_input_with_an_unreadable_message_is_refused_before_it_is_written(answered_thread, message):
    """Finding 2: the run failed with pydantic's many-line dump, and `get_state` was that dump (400) until the next
    run."""
    client, thread_id = answered_thread
    _refused_in_one_line(lambda: client.runs.wait(thread_id, "executor", input={"messages": [message]}))
    _thread_goes_on(client, thread_id)


def test_an_unreadable_message_in_update_state_is_refused_in_one_line(answered_thread):
    client, thread_id = answered_thread
    _refused_in_one_line(lambda: client.threads.update_state(thread_id, {"messages": [UNREADABLE[0]]}))
    _thread_goes_on(client, thread_id)


def test_readable_shapes_still_pass(answered_thread):
    """What the reducer reads: a bare string, one message object, content blocks, `type: human`."""
    client, thread_id = answered_thread
    for messages in (
        NEXT_Q,
        {"role": "user", "content": NEXT_Q},
        [{"type": "human", "content": [{"type": "text", "text": NEXT_Q}]}],
    ):
        out = client.runs.wait(thread_id, "executor", input={"messages": messages})
        assert "MySQL" in out["answer"], out
    assert json.dumps(client.threads.get_state(thread_id)["values"], ensure_ascii=False).count(NEXT_Q) >= 3


# -- llm serve --------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def endpoint():
    """`executor llm serve`'s app with the bundled model, on a loopback port (as test_local_llm.py starts it)."""
    from executor.core.settings import Settings
    from executor.local_llm.serve import LocalEndpoint, engine_options

    settings = Settings(local_model_threads=1, local_model_ctx=4096)
    with LocalEndpoint(engine_options(settings, "bundled")) as ep:
        yield ep


def chat(endpoint, body: dict) -> tuple[int, dict]:
    import httpx

    r = httpx.post(f"{endpoint.base_url}/chat/completions", json={"model": "m", **body}, timeout=300)
    return r.status_code, r.json()


def test_text_past_a_stop_sequence_is_not_answered(endpoint):
    """Finding 12: `stop` was ignored; the reply ran on past it (a ReAct agent's "Observation:" made up by the
    model). With "e" as the stop, an English reply ends before its first "e"."""
    status, out = chat(
        endpoint, {"messages": [{"role": "user", "content": "Describe the sea in one sentence."}], "stop": ["e"]}
    )
    assert status == 200, out
    choice = out["choices"][0]
    assert "e" not in choice["message"]["content"] and choice["finish_reason"] == "stop", choice


IMAGE = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
AUDIO = {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}}


@pytest.mark.parametrize(
    "content",
    [[IMAGE], [{"type": "text", "text": "What is in this image?"}, IMAGE], [AUDIO]],
    ids=["image", "text-and-image", "audio"],
)
def test_the_model_is_told_a_part_it_cannot_read_was_not_shown(endpoint, content):
    """Finding 11: an image or audio part was dropped without a word, and the model answered as if it had seen it
    ("This image is a stunning example of the Lion's Breath"). Refusing it would fail the executor's own turns,
    which send the conversation as the client gave it: the prompt says where a part was and that it is not shown."""
    status, out = chat(endpoint, {"messages": [{"role": "user", "content": content}], "max_tokens": 4})
    assert status == 200, out
    kind = content[-1]["type"]
    assert f"a part of type {kind} was attached here; it is not shown" in (endpoint.service.last_prompt or "")


@pytest.mark.parametrize(
    "content", [[{"text": "Say hi"}], [{"type": "text", "text": {"nested": "Say hi"}}]], ids=["no-type", "text-not-str"]
)
def test_a_content_part_without_its_type_or_text_is_refused(endpoint, content):
    """Finding 13: a part without a type was dropped, and the model answered an empty turn."""
    status, out = chat(endpoint, {"messages": [{"role": "user", "content": content}], "max_tokens": 8})
    assert status == 400 and "messages.0.content" in out["error"]["message"], out


TOOL = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}


@pytest.mark.parametrize(
    ("tools", "said"),
    [
        ([("f", {"type": "string"})], "type 'object'"),  # 12 s of the engine, then an empty "length" reply
        ([("f", TOOL), ("f", {"type": "object", "properties": {"b": {"type": "integer"}}})], "given twice"),  # 20 s
    ],
    ids=["parameters-not-an-object", "one-name-twice"],
)
def test_tools_no_call_can_be_made_to_are_refused(endpoint, tools, said):
    """Finding 14 (and 15)."""
    body = {
        "messages": [{"role": "user", "content": "call f"}],
        "tools": [{"type": "function", "function": {"name": n, "parameters": p}} for n, p in tools],
        "tool_choice": "required",
    }
    status, out = chat(endpoint, body)
    assert status == 400 and said in out["error"]["message"], out


# -- executor mcp --http ----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def mcp_http(tmp_path_factory):
    """`executor mcp --http` on a fresh ingested home: its port."""
    from conftest import ingested_home, run_cli, stop_process
    from test_mcp import start_http_server

    home = ingested_home(tmp_path_factory, "hostile19b-mcp")
    out = open(home / "http-server.out", "w")
    proc, url = start_http_server(home, out)
    assert proc is not None and url is not None, (home / "http-server.out").read_text()[-2000:]
    try:
        yield int(url.rsplit(":", 1)[1].split("/")[0])
    finally:
        stop_process(proc, out)
        run_cli(home, "graph", "stop")


def mcp_post(port: int, message: dict, session: str | None = None) -> tuple[str | None, str]:
    """One JSON-RPC message POSTed as a host does: (the session id the server gives, the response body)."""
    import http.client

    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if session is not None:
        headers |= {"mcp-session-id": session, "mcp-protocol-version": "2025-06-18"}
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    connection.request("POST", "/mcp", body=json.dumps(message), headers=headers)
    response = connection.getresponse()
    return response.getheader("mcp-session-id"), response.read().decode()


def lookup_call(request_id: int) -> dict:
    params = {"name": "lookup_knowledge", "arguments": {"query": FIRST_Q}}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def test_a_lookup_whose_host_went_away_is_sent_again_on_the_retry(mcp_http):
    """Finding 9: a host whose connection dropped before the answer (a crash, a network cut, a killed tab) retried
    the lookup in the same MCP session and was told DEDUPED: the page it never read counted as sent."""
    import socket
    import time

    init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "h19b", "version": "0"}}
    session, _ = mcp_post(mcp_http, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init})
    assert session is not None
    mcp_post(mcp_http, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
    body = json.dumps(lookup_call(2)).encode()
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{mcp_http}\r\nContent-Type: application/json\r\n"
        f"Accept: application/json, text/event-stream\r\nmcp-session-id: {session}\r\n"
        f"mcp-protocol-version: 2025-06-18\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode()
    with socket.create_connection(("127.0.0.1", mcp_http)) as gone:
        gone.sendall(head + body)  # and the host is gone before its answer
    time.sleep(3)  # the call runs on to its end
    _, retry = mcp_post(mcp_http, lookup_call(3), session)
    assert "relevance_level: PRECISE" in retry, retry[:500]
    _, again = mcp_post(mcp_http, lookup_call(4), session)  # one the host did read: the session's rules hold
    assert "relevance_level: DEDUPED" in again, again[:500]


@pytest.mark.parametrize(
    "checkpoint_id", ["00000000-0000-0000-0000-000000000000", "1f0a0a0a-0000-6000-8000-000000000000"]
)
def test_a_run_from_a_checkpoint_the_thread_does_not_hold_is_refused(answered_thread, checkpoint_id):
    """Finding 3: a mistyped or stale `checkpoint_id` was answered as a first question, and the thread's head became
    that one-question conversation (its earlier turns gone from it)."""
    client, thread_id = answered_thread
    out = client.runs.wait(
        thread_id, "executor", input=question(NEXT_Q), checkpoint_id=checkpoint_id, raise_error=False
    )
    assert out["__error__"]["error"] == "InputError", out
    assert checkpoint_id in out["__error__"]["message"], out
    _thread_goes_on(client, thread_id)


def test_a_run_from_a_checkpoint_the_thread_holds_still_forks(answered_thread):
    client, thread_id = answered_thread
    start = client.threads.get_history(thread_id, limit=100)[-1]["checkpoint"]["checkpoint_id"]  # before any turn
    out = client.runs.wait(thread_id, "executor", input=question(NEXT_Q), checkpoint_id=start)
    assert "MySQL" in out["answer"], out
    assert asked(client.threads.get_state(thread_id)["values"]) == [NEXT_Q]


# -- findings 4, 5 and 7: a run that starts inside the turn, or brings no question after the client's call -----
def test_a_command_that_starts_a_turn_without_a_question_is_refused(answered_thread):
    client, thread_id = answered_thread
    out = client.runs.wait(thread_id, "executor", command={"goto": "begin_turn"}, raise_error=False)
    # the thread's one question (ERR_TIMEOUT) is PRECISE on its page: "nothing found" is a wrong answer
    assert "__error__" in out and out["__error__"]["error"] == "InputError", out
    assert asked(client.threads.get_state(thread_id)["values"]) == [FIRST_Q]


def test_an_input_ending_in_a_clients_tool_call_is_not_answered_nothing_found(server):
    from langgraph_sdk import get_sync_client

    client = get_sync_client(url=server)
    thread_id = client.threads.create()["thread_id"]
    messages = [
        {"role": "user", "content": FIRST_Q},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "t1", "name": "lookup_knowledge", "args": {"query": "x"}}],
        },
    ]
    out = client.runs.wait(thread_id, "executor", input={"messages": messages}, raise_error=False)
    # refused, or the question answered from its page: never "nothing on this question" for ERR_TIMEOUT
    assert "__error__" in out or "err-timeout.md" in out["answer"], out


def test_a_lookup_whose_stdio_host_went_away_is_sent_again_in_its_shared_session(tmp_path_factory):
    """Finding 18: a host sharing a `session` across connections went away mid-call (closed its pipes); on its next
    connection the same lookup in that session was DEDUPED on the page it never read."""
    import uuid

    from conftest import ingested_home, raw_mcp_stdio, run_cli

    home = ingested_home(tmp_path_factory, "hostile19b-stdio")
    session = f"h19b-{uuid.uuid4().hex[:8]}"
    init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "h19b", "version": "0"}}
    handshake = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ]
    call = lookup_call(2)
    call["params"]["arguments"]["session"] = session
    lines = "".join(json.dumps(m) + "\n" for m in (*handshake, call)).encode()
    try:
        gone = raw_mcp_stdio(home)
        assert gone.stdin is not None and gone.stdout is not None
        gone.stdin.write(lines[: lines.index(b"\n") + 1])
        gone.stdin.flush()
        assert gone.stdout.readline()  # initialized: the host is there
        gone.stdin.write(lines[lines.index(b"\n") + 1 :])
        gone.stdin.flush()
        gone.stdout.close()  # and it is gone before the answer
        gone.stdin.close()
        gone.wait(timeout=120)
        again = raw_mcp_stdio(home)
        out, _ = again.communicate(lines, timeout=120)
        [answer] = [m for m in map(json.loads, out.decode().splitlines()) if m.get("id") == 2]
        assert "relevance_level: PRECISE" in answer["result"]["content"][0]["text"], answer
    finally:
        run_cli(home, "graph", "stop")


# -- severity 7-9, mended with them -----------------------------------------------------------------------------
def test_the_mcp_server_answers_resource_templates_and_refuses_unknown_prompt_arguments(sample_rt):
    """Findings 8 and 10: `resources/templates/list` (the Inspector asks on connecting) was -32601 "Method not found"
    from a server that declares resources; `retrieval_rules` with `lang: fr` or an unknown argument answered English
    and said nothing, where a tool refuses an unknown argument."""
    import anyio
    from mcp.shared.exceptions import McpError
    from test_mcp import connected

    from executor.agent.mcp_server import ExecutorMCP

    async def main():
        async with connected(ExecutorMCP(sample_rt, kb="sample")) as client:
            templates = (await client.list_resource_templates()).resourceTemplates
            said = []
            for arguments in ({"lang": "fr"}, {"language": "zh"}):
                with pytest.raises(McpError) as refused:
                    await client.get_prompt("retrieval_rules", arguments)
                said.append(refused.value.error.message)
            zh = (await client.get_prompt("retrieval_rules", {"lang": "zh"})).messages[0].content
            return templates, said, zh

    templates, said, zh = anyio.run(main)
    assert templates == []
    assert "lang 'fr'" in said[0] and "'language'" in said[1], said
    assert getattr(zh, "text", "").startswith("检索约束"), zh


def test_a_temperature_that_is_not_a_number_is_said_so():
    """Finding 17: `temperature: NaN` was "Input should be less than or equal to 2"."""
    from executor.local_llm.protocol import RequestError, parse_request

    with pytest.raises(RequestError, match="temperature: Input should be a finite number"):
        parse_request(b'{"messages": [{"role": "user", "content": "hi"}], "temperature": NaN}')


@pytest.mark.parametrize("asked", [{"logprobs": True}, {"logprobs": True, "top_logprobs": 3}, {"top_logprobs": 2}])
def test_log_probabilities_asked_for_are_refused_not_left_out(asked):
    """Finding 16: answered 200 with no `logprobs` in the choice (a client reading them failed on a missing key)."""
    from executor.local_llm.protocol import RequestError, parse_request

    body = {"messages": [{"role": "user", "content": "hi"}], **asked}
    with pytest.raises(RequestError, match="logprobs"):
        parse_request(json.dumps(body).encode())


def test_a_stop_sequence_beside_tools_is_refused():
    """Finding 12, with tools: the reply is JSON decoded to the tools' schemas, which a stop sequence would cut."""
    from executor.local_llm.protocol import RequestError, parse_request

    tool = {"type": "function", "function": {"name": "f", "parameters": TOOL}}
    body = {"messages": [{"role": "user", "content": "call f"}], "tools": [tool], "stop": ["\nObservation:"]}
    with pytest.raises(RequestError, match="stop is not supported with tools"):
        parse_request(json.dumps(body).encode())


@pytest.mark.parametrize(
    "node",
    ["begin_turn", "executor", "answer", "call_tools", "graph_expand", "guard", "settle", "fail", "take_back", "nope"],
)
def test_a_command_that_starts_a_run_inside_the_turn_is_refused_in_one_line(thread, node):
    """Findings 4 and 5 in process: `goto` executor or answer answered the thread's question "nothing found"; `fail`,
    `guard` and `settle` raised "BackendError: the turn failed", blaming a backend. The thread stays as it was."""
    from langgraph.types import Command

    from executor.core.errors import InputError
    from executor.nodes.state import Context

    app, config = thread
    before = app.get_state(config)
    with pytest.raises(InputError) as caught:
        app.invoke(Command(goto=node), config, context=Context())
    assert str(caught.value) == f"a run cannot start at {node!r}: send the question as the run's input"
    assert app.get_state(config).config == before.config  # no checkpoint written


def test_a_command_bringing_its_question_to_begin_turn_is_still_answered(thread):
    from langchain_core.messages import HumanMessage
    from langgraph.types import Command

    from executor.nodes.state import Context

    app, config = thread
    out = app.invoke(
        Command(update={"messages": [HumanMessage(FIRST_Q)]}, goto="begin_turn"), config, context=Context()
    )
    assert "err-timeout.md" in out["answer"], out["answer"][:300]


def test_a_malformed_notification_from_the_host_is_one_line_in_the_log(sample_rt, caplog):
    """Finding 19: `notifications/progress` with `progress: "x"` had the SDK log a warning holding pydantic's dump of
    every notification model (40 lines); it is dropped with one line naming its method."""
    import anyio
    import mcp.types as types
    from mcp.shared.message import SessionMessage

    from executor.agent.mcp_server import ExecutorMCP

    server = ExecutorMCP(sample_rt, kb="sample").server
    bad = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 1, "progress": "x"}}

    async def main():
        to_server, read = anyio.create_memory_object_stream(4)
        written, _ = anyio.create_memory_object_stream(4)
        await to_server.send(SessionMessage(types.JSONRPCMessage.model_validate(bad)))
        await to_server.aclose()  # the host is gone after it: the server ends
        await server.run(read, written, server.create_initialization_options())

    with caplog.at_level("DEBUG"):
        anyio.run(main)
    said = [r.getMessage() for r in caplog.records if r.levelname in ("WARNING", "ERROR")]
    assert said == ["dropped the host's 'notifications/progress' notification: not one MCP defines"], said
