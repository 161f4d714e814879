"""Round nine of the hostile pass (issue 30): the round-eight leftovers. A graph removed or emptied after ingest,
in a KB whose documents name entities, is damage (a lookup warns, naming the folder; `kg` fails naming it), not
"empty, never built"; a home folder this user may not write is one line naming it, before anything is opened; a
file that vanishes, shrinks or turns into a folder while `executor ingest` reads the folder is one warning line
naming it, and the rest is ingested, with the catalog and the vector store agreeing afterwards."""

import json
import shutil

import pytest
from conftest import copy_of, make_runtime, pristine_home, run_cli
from test_hostile6_faults import THIN, WIDEN, one_warning, run_unprivileged

import executor.retrieval.sources as sources
from executor.retrieval.ingest import ingest


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    return pristine_home(tmp_path_factory, "hostile9-home")


@pytest.fixture
def home(pristine, tmp_path):
    yield copy_of(pristine, tmp_path)
    run_cli(tmp_path / "home", "graph", "stop")


def _lose_the_graph(home, how: str) -> None:
    graph = home / "graph"
    if how == "removed":
        shutil.rmtree(graph)
    else:  # emptied: the folder is there, its files are not
        for entry in graph.iterdir():
            shutil.rmtree(entry) if entry.is_dir() else entry.unlink()


@pytest.mark.parametrize("how", ["removed", "emptied"])
def test_a_lookup_over_a_lost_graph_answers_and_says_the_graph_is_damaged(home, how):
    _lose_the_graph(home, how)
    r = run_cli(home, "lookup", THIN, "--json", **WIDEN)
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["found"] and data["primary"], data
    assert data["graph_expansion"]["status"] == "unavailable", data["graph_expansion"]
    assert data["graph_expansion"]["damaged"] == str(home / "graph"), data["graph_expansion"]
    one_warning(r.stderr, home / "graph")


@pytest.mark.parametrize("how", ["removed", "emptied"])
def test_kg_over_a_lost_graph_is_one_damaged_line_naming_the_graph(home, how):
    _lose_the_graph(home, how)
    r = run_cli(home, "kg", "ERR_TIMEOUT")
    assert r.returncode == 1, (r.stdout[-300:], r.stderr[-300:])
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "damaged" in lines[0] and str(home / "graph") in lines[0], r.stderr
    assert "ingest --rebuild" in lines[0] and "never built" not in lines[0], r.stderr


def test_kb_show_over_a_lost_graph_says_damaged(home):
    _lose_the_graph(home, "removed")
    r = run_cli(home, "kb", "show", "sample", "--json")
    assert r.returncode == 0, r.stderr
    error = json.loads(r.stdout)["graph"]["error"]
    assert "damaged" in error and str(home / "graph") in error and "never built" not in error, error


def test_a_kb_never_given_entities_and_never_built_is_still_not_called_damaged(tmp_path):
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "runbook.md").write_text("# Gateway runbook\n\nRestart the gateway when ERR_TIMEOUT appears in its log.\n")
    home = tmp_path / "home"
    created = run_cli(home, "kb", "create", "plain", "--entities", "Software")
    r = run_cli(home, "ingest", str(kb), "--kb", "plain", "--json")
    try:
        assert created.returncode == 0 and r.returncode == 0, (created.stderr, r.stderr)
        run_cli(home, "graph", "stop")
        _lose_the_graph(home, "removed")
        kg = run_cli(home, "kg", "gateway ERR_TIMEOUT", "--kb", "plain")
        assert "damaged" not in kg.stderr, kg.stderr
    finally:
        run_cli(home, "graph", "stop")


def _one_line_naming(r, folder) -> None:
    assert r.returncode in (1, 2), (r.returncode, r.stdout[-300:], r.stderr[-300:])
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and str(folder) in lines[0] and "Traceback" not in r.stderr, r.stderr


@pytest.mark.parametrize("args", [["ingest"], ["lookup", "ERR_TIMEOUT"], ["kb", "list"]])
@pytest.mark.parametrize("fresh", [False, True], ids=["ingested", "fresh"])
def test_a_home_folder_this_user_may_not_write_is_one_line_naming_it(home, tmp_path, args, fresh):
    folder = tmp_path / "fresh" if fresh else home
    folder.mkdir(exist_ok=True)
    before = sorted(p.name for p in folder.iterdir())
    folder.chmod(0o555)
    try:
        r = run_unprivileged(folder, *args)
    finally:
        folder.chmod(0o700)
    _one_line_naming(r, folder)
    assert sorted(p.name for p in folder.iterdir()) == before


def test_kg_over_a_graph_folder_this_user_may_not_write_names_it_at_once(home):
    graph = home / "graph"
    graph.chmod(0o555)
    try:
        r = run_unprivileged(home, "kg", "ERR_TIMEOUT")
    finally:
        graph.chmod(0o700)
    _one_line_naming(r, graph)
    assert "Permission denied" in r.stderr and "did not come up" not in r.stderr, r.stderr


PAGES = {
    f"p{i}.md": f"# Page {i}\n\nThe quuxgateway page number {i}: restart it when ERR_QUUX_{i} appears.\n"
    for i in range(6)
}


def _change_while_read(path, what: str) -> None:
    if what == "removed":
        path.unlink()
    elif what == "truncated":
        path.write_bytes(b"")
    else:  # replaced by a folder
        path.unlink()
        path.mkdir()


@pytest.mark.parametrize("stage", ["listed", "opened"])
@pytest.mark.parametrize("what", ["removed", "truncated", "a folder"])
def test_a_file_that_changes_while_ingest_reads_the_folder_is_one_warning_and_the_rest_is_ingested(
    tmp_path, monkeypatch, stage, what
):
    """`listed`: changed right after os.walk listed it (before its lstat); `opened`: after the walk, before it
    is opened. Either way one warning naming it, the other pages ingested, catalog and vectors agreeing."""
    kb = tmp_path / "kb"
    kb.mkdir()
    for name, text in PAGES.items():
        (kb / name).write_text(text)
    victim = kb / "p3.md"
    if stage == "listed":
        walk = sources.os.walk

        def racing_walk(*args, **kwargs):
            for entry in walk(*args, **kwargs):
                if entry[0] == str(kb):  # the top folder is listed: change the page before it is looked at
                    _change_while_read(victim, what)
                yield entry

        monkeypatch.setattr(sources.os, "walk", racing_walk)
    else:
        read = sources.read_regular_file

        def racing_read(path, max_bytes):
            if path == victim:
                _change_while_read(victim, what)
            return read(path, max_bytes)

        monkeypatch.setattr(sources, "read_regular_file", racing_read)
    rt = make_runtime(tmp_path / "home")
    try:
        report = ingest(rt, kb, "race", progress=False)
        monkeypatch.undo()
        assert report.documents == len(PAGES) - 1, report.to_dict()
        assert len(report.warnings) == 1 and report.warnings[0].startswith("p3.md: "), report.warnings
        docs = rt.catalog.documents("race")
        assert sorted(docs) == sorted(set(PAGES) - {"p3.md"}), sorted(docs)
        assert rt.vectors.count("race") == sum(d.chunk_count for d in docs.values()) > 0
        found = rt.lookup_service.lookup("quuxgateway ERR_QUUX_4", "race-session", kb="race")
        assert found.documents[0].doc_key == "p4.md", found
    finally:
        rt.close()
