"""The `executor` command as a person runs it: separate processes, one shared EXECUTOR_HOME."""

import json
import subprocess
import sys
import time

import pytest

from conftest import run_cli


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    home = tmp_path_factory.mktemp("cli-home")
    r = run_cli(home, "ingest", "--json")
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["kb"] == "sample" and report["documents"] >= 40 and report["chunks"] > report["documents"]
    return home


def lookup(home, *args):
    r = run_cli(home, "lookup", *args, "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_lookup_json_has_the_promised_fields(home):
    data = lookup(home, "ERR_TIMEOUT 是什么？")
    for key in ("found", "relevance_level", "completeness_hint", "dedup_reason", "retrieved_domains_this_session",
                "primary", "supplement"):
        assert key in data
    assert data["relevance_level"] == "PRECISE"
    assert set(data["primary"][0]) >= {"doc_key", "title", "domain", "content"}


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
    ],
)
def test_bad_input_is_one_line_on_stderr_with_exit_2(home, args, message):
    r = run_cli(home, *args)
    assert r.returncode == 2
    assert r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0]


def test_a_milvus_file_held_by_another_process_is_a_clear_error(home):
    holder = subprocess.Popen(
        [sys.executable, "-W", "ignore", "-c",
         "import sys,time; from pymilvus import MilvusClient; MilvusClient(sys.argv[1]); print('ready', flush=True); time.sleep(60)",
         str(home / "milvus.db")],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "ready"
        started = time.monotonic()
        r = run_cli(home, "lookup", "ERR_TIMEOUT")
        assert r.returncode == 2
        assert "another process has it open" in r.stderr and len(r.stderr.strip().splitlines()) == 1
        assert time.monotonic() - started < 60  # fails fast, no retry storm
    finally:
        holder.kill()
        holder.wait()
    assert lookup(home, "ERR_TIMEOUT")["relevance_level"] == "PRECISE"  # and works once it is free
