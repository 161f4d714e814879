"""Round sixteen of the hostile pass (issue 30; `evals/review/hostile16-findings.md`): a question read from a pipe
holding bytes that are not UTF-8 went into `executor chat`'s turn, failed inside it with a UnicodeEncodeError (a class
name, not what was wrong) and stayed in the thread with an empty answer."""

import os
import sqlite3
import subprocess
import sys

import pytest
from conftest import REPO, copy_of, pristine_home, run_cli
from langgraph.checkpoint.sqlite import SqliteSaver

from executor.nodes.common import text_of


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    home = pristine_home(tmp_path_factory, "hostile16-home")
    yield home
    run_cli(home, "graph", "stop")


def _questions(home, session: str) -> list[str]:
    with sqlite3.connect(home / "checkpoints.sqlite") as db:
        saved = SqliteSaver(db).get_tuple({"configurable": {"thread_id": session}})
    assert saved is not None
    return [text_of(m) for m in saved.checkpoint["channel_values"]["messages"] if m.type == "human"]


def test_a_chat_question_that_is_not_utf8_is_refused_and_leaves_the_thread_as_it_was(pristine, tmp_path):
    home = copy_of(pristine, tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "executor.cli.main", "chat", "--session", "s16"],
        input=b"ERR_TIMEOUT\n\xff\xfe broken\n",
        capture_output=True,
        env={**os.environ, "EXECUTOR_HOME": str(home)},
        cwd=REPO,
        timeout=180,
    )
    run_cli(home, "graph", "stop")
    out = done.stdout.decode(errors="replace") + done.stderr.decode(errors="replace")
    # it was "error: UnicodeEncodeError: 'utf-8' codec can't encode characters ...: surrogates not allowed"
    assert "error: the query is not valid text: it holds bytes that are not UTF-8" in out, out
    assert "UnicodeEncodeError" not in out
    # and the thread kept the question (with an empty answer after it): the next turn read a question nobody answered
    assert _questions(home, "s16") == ["ERR_TIMEOUT"]
