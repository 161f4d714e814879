"""`executor chat` in a real terminal (pexpect): editing prompt, live trace, Markdown answers, Ctrl-C, /new, Ctrl-D."""

import os
import re
import sys
from contextlib import contextmanager

import pytest
from conftest import REPO, ingested_home
from fake_openai import FakeOpenAI

pexpect = pytest.importorskip("pexpect", reason="pexpect drives the chat through a pseudo-terminal")
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\r")
PROMPT = "you>"  # prompt_toolkit draws the space by moving the cursor


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    return ingested_home(tmp_path_factory, "chat-home")


class Transcript:
    """What the terminal showed, with escape sequences removed."""

    def __init__(self):
        self.raw = []

    def write(self, text):
        self.raw.append(text)

    def flush(self):
        pass

    @property
    def text(self) -> str:
        return ANSI.sub("", "".join(self.raw))


@contextmanager
def chat_in_a_terminal(home, server, *args):
    """`executor chat` in a pseudo-terminal, closed afterwards; a line that never comes fails the test showing
    the whole screen (pexpect's own error shows its last 100 characters of escape codes)."""
    env = {
        **os.environ,
        "EXECUTOR_HOME": str(home),
        "OPENAI_BASE_URL": server.base_url,
        "OPENAI_API_KEY": "test",
        "EXECUTOR_MODEL": "fake-model",
        "TERM": "xterm-256color",
        "PROMPT_TOOLKIT_NO_CPR": "1",
    }
    child = pexpect.spawn(
        sys.executable,
        ["-m", "executor.cli.main", "chat", *args],
        env=env,
        cwd=str(REPO),
        encoding="utf-8",
        timeout=120,
        dimensions=(50, 140),
    )
    child.logfile_read = Transcript()
    try:
        yield child
    except pexpect.TIMEOUT:
        pytest.fail("the chat did not show what was expected; the screen so far:\n" + child.logfile_read.text[-3000:])
    finally:
        child.close()


def open_tool_calls(messages: list[dict]) -> list[str]:
    """Tool calls in a conversation sent to the model that have no tool result after them."""
    answered = {m.get("tool_call_id") for m in messages if m["role"] == "tool"}
    return [
        c["id"]
        for m in messages
        if m["role"] == "assistant"
        for c in m.get("tool_calls") or []
        if c["id"] not in answered
    ]


def test_a_chat_session_in_a_terminal(home):
    script = [
        {"tool_calls": [("lookup_knowledge", {"query": "ERR_RATE_LIMITED"})]},
        {"content": "**ERR_RATE_LIMITED** means *too many requests*. [api/rate-limiting.md]"},
        {"content": "Wait for the `Retry-After` header."},
        {"tool_calls": [("lookup_knowledge", {"query": "ERR_TIMEOUT"})], "delay_s": 30},  # cancelled
        {"content": "Still here after the cancel."},
        {"content": "A fresh session."},
    ]
    with FakeOpenAI(script) as server:
        with chat_in_a_terminal(home, server, "--session", "pty-chat") as child:
            child.expect("starting")  # a status line while the embedder loads
            child.expect(PROMPT)
            child.sendline("What does ERR_RATE_LIMITED mean?")
            child.expect(r"looked up .ERR_RATE_LIMITED.: one document answers it exactly \[PRECISE\]")
            child.expect("sources:")
            child.expect(PROMPT)
            child.sendline("")  # an empty line does not quit
            child.expect(PROMPT)
            child.sendline("And how long should I wait?")
            child.expect("Retry-After")
            child.expect(PROMPT)

            # the model takes 30 s: Ctrl-C cancels the turn long before it answers (the bound leaves room for a
            # loaded machine; the point is that the turn does not wait for the model)
            asked = len(server.requests)
            child.sendline("What is ERR_TIMEOUT?")
            child.expect("thinking")
            server.wait_for_request(asked + 1)
            child.sendintr()
            child.expect("cancelled", timeout=15)
            child.expect(PROMPT, timeout=15)
            assert child.isalive()

            child.sendline("Are you still there?")  # same session, after the cancel
            child.expect("Still here after the cancel")
            child.expect(PROMPT)
            child.sendline("/new")
            child.expect("new session chat-")
            child.expect(PROMPT)
            child.sendline("Hello again")
            child.expect("A fresh session")
            child.expect(PROMPT)
            child.sendeof()  # Ctrl-D
            child.expect("bye")
            child.expect(pexpect.EOF)
        transcript = child.logfile_read.text
    assert child.exitstatus == 0, transcript[-2000:]
    # Markdown rendered, not printed raw
    assert "ERR_RATE_LIMITED means too many requests" in re.sub(r"\s+", " ", transcript)
    assert "**ERR_RATE_LIMITED**" not in transcript and "`Retry-After`" not in transcript
    assert "error" not in transcript.lower() and "Traceback" not in transcript
    # the conversation after the cancel is valid: every tool call the model made has its result
    after_cancel = server.requests[4]["messages"]
    assert open_tool_calls(after_cancel) == [] and any(m["role"] == "tool" for m in after_cancel)
    assert after_cancel[-1] == {"role": "user", "content": "Are you still there?"}
    fresh = [m for m in server.requests[5]["messages"] if m["role"] != "system"]
    assert fresh == [{"role": "user", "content": "Hello again"}]  # /new: nothing of the old session


def test_ctrl_c_leaves_the_knowledge_base_answering_and_a_ctrl_c_with_enter_cancels(home):
    """A terminal's Ctrl-C signals its whole foreground process group: it killed the Milvus Lite server, and the
    next question's lookup failed ("Fail connecting to server"). A Ctrl-C typed with the question's Enter was a
    key the prompt kept for later: the question ran anyway, and the Ctrl-C was lost."""
    script = [
        {"tool_calls": [("lookup_knowledge", {"query": "ERR_TIMEOUT"})], "delay_s": 5},  # cancelled
        {"tool_calls": [("lookup_knowledge", {"query": "ERR_RATE_LIMITED"})]},
        {"content": "Found it after the cancel."},
        # whether the question cancelled with its Enter reached the model or not, the next one reads this
        {"content": "Still here.", "delay_s": 2},
        {"content": "Still here.", "delay_s": 2},
    ]
    with FakeOpenAI(script) as server:
        with chat_in_a_terminal(home, server, "--session", "pty-cancels") as child:
            child.expect(PROMPT)
            asked = len(server.requests)
            child.sendline("What is ERR_TIMEOUT?")
            child.expect("thinking")
            server.wait_for_request(asked + 1)
            child.sendintr()
            child.expect("cancelled", timeout=15)
            child.expect(PROMPT, timeout=15)
            child.sendline("And ERR_RATE_LIMITED?")  # a lookup: the vector store's server is still there
            child.expect(r"looked up .ERR_RATE_LIMITED.: one document answers it exactly \[PRECISE\]")
            child.expect("Found it after the cancel")
            child.expect(PROMPT)
            child.send("Never mind this one\r\x03")  # Enter and Ctrl-C in one keystroke burst
            child.expect("cancelled", timeout=15)
            child.expect(PROMPT, timeout=15)
            child.sendline("Still there?")
            child.expect("Still here")
            child.expect(PROMPT)
            child.sendeof()
            child.expect(pexpect.EOF)
    transcript = child.logfile_read.text
    assert child.exitstatus == 0, transcript[-2000:]
    assert "error" not in transcript.lower(), transcript[-2000:]


def test_chat_slash_commands_and_a_pipe(home, tmp_path):
    """Without a terminal the chat reads lines; /kb checks the name, /trace hides tool calls."""
    import subprocess

    env = {**os.environ, "EXECUTOR_HOME": str(home)}
    env.pop("OPENAI_BASE_URL", None)
    env.pop("OPENAI_API_KEY", None)
    lines = "/kb nope\n/kb\n/trace\nERR_TIMEOUT 是什么？\n/help\n/exit\nnever asked\n"
    r = subprocess.run(
        [sys.executable, "-m", "executor.cli.main", "chat"],
        input=lines,
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=180,
    )
    assert r.returncode == 0, r.stderr
    # one line, which the terminal's width may wrap
    assert " ".join(r.stderr.split()) == f"error: unknown knowledge base 'nope' (known: sample; home: {home.resolve()})"
    assert "knowledge base: sample" in r.stdout and "tool calls hidden" in r.stdout
    assert "looked up" not in r.stdout  # /trace hid it
    answer = re.sub(r"\s+", "", r.stdout.split("tool calls hidden")[1])  # rich wraps lines at the width
    assert "[troubleshooting/err-timeout.md]ERR_TIMEOUT表示服务在规定时间内没有完成请求" in answer  # definition first
    assert "/new" in r.stdout  # /help listed the commands
    assert r.stdout.count("you> ") == 6 and r.stdout.rstrip().endswith("bye")  # /exit quit before the last line


def test_chat_good_and_bad_record_feedback_on_the_last_answer(home):
    """/good and /bad [note] store a verdict on the session's last answer, as `executor feedback` does."""
    import subprocess

    from executor.stores.database import Database
    from executor.stores.feedback import FeedbackStore

    env = {**os.environ, "EXECUTOR_HOME": str(home)}
    env.pop("OPENAI_BASE_URL", None)
    env.pop("OPENAI_API_KEY", None)
    lines = "/good\nERR_TIMEOUT 是什么？\n/good\n数据库连接池怎么配置？\n/bad not the pool sizes\n/exit\n"
    r = subprocess.run(
        [sys.executable, "-m", "executor.cli.main", "chat", "--session", "chat-fb"],
        input=lines,
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=180,
    )
    assert r.returncode == 0, r.stderr
    # /good before any answer: one line saying there is nothing to rate, and the chat goes on
    assert r.stderr.count("\n") == 1 and "has no answered turn" in r.stderr, r.stderr
    out = " ".join(r.stdout.split())
    assert "recorded good for turn 1 of chat-fb: ERR_TIMEOUT 是什么？" in out
    assert "recorded bad for turn 2 of chat-fb: 数据库连接池怎么配置？" in out
    rows = FeedbackStore(Database(f"sqlite:///{home / 'executor.db'}")).rows(session_id="chat-fb")
    assert [(row.turn, row.verdict, row.note) for row in rows] == [(1, "good", None), (2, "bad", "not the pool sizes")]


def test_a_failed_turn_makes_the_chat_exit_1_after_going_on(home):
    """A turn that fails (an unreachable LLM) prints one line, the chat goes on, and it exits 1 at the end."""
    import subprocess

    env = {
        **os.environ,
        "EXECUTOR_HOME": str(home),
        "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
        "OPENAI_API_KEY": "sk-chatsecret123",
        "EXECUTOR_LLM_TIMEOUT_S": "5",
    }
    r = subprocess.run(
        [sys.executable, "-m", "executor.cli.main", "chat"],
        input="ERR_TIMEOUT 是什么？\n/help\n",
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=180,
    )
    assert r.returncode == 1, (r.stdout, r.stderr)
    errors = r.stderr.strip().splitlines()
    assert len(errors) == 2 and "the LLM is unavailable" in errors[0], r.stderr
    assert errors[1].startswith("error: 1 turn(s) of session chat-") and "failed" in errors[1]
    assert "/good" in r.stdout and r.stdout.rstrip().endswith("bye")  # it went on after the failed turn
    assert "sk-chatsecret123" not in r.stdout + r.stderr
