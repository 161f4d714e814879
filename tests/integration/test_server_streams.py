"""What a chat client streams from `langgraph dev` (issue 30): the langgraph_sdk client driving the real server the
way LangChain's Agent Chat UI and the SDKs do (`messages-tuple` and `values` streams, run contexts), offline and
against a fake OpenAI-compatible endpoint.

Each server runs in a temporary directory with its own EXECUTOR_HOME, never in the checkout.
"""

from __future__ import annotations

import pytest
from conftest import langgraph_dev
from fake_openai import FakeOpenAI

pytestmark = pytest.mark.timeout(300)

PRECISE_Q = "ERR_TIMEOUT 是什么？"  # its lookup is PRECISE: the rules end the turn in the answer node
OTHER_Q = "How should we store passwords?"  # not PRECISE offline: the planner's empty closing message, then the answer


@pytest.fixture(scope="module")
def offline(tmp_path_factory):
    with langgraph_dev(tmp_path_factory, "offline") as (url, home, _):
        yield url, home


@pytest.fixture(scope="module")
def llm(tmp_path_factory):
    """A server whose chat model is a fake OpenAI endpoint; each test scripts its replies."""
    with FakeOpenAI([]) as fake:
        with langgraph_dev(
            tmp_path_factory, "llm", OPENAI_BASE_URL=fake.base_url, OPENAI_API_KEY="test-key", EXECUTOR_MODEL="fake"
        ) as (url, _, _):
            yield url, fake


def client_of(url: str):
    from langgraph_sdk import get_sync_client

    return get_sync_client(url=url)


def ask(question: str) -> dict:
    return {"messages": [{"role": "user", "content": question}]}


def streamed_ai_messages(client, thread: str, question: str, mode: str) -> dict[str, str]:
    """The assistant messages a `messages-tuple` or `messages` stream carries, as a chat UI assembles them: id ->
    text. `messages-tuple` (what the Agent Chat UI streams) sends chunks, joined per id, and whole messages, which
    replace what their id had; `messages` (the SDK's older shape) sends each message as it stands so far."""
    texts: dict[str, str] = {}
    for part in client.runs.stream(thread, "executor", input=ask(question), stream_mode=mode):
        assert part.event != "error", part.data
        if part.event == "messages":
            message, _meta = part.data
            whole, messages = message["type"] == "ai", [message]
        elif part.event in ("messages/partial", "messages/complete"):
            whole, messages = True, part.data
        else:
            continue
        for message in messages:
            if message["type"] not in ("AIMessageChunk", "ai"):
                continue
            text = message["content"] if isinstance(message["content"], str) else ""
            texts[message["id"]] = text if whole else texts.get(message["id"], "") + text
    return texts


def assert_streamed_once(texts: dict[str, str], answer: str) -> None:
    assert answer.strip()
    assert [t for t in texts.values() if t == answer] == [answer], texts  # the answer, once
    assert [t for t in texts.values() if t.strip()] == [answer], texts  # and no other text


# -- 1. every turn's final answer streams exactly once -----------------------------------------------------------
MODES = pytest.mark.parametrize("mode", ["messages-tuple", "messages"])


@MODES
@pytest.mark.parametrize("question, precise", [(PRECISE_Q, True), (OTHER_Q, False)])
def test_an_offline_answer_streams_once(offline, question, precise, mode):
    client = client_of(offline[0])
    thread = client.threads.create()["thread_id"]
    texts = streamed_ai_messages(client, thread, question, mode)
    state = client.threads.get_state(thread)["values"]
    assert (state["trace"][0]["relevance_level"] == "PRECISE") is precise
    assert_streamed_once(texts, state["answer"])


@MODES
def test_an_llm_answer_streams_once_when_the_rules_end_the_turn(llm, mode):
    """PRECISE ends the turn: the answer node asks the LLM for the answer, which streams token by token."""
    url, fake = llm
    answer = "ERR_TIMEOUT 表示服务在规定时间内没有完成请求 [troubleshooting/err-timeout.md]"
    fake.script[:] = [{"tool_calls": [("lookup_knowledge", {"query": "ERR_TIMEOUT 是什么"})]}, {"content": answer}]
    client = client_of(url)
    thread = client.threads.create()["thread_id"]
    texts = streamed_ai_messages(client, thread, PRECISE_Q, mode)
    state = client.threads.get_state(thread)["values"]
    assert state["trace"][0]["relevance_level"] == "PRECISE" and state["answer"] == answer
    assert_streamed_once(texts, answer)
    assert [m["content"] for m in state["messages"] if m["type"] == "ai"][-1] == answer


@MODES
def test_an_llm_answer_streams_once_when_the_llm_answers(llm, mode):
    url, fake = llm
    answer = "Hash them with a slow hash. [security/password-storage.md]"
    fake.script[:] = [{"tool_calls": [("lookup_knowledge", {"query": "password storage"})]}, {"content": answer}]
    client = client_of(url)
    thread = client.threads.create()["thread_id"]
    texts = streamed_ai_messages(client, thread, OTHER_Q, mode)
    assert client.threads.get_state(thread)["values"]["answer"] == answer
    assert_streamed_once(texts, answer)


# -- 2. `values` events carry the conversation -------------------------------------------------------------------
def test_values_events_carry_the_conversation(offline):
    client = client_of(offline[0])
    thread = client.threads.create()["thread_id"]
    values = [
        p.data
        for p in client.runs.stream(thread, "executor", input=ask(PRECISE_Q), stream_mode="values")
        if p.event == "values"
    ]
    assert values and all("messages" in v for v in values)
    first, last = values[0]["messages"], values[-1]["messages"]
    assert [m["type"] for m in first] == ["human"] and first[0]["content"] == PRECISE_Q
    assert last[0]["content"] == PRECISE_Q and last[-1]["type"] == "ai"
    assert last[-1]["content"] == values[-1]["answer"] and values[-1]["answer"]


# -- 3. an unknown run-context field is refused ------------------------------------------------------------------
def test_an_unknown_context_field_is_refused_by_name(offline):
    client = client_of(offline[0])
    thread = client.threads.create()["thread_id"]
    out = client.runs.wait(
        thread, "executor", input=ask(PRECISE_Q), context={"kb": "sample", "bogus": 1}, raise_error=False
    )
    assert out["__error__"]["error"] == "InputError"
    assert out["__error__"]["message"].startswith("invalid run context: bogus: ")
    run = client.runs.create(thread, "executor", input=ask(PRECISE_Q), context={"bogus": 1})
    client.runs.join(thread, run["run_id"])
    assert client.runs.get(thread, run["run_id"])["status"] == "error"
    assert client.threads.get_state(thread)["values"].get("messages", []) == []  # nothing ran


# -- 4. a refused run leaves the thread as it was ----------------------------------------------------------------
def test_a_run_refused_for_an_unknown_kb_leaves_no_question_in_the_thread(offline):
    client = client_of(offline[0])
    thread = client.threads.create()["thread_id"]
    client.runs.wait(thread, "executor", input=ask(PRECISE_Q))
    before = client.threads.get_state(thread)["values"]["messages"]
    refused = "what is in the other knowledge base?"
    out = client.runs.wait(thread, "executor", input=ask(refused), context={"kb": "nope"}, raise_error=False)
    assert out["__error__"]["error"] == "InputError" and "'nope'" in out["__error__"]["message"]
    assert client.threads.get_state(thread)["values"]["messages"] == before
    client.runs.wait(thread, "executor", input=ask(OTHER_Q))
    history = [m["content"] for m in client.threads.get_state(thread)["values"]["messages"] if m["type"] == "human"]
    assert history == [PRECISE_Q, OTHER_Q]
