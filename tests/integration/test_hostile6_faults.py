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


# -- the other stores ------------------------------------------------------------------------------------


def test_the_graph_holding_nothing_is_one_line_with_the_repair(home):
    import shutil

    shutil.rmtree(aof_files(home))  # redis starts an empty graph: every read is "empty key"
    r = run_cli(home, "graph", "neighbors", "ComfyUI")
    assert r.returncode == 1
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "is empty" in lines[0] and "ingest --rebuild" in lines[0], r.stderr
    assert "empty key" not in r.stderr


def test_a_damaged_checkpoint_file_is_reported_as_damaged(home):
    first = run_cli(home, "ask", "ERR_TIMEOUT", "--session", "s1")
    assert first.returncode == 0, first.stderr
    checkpoints = home / "checkpoints.sqlite"
    overwrite(checkpoints, checkpoints.stat().st_size // 2, b"\xa5" * 16384)
    for args in (["ask", "what about rate limits", "--session", "s1"], ["session", "clear", "s1"]):
        r = run_cli(home, *args)
        assert r.returncode == 1, (args, r.stdout, r.stderr)
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and "damaged" in lines[0] and str(checkpoints) in lines[0], r.stderr


def test_damaged_embedder_state_is_rebuilt_not_read_as_nothing_found(home):
    weights = next((home / "cache").glob("use-*/w1.00.npy"))
    overwrite(weights, weights.stat().st_size // 2, b"\xff" * 4096)  # NaN weights
    r = run_cli(home, "lookup", "ERR_TIMEOUT", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["relevance_level"] == "PRECISE", r.stdout


@pytest.fixture(scope="module")
def docs(tmp_path_factory):
    """The sample's documents in a folder of their own, to ingest as a second KB and then change."""
    import shutil

    from executor.core.settings import SAMPLE_KB_PATH

    folder = tmp_path_factory.mktemp("docs")
    for path in SAMPLE_KB_PATH.rglob("*.md"):
        shutil.copy(path, folder / path.name)
    return folder


def test_a_first_ingest_killed_before_its_catalog_leaves_no_half_kb(home, tmp_path, docs):
    from test_damage import run_signalled

    r = run_signalled(
        home, tmp_path, "SIGKILL", "executor.stores.catalog:Catalog.apply_ingest", "ingest", str(docs), "--kb", "other"
    )
    assert r.returncode == -9, r.stderr
    listed = run_cli(home, "kb", "list", "--json")
    assert listed.returncode == 0 and "other" not in listed.stdout, listed.stdout
    assert run_cli(home, "lookup", "ERR_TIMEOUT", "--kb", "other").returncode == 2  # unknown, not answering
    again = run_cli(home, "ingest", str(docs), "--kb", "other", "--json")
    assert again.returncode == 0, again.stderr
    assert (
        json.loads(again.stdout)["chunks"]
        == json.loads(run_cli(home, "kb", "show", "sample", "--json").stdout)["chunks"]
    )


def test_an_incremental_ingest_killed_at_the_upsert_keeps_the_changed_document_findable(home, tmp_path, docs):
    from test_damage import run_signalled

    changed = tmp_path / "changed"
    changed.mkdir()
    for path in docs.iterdir():
        (changed / path.name).write_bytes(path.read_bytes())
    first = run_cli(home, "ingest", str(changed), "--kb", "other")
    assert first.returncode == 0, first.stderr
    # one document edited: the next ingest is incremental (the others unchanged)
    with open(changed / "err-timeout.md", "a", encoding="utf-8") as fh:
        fh.write("\nERR_TIMEOUT also appears when an upstream proxy drops the connection.\n")
    r = run_signalled(
        home,
        tmp_path,
        "SIGKILL",
        "executor.stores.vectors:MilvusVectorStore.upsert",
        "ingest",
        str(changed),
        "--kb",
        "other",
    )
    assert r.returncode == -9, r.stderr
    after = run_cli(home, "lookup", "ERR_TIMEOUT 请求超时", "--kb", "other", "--json")
    assert after.returncode == 0, after.stderr
    data = json.loads(after.stdout)
    assert data["relevance_level"] == "PRECISE" and data["primary"][0]["doc_key"] == "err-timeout.md", data
    again = run_cli(home, "ingest", str(changed), "--kb", "other", "--json")
    assert again.returncode == 0 and json.loads(again.stdout)["changed"] == 1, again.stdout


def run_unprivileged(home, *args):
    """`executor ...` for which a file's mode counts: root only without its override capabilities (setpriv)."""
    import shutil
    import subprocess
    import sys

    from conftest import REPO

    prefix = []
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("root reads any file, and setpriv is not here to drop that")
        prefix = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"]
    env = {**os.environ, "EXECUTOR_HOME": str(home)}
    return subprocess.run(
        [*prefix, sys.executable, "-m", "executor.cli.main", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )


@pytest.mark.parametrize(("name", "args"), [("milvus.db", ["lookup", "ERR_TIMEOUT"]), ("executor.db", ["kb", "list"])])
def test_a_store_this_user_may_not_read_is_not_called_damaged(home, name, args):
    store = home / name
    store.chmod(0)
    try:
        r = run_unprivileged(home, *args)
    finally:
        store.chmod(0o600)
    assert r.returncode == 1, (r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and f"cannot read {store}" in lines[0] and "damaged" not in lines[0], r.stderr


def test_a_graph_folder_this_user_may_not_enter_is_one_line(home):
    (home / "graph").chmod(0)
    try:
        r = run_unprivileged(home, "graph", "neighbors", "ComfyUI")
    finally:
        (home / "graph").chmod(0o700)
    assert r.returncode == 1
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and str(home / "graph") in lines[0] and "PermissionError" not in lines[0], r.stderr


@pytest.fixture
def full_disk(pristine, tmp_path):
    """A copy of the home (its embedder state left out: rebuilt in memory) on a small tmpfs, filled up. Needs mount
    rights (root)."""
    import shutil
    import subprocess

    where = tmp_path / "disk"
    where.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(where)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip("cannot mount a small tmpfs here (needs root)")
    home = where / "home"
    try:
        shutil.copytree(pristine, home, ignore=shutil.ignore_patterns("*.sock", "falkordb.pid", "cache"))
        # a session that has its checkpoints already: SQLite then says only "disk I/O error"
        assert run_cli(home, "ask", "ERR_TIMEOUT", "--session", "s1").returncode == 0
        with open(where / "filler", "wb") as fh:
            try:
                while True:
                    fh.write(b"\0" * 65536)
            except OSError:
                pass
        yield home
    finally:
        run_cli(home, "graph", "stop")
        subprocess.run(["umount", "-l", str(where)], check=True)


def test_ask_on_a_full_disk_says_the_disk_is_full(full_disk):
    r = run_cli(full_disk, "ask", "how do I roll back a deployment", "--session", "s1")
    assert r.returncode == 1, (r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "disk is full" in lines[0], r.stderr
