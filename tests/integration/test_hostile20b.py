"""Round twenty of the hostile pass, part B (issue 30): the real clients and the servers. What it found, each case
as it failed (evals/review/hostile20b-findings.md, by number), and the refusals that moved into `CheckedGraph`.

A test of a finding still open is `xfail(strict=True)` with its number: it fails on today's code, and whoever mends
the finding flips the marker. Real components throughout: `langgraph dev` on this checkout's langgraph.json with
`langgraph_sdk`, the graph over a real SQLite checkpointer, and the sample KB in Milvus Lite with the USE embedder.
"""

import functools
import re

import pytest
from conftest import FIRST_Q, NEXT_Q, asked, langgraph_dev, sdk_thread
from langchain_core.messages import HumanMessage

from executor.core.errors import InputError
from executor.nodes.state import Context

pytestmark = pytest.mark.timeout(300)

LAST_Q = "How do I roll back a Helm release?"
CONTROL = "the question contains control characters"
MISSING = "00000000-0000-0000-0000-000000000000"


def _head(app, config):
    state = app.get_state(config)
    return state.config["configurable"]["checkpoint_id"], state.values, state.next


# -- a resume that reaches begin_turn with a question `update_state` stored (session 26's gap) ----------------------
@pytest.mark.parametrize("durability", ["sync", "async", "exit"])
def test_a_resume_of_a_question_update_state_stored_writes_nothing(thread, durability):
    """A thread interrupted before begin_turn, its question replaced by `update_state` with one holding control
    characters, then resumed (`None`): the run was refused on begin_turn's edge, after it had written its
    checkpoints (the head moved, `refuse` ran). It is refused before it writes anything, and the thread resumes once
    the question is mended."""
    app, config = thread
    app.invoke({"messages": [HumanMessage(LAST_Q)]}, config, context=Context(), interrupt_before=["begin_turn"])
    app.update_state(config, {"messages": [HumanMessage("bad\x07", id="bad")]})
    before = _head(app, config)
    assert before[2] == ("begin_turn",)
    with pytest.raises(InputError, match=CONTROL):
        app.invoke(None, config, context=Context(), durability=durability)
    assert _head(app, config) == before
    app.update_state(config, {"messages": [HumanMessage(LAST_Q, id="bad")]})  # the same id: replaced
    assert app.invoke(None, config, context=Context(), durability=durability)["answer"]
    assert asked(app.get_state(config).values)[-1] == LAST_Q


def test_a_run_in_process_from_a_checkpoint_the_thread_does_not_hold_is_refused(thread):
    """The check `studio.graph` made for `langgraph dev` alone (hostile19b finding 3) is the graph's now: an
    `app.invoke` from a checkpoint id the thread does not hold was answered as a first question, and the thread's
    head became that one-question conversation."""
    app, config = thread
    before = _head(app, config)
    run_config = {"configurable": {**config["configurable"], "checkpoint_id": MISSING}}
    with pytest.raises(InputError, match=f"has no checkpoint '{MISSING}'"):
        app.invoke({"messages": [HumanMessage(LAST_Q)]}, run_config, context=Context())
    assert _head(app, config) == before


# -- through `langgraph dev` ----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with langgraph_dev(tmp_path_factory, "hostile20b") as (url, _, _):
        yield url


def _server_head(client, thread_id):
    state = client.threads.get_state(thread_id)
    return state["checkpoint"]["checkpoint_id"], state["values"], state["next"]


def test_on_the_server_a_resume_of_a_question_update_state_stored_writes_nothing(server):
    client, thread_id = sdk_thread(server, FIRST_Q)
    user = {"role": "user", "content": NEXT_Q}
    client.runs.wait(thread_id, "executor", input={"messages": [user]}, interrupt_before=["begin_turn"])
    client.threads.update_state(thread_id, {"messages": [{"role": "user", "content": "bad\x07"}]})
    before = _server_head(client, thread_id)
    assert before[2] == ["begin_turn"]
    out = client.runs.wait(thread_id, "executor", input=None, raise_error=False)
    assert out["__error__"] == {"error": "InputError", "message": CONTROL}, out
    assert _server_head(client, thread_id) == before


# -- finding 1: a question naming one page's entity, with a number after it --------------------------------------
@pytest.mark.parametrize(
    "query",
    [
        "PgBouncer #3",  # mended by the keyword rules of session 27 (`Candidate.sole_speller`)
        "PgBouncer 是什么？ 3",  # mended in session 28: the number is no part of what is searched (`untagged`)
        "PgBouncer 是什么？ #1",
        "PgBouncer 是什么 (ticket #3)",
    ],
)
def test_a_number_after_a_question_the_kb_answers_is_not_nothing_found(sample_rt, query):
    """`PgBouncer 是什么？` is answered from the page titled "PostgreSQL connection limits and PgBouncer" (its keyword
    and entity); with a ticket number after it, nothing was found. `ERR_TIMEOUT 是什么？ #3` still finds its page."""
    import uuid

    result = sample_rt.lookup_service.lookup(query, session_id=f"h20b-{uuid.uuid4().hex[:10]}", kb="sample")
    found = [d.doc_key for d in (*result.primary, *result.supplement)]
    assert "infrastructure/postgres-connection-limits.md" in found, (result.relevance_level, found)


# -- finding 2: a thread's history paged with `before`, as both SDKs page it --------------------------------------
def test_a_threads_history_pages_with_the_checkpoint_the_sdk_sends(server):
    """`threads.get_history(thread, limit=N, before=<the last state's checkpoint>)` was a 500 (the in-memory runtime
    took the checkpoint object for a config: `KeyError: 'configurable'`): a thread's history could not be read past
    its first page (at most 1,000 states; a 200-turn thread holds about 1,600)."""
    client, thread_id = sdk_thread(server, FIRST_Q, NEXT_Q)
    whole = [s["checkpoint"]["checkpoint_id"] for s in client.threads.get_history(thread_id, limit=100)]
    first = client.threads.get_history(thread_id, limit=3)
    second = client.threads.get_history(thread_id, limit=3, before=first[-1]["checkpoint"])
    paged = [s["checkpoint"]["checkpoint_id"] for s in (*first, *second)]
    assert paged == whole[:6], (paged, whole[:6])


# -- finding 3: a list cursor the server never gave -----------------------------------------------------------------
def test_a_list_cursor_the_server_never_gave_is_refused(sample_rt):
    """`tools/list` (and the other lists) with `cursor: "bogus"` answered the first page again, where MCP's pagination
    says an invalid cursor is -32602: a host that pages took the same tools twice. Without a cursor, one page."""
    import anyio
    from mcp.shared.exceptions import McpError
    from test_mcp import connected

    from executor.agent.mcp_server import ExecutorMCP

    async def main():
        async with connected(ExecutorMCP(sample_rt, kb="sample")) as client:
            listed = await client.list_tools()
            refused = []
            for lister in (client.list_tools, client.list_resources, client.list_prompts):
                with pytest.raises(McpError) as error:
                    await lister(cursor="bogus")
                refused.append((error.value.error.code, error.value.error.message))
            return listed, refused

    listed, refused = anyio.run(main)
    assert listed.tools and listed.nextCursor is None
    assert all(code == -32602 and "cursor" in message for code, message in refused), refused


# -- finding 4: a run another client's run interrupted ----------------------------------------------------------
@pytest.mark.parametrize("strategy", ["interrupt", "rollback"])
def test_a_run_another_client_interrupts_is_not_answered_as_if_it_succeeded(server, strategy):
    """Two clients on one thread (two Studio tabs): A asks, B asks with `multitask_strategy` "interrupt" (or
    "rollback") while A's run is running. A's `runs.wait` answered 200 with `{}` or A's question without an answer,
    and nothing for `raise_error` to raise (when both asked with "interrupt", A was given B's answer to B's
    question). A is told its run was interrupted; B is answered. (A's run may finish before B's arrives on a slow
    machine: then A's answer is its own.)"""
    import threading
    import time

    from langgraph_sdk import get_sync_client

    client, thread_id = sdk_thread(server)
    other = get_sync_client(url=server)
    asked, got = {"role": "user", "content": LAST_Q}, {}

    def ask():
        try:
            got["a"] = client.runs.wait(thread_id, "executor", input={"messages": [asked]})
        except Exception as exc:  # the SDK raises a run's `__error__` (raise_error=True)
            got["a"] = exc

    asking = threading.Thread(target=ask)
    asking.start()
    deadline = time.monotonic() + 30
    while not any(r["status"] == "running" for r in other.runs.list(thread_id)) and time.monotonic() < deadline:
        time.sleep(0.02)
    user = {"role": "user", "content": "PgBouncer 是什么？"}
    b = other.runs.wait(thread_id, "executor", input={"messages": [user]}, multitask_strategy=strategy)
    asking.join()
    a = got["a"]
    ended = {
        "interrupt": 'RunInterrupted: run .* was interrupted .*multitask_strategy "interrupt"',
        "rollback": 'RunRolledBack: run .* was rolled back .*multitask_strategy "rollback"',
    }
    assert "PgBouncer" in b["answer"], b
    said = str(a) if isinstance(a, Exception) else a.get("answer", "")
    assert re.match(ended[strategy], said) or "helm" in said.lower(), a


# -- finding 7: an assistant or a cron every run of which would be refused ----------------------------------------
REFUSED_RUNS = [
    ({"input": {"messages": [{"role": "user", "content": "bad\x07"}]}}, CONTROL),
    ({"input": {"messages": [{"role": "user", "content": "x" * 2001}]}}, "the query is 2,001 characters long"),
    ({"context": {"kb": "nope"}}, "unknown knowledge base 'nope'"),
    ({"context": {"bogus": 1}}, "bogus"),
    ({"config": {"configurable": {"kb": "nope"}}}, "unknown knowledge base 'nope'"),  # the context of its runs
]


@pytest.mark.parametrize("on_thread", [False, True])
@pytest.mark.parametrize(("options", "line"), REFUSED_RUNS)
def test_a_cron_every_run_of_which_would_be_refused_is_refused_when_created(server, on_thread, options, line):
    """A cron whose input is a question with control characters (or past the query limit), or whose context (or
    config's `configurable`) names a knowledge base that does not exist, was accepted, and every run it started
    refused (each minute), where a cron with an unreadable message is refused when created. Refused now, 422 with one
    line; nothing stored."""
    from langgraph_sdk import get_sync_client
    from langgraph_sdk.errors import UnprocessableEntityError

    client, thread_id = sdk_thread(server) if on_thread else (get_sync_client(url=server), None)
    create = functools.partial(client.crons.create_for_thread, thread_id) if on_thread else client.crons.create
    crons = client.crons.count()
    with pytest.raises(UnprocessableEntityError) as refused:
        create("executor", schedule="0 0 1 1 *", **options)
    detail = refused.value.response.json()["detail"]
    assert detail.startswith("every run of this cron would be refused: ") and line in detail, detail
    assert "\n" not in detail
    assert client.crons.count() == crons


def test_a_cron_update_that_would_refuse_its_runs_is_refused(server):
    """The same for `crons.update`: the cron keeps the question it had, and a cron with a question its runs answer
    is accepted."""
    from langgraph_sdk import get_sync_client
    from langgraph_sdk.errors import UnprocessableEntityError

    client = get_sync_client(url=server)
    user = {"role": "user", "content": LAST_Q}
    cron = client.crons.create("executor", schedule="0 0 1 1 *", input={"messages": [user]})
    try:
        with pytest.raises(UnprocessableEntityError, match=f"^every run of this cron would be refused: {CONTROL}$"):
            client.crons.update(cron["cron_id"], input={"messages": [{"role": "user", "content": "bad\x07"}]})
        kept = [c for c in client.crons.search() if c["cron_id"] == cron["cron_id"]]
        assert [c["payload"]["input"]["messages"] for c in kept] == [[user]], kept
    finally:
        client.crons.delete(cron["cron_id"])


@pytest.mark.parametrize(("options", "line"), [o for o in REFUSED_RUNS if "input" not in o[0]])
def test_an_assistant_every_run_of_which_would_be_refused_is_refused_when_stored(server, options, line):
    """An assistant whose context names a knowledge base that does not exist (or a field the graph does not take)
    was accepted, and every run of it refused. Refused now when created or updated, 422 with one line; an
    assistant of a known knowledge base is stored."""
    from langgraph_sdk import get_sync_client
    from langgraph_sdk.errors import UnprocessableEntityError

    client = get_sync_client(url=server)
    assistants = client.assistants.count()
    with pytest.raises(UnprocessableEntityError) as refused:
        client.assistants.create("executor", **options)
    detail = refused.value.response.json()["detail"]
    assert detail.startswith("every run of this assistant would be refused: ") and line in detail, detail
    assert client.assistants.count() == assistants
    assistant = client.assistants.create("executor", context={"kb": "sample"})
    try:
        with pytest.raises(
            UnprocessableEntityError, match=f"^every run of this assistant would be refused: .*{re.escape(line)}"
        ):
            client.assistants.update(assistant["assistant_id"], **options)
        assert client.assistants.get(assistant["assistant_id"])["context"] == {"kb": "sample"}
    finally:
        client.assistants.delete(assistant["assistant_id"])


# -- finding 5: a search of the threads' values on a server holding a thread never run ----------------------------
def test_a_values_search_answers_the_threads_that_match_beside_a_thread_never_run(server):
    """`threads.search(values=...)` (and `threads.count`) on a server holding a thread never run, its values null,
    was a 500 (`TypeError: argument of type 'NoneType' is not iterable` in the in-memory runtime) and the client's
    next request on that connection was reset. The threads whose values match are answered; the thread with no
    values does not match."""
    client, ran = sdk_thread(server, LAST_Q)
    never_ran = client.threads.create()["thread_id"]
    wanted = {"question": LAST_Q}
    found = client.threads.search(values=wanted, limit=1000)
    ids = [t["thread_id"] for t in found]
    assert ran in ids and never_ran not in ids, ids
    assert all(t["values"]["question"] == LAST_Q for t in found), found
    assert client.threads.count(values=wanted) == len(found)
    assert client.threads.get(never_ran)["values"] is None  # the same connection still answers


# -- finding 6: a run asked to wait longer than the server can date ----------------------------------------------
@pytest.mark.parametrize("on_thread", [True, False])
@pytest.mark.parametrize("call", ["create", "wait", "stream"])
def test_a_run_asked_to_start_after_too_long_is_refused_naming_after_seconds(server, call, on_thread):
    """`runs.create(..., after_seconds=10**12)` (and `wait`, `stream`; on a thread or not) was a 500
    (`OverflowError: date value out of range`) and the client's next request on that connection was reset.
    Refused 422 with one line naming `after_seconds` and its bound; no run is made."""
    import httpx  # `runs.wait` raises httpx's own error, the others the SDK's (a subclass of it)

    client, thread_id = sdk_thread(server)
    user = {"role": "user", "content": LAST_Q}
    run = getattr(client.runs, call)
    with pytest.raises(httpx.HTTPStatusError) as refused:
        answered = run(thread_id if on_thread else None, "executor", input={"messages": [user]}, after_seconds=10**12)
        list(answered) if call == "stream" else answered
    assert refused.value.response.status_code == 422, refused.value
    detail = refused.value.response.json()["detail"]
    assert detail.startswith("invalid after_seconds: ") and "31,536,000" in detail and "\n" not in detail, detail
    assert client.runs.list(thread_id) == []  # the same connection still answers


def test_a_batch_of_runs_one_of_which_waits_too_long_is_refused(server):
    """The same for `runs.create_batch` (the async client): the run is named by its place in the batch."""
    import asyncio

    from langgraph_sdk import get_client
    from langgraph_sdk.errors import UnprocessableEntityError

    run = {"assistant_id": "executor", "input": {"messages": [{"role": "user", "content": LAST_Q}]}}

    async def main():
        client = get_client(url=server)
        with pytest.raises(UnprocessableEntityError) as refused:
            await client.runs.create_batch([run, {**run, "after_seconds": 10**12}])
        await client.assistants.search(graph_id="executor")  # the same connection still answers
        return refused.value.response.json()["detail"]

    detail = asyncio.run(main())
    assert detail.startswith("invalid 1.after_seconds: ") and "\n" not in detail, detail
