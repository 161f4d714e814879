"""A tool call the host cancels (MCP's `notifications/cancelled`) and a session the host ends (issue 30), driven by
the `mcp` SDK's own client: in-process, over stdio (a subprocess) and over streamable HTTP (`executor mcp --http`).

A cancelled call still runs to its end (it cannot be stopped), but the host never reads its answer: what it recorded
in action memory (its lookup, the documents it marked as sent) is forgotten, so the same lookup later sends them
instead of being DEDUPED on documents the host never got."""

import time
from contextlib import contextmanager

import anyio
import mcp.types as types
import pytest
from conftest import fresh_database, ingested_home, mcp_stdio, run_cli, stop_process
from mcp import ClientSession
from mcp.shared.exceptions import McpError
from test_mcp import PRECISE_QUESTION, connected, http_client, level, server_env, start_http_server, text

from executor.agent.mcp_server import ExecutorMCP
from executor.stores.database import Database
from executor.stores.memory import ActionMemory, SentDocument

pytestmark = pytest.mark.timeout(300)
ANSWER = "troubleshooting/err-timeout.md"  # the document the precise question's lookup sends
OTHER_QUESTION = "Kubernetes 部署怎么回滚？"  # its lookup sends documents, none of them ANSWER
DELAYS = [0.0, 0.01, 0.05, 0.2]  # when the host cancels, after sending the lookup


@pytest.fixture(scope="module")
def mcp_server(sample_rt):
    return ExecutorMCP(sample_rt, kb="sample")


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    home = ingested_home(tmp_path_factory, "mcp-cancel-home")
    yield home
    run_cli(home, "graph", "stop")


async def cancel(client: ClientSession, request_id: int) -> None:
    params = types.CancelledNotificationParams(requestId=request_id, reason="the host moved on")
    await client.send_notification(types.ClientNotification(types.CancelledNotification(params=params)))


async def cancelled_lookup(client: ClientSession, session: str, delay: float) -> None:
    """A lookup the host cancels `delay` s after sending it and whose answer it never reads: the SDK's client has no
    call that cancels, so this is what a host does (send the request, then MCP's notification for its id)."""
    request_id = client._request_id  # the id the SDK's client gives its next request
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(lambda: client.call_tool("lookup_knowledge", {"query": PRECISE_QUESTION, "session": session}))
        await anyio.sleep(delay)
        await cancel(client, request_id)
        tasks.cancel_scope.cancel()  # the host stops waiting: the answer is never read


async def cancelled_and_ignored(client: ClientSession, session: str, delay: float) -> None:
    """As `cancelled_lookup`, but the host lets the SDK take in whatever comes back for the call and throws it away.
    Over a transport this is the one safe way with the SDK's client (mcp 1.30): a wait cancelled just as the answer
    arrives makes its receive loop send into the closed stream of that request, which ends the session with
    `ClosedResourceError` (a client-side race; seen once in two CI runs)."""
    request_id = client._request_id
    ended = anyio.Event()

    async def call() -> None:
        try:
            await client.call_tool("lookup_knowledge", {"query": PRECISE_QUESTION, "session": session})
        except McpError:
            pass  # the SDK's server answers a request cancelled while it runs with an error
        ended.set()

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(call)
        await anyio.sleep(delay)
        await cancel(client, request_id)
        with anyio.fail_after(120):
            await ended.wait()


async def lookup(client: ClientSession, session: str):
    return await client.call_tool("lookup_knowledge", {"query": PRECISE_QUESTION, "session": session})


async def after_cancels(client: ClientSession, prefix: str) -> list:
    """For each delay: a cancelled lookup, then the same lookup twice, in an action-memory session of its own."""
    answers = []
    for n, delay in enumerate(DELAYS):
        session = f"{prefix}-{n}"
        await cancelled_and_ignored(client, session, delay)
        answers.append((delay, await lookup(client, session), await lookup(client, session)))
    return answers


def check_sent_again(answers: list) -> None:
    for delay, again, repeat in answers:
        # the cancelled lookup's documents were never sent: the same lookup sends them, not DEDUPED
        assert level(again) == "relevance_level: PRECISE", (delay, text(again)[:300])
        assert ANSWER in text(again), delay
        # and the memory goes on: what the host did read is never sent twice
        assert level(repeat) == "relevance_level: DEDUPED" and "dedup_reason: doc_retrieved" in text(repeat), delay


# -- in-process: the cancel meets the call running, or ended ------------------------------------------------------
def test_a_lookup_cancelled_while_it_runs_forgets_what_it_recorded(mcp_server, sample_rt):
    """The cancel arrives while the call waits for the stores (held here): the call runs on to its end, then forgets
    its lookup and the documents it marked as sent; nothing is forgotten of the session's earlier lookups."""
    session = "mcp-cancel-running"
    lock = mcp_server._lock

    async def main():
        async with connected(mcp_server) as client:
            earlier = await client.call_tool("lookup_knowledge", {"query": OTHER_QUESTION, "session": session})
            kept = sample_rt.memory.snapshot(session)
            lock.acquire()  # the call cannot start before the cancel has reached the server
            try:
                await cancelled_lookup(client, session, 0.05)
                await anyio.sleep(0.2)  # the server reads the cancel
            finally:
                lock.release()
            deadline = time.monotonic() + 60
            while len(sample_rt.log.rows(session_id=session)) < 2:  # the cancelled call ran (its log row) ...
                assert time.monotonic() < deadline, "the cancelled call never ran"
                await anyio.sleep(0.05)
            with lock:  # ... and ended: it holds the lock from before its row to after its forgetting
                after = sample_rt.memory.snapshot(session)
            return earlier, kept, after, await lookup(client, session)

    earlier, kept, after, again = anyio.run(main)
    assert level(earlier) != "relevance_level: DEDUPED" and kept.documents and ANSWER not in text(earlier)
    assert after == kept  # exactly the cancelled call's records are gone, the earlier lookup's all kept
    assert level(again) == "relevance_level: PRECISE" and ANSWER in text(again)


def test_a_cancel_that_comes_after_the_call_ended_forgets_that_call_and_nothing_after_it(mcp_server, sample_rt):
    """The answer was on its way when the host cancelled: the host ignores it (MCP), so its records are forgotten
    when the cancel arrives, even after the session recorded more: only that call's own. Before, a late cancel
    forgot nothing once more was recorded, and the next lookup was DEDUPED on a page the host never read."""

    async def main():
        async with connected(mcp_server) as client:
            request_id = client._request_id
            answered = await lookup(client, "mcp-cancel-ended")
            await cancel(client, request_id)
            again = await lookup(client, "mcp-cancel-ended")

            request_id = client._request_id
            first = await lookup(client, "mcp-cancel-later")
            other = await client.call_tool("lookup_knowledge", {"query": OTHER_QUESTION, "session": "mcp-cancel-later"})
            kept = sample_rt.memory.snapshot("mcp-cancel-later")
            await cancel(client, request_id)  # handled before the next request is
            repeat = await lookup(client, "mcp-cancel-later")
            return answered, again, first, other, kept, sample_rt.memory.snapshot("mcp-cancel-later"), repeat

    answered, again, first, other, kept, left, repeat = anyio.run(main)
    assert level(answered) == "relevance_level: PRECISE"
    assert level(again) == "relevance_level: PRECISE" and ANSWER in text(again)
    assert level(first) == "relevance_level: PRECISE" and not other.isError
    assert ANSWER in {key for _, key in kept.documents}
    # the cancelled call's page was sent again, not DEDUPED; the later call's records stay, and the cancelled
    # call's lookup is gone (the repeat recorded one of its own)
    assert level(repeat) == "relevance_level: PRECISE" and ANSWER in text(repeat)
    later = {key for _, key in kept.documents} - {ANSWER}
    assert later and {key for _, key in left.documents} == later | {ANSWER}
    assert len(left.lookups) == len(kept.lookups)


# -- over the transports: stdio and streamable HTTP, cancels at several moments of the lookup ---------------------
def test_a_lookup_cancelled_over_stdio_sends_its_documents_again(home):
    async def main():
        async with mcp_stdio(server_env(home), home, home / "stdio-stderr.log") as client:
            return await after_cancels(client, "stdio-cancel")

    check_sent_again(anyio.run(main))


@contextmanager
def http_server_logging_to(home):
    """`executor mcp --http` on `home`, and what its log (the SDK's and uvicorn's records) says meanwhile."""
    log_path = home / "mcp-http.log"
    start = log_path.stat().st_size if log_path.exists() else 0
    out = open(home / "http-server.out", "w")
    proc, url = start_http_server(home, out)
    assert proc is not None and url is not None, (home / "http-server.out").read_text()[-2000:]
    said: list[str] = []
    try:
        yield url, said
        time.sleep(1)  # a session's server task winds down after its DELETE is answered
    finally:
        stop_process(proc, out)
        said.append(log_path.read_text()[start:])


def test_a_lookup_cancelled_over_http_sends_its_documents_again(home):
    async def main():
        async with http_client(url) as (client, _):
            return await after_cancels(client, "http-cancel")

    with http_server_logging_to(home) as (url, _):
        check_sent_again(anyio.run(main))


def test_an_mcp_session_the_host_ends_is_no_crash_in_the_log(home):
    """The SDK's client ends its MCP session with DELETE. That normal close was logged as "Session ... crashed"
    with a traceback (our reader of the transport's stream took the stream's closing for a failure), after the
    SDK's "Error in standalone SSE writer" traceback (the host's GET stream, closed by the same DELETE)."""

    async def main():
        for _ in range(2):
            async with http_client(url) as (client, _):
                await client.list_tools()
                assert level(await lookup(client, "http-closed")).startswith("relevance_level:")

    with http_server_logging_to(home) as (url, said):
        anyio.run(main)
    assert said and "crashed" not in said[0] and "Traceback" not in said[0] and " ERROR " not in said[0], said


def test_a_session_that_really_fails_still_fails(mcp_server):
    """Only the transport's closing of its stream is a normal end: any other error of the stream still ends the
    session in that error (which the SDK logs as "Session ... crashed")."""

    class Broken:
        def __aiter__(self):
            return self

        async def __anext__(self):
            raise RuntimeError("the transport broke")

    async def main():
        sent, _ = anyio.create_memory_object_stream(1)
        server = mcp_server.server
        await server.run(Broken(), sent, server.create_initialization_options())

    with pytest.raises(BaseExceptionGroup) as failed:
        anyio.run(main)
    assert failed.group_contains(RuntimeError, match="the transport broke")


# -- the memory's operation on each database -----------------------------------------------------------------------
@pytest.fixture(params=["sqlite", "postgres", "mysql"])
def memory(request, tmp_path):
    if request.param == "sqlite":
        yield ActionMemory(Database(f"sqlite:///{tmp_path / 'memory.db'}"))
        return
    with fresh_database(request.param) as url:
        yield ActionMemory(Database(url))


def test_forgetting_a_call_forgets_its_records_alone_and_puts_domains_back(memory):
    from test_repeats import unit

    from executor.stores.memory import EarlierLookup

    def one_lookup(query: str, domain: str, level: str, keys: list[str]) -> None:
        memory.record("s", domain, level, [SentDocument("sample", k, domain, k) for k in keys])
        memory.record_lookup("s", EarlierLookup(query, unit(1, 2, 3), level, domain, keys, embedder="e"))

    one_lookup("first", "infrastructure", "REFERENCE", ["infra/a.md"])
    before = memory.snapshot("s")
    # the call to forget: a new document, the same domain graded again, a new domain
    one_lookup("second", "infrastructure", "PRECISE", ["infra/a.md", "infra/b.md"])
    one_lookup("third", "troubleshooting", "PRECISE", ["trouble/c.md"])
    after = memory.snapshot("s")
    memory.record_lookup("other", EarlierLookup("elsewhere", unit(1, 2, 3), None, embedder="e"))

    memory.forget_call(before, after)
    assert memory.snapshot("s") == before
    assert set(memory.sent_documents("s")) == {("sample", "infra/a.md")}
    assert memory.domain_levels("s") == {"infrastructure": "REFERENCE"}
    assert [e.query for e in memory.lookups("s")] == ["first"]
    assert [e.query for e in memory.lookups("other")] == ["elsewhere"]  # another session's memory is its own

    one_lookup("second", "infrastructure", "PRECISE", ["infra/b.md"])
    after = memory.snapshot("s")
    one_lookup("fourth", "troubleshooting", "PRECISE", ["trouble/c.md"])  # recorded after the call
    memory.forget_call(before, after)  # the call's own records go, the later call's stay
    assert [e.query for e in memory.lookups("s")] == ["first", "fourth"]
    assert set(memory.sent_documents("s")) == {("sample", "infra/a.md"), ("sample", "trouble/c.md")}
    assert memory.domain_levels("s") == {"infrastructure": "REFERENCE", "troubleshooting": "PRECISE"}

    # a domain row a later lookup wrote again keeps the later lookup's level
    before = memory.snapshot("s")
    one_lookup("fifth", "infrastructure", "PRECISE", ["infra/d.md"])
    after = memory.snapshot("s")
    one_lookup("sixth", "infrastructure", "HIGHLY_RELEVANT", ["infra/e.md"])
    memory.forget_call(before, after)
    assert [e.query for e in memory.lookups("s")] == ["first", "fourth", "sixth"]
    assert ("sample", "infra/d.md") not in memory.sent_documents("s")
    assert memory.domain_levels("s")["infrastructure"] == "HIGHLY_RELEVANT"
