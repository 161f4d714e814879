"""Round seven of the hostile pass on the home's own files: a lock, log or cache file that is a folder (or that
this user may not open) is one line naming the path and exit 1, not the exception's class name."""

import json
import shutil

import pytest
from conftest import copy_of, pristine_home, run_cli


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    home = pristine_home(tmp_path_factory, "hostile7-store")
    assert run_cli(home, "lookup", "connection pool").returncode == 0  # writes the caches
    return home


@pytest.mark.parametrize("name", [".milvus.db.executor.lock", "milvus.db.log", "cache/vocabulary-sample.json"])
def test_a_file_of_the_home_that_is_a_folder_is_one_line_naming_it(pristine, tmp_path, name):
    home = copy_of(pristine, tmp_path)
    path = home / name
    assert path.is_file()
    path.unlink()
    path.mkdir()
    (path / "x").write_text("x")
    r = run_cli(home, "lookup", "connection pool")
    assert r.returncode == 1, (r.returncode, r.stdout[:300])
    assert r.stderr.count("\n") == 1 and str(path) in r.stderr and "Is a directory" in r.stderr, r.stderr
    assert "IsADirectoryError" not in r.stderr and r.stdout == ""
    shutil.rmtree(path)


def _damaged(pristine, tmp_path):
    import os

    home = copy_of(pristine, tmp_path)
    store = home / "milvus.db"
    with open(store, "r+b") as f:  # 64 kB of noise in the middle, as a bad disk or a stray write leaves it
        f.seek(store.stat().st_size // 2)
        f.write(os.urandom(65536))
    return home, store


@pytest.mark.parametrize("command", [("kb", "show", "sample"), ("kb", "list")])
def test_kb_show_and_list_over_a_damaged_vector_store_say_it_is_damaged(pristine, tmp_path, command):
    home, store = _damaged(pristine, tmp_path)
    r = run_cli(home, *command)
    assert r.returncode == 1, (r.returncode, r.stdout[:300])
    assert "damaged" in r.stderr and str(store) in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert r.stdout == ""


def test_kb_show_json_over_a_damaged_vector_store_is_the_error_as_json(pristine, tmp_path):
    home, store = _damaged(pristine, tmp_path)
    r = run_cli(home, "kb", "show", "sample", "--json")
    assert r.returncode == 1 and "damaged" in r.stderr and str(store) in r.stderr, r.stderr
    assert json.loads(r.stdout) == {"error": r.stderr.removeprefix("error: ").strip(), "code": 1}


def test_a_session_whose_checkpoints_were_emptied_says_its_conversation_starts_over(pristine, tmp_path):
    home = copy_of(pristine, tmp_path)
    first = run_cli(home, "ask", "connection pool exhausted", "--session", "s1")
    assert first.returncode == 0 and "warning" not in first.stderr, first.stderr
    (home / "checkpoints.sqlite").write_bytes(b"")  # emptied, as a careless `> file` or a bad restore leaves it
    again = run_cli(home, "ask", "and the timeout?", "--session", "s1")
    assert again.returncode == 0, again.stderr
    lines = [line for line in again.stderr.splitlines() if "starts over" in line]
    assert len(lines) == 1 and "s1" in lines[0] and str(home / "checkpoints.sqlite") in lines[0], again.stderr
    later = run_cli(home, "ask", "and the pool size?", "--session", "s1")  # resumed from the new start: no word
    assert later.returncode == 0 and "starts over" not in later.stderr
    fresh = run_cli(home, "ask", "connection pool exhausted", "--session", "s2")  # a new session: no word either
    assert fresh.returncode == 0 and "starts over" not in fresh.stderr
