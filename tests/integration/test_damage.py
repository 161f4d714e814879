"""Damaged stores and interrupted rebuilds (issue 30): a damaged file is called damaged, with its path and exit 1,
never "nothing found" or "unknown knowledge base"; a rebuild killed at any stage leaves the old KB answering."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from conftest import REPO, copy_of, pristine_home, run_cli

NOTHING = ("知识库中没有", "nothing relevant", "nothing found", "relevance_level: NONE")


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    return pristine_home(tmp_path_factory, "damage-home")


@pytest.fixture
def home(pristine, tmp_path):
    return copy_of(pristine, tmp_path)


def overwrite_middle(path, size=64 * 1024):
    n = path.stat().st_size
    with open(path, "r+b") as fh:
        fh.seek(max(0, n // 2 - size // 2))
        fh.write(os.urandom(min(size, n)))


def assert_damaged(r, path):
    assert r.returncode == 1, (r.returncode, r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "damaged" in lines[0] and str(path) in lines[0], r.stderr
    assert not any(n in r.stdout for n in NOTHING), r.stdout


def test_random_bytes_in_the_middle_of_the_milvus_file_are_reported_as_damage(home):
    overwrite_middle(home / "milvus.db")
    assert_damaged(run_cli(home, "lookup", "ERR_TIMEOUT"), home / "milvus.db")


@pytest.mark.parametrize("damage", ["truncated", "overwritten", "empty"])
def test_a_damaged_application_database_is_not_an_unknown_kb(home, damage):
    db = home / "executor.db"
    if damage == "truncated":
        os.truncate(db, db.stat().st_size // 2)
    elif damage == "overwritten":
        overwrite_middle(db, 16 * 1024)
    else:
        db.write_bytes(b"")
    for extra in ("-wal", "-shm"):
        (home / f"executor.db{extra}").unlink(missing_ok=True)
    for args in (["lookup", "ERR_TIMEOUT"], ["kb", "list"]):
        r = run_cli(home, *args)
        assert_damaged(r, db)
        assert "unknown knowledge base" not in r.stderr


def test_a_new_home_still_starts_from_nothing(tmp_path):
    r = run_cli(tmp_path / "new", "kb", "list", "--json")
    assert r.returncode == 0, r.stderr


def test_a_damaged_graph_file_is_reported_as_damaged_not_as_a_timeout(home):
    aof = next((home / "graph" / "appendonlydir").glob("*.incr.aof"))
    overwrite_middle(aof, 4096)
    started = time.monotonic()
    r = run_cli(home, "graph", "neighbors", "ComfyUI")
    assert_damaged(r, home / "graph")
    assert "did not come up" not in r.stderr and time.monotonic() - started < 14


# -- rebuilds ----------------------------------------------------------------------------------------
# `executor ...` that signals itself when it reaches one method (module:Class.method): a kill at a known stage
KILLER = """
import importlib, os, signal, sys, time
sig, target = getattr(signal, sys.argv.pop(1)), sys.argv.pop(1)
signal.signal(signal.SIGINT, signal.SIG_IGN)  # as a job a script starts with `&` inherits it
module, attr = target.split(":")
owner, _, name = attr.rpartition(".")
cls = importlib.import_module(module)
cls = getattr(cls, owner) if owner else cls
original = getattr(cls, name)
def signalled(*args, **kwargs):
    os.kill(os.getpid(), sig)
    time.sleep(0.5)  # SIGINT: Python raises KeyboardInterrupt at the next instruction
    return original(*args, **kwargs)
setattr(cls, name, signalled)
from executor.cli.main import app
app(prog_name="executor")
"""


def run_signalled(home, tmp_path, sig, stage, *args):
    killer = tmp_path / "killer.py"
    killer.write_text(KILLER)
    env = {**os.environ, "EXECUTOR_HOME": str(home)}
    return subprocess.run(
        [sys.executable, str(killer), sig, stage, *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=300
    )


@pytest.mark.parametrize(
    "stage",
    [
        "executor.stores.knowledge_graph_cypher:CypherGraphStore._swap",  # the graph stage
        "executor.stores.vectors:MilvusVectorStore.create",  # the old vectors would be gone here today
        "executor.stores.vectors:MilvusVectorStore.upsert",
        "executor.stores.vectors:MilvusVectorStore.flush_and_load",
        "executor.stores.catalog:Catalog.apply_ingest",  # the new vectors complete, the catalog not yet written
    ],
)
def test_a_rebuild_killed_at_any_stage_leaves_the_old_kb_answering(home, tmp_path, stage):
    r = run_signalled(home, tmp_path, "SIGKILL", stage, "ingest", "--rebuild")
    assert r.returncode == -signal.SIGKILL, r.stderr
    after = run_cli(home, "lookup", "ERR_TIMEOUT", "--json")
    assert after.returncode == 0, after.stderr
    assert "relevance_level" in after.stdout and '"PRECISE"' in after.stdout, after.stdout
    assert "RPC error" not in after.stderr
    again = run_cli(home, "ingest", "--json")  # the next ingest finishes the job, and leaves nothing behind
    assert again.returncode == 0, again.stderr
    shown = run_cli(home, "kb", "show", "sample", "--json")
    assert '"chunks": ' in shown.stdout


@pytest.mark.parametrize(
    "stage", ["executor.retrieval.ingest:_update_graph", "executor.stores.vectors:MilvusVectorStore.upsert"]
)
def test_ctrl_c_stops_a_rebuild_and_the_old_kb_still_answers(home, tmp_path, stage):
    r = run_signalled(home, tmp_path, "SIGINT", stage, "ingest", "--rebuild")
    assert r.returncode == 130, (r.returncode, r.stderr)
    assert r.stderr.strip().splitlines()[-1] == "error: interrupted", r.stderr
    after = run_cli(home, "lookup", "ERR_TIMEOUT", "--json")
    assert after.returncode == 0 and '"PRECISE"' in after.stdout, after.stderr


def test_sigterm_stops_a_rebuild_saying_so_and_the_old_kb_still_answers(home, tmp_path):
    # `kill`, a container or a service manager: it ended with 143 and not a word
    r = run_signalled(
        home, tmp_path, "SIGTERM", "executor.stores.vectors:MilvusVectorStore.upsert", "ingest", "--rebuild"
    )
    assert r.returncode == 143, (r.returncode, r.stderr)
    assert r.stderr.strip().splitlines()[-1] == "error: terminated (SIGTERM)", r.stderr
    after = run_cli(home, "lookup", "ERR_TIMEOUT", "--json")
    assert after.returncode == 0 and '"PRECISE"' in after.stdout, after.stderr


@pytest.fixture
def small_disk(tmp_path):
    """A 500 kB file system (tmpfs): room for the database, not for the vectors. Needs mount rights (root)."""
    where = tmp_path / "disk"
    where.mkdir()
    if (
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=500k", "tmpfs", str(where)], capture_output=True).returncode
        != 0
    ):
        pytest.skip("cannot mount a small tmpfs here (needs root)")
    yield where
    run_cli(where / "home", "graph", "stop")
    subprocess.run(["umount", "-l", str(where)], check=True)


def test_a_full_disk_is_one_line_that_says_so(small_disk):
    r = run_cli(small_disk / "home", "ingest")
    assert r.returncode == 1
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "disk is full" in lines[0], r.stderr


# a graph that lost part of what the ingest built: nodes deleted behind Executor's back
LOSE_ENTITIES = """
from executor.agent.runtime import Runtime
rt = Runtime()
rt.graph.driver.run("MATCH (e:Entity {kb: 'sample'}) WITH e LIMIT 5 DETACH DELETE e", write=True)
rt.close()
"""


def test_a_graph_that_lost_part_of_its_entities_is_shown_damaged_not_smaller(home):
    before = json.loads(run_cli(home, "kb", "show", "sample", "--json").stdout)["graph"]
    assert before["entities"] > 5 and "error" not in before
    env = {**os.environ, "EXECUTOR_HOME": str(home)}
    subprocess.run([sys.executable, "-c", LOSE_ENTITIES], env=env, check=True, timeout=120)
    shown = run_cli(home, "kb", "show", "sample", "--json")
    error = json.loads(shown.stdout)["graph"]["error"]
    assert "damaged" in error and f"{before['entities'] - 5} of the {before['entities']} entities" in error, error
    assert "executor ingest --rebuild" in error
    text = run_cli(home, "kb", "show", "sample").stdout
    # the table wraps its cells: the words read in order once its borders are taken out
    words = " ".join(text.replace("│", " ").split())
    assert f"damaged: it holds {before['entities'] - 5} of the {before['entities']} entities" in words, text
