"""Round nineteen of the hostile pass, part B (issue 30): the real clients and the servers. What it found of
severity 6 or worse, each case as it failed (evals/review/hostile19b-findings.md, by number).

A test of a finding still open is `xfail(strict=True)` with its number: it fails on today's code, and whoever mends
the finding flips the marker. Real components throughout: `langgraph dev` on this checkout's langgraph.json with
`langgraph_sdk`, `executor mcp --http` with the `mcp` SDK's client and raw HTTP, `llm serve`'s own request parsing
and the sample KB in Milvus Lite with the USE embedder.
"""

import json

import pytest
from conftest import FIRST_Q, NEXT_Q, langgraph_dev

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
    from langgraph_sdk import get_sync_client

    client = get_sync_client(url=server)
    thread_id = client.threads.create()["thread_id"]
    client.runs.wait(thread_id, "executor", input=question(FIRST_Q))
    return client, thread_id


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
