"""Round twenty-one of the hostile pass (issue 30): the findings of severity 6 or worse, each as it fails today.

Each test carries its finding's number in evals/review/hostile21-findings.md. All are open, so each is
`xfail(strict=True)`: it fails on today's code (so the file passes), and whoever mends the finding flips the marker.
Real components throughout: the command line in homes of their own, Milvus Lite, the USE embedder.
"""

import json
import os
import subprocess
import sys

import pytest
from conftest import REPO, copy_of, last_error_line, run_cli, write_pages

pytestmark = pytest.mark.timeout(300)

TEAM_PAGES = {
    f"menu{i}.md": f"# Lunch menu {i}\n\nOn day {i} the canteen serves dish number {i} with rice.\n" for i in range(6)
}


@pytest.fixture(scope="module")
def team_home(tmp_path_factory):
    """A home whose KB `menus` was ingested from a team's own folder (not the bundled sample); the home and folder."""
    tmp = tmp_path_factory.mktemp("h21")
    folder = write_pages(tmp / "team-docs", TEAM_PAGES)
    home = tmp / "home"
    r = run_cli(home, "ingest", str(folder), "--kb", "menus")
    assert r.returncode == 0, r.stderr
    return home, folder


def documents_of(home, kb: str) -> int:
    r = run_cli(home, "kb", "show", kb, "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["documents"]


# -- finding 1: an empty path is the current folder ---------------------------------------------------------------
def test_an_empty_ingest_path_is_refused_not_read_as_the_current_folder(team_home, tmp_path):
    home = copy_of(team_home[0], tmp_path)
    here = write_pages(tmp_path / "somewhere", {"notes.md": "# Notes\n\nmy notes about lunch\n"})
    # `executor ingest "$DOCS" --kb menus` with DOCS unset, run from a folder that holds pages
    r = subprocess.run(
        [sys.executable, "-m", "executor.cli.main", "ingest", "", "--kb", "menus"],
        capture_output=True,
        text=True,
        env={**os.environ, "EXECUTOR_HOME": str(home), "PYTHONPATH": str(REPO)},
        cwd=here,
        timeout=180,
    )
    assert "empty" in last_error_line(r, 2)
    assert documents_of(home, "menus") == len(TEAM_PAGES)


# -- finding 2: the "has no vectors" hint ingests the bundled sample -----------------------------------------------
def test_a_kb_without_vectors_is_told_to_ingest_its_own_folder(team_home, tmp_path):
    home = copy_of(team_home[0], tmp_path)
    (home / "milvus.db").unlink()  # moved away, or a `kb drop` killed after it dropped the vectors
    line = last_error_line(run_cli(home, "lookup", "canteen dish", "--kb", "menus"), 1)
    assert "no vectors" in line
    assert str(team_home[1]) in line, line


# -- finding 3: a dry run hides what the ingest would remove ------------------------------------------------------
def test_a_dry_run_of_another_folder_says_what_it_would_remove(team_home, tmp_path):
    home = copy_of(team_home[0], tmp_path)
    other = write_pages(tmp_path / "other", {"notes.md": "# Notes\n\nmy notes about lunch\n"})
    r = run_cli(home, "ingest", str(other), "--kb", "menus", "--dry-run")
    assert r.returncode == 0, r.stderr
    said = r.stdout + r.stderr
    assert str(team_home[1]) in said and "remove" in said, said
    assert documents_of(home, "menus") == len(TEAM_PAGES)


# -- finding 14: `ask` on a KB no ingest has filled answers "nothing on this question" ----------------------------
def test_ask_on_a_kb_never_ingested_says_so_instead_of_answering(tmp_path):
    home = tmp_path / "home"
    assert run_cli(home, "kb", "create", "docs").returncode == 0
    r = run_cli(home, "ask", "what is ERR_TIMEOUT", "--kb", "docs")
    assert "has no documents yet" in last_error_line(r, 2)
    assert "nothing on this question" not in r.stdout
