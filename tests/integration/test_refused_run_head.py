"""A refused run leaves its thread's head as it was: the same newest checkpoint, its values, its next task
(hostile pass eighteen, findings 4 and 7; `evals/review/hostile18-findings.md`).

The refusal used to be a path through the graph (START's edge, `take_back`, `refuse`): the run wrote its own
checkpoints, which LangGraph makes the thread's newest whatever checkpoint the run started from. A run from an
earlier checkpoint (a fork) put back the fork point's conversation, so the later turns were gone from the thread's
state; on a thread interrupted before `begin_turn` the head's next task became `refuse`, and the interrupted run could
not be resumed. In-process over a real SQLite checkpointer under each durability mode, and through the real
`langgraph dev` server with `langgraph_sdk` (its runs go through `astream`, over the server's own checkpointer).
"""

from __future__ import annotations

import pytest
from conftest import FIRST_Q, NEXT_Q, asked, langgraph_dev, sdk_thread
from langchain_core.messages import HumanMessage
from langgraph.types import Command

from executor.core.errors import InputError
from executor.nodes.state import Context

pytestmark = pytest.mark.timeout(300)

LAST_Q = "How do I roll back a Helm release?"
CONTROL = "the question contains control characters"
DURABILITY = ["sync", "async", "exit"]


def _head(app, config):
    state = app.get_state(config)
    return state.config["configurable"]["checkpoint_id"], state.values, state.next


def _end_of_first_turn(app, config):
    [first_turn] = [s.config for s in app.get_state_history(config) if not s.next and asked(s.values) == [FIRST_Q]]
    return first_turn


@pytest.mark.parametrize("durability", DURABILITY)
def test_a_refused_fork_leaves_the_threads_newest_checkpoint_as_it_was(thread, durability):
    """Finding 4: the fork point's conversation became the thread's head (NEXT_Q and its answer gone)."""
    app, config = thread
    before = _head(app, config)
    with pytest.raises(InputError, match=CONTROL):
        app.invoke(
            {"messages": [HumanMessage("bad\x07")]},
            _end_of_first_turn(app, config),
            context=Context(),
            durability=durability,
        )
    assert _head(app, config) == before


@pytest.mark.parametrize("durability", DURABILITY)
@pytest.mark.parametrize(
    "run_input",
    [
        {"messages": [HumanMessage("bad\x07")]},
        {"messages": [HumanMessage("y" * 2500)]},
        Command(update={"messages": [HumanMessage("bad\x07")]}, goto="begin_turn"),
    ],
    ids=["control", "too-long", "command"],
)
def test_a_thread_interrupted_before_begin_turn_stays_interrupted_after_a_refused_run(thread, durability, run_input):
    """Finding 7: the head's next task became `refuse`, and a resume raised the refused run's error again."""
    app, config = thread
    app.invoke({"messages": [HumanMessage(LAST_Q)]}, config, context=Context(), interrupt_before=["begin_turn"])
    before = _head(app, config)
    assert before[2] == ("begin_turn",)
    with pytest.raises(InputError):
        app.invoke(run_input, config, context=Context(), durability=durability)
    assert _head(app, config) == before
    resumed = app.invoke(None, config, context=Context(), durability=durability)
    assert resumed["answer"]
    assert app.get_state(config).values["question"] == LAST_Q
    assert asked(app.get_state(config).values) == [FIRST_Q, NEXT_Q, LAST_Q]


@pytest.mark.parametrize("durability", DURABILITY)
def test_an_async_refused_run_leaves_the_head_as_it_was(sample_rt, durability):
    """The same through `ainvoke` (the path langgraph-api's runs take: `astream`, an async checkpointer read)."""
    import asyncio

    from langgraph.checkpoint.memory import InMemorySaver

    from executor.agent.planner import OfflinePlanner

    app = sample_rt.app(OfflinePlanner(), "offline", checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "async-refused"}}

    async def scenario():
        await app.ainvoke({"messages": [HumanMessage(FIRST_Q)]}, config, context=Context())
        await app.ainvoke(
            {"messages": [HumanMessage(NEXT_Q)]}, config, context=Context(), interrupt_before=["begin_turn"]
        )
        before = _head(app, config)
        for run_config in (config, _end_of_first_turn(app, config)):
            with pytest.raises(InputError, match=CONTROL):
                await app.ainvoke(
                    {"messages": [HumanMessage("bad\x07")]}, run_config, context={"kb": "sample"}, durability=durability
                )
            assert _head(app, config) == before
        return await app.ainvoke(None, config, context=Context(), durability=durability)

    assert asyncio.run(scenario())["answer"]
    assert asked(app.get_state(config).values) == [FIRST_Q, NEXT_Q]


# -- through `langgraph dev`, as Studio and the SDKs send a run ---------------------------------------------------
@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with langgraph_dev(tmp_path_factory, "refused-head") as (url, _, _):
        yield url


@pytest.fixture
def server_thread(server):
    return sdk_thread(server, FIRST_Q, NEXT_Q)


def _server_head(client, thread_id):
    state = client.threads.get_state(thread_id)
    return state["checkpoint"]["checkpoint_id"], state["values"], state["next"]


def _server_asked(client, thread_id) -> list[str]:
    return [m["content"] for m in client.threads.get_state(thread_id)["values"]["messages"] if m["type"] == "human"]


BAD = [{"role": "user", "content": "bad\x07"}]


def test_on_the_server_a_refused_fork_leaves_the_thread_as_it_was(server_thread):
    """Finding 4 as measured: `threads.get_state` showed the fork point's conversation after the refused run."""
    client, thread_id = server_thread
    [first_turn] = [
        s["checkpoint"]["checkpoint_id"]
        for s in client.threads.get_history(thread_id, limit=100)
        if not s["next"] and [m["content"] for m in s["values"]["messages"] if m["type"] == "human"] == [FIRST_Q]
    ]
    before = _server_head(client, thread_id)
    out = client.runs.wait(thread_id, "executor", input={"messages": BAD}, checkpoint_id=first_turn, raise_error=False)
    assert out["__error__"] == {"error": "InputError", "message": CONTROL}, out
    assert _server_head(client, thread_id) == before


def test_on_the_server_an_interrupted_thread_can_be_resumed_after_a_refused_run(server_thread):
    """Finding 7 as measured: after the refused run the thread's next task was `refuse`, and a resume raised the
    refused run's error again."""
    client, thread_id = server_thread
    user = {"role": "user", "content": LAST_Q}
    client.runs.wait(thread_id, "executor", input={"messages": [user]}, interrupt_before=["begin_turn"])
    before = _server_head(client, thread_id)
    assert before[2] == ["begin_turn"]
    # with a knowledge base named: checking it reads the catalog, which the server's event loop must not do itself
    out = client.runs.wait(thread_id, "executor", input={"messages": BAD}, context={"kb": "sample"}, raise_error=False)
    assert out["__error__"] == {"error": "InputError", "message": CONTROL}, out
    assert _server_head(client, thread_id) == before
    resumed = client.runs.wait(thread_id, "executor", input=None)
    assert resumed["answer"], resumed
    assert client.threads.get_state(thread_id)["values"]["question"] == LAST_Q
    assert _server_asked(client, thread_id) == [FIRST_Q, NEXT_Q, LAST_Q]


def test_on_the_server_a_run_that_brings_nothing_is_checked_against_the_threads_own_question(server_thread):
    """The check reads the thread through the server's checkpointer: a run that brings no message would answer the
    thread's last question, here one with control characters that `update_state` put there (which no check sees),
    and is refused, the head left where it was."""
    client, thread_id = server_thread
    client.threads.update_state(thread_id, {"messages": BAD}, as_node="answer")
    before = _server_head(client, thread_id)
    out = client.runs.wait(thread_id, "executor", input={"messages": []}, raise_error=False)
    assert out["__error__"] == {"error": "InputError", "message": CONTROL}, out
    assert _server_head(client, thread_id) == before
