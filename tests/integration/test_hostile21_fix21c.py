"""Hostile round twenty-one, findings 4, 5 and 6 (evals/review/hostile21-findings.md), mended: what an MCP host sees,
through the `mcp` SDK's own client (in process, and `executor mcp` over stdio as a subprocess).

One home of its own: `c1`, a few pages without a graph config, `g8`, created with a graph and never ingested, and `g1`,
a KB with a graph (so the home's graph store holds one). The test process's runtime holds the home's Milvus Lite file,
as another `executor mcp` would.
"""

import subprocess

import anyio
import pytest
from conftest import REPO, make_runtime, mcp_stdio, raw_mcp_stdio, write_pages
from mcp.shared.exceptions import McpError
from mcp.shared.memory import create_connected_server_and_client_session

from executor.agent.mcp_server import ExecutorMCP
from executor.retrieval.ingest import ingest

pytestmark = pytest.mark.timeout(300)

PAGES = {
    "canteen.md": "---\ntitle: Canteen\n---\n# Canteen\n\nThe canteen serves noodles on Monday and rice on Friday.\n",
    "parking.md": "---\ntitle: Parking\n---\n# Parking\n\nVisitors park on level two; staff on level three.\n",
}
GRAPH_PAGE = (
    "---\ntitle: Redis\nentities:\n  - {name: Redis, type: Software}\n  - {name: MySQL, type: Database}\nrelations:\n"
    "  - {source: Redis, type: RELATED_TO, target: MySQL, weight: 0.5}\n---\n# Redis\n\nRedis caches MySQL reads.\n"
)
HELD = "another process has it open"


@pytest.fixture(scope="module")
def home_rt(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("fix21c")
    rt = make_runtime(tmp / "home")
    ingest(rt, write_pages(tmp / "pages", PAGES), "c1", progress=False)
    rt.catalog.create("g8", extract_config={"entity_types": ["Software", "Database"]})
    graph = {"entity_types": ["Software", "Database"], "relation_types": ["RELATED_TO"]}
    ingest(rt, write_pages(tmp / "graph", {"redis.md": GRAPH_PAGE}), "g1", progress=False, extract_config=graph)
    yield rt
    rt.close()


def text(result) -> str:
    return "\n".join(c.text for c in result.content)


def calls(rt, kb: str, *requests: tuple[str, dict]):
    """Each (tool, arguments) called in one in-process MCP session on a server reading `kb`: the results."""
    server = ExecutorMCP(rt, kb=kb)

    async def main():
        async with create_connected_server_and_client_session(server.server) as client:
            return [await client.call_tool(name, args) for name, args in requests]

    return anyio.run(main)


def answered_turn(rt, session: str, question: str) -> None:
    """One offline turn on `c1`, saved in the home's checkpoints as `executor ask` saves it."""
    from executor.agent.checkpoints import open_checkpointer
    from executor.agent.planner import OfflinePlanner
    from executor.agent.session import run_turn
    from executor.nodes.state import Context

    with open_checkpointer(rt.settings) as saver:
        app = rt.app(OfflinePlanner(), "offline", checkpointer=saver)
        run_turn(app, question, session, Context(kb="c1"), "offline")


# -- finding 4 --------------------------------------------------------------------------------------------------
def test_feedback_refuses_an_argument_it_does_not_take_by_name(home_rt):
    """`note` (the CLI's --note, the stored column) was dropped and the verdict recorded without it; `extra` too."""
    from executor.stores.feedback import FeedbackStore

    answered_turn(home_rt, "fb1", "What does the canteen serve on Monday?")
    note, extra, commented = calls(
        home_rt,
        "c1",
        ("feedback", {"session": "fb1", "verdict": "bad", "note": "the answer named the wrong day"}),
        ("feedback", {"session": "fb1", "verdict": "bad", "extra": "zzz"}),
        ("feedback", {"session": "fb1", "verdict": "bad", "comment": "the answer named the wrong day"}),
    )
    takes = "(it takes session, turn, verdict, comment)"
    assert note.isError and text(note) == f"invalid arguments: note: not an argument of feedback {takes}"
    assert extra.isError and text(extra) == f"invalid arguments: extra: not an argument of feedback {takes}"
    assert not commented.isError, text(commented)
    rows = FeedbackStore(home_rt.db).rows(session_id="fb1")
    assert [(r.verdict, r.note) for r in rows] == [("bad", "the answer named the wrong day")]


def test_the_feedback_schema_says_it_takes_no_other_argument(home_rt):
    server = ExecutorMCP(home_rt, kb="c1")

    async def main():
        async with create_connected_server_and_client_session(server.server) as client:
            return {t.name: t.inputSchema for t in (await client.list_tools()).tools}

    schemas = anyio.run(main)
    assert schemas["feedback"].get("additionalProperties") is False
    assert schemas["lookup_knowledge"].get("additionalProperties") is False  # as every other tool's


# -- finding 5 --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kb, said",
    [
        (
            "c1",
            "KB 'c1' has no graph; navigate_graph needs a KB created with --entities "
            "(`executor kb list` says which have one)",
        ),
        ("g8", "knowledge base 'g8' has no documents yet: run `executor ingest FOLDER --kb g8`"),
    ],
)
def test_navigate_graph_on_a_kb_without_a_graph_says_so(home_rt, kb, said):
    """It said "no entity 'canteen' in the graph of knowledge base 'c1'", of a graph that does not exist; the CLI's
    `graph neighbors` says what these say."""
    around, between = calls(
        home_rt,
        kb,
        ("navigate_graph", {"entity": "canteen"}),
        ("navigate_graph", {"entity": "Redis", "target": "MySQL"}),
    )
    for result in (around, between):
        assert result.isError and text(result) == said, text(result)


# -- finding 6 --------------------------------------------------------------------------------------------------
def server_env(home) -> dict:
    import os

    # PYTHONPATH: this checkout's code, wherever the host starts the server (the venv may point at another checkout)
    env = {**os.environ, "EXECUTOR_HOME": str(home), "LANGSMITH_TRACING": "false", "PYTHONPATH": str(REPO)}
    for key in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        env.pop(key, None)
    return env


def _mcp_errors(exc: BaseException) -> list[McpError]:
    if isinstance(exc, McpError):
        return [exc]
    return [found for inner in getattr(exc, "exceptions", ()) for found in _mcp_errors(inner)]


def test_a_stdio_server_on_a_held_home_fails_at_start(home_rt, tmp_path):
    """It answered `initialize` and failed every call ("the knowledge base is unavailable"), so a host showed a
    server that runs; `--http` in the same state exits 1 at start. Now the host's `initialize` finds the server gone,
    and its stderr (which hosts show) holds the one line."""
    _ = home_rt.vectors.has("c1")  # this process holds the Lite file, as another server would
    log = tmp_path / "stderr.log"

    async def main():
        async with mcp_stdio(server_env(home_rt.settings.home), tmp_path, log) as client:
            return await client.call_tool("lookup_knowledge", {"query": "canteen"})

    with pytest.raises(BaseException) as raised:
        anyio.run(main)
    assert [e.error.message for e in _mcp_errors(raised.value)] == ["Connection closed"], raised.value
    lines = log.read_text().strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: cannot open the Milvus Lite file") and HELD in lines[0], (
        lines
    )


def test_a_stdio_server_on_a_held_home_exits_1_with_one_line(home_rt):
    _ = home_rt.vectors.has("c1")
    proc = raw_mcp_stdio(home_rt.settings.home)
    try:
        out, err = proc.communicate(b"", timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise
    lines = err.decode().strip().splitlines()
    assert proc.returncode == 1, (proc.returncode, lines)
    assert len(lines) == 1 and lines[0].startswith("error: cannot open the Milvus Lite file") and HELD in lines[0], (
        lines
    )
    assert out == b""
