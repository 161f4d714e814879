"""`langgraph dev` serves the executor graph from langgraph.json; one thread is driven through langgraph-sdk.

The server runs in a temporary directory (it writes its thread state to
`.langgraph_api/` in its working directory), never in the checkout.
"""

import json
import shutil
import subprocess
import urllib.request
from pathlib import Path

import pytest
from conftest import REPO, langgraph_dev, npm_package

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def studio(tmp_path_factory):
    with langgraph_dev(tmp_path_factory, "studio") as (url, _, workdir):
        yield url, workdir


def test_studio_reads_the_input_and_output_schemas(studio):
    url, _ = studio
    from langgraph_sdk import get_sync_client

    client = get_sync_client(url=url)
    (assistant,) = [a for a in client.assistants.search() if a["graph_id"] == "executor"]
    with urllib.request.urlopen(f"{url}/assistants/{assistant['assistant_id']}/schemas", timeout=30) as r:
        schemas = json.load(r)
    assert schemas["input_schema"] is not None and "messages" in schemas["input_schema"]["properties"]
    assert set(schemas["output_schema"]["properties"]) == {"messages", "answer", "citations", "trace"}
    assert {"kb", "lookup_budget", "guards"} <= set(schemas["context_schema"]["properties"])


def test_studio_runs_a_thread_as_a_session(studio):
    url, workdir = studio
    from langgraph_sdk import get_sync_client

    client = get_sync_client(url=url)
    assert "executor" in {a["graph_id"] for a in client.assistants.search()}
    thread = client.threads.create()
    ask = {"messages": [{"role": "human", "content": "ERR_TIMEOUT 是什么？"}]}
    first = client.runs.wait(thread["thread_id"], "executor", input=ask, context={"kb": "sample", "lookup_budget": 2})
    assert first["trace"][0]["relevance_level"] == "PRECISE"
    assert "troubleshooting/err-timeout.md" in first["answer"]
    again = client.runs.wait(thread["thread_id"], "executor", input=ask, context={"kb": "sample"})
    assert again["trace"][0]["dedup_reason"] == "doc_retrieved"  # the thread is the session
    assert not any(t["sent"] for t in again["trace"])  # nothing sent twice
    assert again["citations"][0]["doc_key"] == "troubleshooting/err-timeout.md"
    state = client.threads.get_state(thread["thread_id"])["values"]
    assert state["executed_lookups"] == 0
    assert [m["type"] for m in state["messages"]].count("human") == 2  # two turns, one thread
    assert (workdir / ".langgraph_api").is_dir() and not (REPO / ".langgraph_api").exists()


# -- what LangGraph's own clients send and do (issue 29) --------------------------------------------------------
ASK = "ERR_TIMEOUT 是什么？"
BLOCKS = {"messages": [{"role": "user", "content": [{"type": "text", "text": ASK}]}]}  # the Agent Chat UI's shape


def test_content_blocks_are_read_as_their_text(studio):
    url, _ = studio
    from langgraph_sdk import get_sync_client

    client = get_sync_client(url=url)
    thread = client.threads.create()
    out = client.runs.wait(thread["thread_id"], "executor", input=BLOCKS, context={"kb": "sample"})
    assert [(t["query"], t["relevance_level"]) for t in out["trace"]] == [("ERR_TIMEOUT 是什么", "PRECISE")]
    assert out["citations"][0]["doc_key"] == "troubleshooting/err-timeout.md"


def test_no_question_is_answered_as_such(studio):
    url, _ = studio
    from langgraph_sdk import get_sync_client

    client = get_sync_client(url=url)
    for payload in ({"messages": []}, {"messages": [{"role": "user", "content": "  "}]}):
        out = client.runs.wait(client.threads.create()["thread_id"], "executor", input=payload)
        assert out["answer"].startswith("No question was asked") and out["trace"] == []


def test_a_run_from_an_earlier_checkpoint_sees_that_checkpoints_memory(studio):
    """An edit in the chat UI or a fork in Studio: the client runs from a checkpoint id of the thread's history."""
    url, _ = studio
    from langgraph_sdk import get_sync_client

    client = get_sync_client(url=url)
    thread = client.threads.create()["thread_id"]
    client.runs.wait(thread, "executor", input=BLOCKS)
    after_first = client.threads.get_state(thread)["checkpoint"]["checkpoint_id"]
    again = client.runs.wait(thread, "executor", input=BLOCKS)
    assert again["trace"][0]["dedup_reason"] == "doc_retrieved"  # the thread's own memory, as before
    history = client.threads.get_history(thread, limit=100)
    first = history[-1]["checkpoint"]["checkpoint_id"]  # before the first question: nothing was sent yet
    edited = client.runs.wait(thread, "executor", input=BLOCKS, checkpoint_id=first)
    assert edited["trace"][0]["relevance_level"] == "PRECISE" and edited["trace"][0]["sent"]
    forked = client.runs.wait(thread, "executor", input=BLOCKS, checkpoint_id=after_first)
    assert forked["trace"][0]["dedup_reason"] == "doc_retrieved"  # that checkpoint had the document: no more, no less
    assert forked["citations"][0]["doc_key"] == "troubleshooting/err-timeout.md"


@pytest.mark.parametrize(
    "context, kind, message",
    [
        ({"kb": "nope"}, "InputError", "unknown knowledge base 'nope' (known: sample; home: "),
        (
            {"lookup_budget": "lots"},
            "InputError",
            "invalid run context: lookup_budget: Input should be a valid integer",
        ),
    ],
)
def test_an_error_reaches_the_client_with_its_kind_and_message(studio, context, kind, message):
    url, _ = studio
    from langgraph_sdk import get_sync_client

    client = get_sync_client(url=url)
    thread = client.threads.create()["thread_id"]
    out = client.runs.wait(thread, "executor", input=BLOCKS, context=context, raise_error=False)
    assert out["__error__"]["error"] == kind
    assert out["__error__"]["message"].startswith(message)


def test_studio_describes_the_context_form(studio):
    url, _ = studio
    from langgraph_sdk import get_sync_client

    client = get_sync_client(url=url)
    (assistant,) = [a for a in client.assistants.search() if a["graph_id"] == "executor"]
    with urllib.request.urlopen(f"{url}/assistants/{assistant['assistant_id']}/schemas", timeout=30) as r:
        fields = json.load(r)["context_schema"]["properties"]
    assert set(fields) == {"kb", "lookup_budget", "guards", "graph_expansion", "max_rounds"}
    assert all(f.get("description") for f in fields.values())


def test_the_npm_langgraph_sdk_client_sees_the_same(studio):
    """LangGraph's JavaScript SDK (what the Agent Chat UI is built on), from a small Node script."""
    url, _ = studio
    folder = npm_package("@langchain/langgraph-sdk@1")
    script = folder / "langgraph_sdk_check.mjs"  # beside its node_modules, so that the import resolves
    shutil.copy(Path(__file__).parent / "clients" / "langgraph_sdk_check.mjs", script)
    done = subprocess.run(["node", str(script), url], capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["first"] == [["ERR_TIMEOUT 是什么", "PRECISE"]]
    assert out["cited"][0] == "troubleshooting/err-timeout.md"
    assert out["again"] == ["doc_retrieved"]
    assert out["edited"][0][0] == "PRECISE" and out["edited"][0][1] > 0  # the edit's branch had sent nothing
    assert out["forked"] == ["doc_retrieved"]
    assert out["errors"]["kb"].startswith("InputError: unknown knowledge base 'nope' (known: sample; home: ")
    assert out["errors"]["budget"].startswith("InputError: invalid run context: lookup_budget: ")
