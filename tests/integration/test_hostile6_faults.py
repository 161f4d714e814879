"""Faults, third hostile pass (issue 30): damaged graph folders, and what a lookup, `ask` and MCP say about them.

A lookup whose graph expansion meets a damaged embedded FalkorDB folder still answers (exit 0, its documents are
right), but says so: one stderr line naming the folder and the repair, `graph_expansion.damaged` in JSON, the
message in the MCP text. Starting a server on a damaged folder is one "damaged" line naming the file, at once
(not a 15 s start-up timeout), and never writes over the files (redis starts empty without its manifest)."""

import json
import os
import time

import pytest
from conftest import copy_of, make_runtime, pristine_home, run_cli

THIN = "my service keeps restarting"  # REFERENCE under this threshold: the lookup is widened through the graph
WIDEN = {"EXECUTOR_REFERENCE_THRESHOLD": "0.15"}


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    return pristine_home(tmp_path_factory, "faults-home")


@pytest.fixture
def home(pristine, tmp_path):
    yield copy_of(pristine, tmp_path)
    run_cli(tmp_path / "home", "graph", "stop")


def aof_files(home):
    return home / "graph" / "appendonlydir"


def overwrite(path, at, data):
    with open(path, "r+b") as fh:
        fh.seek(at)
        fh.write(data)


def damage_the_increment(home):
    incr = next(aof_files(home).glob("*.incr.aof"))
    overwrite(incr, incr.stat().st_size // 2, os.urandom(4096))


def one_warning(stderr: str, folder) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("warning:") and "damaged" in lines[0] and str(folder) in lines[0], stderr
    assert "ingest --rebuild" in lines[0], stderr
    return lines[0]


def test_a_lookup_over_a_damaged_graph_answers_and_says_the_graph_is_damaged(home):
    damage_the_increment(home)
    r = run_cli(home, "lookup", THIN, "--json", **WIDEN)
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["relevance_level"] == "REFERENCE" and data["found"] and data["primary"], data
    assert data["graph_expansion"]["status"] == "unavailable"
    assert data["graph_expansion"]["damaged"] == str(home / "graph")
    one_warning(r.stderr, home / "graph")
    plain = run_cli(home, "lookup", THIN, "--session", "plain", **WIDEN)
    assert plain.returncode == 0 and "damaged" in plain.stdout, plain.stdout
    one_warning(plain.stderr, home / "graph")


def test_ask_over_a_damaged_graph_answers_and_warns_once(home):
    damage_the_increment(home)
    r = run_cli(home, "ask", THIN, "--json", **WIDEN)
    assert r.returncode == 0, r.stderr
    result = json.loads(r.stdout)
    assert result["answer"] and result["executed_lookups"] == 1
    assert [e.get("graph_damaged") for e in result["trace"]] == [str(home / "graph")]
    one_warning(r.stderr, home / "graph")


def test_mcp_lookup_over_a_damaged_graph_names_the_damage(home):
    from executor.agent.mcp_server import ExecutorMCP

    damage_the_increment(home)
    rt = make_runtime(home, reference_threshold=0.15)
    try:
        text, _ = ExecutorMCP(rt).call("lookup_knowledge", "mcp-damaged", {"query": THIN})
    finally:
        rt.close()
    assert "relevance_level: REFERENCE" in text
    assert "graph_expansion: unavailable" in text and f"the graph under {home / 'graph'} is damaged" in text


def test_a_stopped_graph_server_is_no_damage(home):
    r = run_cli(home, "lookup", THIN, "--json", **WIDEN)  # the server was stopped: started again, no warning
    assert r.returncode == 0 and r.stderr.strip() == "", r.stderr
    assert json.loads(r.stdout)["graph_expansion"]["status"] == "expanded"


def rdb_overwritten(home):
    overwrite(next(aof_files(home).glob("*.base.rdb")), 20, os.urandom(50))
    return next(aof_files(home).glob("*.base.rdb"))


def increment_removed(home):
    incr = next(aof_files(home).glob("*.incr.aof"))
    incr.unlink()
    return incr


def manifest_garbled(home):
    manifest = next(aof_files(home).glob("*.manifest"))
    manifest.write_text("garbage\n")
    return manifest


def manifest_emptied(home):
    manifest = next(aof_files(home).glob("*.manifest"))
    manifest.write_bytes(b"")
    return manifest


def rdb_truncated(home):
    rdb = next(aof_files(home).glob("*.base.rdb"))
    os.truncate(rdb, 60)
    return rdb


@pytest.mark.parametrize(
    "damage", [rdb_overwritten, rdb_truncated, increment_removed, manifest_garbled, manifest_emptied]
)
def test_a_damaged_graph_file_is_named_at_once(home, damage):
    damaged = damage(home)
    started = time.monotonic()
    r = run_cli(home, "graph", "neighbors", "ComfyUI")
    assert r.returncode == 1, (r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "damaged" in lines[0] and str(damaged) in lines[0], r.stderr
    assert "did not come up" not in r.stderr and time.monotonic() - started < 12


def test_append_only_files_without_their_manifest_are_not_written_over(home):
    manifest = next(aof_files(home).glob("*.manifest"))
    manifest.unlink()
    before = {p.name: p.read_bytes() for p in aof_files(home).iterdir()}
    r = run_cli(home, "graph", "neighbors", "ComfyUI")
    assert r.returncode == 1
    assert "damaged" in r.stderr and str(manifest) in r.stderr, r.stderr
    assert {p.name: p.read_bytes() for p in aof_files(home).iterdir()} == before
