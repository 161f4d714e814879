"""The MCP server, driven by the `mcp` SDK's own client: in-process, over stdio (a subprocess) and over HTTP."""

import json
import os
import socket
import subprocess
import sys
import time
from contextlib import asynccontextmanager

import anyio
import pytest
from conftest import REPO, free_port, mcp_stdio, npm_package, run_cli, stop_process
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.memory import create_connected_server_and_client_session

from executor.agent.mcp_server import ExecutorMCP

pytestmark = pytest.mark.timeout(300)
PRECISE_QUESTION = "ERR_TIMEOUT 是什么？"


def text(result) -> str:
    return "\n".join(c.text for c in result.content)


def level(result) -> str:
    assert not result.isError, text(result)
    return text(result).splitlines()[0]


@pytest.fixture(scope="module")
def mcp_server(sample_rt):
    return ExecutorMCP(sample_rt, kb="sample")


def connected(server: ExecutorMCP):
    return create_connected_server_and_client_session(server.server)


async def lookup(client: ClientSession, query: str = PRECISE_QUESTION, **extra):
    return await client.call_tool("lookup_knowledge", {"query": query, **extra})


# -- in-process -------------------------------------------------------------------
def test_tools_are_listed_with_their_schemas(mcp_server):
    async def main():
        async with connected(mcp_server) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            prompts = [p.name for p in (await client.list_prompts()).prompts]
            rules = await client.read_resource("executor://retrieval-rules")
            return tools, prompts, rules

    tools, prompts, rules = anyio.run(main)
    assert set(tools) == {
        "lookup_knowledge",
        "query_knowledge_graph",
        "navigate_graph",
        "list_knowledge_bases",
        "feedback",
    }
    lookup_schema = tools["lookup_knowledge"].inputSchema
    assert lookup_schema["required"] == ["query"]
    assert {"query", "missing_dimension", "session"} <= set(lookup_schema["properties"])
    navigate_schema = tools["navigate_graph"].inputSchema["properties"]
    assert {"entity", "target", "relations", "hops"} <= set(navigate_schema)
    # optional arguments carry their own type (not anyOf [T, null]): hosts' CLIs and forms send them typed
    assert navigate_schema["hops"] == {**navigate_schema["hops"], "type": "integer", "minimum": 1, "maximum": 4}
    assert navigate_schema["relations"]["type"] == "array" and "default" not in navigate_schema["relations"]
    assert not any(
        {"type": "null"} in p.get("anyOf", []) for t in tools.values() for p in t.inputSchema["properties"].values()
    )
    kg_out = tools["query_knowledge_graph"].outputSchema  # structured results: graph_data as JSON
    assert {"results", "graph_data", "knowledge_base_ids"} <= set(kg_out["properties"])
    assert tools["lookup_knowledge"].outputSchema is None
    assert tools["query_knowledge_graph"].inputSchema["required"] == ["knowledge_base_ids", "query"]
    feedback_schema = tools["feedback"].inputSchema  # its session is the rated one, not the action-memory one
    assert feedback_schema["required"] == ["session", "verdict"]
    assert feedback_schema["properties"]["verdict"]["enum"] == ["good", "bad"]
    assert "rated" not in feedback_schema["properties"]["session"]["description"]
    assert "ask or chat" in feedback_schema["properties"]["session"]["description"]
    assert "retrieval_rules" in prompts
    assert "missing_dimension" in rules.contents[0].text and "PRECISE" in rules.contents[0].text


def test_a_repeated_lookup_is_deduped_in_its_mcp_session_and_not_in_another(mcp_server):
    async def main():
        async with connected(mcp_server) as first:
            a = await lookup(first)
            b = await lookup(first)
        async with connected(mcp_server) as second:
            c = await lookup(second)
        return a, b, c

    a, b, c = anyio.run(main)
    assert level(a) == "relevance_level: PRECISE"
    assert "troubleshooting/err-timeout.md" in text(a)
    assert level(b) == "relevance_level: DEDUPED" and "dedup_reason: doc_retrieved" in text(b)
    assert level(c) == "relevance_level: PRECISE"  # another MCP session has its own memory


def test_an_explicit_session_is_shared_across_connections_and_logged(mcp_server, sample_rt):
    async def main():
        async with connected(mcp_server) as first:
            a = await lookup(first, session="mcp-shared-1")
        async with connected(mcp_server) as second:
            b = await lookup(second, session="mcp-shared-1")
        return a, b

    a, b = anyio.run(main)
    assert level(a) == "relevance_level: PRECISE" and level(b) == "relevance_level: DEDUPED"
    rows = sample_rt.log.rows(session_id="mcp-shared-1", tool_name="lookup_knowledge")
    assert [r.relevance_level for r in rows] == ["PRECISE", "DEDUPED"]
    assert rows[0].retrieval_details["l1_top_similarity"] is not None  # raw scores go to the log, not the host


def test_a_broken_store_is_an_unavailable_tool_error_never_nothing_found(sample_rt):
    """issue 13's rule through the registry: a configuration or store failure is not the host's to fix and must
    not read as an empty result; a knowledge base the host named wrongly is its own error, said plainly."""
    from executor.agent.runtime import Runtime

    broken = Runtime(sample_rt.settings.model_copy(update={"reference_threshold": 0.9}))
    broken.__dict__["vectors"] = sample_rt.vectors  # one Lite client per file in this process

    async def main():
        async with connected(ExecutorMCP(broken, kb="sample")) as client:
            failed = await lookup(client)
            failed_kg = await client.call_tool(
                "query_knowledge_graph", {"knowledge_base_ids": ["sample"], "query": "Docker"}
            )
        async with connected(ExecutorMCP(sample_rt, kb="no_such_kb")) as client:
            gone = await lookup(client)
            wrong_id = await client.call_tool(
                "query_knowledge_graph", {"knowledge_base_ids": ["nope1"], "query": "Docker"}
            )
        return failed, failed_kg, gone, wrong_id

    failed, failed_kg, gone, wrong_id = anyio.run(main)
    for result in (failed, failed_kg, gone):
        assert result.isError and "\n" not in text(result)
        assert text(result).startswith("error: the knowledge base is unavailable"), text(result)
        assert "nothing on" not in text(result) and "relevance_level" not in text(result)
    assert "reference-threshold" in text(failed) and "reference-threshold" in text(failed_kg)
    assert "unknown knowledge base 'no_such_kb'" in text(gone)
    # no id the host asked for exists: an error the host sees as one (isError), naming the id, not an empty result
    assert wrong_id.isError and "unavailable" not in text(wrong_id)
    assert text(wrong_id).startswith("nope1: unknown knowledge base 'nope1'")


def test_list_knowledge_bases(mcp_server, sample_rt):
    async def main():
        async with connected(mcp_server) as client:
            return await client.call_tool("list_knowledge_bases", {"session": "mcp-kbs"}), await client.read_resource(
                "executor://knowledge-bases"
            )

    result, resource = anyio.run(main)
    assert not result.isError
    lines = text(result).splitlines()  # other tests add knowledge bases to the shared home
    assert "- sample: 42 documents, knowledge graph" in lines  # the fixture gives no description
    assert [line.split(":")[0] for line in lines] == [f"- {name}" for name in sample_rt.catalog.names()]
    listed = {k["name"]: k for k in json.loads(resource.contents[0].text)}
    assert listed["sample"] == {"name": "sample", "description": "", "documents": 42, "has_graph": True}
    assert set(listed) == set(sample_rt.catalog.names())
    assert [r.tool_name for r in sample_rt.log.rows(session_id="mcp-kbs")] == ["list_knowledge_bases"]


def answered_turn(rt, session: str, question: str) -> None:
    """One offline `executor ask` turn of `session`, saved in the home's checkpoints as the CLI saves it."""
    from executor.agent.checkpoints import open_checkpointer
    from executor.agent.planner import OfflinePlanner
    from executor.agent.session import run_turn
    from executor.nodes.state import Context

    with open_checkpointer(rt.settings) as saver:
        run_turn(rt.app(OfflinePlanner(), "offline", checkpointer=saver), question, session, Context(), "offline")


def test_feedback_on_an_answer_is_stored_with_what_the_answer_was_built_from(mcp_server, sample_rt):
    from executor.stores.feedback import FeedbackStore

    answered_turn(sample_rt, "mcp-rated", PRECISE_QUESTION)

    async def main():
        async with connected(mcp_server) as client:
            bad = await client.call_tool(
                "feedback",
                {"session": "mcp-rated", "turn": 1, "verdict": "bad", "comment": "wanted the retry settings"},
            )
            good = await client.call_tool("feedback", {"session": "mcp-rated", "verdict": "good"})  # turn: last
            wrong = await client.call_tool("feedback", {"session": "mcp-rated", "turn": 2, "verdict": "good"})
            nobody = await client.call_tool("feedback", {"session": "mcp-never-asked", "verdict": "bad"})
            meh = await client.call_tool("feedback", {"session": "mcp-rated", "verdict": "meh"})
            return bad, good, wrong, nobody, meh

    bad, good, wrong, nobody, meh = anyio.run(main)
    assert not bad.isError and text(bad).startswith(f"recorded bad for turn 1 of mcp-rated: {PRECISE_QUESTION}")
    assert not good.isError and text(good).startswith("recorded good for turn 1 of mcp-rated")
    rows = FeedbackStore(sample_rt.db).rows(session_id="mcp-rated")
    assert len(rows) == 1  # the second verdict on the same turn replaced the first
    row = rows[0]
    assert (row.verdict, row.query) == ("good", PRECISE_QUESTION)
    assert row.levels[0]["tool"] == "lookup_knowledge" and row.levels[0]["relevance_level"] == "PRECISE"
    assert "troubleshooting/err-timeout.md" in row.documents
    for result, message in (
        (wrong, "session 'mcp-rated' has no turn 2 (it has 1)"),
        (nobody, "session 'mcp-never-asked' has no answered turn"),
        (meh, "verdict: Input should be 'good' or 'bad'"),
    ):
        assert result.isError and message in text(result) and "\n" not in text(result), text(result)
    assert FeedbackStore(sample_rt.db).rows(session_id="mcp-never-asked") == []


def test_the_executor_llm_is_never_offered_the_feedback_tool(sample_rt):
    """Feedback is the host's (a person's) to give: it is not in the agent's tool list, so neither the system
    prompt nor the model's bound tools nor the guard know it (an LLM calling it is an unknown tool)."""
    assert "feedback" in sample_rt.tools.all and "feedback" not in sample_rt.tools.agent


@pytest.mark.parametrize(
    "tool, args, message",
    [
        ("lookup_knowledge", {}, "invalid arguments: query: Field required"),
        ("lookup_knowledge", {"query": "   "}, "query: must not be blank"),
        (
            "lookup_knowledge",
            {"query": "x" * 2001},
            "invalid arguments: query: String should have at most 2000 characters",
        ),
        (
            "lookup_knowledge",
            {"query": "x", "missing_dimension": "y" * 201},
            "missing_dimension: String should have at most 200",
        ),
        ("lookup_knowledge", {"query": "x", "session": "no spaces allowed"}, "session: a session id is 1-128 letters"),
        ("navigate_graph", {"entity": "ComfyUI", "relations": ["LIKES"]}, "unknown relation type 'LIKES'"),
        ("navigate_graph", {"entity": "ComfyUI", "hops": 9}, "hops: Input should be less than or equal to 4"),
        ("navigate_graph", {"entity": "ComfyUI", "hops": "two"}, "hops: Input should be a valid integer"),
        # pydantic's lax mode took true for 1 hop: a host's or LLM's boolean is no depth
        (
            "navigate_graph",
            {"entity": "ComfyUI", "hops": True},
            "hops: a number of relations (1-4) is expected, not true",
        ),
        (
            "query_knowledge_graph",
            {"knowledge_base_ids": [], "query": "Docker"},
            "knowledge_base_ids: List should have at least 1 item",
        ),
        (
            "query_knowledge_graph",
            {"knowledge_base_ids": [f"k{i}" for i in range(11)], "query": "Docker"},
            "knowledge_base_ids: List should have at most 10 items",
        ),
        ("no_such_tool", {}, "no tool named 'no_such_tool'"),
    ],
)
def test_a_bad_argument_is_a_one_line_tool_error_and_the_server_goes_on(mcp_server, tool, args, message):
    async def main():
        async with connected(mcp_server) as client:
            bad = await client.call_tool(tool, args)
            good = await client.call_tool(
                "navigate_graph", {"entity": "ComfyUI", "relations": ["depends_on"], "hops": 1}
            )
            return bad, good

    bad, good = anyio.run(main)
    assert bad.isError
    assert message in text(bad) and "\n" not in text(bad)
    assert "x" * 100 not in text(bad) and "y" * 100 not in text(bad)  # a long value is never echoed back
    assert not good.isError and "ComfyUI -DEPENDS_ON-> Docker" in text(good)


# -- as a process: stdio and HTTP ------------------------------------------------------
@pytest.fixture(scope="module")
def mcp_home(tmp_path_factory):
    home = tmp_path_factory.mktemp("mcp-home")
    assert run_cli(home, "ingest", "--json").returncode == 0
    yield home
    run_cli(home, "graph", "stop")


def server_env(home) -> dict:
    env = {**os.environ, "EXECUTOR_HOME": str(home), "LANGSMITH_TRACING": "false"}
    for key in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        env.pop(key, None)
    return env


def test_stdio_server_as_a_subprocess(mcp_home):
    async def one_connection():
        async with mcp_stdio(server_env(mcp_home), mcp_home, mcp_home / "stdio-stderr.log") as client:
            names = [t.name for t in (await client.list_tools()).tools]
            first, again = await lookup(client), await lookup(client)
            bad = await client.call_tool("lookup_knowledge", {"query": "x", "missing_dimension": "y" * 300})
            kbs = await client.call_tool("list_knowledge_bases", {})
            return names, first, again, bad, kbs

    names, first, again, bad, kbs = anyio.run(one_connection)
    assert "list_knowledge_bases" in names and "lookup_knowledge" in names
    assert level(first) == "relevance_level: PRECISE" and level(again) == "relevance_level: DEDUPED"
    assert bad.isError and "\n" not in text(bad)
    assert not kbs.isError and text(kbs).startswith("- sample: 42 documents")
    _, other, _, _, _ = anyio.run(one_connection)  # a new process and connection: a new session
    assert level(other) == "relevance_level: PRECISE"


def start_http_server(home, log):
    """`executor mcp --http` on a free port, once it listens; None if it exited (the port was taken meanwhile,
    or the previous test's server had not yet let go of the Milvus Lite file)."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "executor.cli.main", "mcp", "--http", "--host", "127.0.0.1", "--port", str(port)],
        env=server_env(home),
        cwd=str(home),
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return None, None
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc, f"http://127.0.0.1:{port}/mcp"
        except OSError:
            time.sleep(0.3)
    proc.kill()
    pytest.fail("executor mcp --http did not listen within 120 s")


@pytest.fixture
def http_server(mcp_home):
    path = mcp_home / "http-server.log"
    log = open(path, "w")
    for _ in range(3):
        proc, url = start_http_server(mcp_home, log)
        if proc is not None:
            break
        time.sleep(2)
    else:
        log.close()
        pytest.fail(f"executor mcp --http exited three times: {path.read_text().strip()[-500:]}")
    yield url
    stop_process(proc, log)


@asynccontextmanager
async def http_client(url: str):
    async with streamable_http_client(url) as (read, write, session_id), ClientSession(read, write) as client:
        await client.initialize()
        yield client, session_id()


def test_http_server_keeps_two_concurrent_clients_apart(http_server):
    results: dict[str, list] = {}

    async def client_run(name: str, query: str):
        async with http_client(http_server) as (client, session_id):
            results[name] = [session_id, await lookup(client, query), await lookup(client, query)]

    async def main():
        async with anyio.create_task_group() as tg:
            tg.start_soon(client_run, "a", PRECISE_QUESTION)
            tg.start_soon(client_run, "b", PRECISE_QUESTION)

    anyio.run(main)
    assert results["a"][0] and results["b"][0] and results["a"][0] != results["b"][0]
    for name in ("a", "b"):  # each client's first lookup is new to its session, its second a repeat
        _, first, again = results[name]
        assert level(first) == "relevance_level: PRECISE", name
        assert level(again) == "relevance_level: DEDUPED", name


def test_what_hosts_send_as_text_is_read_as_the_schema_says(mcp_server):
    """An integer or array argument sent as a string (a CLI's `--tool-arg hops=1`), and duplicate KB ids."""

    async def main():
        async with connected(mcp_server) as client:
            typed = await client.call_tool(
                "navigate_graph", {"entity": "ComfyUI", "relations": ["DEPENDS_ON"], "hops": 1}
            )
            as_text = await client.call_tool(
                "navigate_graph", {"entity": "ComfyUI", "relations": "DEPENDS_ON", "hops": "1"}
            )
            as_json = await client.call_tool(
                "navigate_graph", {"entity": "ComfyUI", "relations": '["DEPENDS_ON"]', "hops": "1"}
            )
            folded = await client.call_tool(
                "query_knowledge_graph", {"knowledge_base_ids": ["sample"] * 11, "query": "Docker"}
            )
            return typed, as_text, as_json, folded

    typed, as_text, as_json, folded = anyio.run(main)
    assert not typed.isError and "ComfyUI -DEPENDS_ON-> Docker" in text(typed)
    assert text(as_text) == text(typed) and text(as_json) == text(typed)
    assert not folded.isError and folded.structuredContent["knowledge_base_ids"] == ["sample"]


def test_query_knowledge_graph_has_one_entry_per_document_and_structured_graph_data(mcp_server):
    async def main():
        async with connected(mcp_server) as client:
            return await client.call_tool(
                "query_knowledge_graph", {"knowledge_base_ids": ["sample"], "query": "ComfyUI Docker 部署"}
            )

    result = anyio.run(main)
    assert not result.isError
    data = result.structuredContent
    keys = [h["doc_key"] for h in data["results"]]
    assert keys and len(keys) == len(set(keys))
    assert data["graph_data"]["edges"] and {"source", "target", "type"} <= set(data["graph_data"]["edges"][0])
    assert all(text(result).count(k) == 1 for k in keys)  # the text lists each document once too
    edges = len(data["graph_data"]["edges"])
    assert ("edges shown" in text(result)) == (edges > 20)


def test_server_info_error_codes_and_the_home_in_unknown_kb_errors(mcp_server, sample_rt):
    from mcp.shared.exceptions import McpError

    async def main():
        async with connected(mcp_server) as client:
            info = await client.initialize()
            errors = {}
            for name, call in (
                ("resource", client.read_resource("executor://nope")),
                ("prompt", client.get_prompt("nope")),
            ):
                try:
                    await call
                except McpError as exc:
                    errors[name] = exc.error
            unknown = await client.call_tool(
                "query_knowledge_graph", {"knowledge_base_ids": ["nope"], "query": "Docker"}
            )
            return info, errors, unknown

    info, errors, unknown = anyio.run(main)
    from importlib.metadata import version

    assert info.serverInfo.name == "executor" and info.serverInfo.version == version("executor")
    assert errors["resource"].code == -32002 and "executor://nope" in errors["resource"].message
    assert errors["prompt"].code == -32602
    assert f"home: {sample_rt.settings.home}" in text(unknown)


# -- the MCP Inspector's CLI, from npm (a host nobody here wrote) --------------------------------------------------
# 0.15.0 is the newest release that declares no Node >= 22 engine (what npm installs on Node 20); 2.12.0 is the
# latest, which runs on Node 20 as well
INSPECTORS = ["0.15.0", "2.12.0"]


def inspector(version: str, target: list[str], *args: str, cwd) -> dict:
    folder = npm_package(f"@modelcontextprotocol/inspector@{version}")
    done = subprocess.run(
        [str(folder / "node_modules" / ".bin" / "mcp-inspector"), "--cli", *target, *args],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=cwd,
    )
    assert "{" in done.stdout, (done.stdout + done.stderr)[-1500:]
    out = json.loads(done.stdout[done.stdout.index("{") :])
    # 2.x exits non-zero (5) when the tool's result is an error; anything else must succeed
    assert done.returncode == 0 or out.get("isError"), (done.stdout + done.stderr)[-1500:]
    return out


def stdio_target(home) -> list[str]:
    # the server runs this checkout's code, started by the Inspector in a folder that is not its home
    return [
        "-e",
        f"EXECUTOR_HOME={home}",
        "-e",
        f"PYTHONPATH={REPO}",
        "-e",
        "LANGSMITH_TRACING=false",
        sys.executable,
        "-m",
        "executor.cli.main",
        "mcp",
    ]


def inspector_session(version: str, target: list[str], cwd, session: str, transport: list[str] = ()):
    """What a person checks with the Inspector: the tools and their types, a call with optional arguments given
    as text, a bad argument, and a lookup repeated in one session (each CLI call is a connection of its own)."""
    listed = inspector(version, target, *transport, "--method", "tools/list", cwd=cwd)
    tools = {t["name"]: t for t in listed["tools"]}
    assert tools["navigate_graph"]["inputSchema"]["properties"]["hops"]["type"] == "integer"
    call = [*transport, "--method", "tools/call"]
    walked = inspector(
        version,
        target,
        *call,
        "--tool-name",
        "navigate_graph",
        "--tool-arg",
        "entity=ComfyUI",
        "hops=1",
        "relations=DEPENDS_ON",
        cwd=cwd,
    )
    walked_paths = walked["content"][0]["text"].splitlines()[2:-1]  # inside the fence: entity names are data
    assert not walked.get("isError") and walked_paths == ["ComfyUI -DEPENDS_ON-> Docker"]
    bad = inspector(
        version, target, *call, "--tool-name", "navigate_graph", "--tool-arg", "entity=ComfyUI", "hops=9", cwd=cwd
    )
    assert bad["isError"] and bad["content"][0]["text"] == (
        "invalid arguments: hops: Input should be less than or equal to 4"
    )
    runs = [
        inspector(
            version,
            target,
            *call,
            "--tool-name",
            "lookup_knowledge",
            "--tool-arg",
            f"query={PRECISE_QUESTION}",
            f"session={session}",
            cwd=cwd,
        )
        for _ in range(2)
    ]
    assert [r["content"][0]["text"].splitlines()[0] for r in runs] == [
        "relevance_level: PRECISE",
        "relevance_level: DEDUPED",
    ]


@pytest.mark.parametrize("version", INSPECTORS)
def test_the_inspector_cli_over_stdio(mcp_home, tmp_path, version):
    inspector_session(version, stdio_target(mcp_home), tmp_path, f"insp-stdio-{version}-{tmp_path.name}"[:120])


@pytest.mark.parametrize("version", INSPECTORS)
def test_the_inspector_cli_over_http(http_server, tmp_path, version):
    inspector_session(
        version,
        [http_server],
        tmp_path,
        f"insp-http-{version}-{tmp_path.name}"[:120],
        transport=["--transport", "http"],
    )


def test_the_home_does_not_depend_on_the_hosts_folder(tmp_path):
    """Without EXECUTOR_HOME the server reads ~/.executor wherever the host starts it, and says so."""
    env = {k: v for k, v in server_env(tmp_path).items() if k != "EXECUTOR_HOME"}
    env["HOME"] = str(tmp_path / "user")
    (tmp_path / "host-folder").mkdir()

    async def main():
        async with mcp_stdio(env, tmp_path / "host-folder", tmp_path / "stderr.log") as client:
            return await lookup(client)

    result = anyio.run(main)
    home = (tmp_path / "user" / ".executor").resolve()
    assert (
        result.isError
        and f"unknown knowledge base 'sample' (known: none yet; run `executor ingest`; home: {home})" in text(result)
    )
    assert f"executor MCP server on stdio (home {home}, knowledge base sample" in (tmp_path / "stderr.log").read_text()
    assert not (tmp_path / "host-folder" / ".executor").exists()
