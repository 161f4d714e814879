"""Round twenty-two of the hostile pass (issue 30): the servers, hostile documents, faults and secrets. Each finding
of severity 7 or worse (evals/review/hostile22-findings.md, by number) as it fails today.

A test of a finding still open is `xfail(strict=True)` with its number: it fails on today's code, and whoever mends
the finding flips the marker. Real components throughout: the graph over a real SQLite checkpointer, the sample KB in
Milvus Lite with the USE embedder, `executor ingest` and `lookup` as a user runs them.
"""

import json

import pytest
from conftest import run_cli, write_pages
from langchain_core.messages import AIMessage, HumanMessage

from executor.core.errors import InputError
from executor.nodes.state import Context

pytestmark = pytest.mark.timeout(300)

NOTHING = "nothing on this question"


def test_a_run_whose_input_ends_in_an_assistant_message_is_not_answered_nothing_found(thread):
    """A client that sends a conversation ending in an assistant message (a chat UI replaying history, a few-shot
    prefix) got "The knowledge base has nothing on this question." with no lookup made: the KB answers the
    question. It is refused as an input ending in a tool call is, in one line saying what to send, before the run
    writes anything to its thread."""
    app, config = thread
    before = app.get_state(config)
    question = HumanMessage("what is ERR_TIMEOUT")
    run = {"messages": [question, AIMessage("It is the printer running out of toner.")]}
    with pytest.raises(InputError, match="ends in an assistant message.*send the question as its last message"):
        app.invoke(run, config, context=Context())
    assert app.get_state(config).config == before.config


def test_a_thread_stopped_before_its_lookup_can_have_its_state_edited(thread):
    """Studio's human-in-the-loop edit: a run interrupted before `call_tools`, its tool call's query edited with
    `update_state` (as the node that made it), then resumed. The edit was a 400, "Missing required config key
    'N/A' for 'after_guard'." (the routing functions need the run's `runtime`, which `update_state` does not pass),
    whatever node was named: no state of an interrupted turn can be edited. The edit is taken: the guard checks
    the edited call, and the resumed run looks up the edited query, not the one the guard had approved."""
    app, config = thread
    app.invoke(
        {"messages": [HumanMessage("what is ERR_TIMEOUT")]}, config, context=Context(), interrupt_before=["call_tools"]
    )
    state = app.get_state(config)
    assert state.next == ("call_tools",)
    call = state.values["messages"][-1]
    edited = call.model_copy(update={"tool_calls": [{**call.tool_calls[0], "args": {"query": "PgBouncer"}}]})
    app.update_state(config, {"messages": [edited]}, as_node="guard")
    out = app.invoke(None, config, context=Context())
    assert [t["query"] for t in out["trace"]] == ["PgBouncer"]
    assert "PgBouncer" in out["answer"]


def test_an_inline_image_in_a_markdown_page_is_not_indexed_as_text(tmp_path):
    """A Markdown page with one pasted image (`![x](data:image/png;base64,...)`, as Typora, Obsidian or a pandoc
    export write it): 300 kB of base64 became hundreds of chunks, every one of them embedded, and lookups of the
    page quote lines of base64. The image is no text: the page is its two sentences."""
    import base64
    import os

    image = base64.b64encode(os.urandom(300_000)).decode()
    page = f"# Printer setup\n\nThe printer PRN-77 needs driver 4.2.\n\n![diagram](data:image/png;base64,{image})\n"
    docs = write_pages(tmp_path / "docs", {"printer.md": page + "\nRestart the spooler after install.\n"})
    home = tmp_path / "home"
    r = run_cli(home, "ingest", str(docs), "--kb", "pages", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["chunks"] <= 3


@pytest.mark.parametrize("values", [{"memory": "garbage"}, {"session_evidence": "x"}])
def test_a_malformed_state_edit_is_refused_not_kept_to_break_every_run(thread, values):
    """Studio's state editor (`update_state`) took `memory: "garbage"` (or `session_evidence: "x"`) and every later
    run of the thread failed with Python's own words ("TypeError: string indices must be integers, not 'str'"),
    the thread lost to every client until someone repairs the field. Refused when written (as an unreadable message
    is since hostile19b #1): one line naming the field, the thread as it was, and the next question answered."""
    app, config = thread
    before = app.get_state(config)
    with pytest.raises(InputError, match=f"invalid state edit of '{next(iter(values))}'"):
        app.update_state(config, values)
    assert app.get_state(config).config == before.config
    out = app.invoke({"messages": [HumanMessage("what is ERR_TIMEOUT")]}, config, context=Context())
    assert "ERR_TIMEOUT" in out["answer"]


def _slow_page(folder):
    """An HTML page of a 150,000-row table: markdownify takes a minute or more over it (tens of seconds at 60,000)."""
    rows = "".join(f"<tr><td>row {i}</td><td>value {i * 7}</td><td><b>x</b> <i>y</i></td></tr>" for i in range(150_000))
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "big.html").write_text(f"<html><body><h1>Big table</h1><table>{rows}</table></body></html>")
    return folder


def _converting(tmp_path):
    """`executor ingest` of the slow page, once its conversion worker has started: (the ingest, the worker's pid)."""
    import os
    import subprocess
    import sys
    import time

    from conftest import REPO

    docs = _slow_page(tmp_path / "docs")
    env = {**os.environ, "EXECUTOR_HOME": str(tmp_path / "home"), "EXECUTOR_CONVERT_TIMEOUT_S": "600"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "executor.cli.main", "ingest", str(docs), "--kb", "big"],
        env=env,
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    while proc.poll() is None:
        workers = [p for p in _children(proc.pid) if b"spawn_main" in _cmdline(p)]
        if workers:
            time.sleep(10)  # into the conversion: the worker imports markitdown first (~3 s, more under load)
            return proc, workers[0]
        time.sleep(0.2)
    pytest.fail(f"the ingest ended before converting: {proc.stderr.read()}")


def _children(pid: int) -> list[int]:
    from pathlib import Path

    tasks = Path(f"/proc/{pid}/task")
    found = []
    for task in tasks.iterdir() if tasks.exists() else []:
        children = task / "children"
        found += [int(c) for c in children.read_text().split()] if children.exists() else []
    return found


def _cmdline(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read()
    except OSError:
        return b""


def _kill(pid: int) -> None:
    import os
    import signal

    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _gone(pid: int, within_s: float) -> bool:
    """Whether process `pid` has exited (or is a zombie) within `within_s` seconds."""
    import time

    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except OSError:
            return True
        time.sleep(0.5)
    return False


def test_an_ingest_killed_during_a_conversion_leaves_no_worker_behind(tmp_path):
    """`kill -9` of an ingest (the OOM killer, `docker stop` after its 10 s, `timeout -k`) while its worker converts
    an HTML page: the worker went on converting at full CPU (580 MB), then blocked for ever writing its result to a
    pipe nobody reads (`anon_pipe_write`), an orphan of init until someone kills it by hand. It ends with its
    parent."""
    proc, worker = _converting(tmp_path)
    try:
        proc.kill()
        proc.wait()
        assert _gone(worker, 150), f"conversion worker {worker} still running after its ingest was killed"
    finally:
        _kill(worker)


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGINT"])
def test_an_ingest_told_to_stop_during_a_conversion_stops_at_once(tmp_path, sig):
    """SIGTERM (systemd, `docker stop`, `timeout`) or SIGINT sent to the ingest alone (a script's `kill -INT`) during
    a conversion: "error: terminated (SIGTERM)", but only once the worker had finished the file (19-26 s here on a
    60,000-row page, up to EXECUTOR_CONVERT_TIMEOUT_S, 120 s, on a worse one): `docker stop` kills it first, which
    leaves #5's orphan. A terminal's Ctrl-C, which signals the worker too, stops it in about 2 s."""
    import signal
    import subprocess

    proc, worker = _converting(tmp_path)
    try:
        proc.send_signal(getattr(signal, sig))
        try:
            code = proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            code = None
        assert code in (130, 143), "the ingest did not stop within 15 s of the signal"
    finally:
        proc.kill()
        proc.wait()
        _kill(worker)


def test_another_programs_database_is_not_taken_for_a_new_one(tmp_path_factory):
    """`executor.db` replaced by another program's SQLite file (a wrong backup restored, `EXECUTOR_DATABASE_URL`
    naming the wrong file) beside this home's `milvus.db`: `lookup` wrote executor's 13 tables into it without a
    word and said "unknown knowledge base 'sample' (known: none yet; run `executor ingest`)". A database that holds
    tables and no executor schema is not executor's: one line naming it, exit 1, the file untouched."""
    import sqlite3

    from conftest import ingested_home

    home = ingested_home(tmp_path_factory, "foreign")
    (home / "executor.db").unlink()
    with sqlite3.connect(home / "executor.db") as db:
        db.execute("create table notes (id integer primary key, body text)")
        db.execute("insert into notes (body) values ('buy milk')")
    r = run_cli(home, "lookup", "ERR_TIMEOUT")
    with sqlite3.connect(home / "executor.db") as db:
        tables = {name for (name,) in db.execute("select name from sqlite_master where type = 'table'")}
    assert tables == {"notes"}
    assert r.returncode == 1
    assert "executor.db" in r.stderr and "not an Executor database" in r.stderr and "notes" in r.stderr


def _own_address() -> str:
    """This machine's first address that is not loopback (what a client on its network connects to)."""
    import subprocess

    found = [a for a in subprocess.run(["hostname", "-I"], capture_output=True, text=True).stdout.split() if "." in a]
    if not found:
        pytest.skip("this machine has no IPv4 address besides loopback")
    return found[0]


def test_a_server_on_every_interface_answers_to_the_machines_own_address(tmp_path_factory, tmp_path):
    """`executor mcp --http --host 0.0.0.0 --token T`, the way to serve hosts on other machines: a client that
    connects to `http://192.0.2.2:PORT/mcp` (the machine's address, as anyone on its network names it) got 421 "this
    server does not answer to that Host" with the right token: the names it answers to are the loopback ones and
    what the machine's own host name resolves to (127.0.0.1 in a stock /etc/hosts), never its interfaces'
    addresses."""
    from conftest import ingested_home, stop_process
    from test_local_servers import INIT, TOKEN, post, start_mcp

    address = _own_address()
    home = ingested_home(tmp_path_factory, "every-interface")
    log = open(tmp_path / "server.log", "w")
    proc, port = start_mcp(home, log, "--host", "0.0.0.0", "--token", TOKEN)
    try:
        auth = f"Authorization: Bearer {TOKEN}\r\n"
        assert post(port, f"{address}:{port}", json.dumps(INIT).encode(), extra=auth) == 200
    finally:
        stop_process(proc, log)
        run_cli(home, "graph", "stop")
