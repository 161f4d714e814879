"""The `executor` command as a person runs it: separate processes, one shared EXECUTOR_HOME."""

import json
import re
import subprocess
import sys
import time

import pytest
from conftest import REPO, run_cli


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    home = tmp_path_factory.mktemp("cli-home")
    r = run_cli(home, "ingest", "--json")
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["kb"] == "sample" and report["documents"] >= 40 and report["chunks"] > report["documents"]
    return home


def lookup(home, *args, **env):
    r = run_cli(home, "lookup", *args, "--json", **env)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_lookup_json_has_the_promised_fields(home):
    data = lookup(home, "ERR_TIMEOUT 是什么？")
    for key in (
        "found",
        "relevance_level",
        "completeness_hint",
        "dedup_reason",
        "retrieved_domains_this_session",
        "primary",
        "supplement",
    ):
        assert key in data
    assert data["relevance_level"] == "PRECISE"
    assert set(data["primary"][0]) >= {"doc_key", "title", "domain", "content"}
    # seed 000's message: one line for a person, in the question's language
    assert data["message"].startswith(f"精确命中：《{data['primary'][0]['title']}》") and "\n" not in data["message"]


def test_session_memory_survives_a_restarted_process(home):
    first = lookup(home, "数据库连接池怎么配置？", "--session", "restart-1")
    again = lookup(home, "数据库连接池怎么配置？", "--session", "restart-1")  # a new process
    assert first["relevance_level"] in ("PRECISE", "HIGHLY_RELEVANT")
    assert (again["relevance_level"], again["dedup_reason"]) == ("DEDUPED", "doc_retrieved")
    shown = run_cli(home, "session", "show", "restart-1", "--json")
    assert json.loads(shown.stdout)["documents_by_domain"]["infrastructure"]


def test_text_output_is_what_the_llm_sees(home):
    r = run_cli(home, "lookup", "How do I roll back a Helm release?")
    assert r.returncode == 0
    assert "relevance_level:" in r.stdout and "completeness_hint:" in r.stdout
    assert "distance" not in r.stdout and "similarity" not in r.stdout


@pytest.mark.parametrize(
    "args, message",
    [
        (["lookup", ""], "the query is empty"),
        (["lookup", "   "], "the query is empty"),
        (["lookup", "x" * 100_000], "100,000 characters"),
        (["lookup", "bad\x1bquery"], "control characters"),
        (["lookup", "anything", "--kb", "nope"], "unknown knowledge base 'nope'"),
        (["lookup", "anything", "--kb", "x') or 1==1 --"], "invalid knowledge base name"),
        (["lookup", "anything", "--session", "a b"], "session id"),
        (["ingest", "/definitely/not/here"], "no such folder"),
        (
            ["graph", "neighbors", "ComfyUI", "--relations", "DEPENDS_ON]-() DETACH DELETE n //"],
            "unknown relation type",
        ),
        (["graph", "neighbors", "ComfyUI", "--hops", "9"], "hops must be a whole number from 1 to 4"),
        (["graph", "neighbors", "NoSuchThing"], "no entity 'NoSuchThing'"),
        (["graph", "path", "ComfyUI", "comfyui"], "same entity"),
        (["graph", "neighbors", "ComfyUI", "--kb", "nope"], "unknown knowledge base 'nope'"),
    ],
)
def test_bad_input_is_one_line_on_stderr_with_exit_2(home, args, message):
    """Input the command rejects is a usage error: exit 2."""
    r = run_cli(home, *args)
    assert r.returncode == 2
    assert r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0]


HOLDERS = {
    # an executor process: our own lock, then Lite's
    "executor": "from executor.stores.vectors import MilvusVectorStore; MilvusVectorStore(sys.argv[1]).client",
    # a bare pymilvus that knows nothing of our lock: Lite's own lock only
    "pymilvus": "from pymilvus import MilvusClient; MilvusClient(sys.argv[1])",
}


@pytest.mark.parametrize("holder_kind", sorted(HOLDERS))
def test_a_milvus_file_held_by_another_process_stays_held_against_two_more(home, holder_kind):
    """Three contenders: the holder keeps the file while two more processes try in turn. milvus-lite's
    own lock alone let the third in (the second unlinked the lock file it failed to take)."""
    holder = subprocess.Popen(
        [
            sys.executable,
            "-W",
            "ignore",
            "-c",
            f"import sys,time; {HOLDERS[holder_kind]}; print('ready', flush=True); time.sleep(120)",
            str(home / "milvus.db"),
        ],
        stdout=subprocess.PIPE,
        text=True,
        cwd=str(REPO),
    )
    try:
        assert holder.stdout.readline().strip() == "ready"
        for contender in ("second", "third"):
            started = time.monotonic()
            r = run_cli(home, "lookup", "ERR_TIMEOUT", "--session", f"lock-{holder_kind}-{contender}")
            assert r.returncode == 1, (contender, r.stdout)  # a runtime failure, not a usage error
            lines = r.stderr.strip().splitlines()
            assert len(lines) == 1 and "another process has it open" in lines[0], (contender, r.stderr)
            assert time.monotonic() - started < 60  # fails fast, no retry storm
        assert holder.poll() is None
    finally:
        holder.kill()
        holder.wait()
    assert lookup(home, "ERR_TIMEOUT")["relevance_level"] == "PRECISE"  # and works once it is free


def test_graph_neighbors_and_path_as_json(home):
    r = run_cli(home, "graph", "neighbors", "ComfyUI", "--hops", "2", "--json")
    assert r.returncode == 0, r.stderr
    paths = json.loads(r.stdout)["paths"]
    first = paths[0]
    assert [n["name"] for n in first["nodes"]] == ["ComfyUI", "Docker"] and first["score"] == pytest.approx(0.9)
    assert [p["score"] for p in paths] == sorted((p["score"] for p in paths), reverse=True)

    r = run_cli(home, "graph", "path", "ComfyUI", "Kubernetes", "--json")
    found = json.loads(r.stdout)
    assert found["reachable"] is True
    assert {"nodes", "edges", "score"} <= set(found["paths"][0])
    assert found["paths"][0]["nodes"][0]["name"] == "ComfyUI" and found["paths"][0]["nodes"][-1]["name"] == "Kubernetes"

    only = ["--relations", "DEPENDS_ON,RELATED_TO"]
    r = run_cli(home, "graph", "path", "ComfyUI", "Kubernetes", "--hops", "1", *only, "--json")
    # not within 1 hop, but both sides reach Docker: the nearest reachable pair says how close they are
    assert json.loads(r.stdout) == {
        "source": "ComfyUI",
        "target": "Kubernetes",
        "reachable": False,
        "paths": [],
        "nearest": {
            "source_side": "Docker",
            "target_side": "Docker",
            "hops_each": 1,
            "source_hops": 1,
            "target_hops": 1,
            "gap": 0,
        },
    }
    r = run_cli(home, "graph", "path", "ComfyUI", "Kubernetes", "--hops", "1", *only)
    assert "not connected within 1 hops. Nearest: both reach Docker" in r.stdout
    r = run_cli(home, "graph", "path", "ComfyUI", "Kubernetes", "--hops", "2", *only, "--json")
    assert [e["type"] for e in json.loads(r.stdout)["paths"][0]["edges"]] == ["DEPENDS_ON", "RELATED_TO"]


def test_graph_show_writes_a_self_contained_page(home, tmp_path):
    page = tmp_path / "comfy.html"
    r = run_cli(home, "graph", "show", "ComfyUI", "--html", str(page))
    assert r.returncode == 0, r.stderr
    text = page.read_text(encoding="utf-8")
    assert "new vis.Network" in text and "ComfyUI" in text and "DEPENDS_ON 0.90" in text and "Docker" in text
    assert not re.search(r"<script[^>]+src=|<link[^>]+href=", text)  # nothing fetched from the network


def test_lookup_shows_graph_expansion_after_a_reference_result(home):
    data = lookup(home, "my service keeps restarting", "--session", "cli-expand", EXECUTOR_REFERENCE_THRESHOLD="0.15")
    assert data["relevance_level"] == "REFERENCE"
    assert data["graph_expansion"]["status"] == "expanded" and data["graph_expansion"]["documents"]
    plain = lookup(
        home,
        "my service keeps restarting",
        "--session",
        "cli-expand-2",
        "--no-graph",
        EXECUTOR_REFERENCE_THRESHOLD="0.15",
    )
    assert plain["graph_expansion"] is None


def test_graph_stop_and_start_on_demand(home):
    r = run_cli(home, "graph", "stop")
    assert r.returncode == 0 and "stopped" in r.stdout
    r = run_cli(home, "graph", "neighbors", "ComfyUI", "--hops", "1", "--json")  # starts it again, data intact
    assert r.returncode == 0 and json.loads(r.stdout)["paths"]


def ask(home, *args, **env):
    r = run_cli(home, "ask", *args, "--json", **env)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_ask_json_offline(home):
    data = ask(home, "ERR_TIMEOUT 是什么？", "--session", "ask-1")
    assert {"answer", "citations", "trace", "executed_lookups", "session", "mode"} <= set(data)
    assert data["mode"] == "offline" and data["session"] == "ask-1"
    assert data["citations"][0]["doc_key"] == "troubleshooting/err-timeout.md"
    assert data["trace"][0] == {
        **data["trace"][0],
        "tool": "lookup_knowledge",
        "relevance_level": "PRECISE",
        "blocked": False,
    }


def test_a_session_resumes_after_the_process_restarts(home):
    first = ask(home, "数据库连接池怎么配置？", "--session", "resume-1")
    again = ask(home, "数据库连接池怎么配置？", "--session", "resume-1")  # a new process, same session
    assert first["executed_lookups"] == 1 and again["executed_lookups"] == 0
    assert again["trace"][0]["dedup_reason"] == "doc_retrieved"
    assert again["citations"][0]["doc_key"] == first["citations"][0]["doc_key"]
    import sqlite3

    with sqlite3.connect(home / "checkpoints.sqlite") as db:
        threads = {row[0] for row in db.execute("SELECT DISTINCT thread_id FROM checkpoints")}
    assert "resume-1" in threads


def test_chat_shows_tool_calls_live_and_answers(home):
    r = subprocess.run(
        [sys.executable, "-m", "executor.cli.main", "chat", "--session", "chat-1"],
        input="ERR_TIMEOUT 是什么？\nERR_TIMEOUT 是什么意思？\n\n",
        capture_output=True,
        text=True,
        timeout=180,
        env={**__import__("os").environ, "EXECUTOR_HOME": str(home)},
        cwd=__import__("conftest").REPO,
    )
    assert r.returncode == 0, r.stderr
    out = " ".join(r.stdout.split())  # rich wraps long lines
    assert "→ looked up “ERR_TIMEOUT 是什么”: one document answers it exactly [PRECISE]" in out
    # the second turn asks the same again: blocked (its one document was sent), and answered from the session
    assert (
        "⊘ lookup “ERR_TIMEOUT 是什么意思” skipped: its documents were already sent in this session [doc_retrieved]"
    ) in out
    assert out.count("sources:") == 2 and "troubleshooting/err-timeout.md" in out
    assert out.count("you> ") == 4  # an empty line does not quit: end of input does


def test_ask_rejects_bad_input(home):
    for args, message in [
        (["ask", ""], "the query is empty"),
        (["ask", "x", "--kb", "nope"], "unknown knowledge base"),
        (["ask", "x", "--session", "a b"], "session id"),
    ]:
        r = run_cli(home, *args)
        assert r.returncode == 2 and message in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_eval_command_reports_and_fails_on_a_broken_expectation(home, tmp_path):
    scenario = tmp_path / "one.yaml"
    scenario.write_text(
        "id: impossible\nlang: en\nquestion: What does ERR_TIMEOUT mean?\n"
        "proposals:\n  - lookup_knowledge: {query: ERR_TIMEOUT}\nexpect: {max_executed_lookups: 0}\n",
        encoding="utf-8",
    )
    r = run_cli(
        home,
        "eval",
        str(scenario),
        "--report-json",
        str(tmp_path / "r.json"),
        "--markdown",
        str(tmp_path / "r.md"),
        "--plot",
        str(tmp_path / "r.png"),
    )
    assert r.returncode == 1, r.stdout + r.stderr
    assert "FAIL impossible: 1 lookups ran, at most 0 expected" in r.stdout
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["aggregate"]["scenarios_failed"] == 1 and data["baseline_aggregate"]["scenarios"] == 1
    assert "| metric | guards off | guards on |" in (tmp_path / "r.md").read_text()
    assert (tmp_path / "r.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    r = run_cli(home, "eval", str(tmp_path / "missing.yaml"))
    assert r.returncode == 2 and "no such file" in r.stderr


def test_kb_lifecycle_and_kg(home, tmp_path):
    from doc_fixtures import write_kb

    r = run_cli(
        home,
        "kb",
        "create",
        "runbooks",
        "--description",
        "ops runbooks",
        "--entities",
        "Software,Port",
        "--relations",
        "DEPENDS_ON,RELATED_TO",
        "--json",
    )
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["extract_config"] == {
        "entity_types": ["Software", "Port"],
        "relation_types": ["DEPENDS_ON", "RELATED_TO"],
    }
    for args, message in [
        (["kb", "create", "runbooks"], "already exists"),
        (["kb", "create", "x2", "--entities", "A", "--relations", "OWNS"], "unknown relation type"),
        (["kb", "create", "Bad-Name"], "invalid knowledge base name"),
    ]:
        r = run_cli(home, *args)
        assert r.returncode == 2 and message in r.stderr, r.stderr
    folder = write_kb(
        tmp_path / "runbooks",
        {
            "web.md": "---\nrelations: [{source: WebApp, type: DEPENDS_ON, target: Redis, weight: 0.9}]\n---\n"
            "# WebApp\nWebApp listens on port 8080 and keeps sessions in Redis.",
        },
    )
    assert run_cli(home, "ingest", str(folder), "--kb", "runbooks").returncode == 0
    shown = json.loads(run_cli(home, "kb", "show", "runbooks", "--json").stdout)
    assert shown["documents"] == 1 and shown["has_graph_config"] and shown["graph"]["relations"] >= 1
    listed = {k["name"]: k for k in json.loads(run_cli(home, "kb", "list", "--json").stdout)}
    assert {"sample", "runbooks"} <= set(listed) and listed["runbooks"]["description"] == "ops runbooks"

    page = tmp_path / "kg.html"
    # a generous per-KB time limit: a busy CI machine must not turn a slow first search into an error here
    r = run_cli(
        home,
        "kg",
        "Does WebApp depend on Redis?",
        "--kb",
        "runbooks,sample",
        "--json",
        "--html",
        str(page),
        EXECUTOR_KG_TIMEOUT_S="180",
    )
    data = json.loads(r.stdout)
    assert {
        "knowledge_base_ids",
        "results",
        "count",
        "kb_counts",
        "graph_configs",
        "graph_data",
        "has_graph_config",
        "graph_config_by_kb",
        "errors",
        "display_type",
    } <= set(data)
    assert data["display_type"] == "graph_query_results" and isinstance(data["has_graph_config"], bool)
    assert ("WebApp", "DEPENDS_ON", "Redis") in {
        (e["source"], e["type"], e["target"]) for e in data["graph_data"]["edges"]
    }
    assert data["errors"] == [], data["errors"]
    # a name typed wrong among them is bad input, before any query (the MCP tool keeps partial results)
    ghost = run_cli(home, "kg", "Does WebApp depend on Redis?", "--kb", "runbooks,sample,ghost", "--json")
    assert ghost.returncode == 2 and "unknown knowledge base 'ghost'" in ghost.stderr, ghost.stderr
    assert "new vis.Network" in page.read_text() and "WebApp" in page.read_text()

    assert run_cli(home, "kb", "drop", "runbooks", "--yes").returncode == 0
    r = run_cli(home, "kb", "show", "runbooks")
    assert r.returncode == 2 and "unknown knowledge base 'runbooks'" in r.stderr
    after = run_cli(home, "kg", "WebApp", "--kb", "sample,runbooks", "--json")
    assert after.returncode == 2 and "unknown knowledge base 'runbooks'" in after.stderr
    # its graph went with it: recreating the name starts from an empty graph
    run_cli(home, "kb", "create", "runbooks", "--entities", "Software")
    r = run_cli(home, "graph", "neighbors", "WebApp", "--kb", "runbooks")
    # (created, not ingested: no graph is served at all, hostile20 finding 5)
    assert r.returncode == 2 and "has no documents yet" in r.stderr, r.stderr
    other = write_kb(tmp_path / "other", {"cache.md": "# Cache\nThe cache keeps hot keys for 60 seconds."})
    assert run_cli(home, "ingest", str(other), "--kb", "runbooks").returncode == 0
    r = run_cli(home, "graph", "neighbors", "WebApp", "--kb", "runbooks")
    assert r.returncode == 2 and "no entity 'WebApp'" in r.stderr, r.stderr
    run_cli(home, "kb", "drop", "runbooks", "--yes")


def test_ask_with_an_openai_compatible_server(home):
    from fake_openai import FakeOpenAI

    answer = "ERR_RATE_LIMITED means the client sent too many requests. [api/rate-limiting.md]"
    with FakeOpenAI(
        [{"tool_calls": [("lookup_knowledge", {"query": "ERR_RATE_LIMITED"})]}, {"content": answer}]
    ) as server:
        r = run_cli(
            home,
            "ask",
            "What does ERR_RATE_LIMITED mean?",
            OPENAI_BASE_URL=server.base_url,
            OPENAI_API_KEY="test",
            EXECUTOR_MODEL="fake-model",
        )
    assert r.returncode == 0, r.stderr
    assert "→ looked up “ERR_RATE_LIMITED”: one document answers it exactly [PRECISE]" in " ".join(r.stdout.split())
    assert answer in r.stdout and "· llm ·" in r.stdout
    assert server.requests[0]["model"] == "fake-model"


def test_feedback_on_answers_becomes_calibration_labels(home):
    from executor.retrieval.calibration import Label
    from executor.stores.database import Database
    from executor.stores.feedback import FeedbackStore, labels_from_feedback

    s = "fb-cli"
    for question in ("数据库连接池怎么配置？", "my service keeps restarting"):
        assert run_cli(home, "ask", question, "--session", s).returncode == 0
    good = json.loads(run_cli(home, "feedback", s, "1", "good", "--json").stdout)
    assert good["query"] == "数据库连接池怎么配置？" and good["kb"] == "sample"
    assert good["cited"] and set(good["cited"]) <= set(good["documents"])
    assert good["levels"][0]["tool"] == "lookup_knowledge" and good["levels"][0]["relevance_level"] in (
        "PRECISE",
        "HIGHLY_RELEVANT",
    )
    bad = json.loads(run_cli(home, "feedback", s, "last", "bad", "--note", "not the restart loop", "--json").stdout)
    assert (bad["turn"], bad["note"]) == (2, "not the restart loop") and bad["documents"]
    # a second verdict on a turn replaces the first
    assert run_cli(home, "feedback", s, "2", "bad", "--note", "wrong runbook").returncode == 0
    for args, message in [
        ((s, "3", "good"), "has no turn 3 (it has 2)"),
        ((s, "1", "meh"), "'good' or 'bad'"),
        (("nobody", "1", "good"), "has no answered turn"),
        ((s, "0", "good"), "a turn is a number"),
    ]:
        r = run_cli(home, "feedback", *args)
        assert r.returncode == 2 and message in r.stderr and r.stderr.count("\n") == 1, r.stderr

    rows = FeedbackStore(Database(f"sqlite:///{home / 'executor.db'}")).rows(session_id=s)
    assert [(r.turn, r.verdict, r.note) for r in rows] == [(1, "good", None), (2, "bad", "wrong runbook")]
    labels = labels_from_feedback(rows)
    assert labels == [
        {"query": "数据库连接池怎么配置？", "relevant": good["cited"], "not_relevant": []},
        {"query": "my service keeps restarting", "relevant": [], "not_relevant": bad["documents"]},
    ]
    assert [Label.model_validate(label).relevant for label in labels] == [good["cited"], []]  # the label files' shape
