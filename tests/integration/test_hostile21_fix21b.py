"""Hostile21 findings 1 and 3 mended (issue 30): what the two tests in test_hostile21.py leave out.

Finding 1: `executor ingest ""` is refused, while no argument (the bundled sample) and `.` keep working. Finding 3:
`ingest --dry-run` says which of the KB's documents the ingest would remove, in text and in `--json`, by the rule
the ingest itself follows. Real components: the command line in homes of their own, Milvus Lite, the USE embedder.
"""

import json
import os
import subprocess
import sys

import pytest
from conftest import REPO, last_error_line, run_cli, write_pages

from executor.core.settings import SAMPLE_KB_PATH

pytestmark = pytest.mark.timeout(300)

TEAM_PAGES = {f"menu{i}.md": f"# Lunch menu {i}\n\nOn day {i} the canteen serves dish number {i}.\n" for i in range(4)}


@pytest.fixture(scope="module")
def team_home(tmp_path_factory):
    """A home whose KB `menus` was ingested from a team's folder; the home and folder."""
    tmp = tmp_path_factory.mktemp("fix21b")
    folder = write_pages(tmp / "team-docs", TEAM_PAGES)
    home = tmp / "home"
    r = run_cli(home, "ingest", str(folder), "--kb", "menus", "--no-llm-extract")
    assert r.returncode == 0, r.stderr
    return home, folder


def dry_run(home, *args: str, cwd=REPO) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "executor.cli.main", "ingest", *args, "--dry-run"],
        capture_output=True,
        text=True,
        env={**os.environ, "EXECUTOR_HOME": str(home), "PYTHONPATH": str(REPO)},
        cwd=cwd,
        timeout=180,
    )


def test_an_empty_path_is_refused_before_the_home_is_made(tmp_path):
    home = tmp_path / "home"
    r = run_cli(home, "ingest", "")
    assert last_error_line(r, 2) == (
        "error: the folder is empty: name the folder to ingest, or leave it out for the bundled sample"
    )
    assert not home.exists()


def test_no_path_is_still_the_bundled_sample_and_a_dot_the_current_folder(tmp_path):
    here = write_pages(tmp_path / "here", {"notes.md": "# Notes\n\nmy notes\n"})
    bundled = json.loads(dry_run(tmp_path / "home", "--json").stdout)
    assert bundled["root"] == str(SAMPLE_KB_PATH.resolve()) and bundled["counts"]["read"] == 42
    dot = json.loads(dry_run(tmp_path / "home", ".", "--json", cwd=here).stdout)
    assert dot["root"] == str(here.resolve()) and [f["doc_key"] for f in dot["files"]] == ["notes.md"]


def test_a_dry_run_of_another_folder_lists_what_it_would_remove_in_json(team_home, tmp_path):
    home, team = team_home
    other = write_pages(tmp_path / "other", {"menu0.md": TEAM_PAGES["menu0.md"], "notes.md": "# Notes\n\nmine\n"})
    data = json.loads(dry_run(home, str(other), "--kb", "menus", "--json").stdout)
    assert data["remove"] == ["menu1.md", "menu2.md", "menu3.md"]
    assert data["warnings"] == [
        f"menus was last ingested from {team}, not {other}: 3 of its documents are not in this folder and would "
        "be removed"
    ]
    # and the real ingest removes just those, saying so after
    done = json.loads(run_cli(home, "ingest", str(other), "--kb", "menus", "--no-llm-extract", "--json").stdout)
    assert done["removed"] == 3
    assert f"menus was last ingested from {team}, not {other}: 3 of its documents" in done["warnings"][0]


def test_a_dry_run_of_the_kbs_own_folder_counts_a_deleted_page_without_the_warning(tmp_path):
    folder = write_pages(tmp_path / "docs", TEAM_PAGES)
    home = tmp_path / "home"
    assert run_cli(home, "ingest", str(folder), "--kb", "menus", "--no-llm-extract").returncode == 0
    (folder / "menu2.md").unlink()
    r = dry_run(home, str(folder), "--kb", "menus")
    assert r.returncode == 0, r.stderr
    assert "remove   menu2.md" in r.stdout
    assert "2 skipped" not in r.stdout and "3 to read, 0 to convert, 0 skipped, 1 to remove;" in r.stdout
    assert "last ingested from" not in r.stdout + r.stderr
    data = json.loads(dry_run(home, str(folder), "--kb", "menus", "--json").stdout)
    assert (data["remove"], data["warnings"]) == (["menu2.md"], [])
