"""hostile21 findings 14 and 2 (issue 30), past the tests in test_hostile21.py: a KB no ingest has filled is refused
by `chat` and by the label commands as `lookup` refuses it, and the ingest hint names a folder, never the bare
`executor ingest --kb K` that ingests the bundled sample into K.

Real components: the command line in homes of its own, Milvus Lite, the USE embedder; no LLM (offline mode).
"""

import json
import os
import subprocess
import sys

import pytest
from conftest import REPO, last_error_line, run_cli, write_pages

from executor.stores.catalog import ingest_hint

pytestmark = pytest.mark.timeout(300)

NEVER_INGESTED = "error: knowledge base 'g8' has no documents yet: run `executor ingest FOLDER --kb g8`"


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    """A home with `menus` ingested from a small folder and `g8` created with a graph but never ingested."""
    tmp = tmp_path_factory.mktemp("fix21a")
    folder = write_pages(tmp / "team-docs", {"menu.md": "# Lunch menu\n\nThe canteen serves rice on Mondays.\n"})
    home = tmp / "home"
    r = run_cli(home, "ingest", str(folder), "--kb", "menus")
    assert r.returncode == 0, r.stderr
    r = run_cli(home, "kb", "create", "g8", "--entities", "Software", "--relations", "DEPENDS_ON")
    assert r.returncode == 0, r.stderr
    return home


def chat(home, *args: str, lines: str) -> subprocess.CompletedProcess:
    """`executor chat` reading `lines` from a pipe, offline (no LLM endpoint)."""
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "EXECUTOR_MODEL")}
    return subprocess.run(
        [sys.executable, "-m", "executor.cli.main", "chat", *args],
        input=lines,
        capture_output=True,
        text=True,
        env={**env, "EXECUTOR_HOME": str(home)},
        cwd=REPO,
        timeout=180,
    )


def test_ask_json_on_a_kb_never_ingested_prints_no_answer(home):
    r = run_cli(home, "ask", "what is ERR_TIMEOUT", "--kb", "g8", "--json")
    assert last_error_line(r, 2) == NEVER_INGESTED
    # the error's JSON, not an answer a script would take as "nothing found"
    assert json.loads(r.stdout) == {"error": NEVER_INGESTED.removeprefix("error: "), "code": 2}


def test_chat_refuses_to_switch_to_a_kb_never_ingested(home):
    r = chat(home, "--kb", "menus", lines="/kb g8\n/kb\n/exit\n")
    assert r.returncode == 0, r.stderr  # a refused switch is one line, like `/kb nope`; the chat goes on
    assert " ".join(r.stderr.split()) == NEVER_INGESTED  # one line, which the terminal's width may wrap
    assert "knowledge base g8 from the next question on" not in r.stdout
    assert "knowledge base: menus" in r.stdout  # the next question still goes to menus


def test_chat_started_on_a_kb_never_ingested_says_so(home):
    r = chat(home, "--kb", "g8", lines="what is ERR_TIMEOUT\n/exit\n")
    assert last_error_line(r, 2) == NEVER_INGESTED
    assert "nothing on this question" not in r.stdout


@pytest.mark.parametrize("command", ["eval-retrieval", "calibrate"])
def test_label_commands_on_a_kb_never_ingested_name_a_folder(home, tmp_path, command):
    labels = tmp_path / "labels.yaml"
    labels.write_text(json.dumps([{"query": "what is ERR_TIMEOUT", "relevant": ["err.md"]}]))
    r = run_cli(home, command, "--labels", str(labels), "--kb", "g8")
    assert last_error_line(r, 2) == NEVER_INGESTED


def test_the_ingest_hint_names_the_recorded_folder_as_a_shell_word():
    assert ingest_hint("menus", "/srv/team docs") == "run `executor ingest '/srv/team docs' --kb menus`"
    assert ingest_hint("menus", None) == "run `executor ingest FOLDER --kb menus`"
