"""A Milvus Lite server that dies or hangs under a long-lived process (issue 30, round fifteen's findings 2 and 7).

`executor mcp` (like `langgraph dev` and `executor chat`) keeps one Milvus Lite server for its lifetime. Killed
(kill -9, the OOM killer), it made every later lookup say "the knowledge base is unavailable" until the MCP server
itself was restarted: it is now started again and the lookup made once more. Stopped (SIGSTOP, a swap storm), it
held a lookup, and every MCP call behind it, 90 s before "Fail connecting": a read now fails within
EXECUTOR_MILVUS_TIMEOUT_S as one line naming the store, and answers again once the server does."""

import os
import signal
import time
from pathlib import Path

import anyio
import pytest
from conftest import copy_of, ingested_home, mcp_stdio, run_cli
from milvus_lite.server_manager import server_manager_instance
from test_mcp import PRECISE_QUESTION, level, server_env, text

from executor.core.errors import BackendError
from executor.stores.vectors import MilvusVectorStore

pytestmark = pytest.mark.timeout(300)
ANSWER = "troubleshooting/err-timeout.md"  # the document the precise question's lookup sends
TIMEOUT_S = 5  # EXECUTOR_MILVUS_TIMEOUT_S for the hung-server tests
BOUND_S = TIMEOUT_S + 5  # a read of a hung server fails within its timeout, plus the machine's own slowness
LONG_TIMEOUT_S = 20  # longer than gRPC's keepalive takes to drop a connection (10 + 5 s)


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    home = ingested_home(tmp_path_factory, "lite-recovery-home")
    run_cli(home, "graph", "stop")
    return home


@pytest.fixture
def home(pristine, tmp_path):
    home = copy_of(pristine, tmp_path)
    yield home
    run_cli(home, "graph", "stop")


def lite_servers(db: Path) -> dict[int, int]:
    """The Milvus Lite servers of `db` running now: pid -> parent pid (found by their command line, which names it)."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            args = (entry / "cmdline").read_bytes().split(b"\0")
            stat = (entry / "stat").read_text()
        except OSError:  # it ended meanwhile
            continue
        state, parent = stat.rpartition(")")[2].split()[:2]
        if state != "Z" and str(db).encode() in args and Path(args[0].decode()).name == "milvus":
            found[int(entry.name)] = int(parent)
    return found


def only_lite_server_of(db: Path, parent: int | None = None) -> int:
    servers = lite_servers(db)
    assert len(servers) == 1, servers
    (pid, its_parent), *_ = servers.items()
    if parent is not None:
        assert its_parent == parent, (its_parent, parent)
    return pid


def parent_named(pid: int, words: tuple[str, ...]) -> int:
    parent = int((Path("/proc") / str(pid) / "stat").read_text().rpartition(")")[2].split()[1])
    args = (Path("/proc") / str(parent) / "cmdline").read_bytes().decode()
    assert all(w in args for w in words), args
    return parent


async def lookup(client, session: str):
    return await client.call_tool("lookup_knowledge", {"query": PRECISE_QUESTION, "session": session})


def answers(result) -> bool:
    return level(result) == "relevance_level: PRECISE" and ANSWER in text(result)


# -- killed: started again -------------------------------------------------------------------------------------
def test_a_killed_lite_server_is_started_again_and_the_lookup_answers(home):
    db = home / "milvus.db"

    async def main():
        async with mcp_stdio(server_env(home), home, home / "stdio-stderr.log") as client:
            before = await lookup(client, "lite-killed-1")
            killed = only_lite_server_of(db)
            parent = parent_named(killed, ("executor.cli.main", "mcp"))  # the MCP server's own Lite server
            os.kill(killed, signal.SIGKILL)
            # at once: the lookup meets the server dying or dead (was "the knowledge base is unavailable (...
            # Fail connecting to server ...)" on every later lookup)
            after = await lookup(client, "lite-killed-2")
            servers = lite_servers(db)
            later = await lookup(client, "lite-killed-3")
            return before, killed, parent, after, servers, later

    before, killed, parent, after, servers, later = anyio.run(main)
    assert answers(before), text(before)[:500]
    assert not after.isError and answers(after), text(after)[:500]
    assert len(servers) == 1 and killed not in servers and list(servers.values()) == [parent], (killed, servers)
    assert answers(later), text(later)[:500]


# -- stopped: a bounded wait and one line, then answers again ----------------------------------------------------
def test_a_stopped_lite_server_fails_the_lookup_within_the_timeout_and_answers_once_continued(home):
    db = home / "milvus.db"
    env = {**server_env(home), "EXECUTOR_MILVUS_TIMEOUT_S": str(TIMEOUT_S)}

    async def main():
        async with mcp_stdio(env, home, home / "stdio-stderr.log") as client:
            before = await lookup(client, "lite-stopped-1")
            stopped = only_lite_server_of(db)
            os.kill(stopped, signal.SIGSTOP)
            try:
                started = time.monotonic()
                failed = await lookup(client, "lite-stopped-2")  # was 90 s, then "Fail connecting to server"
                took = time.monotonic() - started
                second = time.monotonic()
                failed_again = await lookup(client, "lite-stopped-3")  # the channel's keepalive gave up meanwhile
                took_again = time.monotonic() - second
            finally:
                os.kill(stopped, signal.SIGCONT)
            after = await lookup(client, "lite-stopped-4")
            return before, failed, took, failed_again, took_again, after, stopped, lite_servers(db)

    before, failed, took, failed_again, took_again, after, stopped, servers = anyio.run(main)
    assert answers(before), text(before)[:500]
    for result, seconds in ((failed, took), (failed_again, took_again)):
        said = text(result)
        assert result.isError, said[:500]
        assert seconds < BOUND_S, (seconds, said[:500])
        assert "knowledge base is unavailable" in said and str(db) in said, said[:500]
        assert f"no answer within EXECUTOR_MILVUS_TIMEOUT_S={TIMEOUT_S} s" in said, said[:500]
        assert "relevance_level" not in said and ANSWER not in said
    assert answers(after), text(after)[:500]
    assert list(servers) == [stopped]  # the same server answers: a hung one is not replaced


def test_reads_of_a_stopped_store_fail_within_its_timeout_the_lexical_check_too(home):
    """The lexical-capability check (the collection's description, read once per KB) was outside the read wrapper:
    a raw gRPC error. And gRPC's keepalive (a ping every 10 s, 5 s for its answer) dropped the connection of a
    read that waited longer: the next read waited for a reconnection, 30 s beyond its own timeout, then said "Fail
    connecting". Both reads here wait longer than that."""
    db = home / "milvus.db"
    store = MilvusVectorStore(str(db), timeout_s=LONG_TIMEOUT_S)
    expected = (
        f"cannot read knowledge base 'sample' from the Milvus Lite file {db}: "
        f"no answer within EXECUTOR_MILVUS_TIMEOUT_S={LONG_TIMEOUT_S} s"
    )
    try:
        chunks = store.count("sample")  # opens the store: its own Lite server, a child of this process
        stopped = only_lite_server_of(db, os.getpid())
        os.kill(stopped, signal.SIGSTOP)
        try:
            failures = []
            for read in (lambda: store.has_lexical("sample"), lambda: store.count("sample")):
                started = time.monotonic()
                with pytest.raises(BackendError) as failed:
                    read()
                failures.append((str(failed.value), time.monotonic() - started))
        finally:
            os.kill(stopped, signal.SIGCONT)
        for said, seconds in failures:
            assert said == expected and seconds < LONG_TIMEOUT_S + 5, (said, seconds)
        # answered once continued, by the same server
        assert store.has_lexical("sample") is True and store.count("sample") == chunks > 0
        assert list(lite_servers(db)) == [stopped]
    finally:
        store.close()
        server_manager_instance.release_server(str(db))  # this process's Lite server stops with its lock
