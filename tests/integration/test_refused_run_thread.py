"""A refused run leaves its thread exactly as it was (hostile pass sixteen, findings 6-8;
`evals/review/hostile16-findings.md`): every message the run brought taken back out, a message it replaced (the same
`id`) put back, and nothing removed that the run did not bring. The first check guessed the run's input as "the last
message, if it is a human's": a bad question sent under an earlier question's id replaced it and, on the server, the
turn answered the later question again; a run refused with an empty input removed an earlier question; a refused
input of several messages lost only its last one. In-process with a real SQLite checkpointer (under each durability
mode) and through the real `langgraph dev` server with `langgraph_sdk`."""

from __future__ import annotations

import pytest
from conftest import FIRST_Q, NEXT_Q, asked, langgraph_dev, sdk_thread
from langchain_core.messages import AIMessage, HumanMessage

from executor.core.errors import InputError
from executor.nodes.common import text_of
from executor.nodes.state import Context

pytestmark = pytest.mark.timeout(300)

LAST_Q = "How do I roll back a Helm release?"
CONTROL = "the question contains control characters"


def _refused(app, config, run_input, context, durability: str, error: str) -> None:
    before = app.get_state(config).values
    with pytest.raises(InputError) as caught:
        app.invoke(run_input, config, context=context, durability=durability)
    assert str(caught.value).startswith(error)
    assert app.get_state(config).values == before


def _question_id(app, config, question: str) -> str:
    [message] = [m for m in app.get_state(config).values["messages"] if text_of(m) == question]
    return message.id


@pytest.mark.parametrize("durability", ["sync", "async", "exit"])
@pytest.mark.parametrize("replaced", [FIRST_Q, NEXT_Q], ids=["first", "last"])
def test_a_bad_question_under_an_earlier_questions_id_is_refused_and_that_question_put_back(
    thread, durability, replaced
):
    """Finding 6. It replaced the earlier question in place (add_messages replaces by id); where a later question
    was last, the check read that one, passed, and the turn answered it again; where the replaced question was the
    last, the run was refused but the thread kept `bad\\x07` in its place."""
    app, config = thread
    bad = HumanMessage("bad\x07", id=_question_id(app, config, replaced))
    _refused(app, config, {"messages": [bad]}, Context(), durability, CONTROL)
    app.invoke({"messages": [HumanMessage(LAST_Q)]}, config, context=Context(), durability=durability)
    assert asked(app.get_state(config).values) == [FIRST_Q, NEXT_Q, LAST_Q]


@pytest.mark.parametrize("durability", ["sync", "async", "exit"])
@pytest.mark.parametrize(
    "brought",
    [
        [HumanMessage("first"), HumanMessage("b\x07")],  # only `b\x07` was taken out: `first` stayed
        [HumanMessage("q\x07"), AIMessage("fake")],  # the last message is no human's: nothing was taken out
        [HumanMessage("q\x07"), HumanMessage("second question")],  # the last question passed: answered
    ],
    ids=["two-questions", "question-and-answer", "bad-then-clean"],
)
def test_a_refused_input_of_several_messages_is_taken_out_whole(thread, durability, brought):
    """Finding 8: every message the run brought is taken out, and a bad question anywhere in it refuses the run."""
    app, config = thread
    _refused(app, config, {"messages": brought}, Context(), durability, CONTROL)
    app.invoke({"messages": [HumanMessage(LAST_Q)]}, config, context=Context(), durability=durability)
    assert asked(app.get_state(config).values) == [FIRST_Q, NEXT_Q, LAST_Q]


@pytest.mark.parametrize("durability", ["sync", "async", "exit"])
def test_a_refused_run_that_brings_nothing_removes_nothing(thread, durability):
    """Finding 7: a run refused for its context (an unknown KB) with an empty input, on a thread whose last
    message is a question nobody answered yet (here `update_state`'s), took that question out."""
    app, config = thread
    app.update_state(config, {"messages": [HumanMessage(LAST_Q)]}, as_node="answer")
    _refused(app, config, {"messages": []}, {"kb": "nope"}, durability, "unknown knowledge base 'nope'")
    assert asked(app.get_state(config).values) == [FIRST_Q, NEXT_Q, LAST_Q]


def test_a_bad_question_already_in_the_thread_is_still_refused_and_left_where_it_is(thread):
    """A run that brings nothing would answer the thread's last question: one with control characters (put there
    by `update_state`, which no check sees) is refused, as before, and not removed, since this run did not bring
    it."""
    app, config = thread
    app.update_state(config, {"messages": [HumanMessage("stored\x07")]}, as_node="answer")
    _refused(app, config, {"messages": []}, Context(), "async", CONTROL)
    assert asked(app.get_state(config).values) == [FIRST_Q, NEXT_Q, "stored\x07"]


# -- through `langgraph dev`, as Studio and the Agent Chat UI send a run -----------------------------------------
@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with langgraph_dev(tmp_path_factory, "refused-run") as (url, _, _):
        yield url


@pytest.fixture
def server_thread(server):
    return sdk_thread(server, FIRST_Q, NEXT_Q)


def _server_refused(client, thread_id, messages: list[dict]) -> None:
    before = client.threads.get_state(thread_id)["values"]
    out = client.runs.wait(thread_id, "executor", input={"messages": messages}, raise_error=False)
    assert out["__error__"] == {"error": "InputError", "message": CONTROL}, out
    assert client.threads.get_state(thread_id)["values"] == before
    after = client.runs.wait(thread_id, "executor", input={"messages": [{"role": "user", "content": LAST_Q}]})
    assert after["answer"]
    asked = [m["content"] for m in client.threads.get_state(thread_id)["values"]["messages"] if m["type"] == "human"]
    assert asked == [FIRST_Q, NEXT_Q, LAST_Q]


@pytest.mark.parametrize("replaced", [FIRST_Q, NEXT_Q], ids=["first", "last"])
def test_on_the_server_a_bad_question_under_an_earlier_questions_id_is_refused(server_thread, replaced):
    """Finding 6 as measured: through `runs.wait` the earlier question read `b\\x07` and the turn answered the
    later question again ("nothing found")."""
    client, thread_id = server_thread
    [earlier] = [m for m in client.threads.get_state(thread_id)["values"]["messages"] if m["content"] == replaced]
    _server_refused(client, thread_id, [{"role": "user", "content": "b\x07", "id": earlier["id"]}])


@pytest.mark.parametrize(
    "brought",
    [
        [{"role": "user", "content": "first"}, {"role": "user", "content": "b\x07"}],
        [{"role": "user", "content": "q\x07"}, {"role": "assistant", "content": "fake"}],
    ],
    ids=["two-questions", "question-and-answer"],
)
def test_on_the_server_a_refused_input_of_several_messages_is_taken_out_whole(server_thread, brought):
    """Finding 8 through `langgraph dev`: `first`, or both messages, stayed in the thread."""
    client, thread_id = server_thread
    _server_refused(client, thread_id, brought)
